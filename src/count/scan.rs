//! One exact pass over a join key: the rows every Spark shuffle partition would receive, and
//! the rows of a given set of key values (the hot keys found on either side of a join).
//!
//! Each row's partition is `pmod(hash(key columns chained, seed 42), N)`, Spark's
//! `HashPartitioning`, computed with the same hash as `hash::spark_hash`. A row with a NULL in
//! any key column is counted apart (`null_rows`): whether it enters the shuffle depends on the
//! join type, and the planner decides.

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, RecordBatch};
use hashbrown::HashMap;
use rayon::prelude::*;

use super::arrays::{each_bytes, each_i128, each_i64};
use super::map_tasks::MapTask;
use super::pages::{self, flat_leaf, ColumnChunk, Dict, LastFile, Scratch, Sink};
use super::reader::hinted_meta;
use super::KeySpec;
use crate::error::{Error, Result};
use crate::hash::{hash_bytes, hash_value, pmod, SPARK_SEED};
use crate::table::{field_index, ColumnSource, DataFile, Table};
use crate::value::{canonical_f32, canonical_f64, KeyType, Value};

/// At most this many values can be looked for in one pass (one bit each).
pub const MAX_LOOKUP: usize = 64;

#[derive(Debug, Clone)]
pub struct PartitionScan {
    pub rows: u64,
    /// Rows with a NULL in any key column.
    pub null_rows: u64,
    /// Where Spark sends those rows when it keeps them: the hash skips NULL columns, so an
    /// all-NULL key goes to `pmod(42, N)` and a partly NULL one by its other columns.
    pub null_partition_rows: Vec<u64>,
    /// Rows per shuffle partition, NULL-keyed rows not included.
    pub partition_rows: Vec<u64>,
    /// Rows of each looked-for key, in the order given.
    pub key_rows: Vec<u64>,
}

impl PartitionScan {
    /// No rows yet, over `partitions` partitions and `keys` looked-for keys.
    fn empty(partitions: u32, keys: usize) -> PartitionScan {
        PartitionScan {
            rows: 0,
            null_rows: 0,
            null_partition_rows: vec![0; partitions as usize],
            partition_rows: vec![0; partitions as usize],
            key_rows: vec![0; keys],
        }
    }

    /// `p`'s rows added to these.
    fn add(&mut self, p: &PartitionScan) {
        self.rows += p.rows;
        self.null_rows += p.null_rows;
        self.partition_rows.iter_mut().zip(&p.partition_rows).for_each(|(a, b)| *a += b);
        self.null_partition_rows.iter_mut().zip(&p.null_partition_rows).for_each(|(a, b)| *a += b);
        self.key_rows.iter_mut().zip(&p.key_rows).for_each(|(a, b)| *a += b);
    }

    /// The rows of a batch, hashed, into their partitions (`n` of them) and looked-for keys.
    fn add_rows(&mut self, rows: &RowHashes, n: u32) {
        let RowHashes { h, null, mask } = rows;
        self.rows += h.len() as u64;
        for i in 0..h.len() {
            if null[i] {
                self.null_rows += 1;
                self.null_partition_rows[pmod(h[i], n) as usize] += 1;
                continue;
            }
            self.partition_rows[pmod(h[i], n) as usize] += 1;
            if mask[i] != 0 {
                self.key_rows[mask[i].trailing_zeros() as usize] += 1;
            }
        }
    }

    /// Rows per partition once the looked-for keys selected by `remove` are taken out.
    pub fn without(&self, keys: &[Vec<Value>], remove: &[bool], partitions: u32) -> Vec<u64> {
        let mut p = self.partition_rows.clone();
        for (i, k) in keys.iter().enumerate() {
            if remove.get(i).copied().unwrap_or(false) {
                let part = crate::hash::spark_partition(k, partitions) as usize;
                p[part] = p[part].saturating_sub(self.key_rows[i]);
            }
        }
        p
    }
}

/// How one column's value is matched against the looked-for keys.
enum Lookup {
    Int(HashMap<i64, u64>),
    Wide(HashMap<i128, u64>),
    Bytes(HashMap<Vec<u8>, u64>),
}

