//! What Spark sends through the shuffle when it reduces each map task's rows first: one record
//! per partition value per map task (partial aggregation), or at most N (a group limit). The
//! map tasks are Spark's file splits ([`map_tasks`]); each task's rows are counted per value
//! ([`reduced_records`]), so the records of every shuffle partition are exact for that split.

use arrow_array::BooleanArray;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use rayon::prelude::*;

use crate::count::{decode_key, encode_values, Atoms, KeySpec};
use crate::value::{KeyType, Value};

use crate::count::filter::{all_true, field_ci, RowFilter};
use crate::count::weights::RowWeights;
use crate::error::{Error, Result};
use crate::hash::spark_partition;
use crate::table::{ColumnSource, ResolvedColumn, Table};

pub use crate::count::map_tasks::{map_tasks, MapTask};

/// Records per shuffle partition when each map task sends at most `limit` rows per value of
/// `keys` (1: partial aggregation), counting the rows that pass `filter`.
pub fn reduced_records(
    table: &Table,
    keys: &KeySpec,
    filter: Option<&RowFilter>,
    weights: Option<&RowWeights>,
    tasks: &[MapTask],
    partitions: u32,
    limit: u64,
) -> Result<Vec<u64>> {
    if keys.columns.iter().any(|c| matches!(c.source, ColumnSource::Partition { .. })) {
        return Err(Error::Usage(format!(
            "{}: a partition column key: the map-side records are not counted",
            table.display
        )));
    }
    let per_task: Vec<Vec<u64>> = tasks
        .par_iter()
        .map(|t| task_records(table, keys, filter, weights, t, partitions, limit))
        .collect::<Result<_>>()?;
    let mut out = vec![0u64; partitions.max(1) as usize];
    for t in per_task {
        out.iter_mut().zip(t).for_each(|(o, r)| *o += r);
    }
    Ok(out)
}

/// The records of both shuffles of a GROUP BY with DISTINCT aggregates, per partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistinctRecords {
    /// By the key, the DISTINCT columns (and the group id over several columns).
    pub first: Vec<u64>,
    /// By the key.
    pub second: Vec<u64>,
}

/// GROUP BY with DISTINCT aggregates of `distinct` (one column each), as Spark plans it. Over
/// one column: each map task sends one record per distinct (key, value) pair, shuffled by
/// both; each task of that shuffle sends one record per key it holds, shuffled by the key.
/// Over several (Spark's `RewriteDistinctAggregates`), each row is first copied once per
/// column, as (key, that column, NULL for the others, group id 1..n), plus once as (key,
/// NULLs, 0) when `regular` aggregates read a column, and the copies are reduced as the pairs
/// are. A NULL adds nothing to Spark's hash, so a copy's partition is that of (key, value, id).
/// Spark numbers the columns in the order of a hash of its own expressions, which differs from
/// run to run: one result per order (permutation of the columns), one for a single column.
pub fn distinct_records(
    table: &Table,
    keys: &KeySpec,
    distinct: &[ResolvedColumn],
    regular: bool,
    filter: Option<&RowFilter>,
    tasks: &[MapTask],
    partitions: u32,
) -> Result<Vec<DistinctRecords>> {
    let mut all = keys.clone();
    all.columns.extend(distinct.iter().cloned());
    if all.columns.iter().any(|c| matches!(c.source, ColumnSource::Partition { .. })) {
        return Err(Error::Usage(format!(
            "{}: a partition column key: the map-side records are not counted",
            table.display
        )));
    }
    let shape = Expansion {
        types: all.types(),
        nk: keys.columns.len(),
        groups: distinct.len(),
        regular,
        partitions,
    };
    let per_task: Vec<TaskCopies> = tasks
        .par_iter()
        .map(|t| {
            task_rows(table, &all, filter, None, t, &|b: &[u8]| shape.copies(b))
                .map(|rows| TaskCopies::of(rows.into_values().map(|v| v.0)))
        })
        .collect::<Result<_>>()?;
    Ok(orders(distinct.len()).iter().map(|gid_of| shape.records(&per_task, gid_of)).collect())
}

