//! How many rows of a chain of joins each row of one of its tables makes: the weight of a row
//! is a product of factors, one per join that table takes part in, each looked up by the row's
//! values of that join's columns in the matching rows the other side brings (which are in turn
//! weighted by the joins beyond it). For `A JOIN B ON a.x = b.x`, a row of B with x = v appears
//! in as many rows of the join as A has rows with x = v; the rows of the join with b.y = w are
//! then the sum of those weights over B's rows with y = w, exactly.
//!
//! The maps come from `filter::sum_by` over the other tables; `filter::filtered_keys` applies
//! the weights to the counted table by writing each row as many times as it appears.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};

use crate::value::KeyType;

/// Matching rows per join-column value (encoded by `count::group_keys`).
pub type Matches = hashbrown::HashMap<Vec<u8>, u64>;

/// Rows per value of one column that encodes as an integer: in an array indexed by the value
/// while the values span a range not much wider than the rows added (surrogate keys and dates,
/// most join keys), else in a hash map.
#[derive(Clone, Debug)]
pub enum IntSums {
    Dense { lo: i64, sums: Vec<u64>, distinct: usize, rows: usize },
    Hash(hashbrown::HashMap<i64, u64, foldhash::fast::FixedState>),
}

/// An array of at most this many values (32 MB), and at most twice the rows added plus
/// `DENSE_SLACK` wide.
const DENSE_SLOTS: u128 = 1 << 22;
const DENSE_SLACK: u128 = 1 << 16;

impl Default for IntSums {
    fn default() -> Self {
        IntSums::Dense { lo: 0, sums: Vec::new(), distinct: 0, rows: 0 }
    }
}

impl IntSums {
    /// Add each (value, rows) of `vals` (rows > 0), whose values lie within `min..=max`.
    fn add_all(&mut self, vals: &[(i64, u64)], min: i64, max: i64) {
        self.add_all_of(vals, min, max, vals.len());
    }

    /// Add the sums of `other`.
    fn merge(&mut self, other: IntSums) {
        let rows = match &other {
            IntSums::Dense { rows, .. } => *rows,
            IntSums::Hash(m) => m.len(),
        };
        let vals: Vec<(i64, u64)> = other.iter().collect();
        let min = vals.iter().map(|v| v.0).min().unwrap_or(0);
        let max = vals.iter().map(|v| v.0).max().unwrap_or(0);
        self.add_all_of(&vals, min, max, rows);
    }

    /// As `add_all`, the values having been `rows` rows.
    fn add_all_of(&mut self, vals: &[(i64, u64)], min: i64, max: i64, rows: usize) {
        if vals.is_empty() {
            return;
        }
        self.make_room(min, max, rows);
        match self {
            IntSums::Dense { lo, sums, distinct, .. } => {
                for &(v, w) in vals {
                    let slot = &mut sums[(v - *lo) as usize];
                    *distinct += usize::from(*slot == 0);
                    *slot += w;
                }
            }
            IntSums::Hash(m) => vals.iter().for_each(|&(v, w)| *m.entry(v).or_insert(0) += w),
        }
    }

    /// Widen the array to take `n` more values within `min..=max` (shifting it when `min` is
    /// below its start, with room for as many again below), or go over to a hash map when it
    /// would be too wide.
    fn make_room(&mut self, min: i64, max: i64, n: usize) {
        let IntSums::Dense { lo, sums, rows, .. } = self else { return };
        *rows += n;
        let (old_lo, old_len) = (*lo as i128, sums.len() as i128);
        let (mut new_lo, new_hi) = if old_len == 0 {
            (min as i128, max as i128)
        } else {
            (old_lo.min(min as i128), (old_lo + old_len - 1).max(max as i128))
        };
        let cap = (2 * *rows as u128 + DENSE_SLACK).min(DENSE_SLOTS) as i128;
        if new_hi - new_lo + 1 > cap {
            let m = self.iter().collect();
            *self = IntSums::Hash(m);
            return;
        }
        if old_len > 0 && new_lo < old_lo {
            // Room below as well, so that values coming in descending order do not shift the
            // array each time.
            new_lo = (new_lo - old_len / 2).max(new_hi + 1 - cap).max(i64::MIN as i128);
            let mut wider = vec![0u64; (old_lo - new_lo) as usize];
            wider.extend_from_slice(sums);
            *sums = wider;
            *lo = new_lo as i64;
        } else if old_len == 0 {
            *lo = new_lo as i64;
        }
        let len = (new_hi - *lo as i128 + 1) as usize;
        if len > sums.len() {
            sums.resize(len, 0);
        }
    }