/// The 64-bit counting key of a fixed-width value (the inverse of `Value::from_i64_key`).
fn int_key(v: &Value) -> Option<i64> {
    Some(match v {
        Value::Bool(b) => *b as i64,
        Value::Int(i) | Value::Date(i) => *i as i64,
        Value::Long(l) | Value::Timestamp(l) => *l,
        Value::Float(f) => canonical_f32(*f).to_bits() as i64,
        Value::Double(d) => canonical_f64(*d).to_bits() as i64,
        Value::Decimal { unscaled, .. } => *unscaled as i64,
        _ => return None,
    })
}

fn lookup_for(col: usize, ty: KeyType, keys: &[Vec<Value>]) -> Lookup {
    let wide = matches!(ty, KeyType::Decimal { precision, .. } if precision > 18);
    let mut ints = HashMap::new();
    let mut wides = HashMap::new();
    let mut bytes = HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        let bit = 1u64 << i;
        match &k[col] {
            Value::Str(s) => *bytes.entry(s.as_bytes().to_vec()).or_insert(0) |= bit,
            Value::Binary(b) => *bytes.entry(b.clone()).or_insert(0) |= bit,
            Value::Decimal { unscaled, .. } if wide => *wides.entry(*unscaled).or_insert(0) |= bit,
            v => {
                if let Some(x) = int_key(v) {
                    *ints.entry(x).or_insert(0) |= bit;
                }
            }
        }
    }
    match ty {
        KeyType::String | KeyType::Binary => Lookup::Bytes(bytes),
        _ if wide => Lookup::Wide(wides),
        _ => Lookup::Int(ints),
    }
}

/// Scan `spec` over every row of `table`.
pub fn scan(
    table: &Table,
    spec: &KeySpec,
    partitions: u32,
    keys: &[Vec<Value>],
) -> Result<PartitionScan> {
    table.files_here()?;
    check_keys(spec, keys)?;
    let (_, parts) = scan_row_groups(table, spec, partitions, keys)?;
    let mut total = PartitionScan::empty(partitions.max(1), keys.len());
    for p in parts {
        total.add(&p);
    }
    Ok(total)
}

/// `scan`, and the same counts for each of Spark's map tasks over the table (`tasks`, as
/// `map_tasks::map_tasks` gives them; a row group no task reads is left out of those).
pub fn scan_by_map(
    table: &Table,
    spec: &KeySpec,
    partitions: u32,
    keys: &[Vec<Value>],
    tasks: &[MapTask],
) -> Result<(PartitionScan, Vec<PartitionScan>)> {
    if table.is_held() {
        return Err(Error::Usage(format!(
            "{}: a table read by Spark has no map tasks here",
            table.display
        )));
    }
    check_keys(spec, keys)?;
    let (units, parts) = scan_row_groups(table, spec, partitions, keys)?;
    let n = partitions.max(1);
    let task_of: HashMap<(usize, usize), usize> =
        tasks.iter().enumerate().flat_map(|(t, rgs)| rgs.iter().map(move |u| (*u, t))).collect();
    let mut total = PartitionScan::empty(n, keys.len());
    let mut per_map: Vec<PartitionScan> =
        (0..tasks.len()).map(|_| PartitionScan::empty(n, keys.len())).collect();
    for (u, p) in units.iter().zip(&parts) {
        total.add(p);
        if let Some(&t) = task_of.get(u) {
            per_map[t].add(p);
        }
    }
    Ok((total, per_map))
}

/// The looked-for keys a scan takes: at most `MAX_LOOKUP`, each non-NULL, one value per column.
pub(super) fn check_keys(spec: &KeySpec, keys: &[Vec<Value>]) -> Result<()> {
    if keys.len() > MAX_LOOKUP {
        return Err(Error::Usage(format!(
            "at most {MAX_LOOKUP} key values can be looked for in one scan, {} given",
            keys.len()
        )));
    }
    if keys.iter().any(|k| k.len() != spec.columns.len() || k.iter().any(Value::is_null)) {
        return Err(Error::Usage(
            "looked-for keys must be non-NULL and have one value per key column".into(),
        ));
    }
    Ok(())
}