/// How a row of (key, distinct columns) is copied.
struct Expansion {
    types: Vec<KeyType>,
    nk: usize,
    groups: usize,
    regular: bool,
    partitions: u32,
}

/// The copies of one distinct row of (key, distinct columns).
struct Copies {
    key_id: u64,
    key_part: u32,
    /// Per column: the identity of (key, value) and its partition under each group id
    /// (index i: id i + 1; one entry, no id, over a single column).
    columns: Vec<(u64, Vec<u32>)>,
    /// The partition of (key, 0), the regular aggregates' copy.
    regular_part: Option<u32>,
}

impl Expansion {
    fn copies(&self, b: &[u8]) -> Copies {
        let v = decode_key(b, &self.types);
        let (key, nk) = (&v[..self.nk], self.nk);
        let with = |extra: &[Value]| -> Vec<Value> { key.iter().chain(extra).cloned().collect() };
        let columns = (0..self.groups)
            .map(|i| {
                let pair = with(&v[nk + i..=nk + i]);
                let mut pair_types = self.types[..nk].to_vec();
                pair_types.push(self.types[nk + i]);
                let id = hash64(
                    &[encode_values(&pair, &pair_types), (i as u32).to_le_bytes().to_vec()]
                        .concat(),
                );
                let parts = if self.groups == 1 {
                    vec![spark_partition(&pair, self.partitions)]
                } else {
                    (1..=self.groups as i32)
                        .map(|g| {
                            spark_partition(
                                &with(&[v[nk + i].clone(), Value::Int(g)]),
                                self.partitions,
                            )
                        })
                        .collect()
                };
                (id, parts)
            })
            .collect();
        Copies {
            key_id: hash64(&encode_values(key, &self.types[..nk])),
            key_part: spark_partition(key, self.partitions),
            columns,
            regular_part: (self.groups > 1 && self.regular)
                .then(|| spark_partition(&with(&[Value::Int(0)]), self.partitions)),
        }
    }

    /// Both shuffles' records when column i gets the group id `gid_of[i] + 1`.
    fn records(&self, tasks: &[TaskCopies], gid_of: &[usize]) -> DistinctRecords {
        let n = self.partitions.max(1) as usize;
        let mut first = vec![0u64; n];
        // Each (partition of the first shuffle, key) once, with the key's partition.
        let mut second_keys: hashbrown::HashMap<(u32, u64), u32> = hashbrown::HashMap::new();
        for t in tasks {
            let column_copies = t.columns.iter().map(|(c, key_id, key_part, parts)| {
                (parts[if parts.len() == 1 { 0 } else { gid_of[*c] }], *key_id, *key_part)
            });
            let regular_copies =
                t.regular.iter().map(|(key_id, (q, key_part))| (*q, *key_id, *key_part));
            for (q, key_id, key_part) in column_copies.chain(regular_copies) {
                first[q as usize] += 1;
                second_keys.insert((q, key_id), key_part);
            }
        }
        let mut second = vec![0u64; n];
        for key_part in second_keys.values() {
            second[*key_part as usize] += 1;
        }
        DistinctRecords { first, second }
    }
}

/// One map task's copies, each once: (column, key, key's partition, partitions by group id),
/// and the regular copies by key: (partition, key's partition).
struct TaskCopies {
    columns: Vec<(usize, u64, u32, Vec<u32>)>,
    regular: hashbrown::HashMap<u64, (u32, u32)>,
}

impl TaskCopies {
    fn of(rows: impl Iterator<Item = Copies>) -> TaskCopies {
        let mut columns: hashbrown::HashMap<u64, (usize, u64, u32, Vec<u32>)> =
            hashbrown::HashMap::new();
        let mut regular = hashbrown::HashMap::new();
        for r in rows {
            for (i, (id, parts)) in r.columns.into_iter().enumerate() {
                columns.entry(id).or_insert((i, r.key_id, r.key_part, parts));
            }
            if let Some(q) = r.regular_part {
                regular.insert(r.key_id, (q, r.key_part));
            }
        }
        TaskCopies { columns: columns.into_values().collect(), regular }
    }
}