    /// The rows of value `v`.
    #[inline]
    fn get(&self, v: i64) -> u64 {
        match self {
            IntSums::Dense { lo, sums, .. } => sums
                .get((v as i128 - *lo as i128) as usize)
                .copied()
                .filter(|_| v >= *lo)
                .unwrap_or(0),
            IntSums::Hash(m) => m.get(&v).copied().unwrap_or(0),
        }
    }

    fn len(&self) -> usize {
        match self {
            IntSums::Dense { distinct, .. } => *distinct,
            IntSums::Hash(m) => m.len(),
        }
    }

    /// Each value with rows, and its rows.
    fn iter(&self) -> Box<dyn Iterator<Item = (i64, u64)> + '_> {
        match self {
            IntSums::Dense { lo, sums, .. } => Box::new(
                sums.iter().enumerate().filter(|e| *e.1 > 0).map(|(i, &n)| (*lo + i as i64, n)),
            ),
            IntSums::Hash(m) => Box::new(m.iter().map(|(&v, &n)| (v, n))),
        }
    }
}

/// Rows per value of a join's columns, summed and looked up row by row: by the value itself
/// where the join is on one column that encodes as an integer (most join keys: no key encoded
/// per row, an 8-byte hash key), else by the encoded key (`Matches`).
#[derive(Clone, Debug)]
pub enum Sums {
    Ints { by_value: IntSums, null: u64 },
    Keys(Matches),
}

impl Sums {
    /// No rows yet, for columns of `types`.
    pub fn new(types: &[KeyType]) -> Sums {
        match types {
            [t] if encodes_as_int(*t) => Sums::Ints { by_value: IntSums::default(), null: 0 },
            _ => Sums::Keys(Matches::new()),
        }
    }