/// Every row group of `table`, as (file, row group), and its counts.
fn scan_row_groups(
    table: &Table,
    spec: &KeySpec,
    partitions: u32,
    keys: &[Vec<Value>],
) -> Result<(MapTask, Vec<PartitionScan>)> {
    let scanner = Scanner::new(table, spec, partitions.max(1), keys);
    let units: Vec<(usize, usize)> = table
        .files
        .iter()
        .enumerate()
        .flat_map(|(f, file)| (0..file.meta.metadata().num_row_groups()).map(move |g| (f, g)))
        .collect();
    let parts: Vec<PartitionScan> = units
        .par_iter()
        .map_init(<(Scratch, LastFile)>::default, |(scratch, last), &(fi, g)| {
            scanner.row_group(fi, g, scratch, last)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((units, parts))
}

/// What every row group of a scan is scanned with.
struct Scanner<'a> {
    table: &'a Table,
    spec: &'a KeySpec,
    /// Shuffle partitions.
    n: u32,
    /// Looked-for keys.
    keys: usize,
    types: Vec<KeyType>,
    lookups: Vec<Lookup>,
    /// Every looked-for key's bit.
    all_bits: u64,
    /// A one-column string or binary key is counted from its pages where the chunk allows it:
    /// each dictionary value is hashed once, with the rows its indices count (see `pages`).
    by_pages: bool,
}

impl<'a> Scanner<'a> {
    fn new(table: &'a Table, spec: &'a KeySpec, n: u32, keys: &[Vec<Value>]) -> Self {
        let all_bits: u64 = if keys.is_empty() {
            0
        } else if keys.len() == 64 {
            u64::MAX
        } else {
            (1u64 << keys.len()) - 1
        };
        let types = spec.types();
        let lookups: Vec<Lookup> =
            (0..spec.columns.len()).map(|c| lookup_for(c, types[c], keys)).collect();
        let by_pages = spec.columns.len() == 1
            && matches!(spec.columns[0].source, ColumnSource::Data { .. })
            && matches!(types[0], KeyType::String | KeyType::Binary)
            && std::env::var_os("SKEWJOIN_ARROW_ONLY").is_none();
        Scanner { table, spec, n, keys: keys.len(), types, lookups, all_bits, by_pages }
    }

    /// Row group `g` of file number `fi`: from its pages if it can, else through Arrow.
    fn row_group(
        &self,
        fi: usize,
        g: usize,
        scratch: &mut Scratch,
        last: &mut LastFile,
    ) -> Result<PartitionScan> {
        let file = &self.table.files[fi];
        let mut out = PartitionScan::empty(self.n, self.keys);
        if let Some(done) = self.count_from_pages(fi, g, scratch, last, &mut out) {
            done?;
            return Ok(out);
        }
        let fields: Vec<usize> = self
            .spec
            .columns
            .iter()
            .filter_map(|c| match c.source {
                ColumnSource::Data { .. } => field_index(file, &c.name),
                ColumnSource::Partition { .. } => None,
            })
            .collect();
        if fields.is_empty() {
            let rg_rows = file.meta.metadata().row_group(g).num_rows().max(0) as usize;
            self.batch(file, None, rg_rows, &mut out)?;
            return Ok(out);
        }
        let meta = hinted_meta(file, &fields);
        for batch in crate::table::columns::row_group(file, &meta, g, &fields)? {
            let batch = batch?;
            self.batch(file, Some(&batch), batch.num_rows(), &mut out)?;
        }
        Ok(out)
    }

    /// One batch of `rows` rows of `file` (None: a row group of partition columns only),
    /// hashed column by column, into `out`.
    fn batch(
        &self,
        file: &DataFile,
        batch: Option<&RecordBatch>,
        rows: usize,
        out: &mut PartitionScan,
    ) -> Result<()> {
        let mut hashes = RowHashes {
            h: vec![SPARK_SEED; rows],
            null: vec![false; rows],
            mask: vec![self.all_bits; rows],
        };
        for (c, col) in self.spec.columns.iter().enumerate() {
            match &col.source {
                ColumnSource::Partition { index } => {
                    hashes.partition_value(&self.lookups[c], &file.partition_values[*index])
                }
                ColumnSource::Data { .. } => {
                    let array =
                        batch.and_then(|b| b.column_by_name(&col.name)).ok_or_else(|| {
                            Error::bad_file(&file.path, format!("column {} missing", col.name))
                        })?;
                    hashes.column(c, &self.lookups[c], array, self.types[c]).map_err(|e| {
                        Error::bad_file(&file.path, format!("column {}: {e}", col.name))
                    })?;
                }
            }
        }
        out.add_rows(&hashes, self.n);
        Ok(())
    }

    /// Row group `g` of file number `fi` counted from the pages of its key chunk into `out`;
    /// `None` when the chunk must be read through Arrow instead (nothing was counted then).
    fn count_from_pages(
        &self,
        fi: usize,
        g: usize,
        scratch: &mut Scratch,
        last: &mut LastFile,
        out: &mut PartitionScan,
    ) -> Option<Result<()>> {
        if !self.by_pages {
            return None;
        }
        let Lookup::Bytes(m) = &self.lookups[0] else { return None };
        let file = &self.table.files[fi];
        let schema = file.meta.parquet_schema();
        let leaf = flat_leaf(schema, &self.spec.columns[0].name)?;
        let descr = schema.column(leaf);
        if !pages::eligible(&descr) {
            return None;
        }
        let (f, len) = match last.open(fi, file) {
            Ok(open) => open,
            Err(e) => return Some(Err(e)),
        };
        let rg = file.meta.metadata().row_group(g);
        let rows = rg.num_rows().max(0) as usize;
        let n = self.n;
        let mut sink = PageRows { n, m, out };
        let counted = pages::count_chunk(
            ColumnChunk { file: &f, file_len: len, meta: rg.column(leaf), descr: &descr },
            rows,
            scratch,
            &mut sink,
        )?;
        let out = sink.out;
        out.rows += rows as u64;
        out.null_rows += counted.nulls;
        // A NULL key leaves the hash at its seed, 42.
        out.null_partition_rows[pmod(SPARK_SEED, n) as usize] += counted.nulls;
        Some(Ok(()))
    }
}

/// Where the values of a chunk counted from its pages go: their partitions (`n` of them) and
/// looked-for keys (`m`).
struct PageRows<'a> {
    n: u32,
    m: &'a HashMap<Vec<u8>, u64>,
    out: &'a mut PartitionScan,
}