/// Every numbering of `n` columns: per order, each column's index among the group ids.
fn orders(n: usize) -> Vec<Vec<usize>> {
    if n <= 1 {
        return vec![vec![0; n]];
    }
    let mut out = Vec::new();
    for rest in orders(n - 1) {
        // Insert column n-1 at every position of each order of the others.
        for pos in 0..n {
            out.push(
                rest.iter()
                    .map(|&g| if g >= pos { g + 1 } else { g })
                    .chain(std::iter::once(pos))
                    .collect(),
            );
        }
    }
    out
}

/// One map task's records per shuffle partition.
fn task_records(
    table: &Table,
    keys: &KeySpec,
    filter: Option<&RowFilter>,
    weights: Option<&RowWeights>,
    task: &MapTask,
    partitions: u32,
    limit: u64,
) -> Result<Vec<u64>> {
    let types = keys.types();
    let rows = task_rows(table, keys, filter, weights, task, &|b: &[u8]| {
        spark_partition(&decode_key(b, &types), partitions)
    })?;
    let mut out = vec![0u64; partitions.max(1) as usize];
    for (part, n) in rows.values() {
        out[*part as usize] += (*n).min(limit);
    }
    Ok(out)
}

/// A map task's rows per key: the 64-bit hash of its bytes (as `group_keys` encodes them) ->
/// what `new` made of the key when first seen, and its rows. 16 bytes and the value a key,
/// not the key's bytes: a task of 15 million distinct keys holds about 400 MB, not 1.5 GB.
type Rows<V> = hashbrown::HashMap<u64, (V, u64)>;

/// A stable 64-bit hash (SipHash with fixed keys): equal keys of different tasks agree. Two
/// keys of a table share one with a chance of about n^2 / 2^65 (1 in 150,000 for 15 million).
fn hash64(b: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    h.write(b);
    h.finish()
}

/// One map task's rows per value of `keys`, of the rows that pass `filter`, each row as many
/// times as `weights` says it appears in the joins it takes part in (see `crate::count::weights`).
fn task_rows<V>(
    table: &Table,
    keys: &KeySpec,
    filter: Option<&RowFilter>,
    weights: Option<&RowWeights>,
    task: &MapTask,
    new: &(dyn Fn(&[u8]) -> V + Sync),
) -> Result<Rows<V>> {
    let mut rows = Rows::default();
    let (key_names, types) = (keys.names(), keys.types());
    let names: Vec<String> = key_names
        .iter()
        .cloned()
        .chain(filter.map(|f| f.columns()).unwrap_or_default())
        .chain(weights.map(RowWeights::columns).unwrap_or_default())
        .collect();
    for &(fi, g) in task {
        let file = &table.files[fi];
        let mut fields: Vec<usize> = names
            .iter()
            .map(|n| {
                field_ci(file, n)
                    .ok_or_else(|| Error::bad_file(&file.path, format!("no column {n}")))
            })
            .collect::<Result<_>>()?;
        fields.sort_unstable();
        fields.dedup();
        let mask = ProjectionMask::roots(file.meta.parquet_schema(), fields.iter().copied());
        let reader =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file.open()?, file.meta.clone())
                .with_projection(mask)
                .with_row_groups(vec![g])
                .with_batch_size(64 * 1024)
                .build()
                .map_err(|e| Error::bad_file(&file.path, e))?;
        for batch in reader {
            let batch =
                batch.map_err(|e| Error::bad_file(&file.path, format!("row group {g}: {e}")))?;
            let pass = match filter {
                Some(f) => Some(
                    all_true(&f.conditions, &batch).map_err(|e| Error::bad_file(&file.path, e))?,
                ),
                None => None,
            };
            let schema = batch.schema();
            let cols = key_names
                .iter()
                .map(|n| {
                    schema
                        .fields()
                        .iter()
                        .position(|f| f.name().eq_ignore_ascii_case(n))
                        .map(|i| batch.column(i).clone())
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Error::bad_file(&file.path, "a key column is missing"))?;
            let w = weights
                .map(|w| w.of_batch(&batch))
                .transpose()
                .map_err(|e| Error::bad_file(&file.path, e))?;
            count_batch(&cols, &types, pass.as_ref(), w.as_deref(), &mut rows, new)
                .map_err(|e| Error::bad_file(&file.path, e))?;
        }
    }
    Ok(rows)
}

