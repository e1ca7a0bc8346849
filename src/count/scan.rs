//! One exact pass over a join key: the rows every Spark shuffle partition would receive, and
//! the rows of a given set of key values (the hot keys found on either side of a join).
//!
//! Each row's partition is `pmod(hash(key columns chained, seed 42), N)`, Spark's
//! `HashPartitioning`, computed with the same hash as `hash::spark_hash`. A row with a NULL in
//! any key column is counted apart (`null_rows`): whether it enters the shuffle depends on the
//! join type, and the planner decides.

use std::fs::File;

use hashbrown::HashMap;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use rayon::prelude::*;

use super::arrays::{each_bytes, each_i128, each_i64};
use super::KeySpec;
use crate::error::{Error, Result};
use crate::hash::{hash_bytes, hash_value, pmod, SPARK_SEED};
use crate::source::{field_index, read_hint, ColumnSource, Table};
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
pub fn scan(table: &Table, spec: &KeySpec, partitions: u32, keys: &[Vec<Value>]) -> Result<PartitionScan> {
    if keys.len() > MAX_LOOKUP {
        return Err(Error::Usage(format!("at most {MAX_LOOKUP} key values can be looked for in one scan, {} given", keys.len())));
    }
    if keys.iter().any(|k| k.len() != spec.columns.len() || k.iter().any(Value::is_null)) {
        return Err(Error::Usage("looked-for keys must be non-NULL and have one value per key column".into()));
    }
    let n = partitions.max(1);
    let all_bits: u64 = if keys.is_empty() {
        0
    } else if keys.len() == 64 {
        u64::MAX
    } else {
        (1u64 << keys.len()) - 1
    };
    let types = spec.types();
    let lookups: Vec<Lookup> = (0..spec.columns.len()).map(|c| lookup_for(c, types[c], keys)).collect();

    let units: Vec<(usize, usize)> =
        table.files.iter().enumerate().flat_map(|(f, file)| (0..file.meta.metadata().num_row_groups()).map(move |g| (f, g))).collect();

    // A one-column string or binary key is counted from its pages where the chunk allows it:
    // each dictionary value is hashed once, with the rows its indices count (see `pages`).
    let by_pages = spec.columns.len() == 1
        && matches!(spec.columns[0].source, ColumnSource::Data { .. })
        && matches!(types[0], KeyType::String | KeyType::Binary)
        && std::env::var_os("SKEWJOIN_ARROW_ONLY").is_none();
    let parts: Vec<PartitionScan> = units
        .par_iter()
        .map_init(<(super::pages::Scratch, super::pages::LastFile)>::default, |(scratch, last), &(fi, g)| -> Result<PartitionScan> {
            let file = &table.files[fi];
            let mut out = PartitionScan {
                rows: 0,
                null_rows: 0,
                null_partition_rows: vec![0; n as usize],
                partition_rows: vec![0; n as usize],
                key_rows: vec![0; keys.len()],
            };
            if by_pages {
                if let Lookup::Bytes(m) = &lookups[0] {
                    if let Some(done) = scan_pages(file, fi, g, &spec.columns[0].name, n, m, scratch, last, &mut out) {
                        done?;
                        return Ok(out);
                    }
                }
            }
            let fields: Vec<usize> = spec
                .columns
                .iter()
                .filter_map(|c| match c.source {
                    ColumnSource::Data { .. } => field_index(file, &c.name),
                    ColumnSource::Partition { .. } => None,
                })
                .collect();
            let rg_rows = file.meta.metadata().row_group(g).num_rows().max(0) as usize;
            let mut each_batch = |batch: Option<&arrow_array::RecordBatch>, rows: usize| -> Result<()> {
                let mut h = vec![SPARK_SEED; rows];
                let mut null = vec![false; rows];
                let mut mask = vec![all_bits; rows];
                for (c, col) in spec.columns.iter().enumerate() {
                    let ty = types[c];
                    match &col.source {
                        ColumnSource::Partition { index } => {
                            let v = &file.partition_values[*index];
                            let bits = match (&lookups[c], v) {
                                (_, Value::Null) => 0,
                                (Lookup::Bytes(m), Value::Str(s)) => m.get(s.as_bytes()).copied().unwrap_or(0),
                                (Lookup::Bytes(m), Value::Binary(b)) => m.get(b.as_slice()).copied().unwrap_or(0),
                                (Lookup::Wide(m), Value::Decimal { unscaled, .. }) => m.get(unscaled).copied().unwrap_or(0),
                                (Lookup::Int(m), v) => int_key(v).and_then(|k| m.get(&k).copied()).unwrap_or(0),
                                _ => 0,
                            };
                            for i in 0..rows {
                                if v.is_null() {
                                    null[i] = true;
                                } else {
                                    h[i] = hash_value(v, h[i]);
                                }
                                mask[i] &= bits;
                            }
                        }
                        ColumnSource::Data { .. } => {
                            let array = batch
                                .and_then(|b| b.column_by_name(&col.name))
                                .ok_or_else(|| Error::bad_file(&file.path, format!("column {} missing", col.name)))?;
                            let bad = |e: String| Error::bad_file(&file.path, format!("column {}: {e}", col.name));
                            let mut i = 0usize;
                            match &lookups[c] {
                                // The first key column starts every row from seed 42: a
                                // dictionary's values are hashed (and looked up) once each.
                                Lookup::Bytes(m) if c == 0 && matches!(array.data_type(), arrow_schema::DataType::Dictionary(..)) => {
                                    use arrow_array::cast::AsArray;
                                    let dict = array.as_any_dictionary();
                                    let mut per: Vec<Option<(i32, u64)>> = Vec::with_capacity(dict.values().len());
                                    each_bytes(dict.values(), &mut |v| {
                                        per.push(v.map(|b| (hash_bytes(b, SPARK_SEED), if m.is_empty() { 0 } else { m.get(b).copied().unwrap_or(0) })))
                                    })
                                    .map_err(bad)?;
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
                                }
                                Lookup::Bytes(m) => each_bytes(array, &mut |v| {
                                    match v {
                                        None => null[i] = true,
                                        Some(b) => {
                                            h[i] = hash_bytes(b, h[i]);
                                            mask[i] &= if m.is_empty() { 0 } else { m.get(b).copied().unwrap_or(0) };
                                        }
                                    }
                                    i += 1;
                                })
                                .map_err(bad)?,
                                Lookup::Wide(m) => each_i128(array, &mut |v| {
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
                                .map_err(bad)?,
                                Lookup::Int(m) => each_i64(array, ty, &mut |v| {
                                    match v {
                                        None => null[i] = true,
                                        Some(x) => {
                                            h[i] = hash_value(&Value::from_i64_key(x, ty), h[i]);
                                            mask[i] &= if m.is_empty() { 0 } else { m.get(&x).copied().unwrap_or(0) };
                                        }
                                    }
                                    i += 1;
                                })
                                .map_err(bad)?,
                            }
                        }
                    }
                }
                out.rows += rows as u64;
                for i in 0..rows {
                    if null[i] {
                        out.null_rows += 1;
                        out.null_partition_rows[pmod(h[i], n) as usize] += 1;
                        continue;
                    }
                    out.partition_rows[pmod(h[i], n) as usize] += 1;
                    if mask[i] != 0 {
                        out.key_rows[mask[i].trailing_zeros() as usize] += 1;
                    }
                }
                Ok(())
            };
            if fields.is_empty() {
                each_batch(None, rg_rows)?;
                return Ok(out);
            }
            let meta = read_hint(&file.meta, &fields)
                .and_then(|s| ArrowReaderMetadata::try_new(file.meta.metadata().clone(), ArrowReaderOptions::new().with_schema(s)).ok())
                .unwrap_or_else(|| file.meta.clone());
            let f = File::open(&file.path).map_err(|e| Error::Io { path: file.path.clone(), source: e })?;
            let mask = ProjectionMask::roots(meta.parquet_schema(), fields.iter().copied());
            let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta)
                .with_projection(mask)
                .with_row_groups(vec![g])
                .with_batch_size(64 * 1024)
                .build()
                .map_err(|e| Error::bad_file(&file.path, e))?;
            for batch in reader {
                let batch = batch.map_err(|e| Error::bad_file(&file.path, format!("row group {g}: {e}")))?;
                each_batch(Some(&batch), batch.num_rows())?;
            }
            Ok(out)
        })
        .collect::<Result<Vec<_>>>()?;

    let mut total =
        PartitionScan { rows: 0, null_rows: 0, null_partition_rows: vec![0; n as usize], partition_rows: vec![0; n as usize], key_rows: vec![0; keys.len()] };
    for p in parts {
        total.rows += p.rows;
        total.null_rows += p.null_rows;
        total.partition_rows.iter_mut().zip(&p.partition_rows).for_each(|(a, b)| *a += b);
        total.null_partition_rows.iter_mut().zip(&p.null_partition_rows).for_each(|(a, b)| *a += b);
        total.key_rows.iter_mut().zip(&p.key_rows).for_each(|(a, b)| *a += b);
    }
    Ok(total)
}

/// One row group's key chunk (row group `g` of file number `fi`) counted from its pages into
/// `out`; `None` when the chunk must be read through Arrow instead (nothing was counted then).
#[allow(clippy::too_many_arguments)]
fn scan_pages(
    file: &crate::source::DataFile,
    fi: usize,
    g: usize,
    name: &str,
    n: u32,
    m: &HashMap<Vec<u8>, u64>,
    scratch: &mut super::pages::Scratch,
    last: &mut super::pages::LastFile,
    out: &mut PartitionScan,
) -> Option<Result<()>> {
    let schema = file.meta.parquet_schema();
    let leaf = schema.columns().iter().position(|c| c.path().parts().len() == 1 && c.path().parts()[0] == name)?;
    let descr = schema.column(leaf);
    if !super::pages::eligible(&descr) {
        return None;
    }
    let (f, len) = match last.open(fi, &file.path) {
        Ok(open) => open,
        Err(e) => return Some(Err(Error::Io { path: file.path.clone(), source: e })),
    };
    let rg = file.meta.metadata().row_group(g);
    let rows = rg.num_rows().max(0) as usize;
    struct Parts<'a> {
        n: u32,
        m: &'a HashMap<Vec<u8>, u64>,
        out: &'a mut PartitionScan,
    }
    impl Parts<'_> {
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
    impl super::pages::Sink for Parts<'_> {
        fn dict(&mut self, d: &super::pages::Dict) {
            for (v, rows) in d.used() {
                self.add(v, rows as u64);
            }
        }
        fn one(&mut self, v: &[u8], rows: u64) {
            self.add(v, rows);
        }
    }
    let mut sink = Parts { n, m, out };
    let counted = super::pages::count_chunk(&f, len, rg.column(leaf), &descr, rows, scratch, &mut sink)?;
    let out = sink.out;
    out.rows += rows as u64;
    out.null_rows += counted.nulls;
    // A NULL key leaves the hash at its seed, 42.
    out.null_partition_rows[pmod(SPARK_SEED, n) as usize] += counted.nulls;
    Some(Ok(()))
}

/// Sizes of a table from its footers, before any data is read.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct TableSize {
    pub rows: u64,
    /// Compressed bytes of every column chunk (what Spark's planner sees as the table size).
    pub disk_bytes: u64,
    /// Uncompressed bytes of every column chunk: what the rows weigh once decoded.
    pub memory_bytes: u64,
}

impl TableSize {
    pub fn of(table: &Table) -> TableSize {
        let mut s = TableSize { rows: 0, disk_bytes: 0, memory_bytes: 0 };
        for f in &table.files {
            for rg in f.meta.metadata().row_groups() {
                s.rows += rg.num_rows().max(0) as u64;
                for c in rg.columns() {
                    s.disk_bytes += c.compressed_size().max(0) as u64;
                    s.memory_bytes += c.uncompressed_size().max(0) as u64;
                }
            }
        }
        s
    }
    pub fn bytes_per_row(&self) -> f64 {
        if self.rows == 0 {
            0.0
        } else {
            self.memory_bytes as f64 / self.rows as f64
        }
    }
}