impl PageRows<'_> {
    #[inline]
    fn add(&mut self, v: &[u8], rows: u64) {
        self.out.partition_rows[pmod(hash_bytes(v, SPARK_SEED), self.n) as usize] += rows;
        if !self.m.is_empty() {
            let bits = self.m.get(v).copied().unwrap_or(0);
            if bits != 0 {
                self.out.key_rows[bits.trailing_zeros() as usize] += rows;
            }
        }
    }
}

impl Sink for PageRows<'_> {
    fn dict(&mut self, d: &Dict) {
        for (v, rows) in d.used() {
            self.add(v, rows as u64);
        }
    }
    fn one(&mut self, v: &[u8], rows: u64) {
        self.add(v, rows);
    }
}

/// Per row of a batch: its hash over the key columns so far (seed 42), whether one of them is
/// NULL, and the bits of the looked-for keys it matches so far.
struct RowHashes {
    h: Vec<i32>,
    null: Vec<bool>,
    mask: Vec<u64>,
}

impl RowHashes {
    /// A partition column: one value for every row.
    fn partition_value(&mut self, lookup: &Lookup, v: &Value) {
        let bits = match (lookup, v) {
            (_, Value::Null) => 0,
            (Lookup::Bytes(m), Value::Str(s)) => m.get(s.as_bytes()).copied().unwrap_or(0),
            (Lookup::Bytes(m), Value::Binary(b)) => m.get(b.as_slice()).copied().unwrap_or(0),
            (Lookup::Wide(m), Value::Decimal { unscaled, .. }) => {
                m.get(unscaled).copied().unwrap_or(0)
            }
            (Lookup::Int(m), v) => int_key(v).and_then(|k| m.get(&k).copied()).unwrap_or(0),
            _ => 0,
        };
        let RowHashes { h, null, mask } = self;
        for i in 0..h.len() {
            if v.is_null() {
                null[i] = true;
            } else {
                h[i] = hash_value(v, h[i]);
            }
            mask[i] &= bits;
        }
    }