/// Each passing row of `cols` counted under its key, `weight` times (one reused buffer for
/// the encoding).
fn count_batch<V>(
    cols: &[arrow_array::ArrayRef],
    types: &[KeyType],
    pass: Option<&BooleanArray>,
    weight: Option<&[u64]>,
    rows: &mut Rows<V>,
    new: &(dyn Fn(&[u8]) -> V + Sync),
) -> std::result::Result<(), String> {
    let atoms: Vec<Atoms> = cols
        .iter()
        .zip(types)
        .map(|(a, t)| Atoms::from_array(a, *t))
        .collect::<std::result::Result<_, _>>()?;
    let mut buf = Vec::new();
    for row in 0..cols.first().map_or(0, |c| c.len()) {
        let n = weight.map_or(1, |w| w[row]);
        if n == 0 || pass.is_some_and(|p| !p.value(row)) {
            continue;
        }
        buf.clear();
        atoms.iter().for_each(|a| {
            a.encode(row, &mut buf);
        });
        rows.entry(hash64(&buf)).or_insert_with(|| (new(&buf), 0)).1 += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows (k, a, b): every distinct copy is one record of the first shuffle, whatever the
    /// order of the columns; (k, a) pairs repeated over b are one copy.
    #[test]
    fn distinct_copies_are_counted_once_per_task_and_column() {
        use arrow_array::{ArrayRef, Int64Array, RecordBatch};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.parquet");
        let col = |v: Vec<Option<i64>>| Arc::new(Int64Array::from(v)) as ArrayRef;
        // k=1: a in {1, 2} (3 rows), b in {1, 2, NULL}; k=2: a {5}, b {5}; k NULL: a {1}, b {1}.
        let k = vec![Some(1), Some(1), Some(1), Some(1), Some(2), None];
        let a = vec![Some(1), Some(1), Some(2), Some(1), Some(5), Some(1)];
        let b = vec![Some(1), Some(2), Some(1), None, Some(5), Some(1)];
        let batch =
            RecordBatch::try_from_iter(vec![("k", col(k)), ("a", col(a)), ("b", col(b))]).unwrap();
        crate::write_test_parquet(&p, &batch, None);
        let t = Table::open(&[p.to_string_lossy().into_owned()]).unwrap();
        let keys = KeySpec { columns: vec![t.resolve("k").unwrap()] };
        let d = [t.resolve("a").unwrap(), t.resolve("b").unwrap()];
        let tasks = vec![vec![(0, 0)]];
        let sum = |v: &[u64]| v.iter().sum::<u64>();
        // (k, a): 4 distinct pairs, (k, b): 5; the regular copies: 3 keys.
        for (regular, copies) in [(false, 9), (true, 12)] {
            let all = distinct_records(&t, &keys, &d, regular, None, &tasks, 8).unwrap();
            assert_eq!(all.len(), 2);
            for r in &all {
                assert_eq!(sum(&r.first), copies);
                // One record per key per partition of the first shuffle that holds it.
                assert!(sum(&r.second) >= 3 && sum(&r.second) <= copies, "{r:?}");
            }
        }
        // One column: the pairs, no group id, one order.
        let one = distinct_records(&t, &keys, &d[..1], true, None, &tasks, 8).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(sum(&one[0].first), 4);
        let pair = |k: i64, a: i64| spark_partition(&[Value::Long(k), Value::Long(a)], 8) as usize;
        assert!(one[0].first[pair(1, 1)] >= 1 && one[0].first[pair(2, 5)] >= 1);
    }

    #[test]
    fn every_numbering_of_the_distinct_columns_once() {
        assert_eq!(orders(1), vec![vec![0]]);
        let mut three = orders(3);
        three.sort();
        assert_eq!(
            three,
            vec![
                vec![0, 1, 2],
                vec![0, 2, 1],
                vec![1, 0, 2],
                vec![1, 2, 0],
                vec![2, 0, 1],
                vec![2, 1, 0]
            ]
        );
    }
}