    /// How many values (a NULL one included).
    pub fn len(&self) -> usize {
        match self {
            Sums::Ints { by_value, null } => by_value.len() + usize::from(*null > 0),
            Sums::Keys(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Add `weight(row, null)` to each row's value of `cols` (`null`: some column is NULL).
    pub fn add(
        &mut self,
        cols: &[ArrayRef],
        types: &[KeyType],
        mut weight: impl FnMut(usize, bool) -> u64,
    ) -> std::result::Result<(), String> {
        match self {
            Sums::Ints { by_value, null } => {
                let (mut row, mut min, mut max) = (0, i64::MAX, i64::MIN);
                let mut vals = Vec::with_capacity(cols[0].len());
                let plain = crate::count::each_plain_i64(&cols[0], |row, v| {
                    let w = weight(row, false);
                    if w > 0 {
                        (min, max) = (min.min(v), max.max(v));
                        vals.push((v, w));
                    }
                });
                if plain {
                    by_value.add_all(&vals, min, max);
                    return Ok(());
                }
                crate::count::each_i64(&cols[0], types[0], &mut |v| {
                    let w = weight(row, v.is_none());
                    row += 1;
                    match v {
                        _ if w == 0 => {}
                        Some(v) => {
                            (min, max) = (min.min(v), max.max(v));
                            vals.push((v, w));
                        }
                        None => *null += w,
                    }
                })?;
                by_value.add_all(&vals, min, max);
                Ok(())
            }
            Sums::Keys(out) => crate::count::each_group_key(cols, types, |row, key| {
                let w = weight(row, cols.iter().any(|a| a.is_null(row)));
                if w == 0 {
                    return;
                }
                match out.get_mut(key) {
                    Some(n) => *n += w,
                    None => {
                        out.insert(key.to_vec(), w);
                    }
                }
            }),
        }
    }

    /// Add the sums of `other`, of the same columns.
    pub fn merge(&mut self, other: Sums) {
        match (&mut *self, other) {
            (Sums::Ints { by_value, null }, Sums::Ints { by_value: o, null: on }) => {
                *null += on;
                by_value.merge(o);
            }
            (Sums::Keys(m), Sums::Keys(o)) => {
                o.into_iter().for_each(|(k, n)| *m.entry(k).or_insert(0) += n)
            }
            // Not of the same columns: both by their encoded keys.
            (_, other) => {
                let mut m = std::mem::replace(self, Sums::Keys(Matches::new())).into_matches();
                other.into_matches().into_iter().for_each(|(k, n)| *m.entry(k).or_insert(0) += n);
                *self = Sums::Keys(m);
            }
        }
    }

    /// `f(row, rows)` for each row of `cols` that `wanted(row)`, with the rows its value has
    /// here (None: a column of the row is NULL).
    fn each_lookup(
        &self,
        cols: &[ArrayRef],
        types: &[KeyType],
        wanted: impl Fn(usize) -> bool,
        mut f: impl FnMut(usize, Option<u64>),
    ) -> std::result::Result<(), String> {
        match self {
            Sums::Ints { by_value, .. } => {
                let plain = crate::count::each_plain_i64(&cols[0], |row, v| {
                    if wanted(row) {
                        f(row, Some(by_value.get(v)));
                    }
                });
                if plain {
                    return Ok(());
                }
                let mut row = 0;
                crate::count::each_i64(&cols[0], types[0], &mut |v| {
                    if wanted(row) {
                        f(row, v.map(|v| by_value.get(v)));
                    }
                    row += 1;
                })
            }
            Sums::Keys(m) => crate::count::each_group_key(cols, types, |row, key| {
                if wanted(row) {
                    let null = cols.iter().any(|a| a.is_null(row));
                    f(row, (!null).then(|| m.get(key).copied().unwrap_or(0)));
                }
            }),
        }
    }

    /// The sums keyed as `count::group_keys` encodes each value.
    pub fn into_matches(self) -> Matches {
        match self {
            Sums::Keys(m) => m,
            Sums::Ints { by_value, null } => {
                let mut out = Matches::with_capacity(by_value.len() + 1);
                for (v, n) in by_value.iter() {
                    let mut key = Vec::with_capacity(9);
                    key.push(3);
                    key.extend_from_slice(&v.to_le_bytes());
                    out.insert(key, n);
                }
                if null > 0 {
                    out.insert(vec![0], null);
                }
                out
            }
        }
    }
}

/// A key type whose values `count::group_keys` encodes as one 8-byte integer.
fn encodes_as_int(t: KeyType) -> bool {
    !matches!(t, KeyType::String | KeyType::Binary | KeyType::Void)
        && !matches!(t, KeyType::Decimal { precision, .. } if precision > 18)
}

/// What a join does to a row of the side whose weight this factor is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactorKind {
    /// An inner join: the row appears once per matching row, not at all without one.
    Inner,
    /// A left join keeping this row: once per matching row, once without one.
    KeepUnmatched,
    /// A semi join: once if some row matches.
    Semi,
    /// An anti join: once if no row matches (a NULL matches nothing).
    Anti,
}

/// One join's factor: the row's values of `columns` looked up in `matches`.
#[derive(Clone, Debug)]
pub struct Factor {
    /// The columns of the weighted table, as its files name them.
    pub columns: Vec<String>,
    pub types: Vec<KeyType>,
    pub matches: Arc<Sums>,
    pub kind: FactorKind,
}

impl Factor {
    /// The factor of a row with `m` matching rows (0 when a join column is NULL).
    fn of(&self, m: u64) -> u64 {
        match self.kind {
            FactorKind::Inner => m,
            FactorKind::KeepUnmatched => m.max(1),
            FactorKind::Semi => u64::from(m > 0),
            FactorKind::Anti => u64::from(m == 0),
        }
    }
}

impl Factor {
    /// The same factor: the same lookup (not only equal sums), columns and kind.
    fn is(&self, other: &Factor) -> bool {
        Arc::ptr_eq(&self.matches, &other.matches)
            && self.columns == other.columns
            && self.kind == other.kind
    }
}

/// The weight of each row of one table in the joins before a join.
#[derive(Clone, Debug, Default)]
pub struct RowWeights {
    pub factors: Vec<Factor>,
    /// The joins as written, for the reports.
    pub joins: String,
    /// Where the weights of a file's rows are kept for the next count over it (None: not kept).
    pub memo: Option<Arc<WeightMemo>>,
    /// Rows the joins before make with every key column NULL, beside the weighted rows: a left
    /// join's rows that no row of the key's side matched (its columns are NULL there).
    pub null_rows: u64,
}

/// The weights of each file's rows computed last, kept for the next count over the same file:
/// a chain's joins are counted one after another, each weighted by the factors of the joins
/// before it, most of which the join before it was weighted by too. With the weights kept,
/// only the factors not in them are looked up (and their columns read). Held within `budget`
/// bytes, each file's in the narrowest width its largest weight fits (see `Packed`); a file
/// past it is weighted from scratch each time.
#[derive(Debug)]
pub struct WeightMemo {
    kept: std::sync::Mutex<hashbrown::HashMap<std::path::PathBuf, Kept>>,
    budget: usize,
}

#[derive(Debug)]
struct Kept {
    factors: Vec<Factor>,
    weights: Arc<Packed>,
}

impl WeightMemo {
    pub fn new(budget: usize) -> WeightMemo {
        WeightMemo { kept: Default::default(), budget }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, hashbrown::HashMap<std::path::PathBuf, Kept>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The weights kept for `path` when they are the product of some of `factors`: those
    /// weights, and the factors not in them.
    pub fn prior(
        &self,
        path: &std::path::Path,
        factors: &[Factor],
    ) -> Option<(Arc<Packed>, Vec<Factor>)> {
        let kept = self.kept();
        let k = kept.get(path)?;
        let mut rest: Vec<Factor> = factors.to_vec();
        for f in &k.factors {
            let i = rest.iter().position(|r| r.is(f))?;
            rest.remove(i);
        }
        Some((k.weights.clone(), rest))
    }

    /// Keep `weights`, the product of `factors` for each row of `path`, if they fit.
    pub fn keep(&self, path: &std::path::Path, factors: &[Factor], weights: Packed) {
        let mut kept = self.kept();
        kept.remove(path);
        let held: usize = kept.values().map(|k| k.weights.bytes()).sum();
        if held + weights.bytes() <= self.budget {
            kept.insert(
                path.to_path_buf(),
                Kept { factors: factors.to_vec(), weights: Arc::new(weights) },
            );
        }
    }

    /// Bytes left for `path`'s weights beside the others'.
    pub fn room(&self, path: &std::path::Path) -> usize {
        let kept = self.kept();
        let held: usize =
            kept.iter().filter(|(p, _)| p.as_path() != path).map(|(_, k)| k.weights.bytes()).sum();
        self.budget.saturating_sub(held)
    }
}

/// A file's row weights in the narrowest of 1, 2, 4 or 8 bytes that holds the largest so far:
/// most weights of a chain's joins are 0 or small counts.
#[derive(Debug, Clone, PartialEq)]
pub enum Packed {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl Default for Packed {
    fn default() -> Self {
        Packed::U8(Vec::new())
    }
}

impl Packed {
    pub fn len(&self) -> usize {
        match self {
            Packed::U8(v) => v.len(),
            Packed::U16(v) => v.len(),
            Packed::U32(v) => v.len(),
            Packed::U64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the weights take.
    pub fn bytes(&self) -> usize {
        let width = match self {
            Packed::U8(_) => 1,
            Packed::U16(_) => 2,
            Packed::U32(_) => 4,
            Packed::U64(_) => 8,
        };
        self.len() * width
    }

    /// Append `w`, first widening every weight as far as the largest of `w` needs.
    pub fn extend(&mut self, w: &[u64]) {
        let max = w.iter().copied().max().unwrap_or(0);
        while self.largest() < max {
            self.widen();
        }
        match self {
            Packed::U8(v) => v.extend(w.iter().map(|&x| x as u8)),
            Packed::U16(v) => v.extend(w.iter().map(|&x| x as u16)),
            Packed::U32(v) => v.extend(w.iter().map(|&x| x as u32)),
            Packed::U64(v) => v.extend_from_slice(w),
        }
    }

    /// The largest weight the width holds.
    fn largest(&self) -> u64 {
        match self {
            Packed::U8(_) => u8::MAX as u64,
            Packed::U16(_) => u16::MAX as u64,
            Packed::U32(_) => u32::MAX as u64,
            Packed::U64(_) => u64::MAX,
        }
    }

    /// The same weights, one width wider.
    fn widen(&mut self) {
        let all = self.get(0..self.len()).unwrap_or_default();
        *self = match self {
            Packed::U8(_) => Packed::U16(all.into_iter().map(|x| x as u16).collect()),
            Packed::U16(_) => Packed::U32(all.into_iter().map(|x| x as u32).collect()),
            _ => Packed::U64(all),
        };
    }

    /// The weights of rows `range`, None past the end.
    pub fn get(&self, range: std::ops::Range<usize>) -> Option<Vec<u64>> {
        Some(match self {
            Packed::U8(v) => v.get(range)?.iter().map(|&x| x as u64).collect(),
            Packed::U16(v) => v.get(range)?.iter().map(|&x| x as u64).collect(),
            Packed::U32(v) => v.get(range)?.iter().map(|&x| x as u64).collect(),
            Packed::U64(v) => v.get(range)?.to_vec(),
        })
    }
}

impl RowWeights {
    /// The columns the factors read, each once (lower case).
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.factors.iter().flat_map(|f| f.columns.iter()) {
            let c = c.to_ascii_lowercase();
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }

    /// The weight of each row of `batch`, which holds the factors' columns (by name, case
    /// ignored).
    pub fn of_batch(&self, batch: &RecordBatch) -> std::result::Result<Vec<u64>, String> {
        self.times(batch, vec![1u64; batch.num_rows()])
    }

    /// `w`, each row's weight so far, times this weight of each row of `batch`.
    pub fn times(
        &self,
        batch: &RecordBatch,
        mut w: Vec<u64>,
    ) -> std::result::Result<Vec<u64>, String> {
        for f in &self.factors {
            let cols: Vec<ArrayRef> = f
                .columns
                .iter()
                .map(|c| column(batch, c))
                .collect::<std::result::Result<_, _>>()?;
            // A row that an earlier factor dropped is not looked up again.
            let zero: Vec<bool> = w.iter().map(|&x| x == 0).collect();
            f.matches.each_lookup(
                &cols,
                &f.types,
                |row| !zero[row],
                |row, m| {
                    w[row] = w[row].saturating_mul(f.of(m.unwrap_or(0)));
                },
            )?;
        }
        Ok(w)
    }
}

fn column(batch: &RecordBatch, name: &str) -> std::result::Result<ArrayRef, String> {
    let schema = batch.schema();
    let i = schema
        .fields()
        .iter()
        .position(|f| f.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("no column {name}"))?;
    Ok(batch.column(i).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};

    fn matches(pairs: &[(i64, u64)]) -> Arc<Sums> {
        let arr: ArrayRef =
            Arc::new(Int64Array::from(pairs.iter().map(|p| p.0).collect::<Vec<_>>()));
        let mut s = Sums::new(&[KeyType::BigInt]);
        s.add(&[arr], &[KeyType::BigInt], |row, _| pairs[row].1).unwrap();
        Arc::new(s)
    }

    /// Rows per encoded key, counted the plain way.
    fn by_encoded_key(cols: &[ArrayRef], types: &[KeyType]) -> Matches {
        let mut m = Matches::new();
        for k in crate::count::group_keys(cols, types).unwrap() {
            *m.entry(k).or_insert(0) += 1;
        }
        m
    }

    #[test]
    fn int_sums_by_index_and_by_hash_are_the_same_sums() {
        use std::collections::BTreeMap;
        let batches: Vec<Vec<i64>> = vec![
            (1000..1100).rev().collect(),
            (900..1000).rev().collect(),
            vec![-5, 1099, 1000],
            (0..3000).map(|i| 500 + i % 50).collect(),
            // Far outside: the array would be too wide, the sums go over to a hash map.
            vec![i64::MAX, i64::MIN, 7],
            vec![i64::MAX - 1, 3],
        ];
        let mut sums = IntSums::default();
        let mut want: BTreeMap<i64, u64> = BTreeMap::new();
        for (b, vals) in batches.iter().enumerate() {
            let pairs: Vec<(i64, u64)> =
                vals.iter().map(|&v| (v, (v.unsigned_abs() % 3) + 1)).collect();
            pairs.iter().for_each(|&(v, w)| *want.entry(v).or_default() += w);
            sums.add_all(&pairs, *vals.iter().min().unwrap(), *vals.iter().max().unwrap());
            assert_eq!(matches!(sums, IntSums::Dense { .. }), b < 4, "batch {b}");
            assert_eq!(sums.iter().collect::<BTreeMap<_, _>>(), want, "batch {b}");
            assert_eq!(sums.len(), want.len());
            for v in [-6, -5, 0, 899, 900, 1099, 1100, i64::MIN, i64::MAX, i64::MAX - 1] {
                assert_eq!(
                    sums.get(v),
                    want.get(&v).copied().unwrap_or(0),
                    "value {v} after batch {b}"
                );
            }
        }
    }

    #[test]
    fn packed_weights_widen_as_needed_and_read_back_the_same() {
        let mut p = Packed::default();
        let mut all = Vec::new();
        for chunk in [&[0, 1, 255][..], &[256, 3], &[70_000], &[1 << 40, 0]] {
            p.extend(chunk);
            all.extend_from_slice(chunk);
        }
        assert_eq!(p.get(0..all.len()), Some(all.clone()));
        assert_eq!((p.bytes(), p.get(2..4)), (all.len() * 8, Some(vec![255, 256])));
        assert!(p.get(7..9).is_none());
        let mut q = Packed::default();
        q.extend(&[1, 2, 3]);
        assert_eq!(q.bytes(), 3);
        q.extend(&[300]);
        assert_eq!((q.bytes(), q.get(0..4)), (8, Some(vec![1, 2, 3, 300])));
    }

    #[test]
    fn sums_by_value_are_the_sums_by_encoded_key() {
        use arrow_array::{Float64Array, Int32Array, StringArray};
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(1),
            None,
            Some(-7),
            Some(1),
            None,
            Some(i32::MAX),
        ]));
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(0.0),
            Some(-0.0),
            Some(f64::NAN),
            Some(-f64::NAN),
            None,
            Some(2.5),
        ]));
        let strs: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a"),
            None,
            Some("a"),
            Some("b"),
            None,
            Some("a"),
        ]));
        for (cols, types) in [
            (vec![ints.clone()], vec![KeyType::Int]),
            (vec![floats.clone()], vec![KeyType::Double]),
            (vec![strs.clone()], vec![KeyType::String]),
            (vec![ints.clone(), strs.clone()], vec![KeyType::Int, KeyType::String]),
        ] {
            let mut s = Sums::new(&types);
            s.add(&cols, &types, |_, _| 1).unwrap();
            assert_eq!(
                matches!(s, Sums::Ints { .. }),
                types.len() == 1 && types[0] != KeyType::String
            );
            let want = by_encoded_key(&cols, &types);
            assert_eq!(s.len(), want.len(), "{types:?}");
            assert_eq!(s.into_matches(), want, "{types:?}");
        }
        // What `add` is told of NULLs, and a weight of 0 adds nothing.
        let mut s = Sums::new(&[KeyType::Int]);
        s.add(
            std::slice::from_ref(&ints),
            &[KeyType::Int],
            |row, null| if null { 0 } else { row as u64 },
        )
        .unwrap();
        let m = s.into_matches();
        // 1: rows 0 and 3 (0 + 3); -7: row 2; MAX: row 5; the NULL rows weigh 0.
        let mut got: Vec<u64> = m.values().copied().collect();
        got.sort_unstable();
        assert_eq!(got, vec![2, 3, 5], "{m:?}");
    }

    #[test]
    fn each_kind_of_join_weighs_a_row_as_spark_joins_it() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        let x: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(3)]));
        let batch = RecordBatch::try_new(schema, vec![x]).unwrap();
        let m = matches(&[(1, 3), (2, 1)]);
        let weigh = |kind| {
            let f = Factor {
                columns: vec!["X".into()],
                types: vec![KeyType::BigInt],
                matches: m.clone(),
                kind,
            };
            RowWeights { factors: vec![f], ..Default::default() }.of_batch(&batch).unwrap()
        };
        assert_eq!(weigh(FactorKind::Inner), vec![3, 1, 0, 0]);
        assert_eq!(weigh(FactorKind::KeepUnmatched), vec![3, 1, 1, 1]);
        assert_eq!(weigh(FactorKind::Semi), vec![1, 1, 0, 0]);
        assert_eq!(weigh(FactorKind::Anti), vec![0, 0, 1, 1]);
        let two = RowWeights {
            factors: vec![
                Factor {
                    columns: vec!["x".into()],
                    types: vec![KeyType::BigInt],
                    matches: m.clone(),
                    kind: FactorKind::Inner,
                },
                Factor {
                    columns: vec!["x".into()],
                    types: vec![KeyType::BigInt],
                    matches: m.clone(),
                    kind: FactorKind::KeepUnmatched,
                },
            ],
            ..Default::default()
        };
        assert_eq!(two.of_batch(&batch).unwrap(), vec![9, 1, 0, 0]);
    }
}