    /// Key column number `c` of type `ty`, matched by `lookup`.
    fn column(
        &mut self,
        c: usize,
        lookup: &Lookup,
        array: &ArrayRef,
        ty: KeyType,
    ) -> std::result::Result<(), String> {
        match lookup {
            // The first key column starts every row from seed 42: a dictionary's values are
            // hashed (and looked up) once each.
            Lookup::Bytes(m)
                if c == 0
                    && matches!(array.data_type(), arrow_schema::DataType::Dictionary(..)) =>
            {
                self.first_dictionary(array, m)
            }
            Lookup::Bytes(m) => self.bytes(array, m),
            Lookup::Wide(m) => self.wide(array, m, ty),
            Lookup::Int(m) => self.ints(array, m, ty),
        }
    }

    fn first_dictionary(
        &mut self,
        array: &ArrayRef,
        m: &HashMap<Vec<u8>, u64>,
    ) -> std::result::Result<(), String> {
        let RowHashes { h, null, mask } = self;
        let dict = array.as_any_dictionary();
        let mut per: Vec<Option<(i32, u64)>> = Vec::with_capacity(dict.values().len());
        each_bytes(dict.values(), &mut |v| {
            per.push(v.map(|b| {
                (
                    hash_bytes(b, SPARK_SEED),
                    if m.is_empty() { 0 } else { m.get(b).copied().unwrap_or(0) },
                )
            }))
        })?;
        let keys = dict.keys();
        for (row, k) in dict.normalized_keys().into_iter().enumerate() {
            match if keys.is_null(row) { None } else { per.get(k).copied().flatten() } {
                None => null[row] = true,
                Some((hv, bits)) => {
                    h[row] = hv;
                    mask[row] &= bits;
                }
            }
        }
        Ok(())
    }

    fn bytes(
        &mut self,
        array: &ArrayRef,
        m: &HashMap<Vec<u8>, u64>,
    ) -> std::result::Result<(), String> {
        let RowHashes { h, null, mask } = self;
        let mut i = 0usize;
        each_bytes(array, &mut |v| {
            match v {
                None => null[i] = true,
                Some(b) => {
                    h[i] = hash_bytes(b, h[i]);
                    mask[i] &= if m.is_empty() { 0 } else { m.get(b).copied().unwrap_or(0) };
                }
            }
            i += 1;
        })
    }

    fn wide(
        &mut self,
        array: &ArrayRef,
        m: &HashMap<i128, u64>,
        ty: KeyType,
    ) -> std::result::Result<(), String> {
        let RowHashes { h, null, mask } = self;
        let mut i = 0usize;
        each_i128(array, &mut |v| {
            match v {
                None => null[i] = true,
                Some(x) => {
                    let (precision, scale) = match ty {
                        KeyType::Decimal { precision, scale } => (precision, scale),
                        _ => (38, 0),
                    };
                    h[i] = hash_value(&Value::Decimal { unscaled: x, precision, scale }, h[i]);
                    mask[i] &= m.get(&x).copied().unwrap_or(0);
                }
            }
            i += 1;
        })
    }

    fn ints(
        &mut self,
        array: &ArrayRef,
        m: &HashMap<i64, u64>,
        ty: KeyType,
    ) -> std::result::Result<(), String> {
        let RowHashes { h, null, mask } = self;
        let mut i = 0usize;
        each_i64(array, ty, &mut |v| {
            match v {
                None => null[i] = true,
                Some(x) => {
                    h[i] = hash_value(&Value::from_i64_key(x, ty), h[i]);
                    mask[i] &= if m.is_empty() { 0 } else { m.get(&x).copied().unwrap_or(0) };
                }
            }
            i += 1;
        })
    }
}
