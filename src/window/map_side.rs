//! What Spark sends through the shuffle when it reduces each map task's rows first: one record
//! per partition value per map task (partial aggregation), or at most N (a group limit). The
//! map tasks are Spark's file splits ([`map_tasks`]); each task's rows are counted per value
//! ([`reduced_records`]), so the records of every shuffle partition are exact for that split.

use arrow_array::BooleanArray;

use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::RowGroupMetaData;
use rayon::prelude::*;

use crate::count::{decode_key, encode_values, Atoms, KeySpec};
use crate::value::KeyType;

use crate::error::{Error, Result};
use crate::filter::{all_true, field_ci, RowFilter};
use crate::hash::spark_partition;
use crate::source::{ColumnSource, ResolvedColumn, Table};

/// `spark.sql.files.maxPartitionBytes`: the largest split.
pub const MAX_PARTITION_BYTES: u64 = 128 << 20;
/// `spark.sql.files.openCostInBytes`: what opening a file costs, in bytes, when splits are packed.
pub const OPEN_COST_BYTES: u64 = 4 << 20;

/// One map task: the row groups it reads, as (file, row group).
pub type MapTask = Vec<(usize, usize)>;

/// Spark's map tasks over `table` (FilePartition): files cut into splits of at most
/// min(128 MiB, max(4 MiB, total bytes / cores)), packed largest first into tasks of that
/// size (each file counting 4 MiB more); a row group is read by the split that holds its
/// midpoint (parquet-mr's rule). `cores`: the cluster's parallelism (None: large, so the
/// splits are 128 MiB).
pub fn map_tasks(table: &Table, cores: Option<u32>) -> Vec<MapTask> {
    let lens: Vec<u64> = table.files.iter().map(|f| f.byte_len()).collect();
    splits(&lens, cores).into_iter().map(|task| task.into_iter().flat_map(|(fi, start, len)| row_groups_in(table, fi, start, len)).collect()).collect()
}

/// Spark's file partitions for files of these lengths: per task, its splits as (file, start,
/// length).
fn splits(lens: &[u64], cores: Option<u32>) -> Vec<Vec<(usize, u64, u64)>> {
    let total: u64 = lens.iter().map(|l| l + OPEN_COST_BYTES).sum();
    let per_core = cores.map_or(u64::MAX, |c| total / u64::from(c.max(1)));
    let max_split = MAX_PARTITION_BYTES.min(OPEN_COST_BYTES.max(per_core));
    // (file, start, length) of each split, largest first (a stable sort, as Scala's sortBy).
    let mut splits: Vec<(usize, u64, u64)> = Vec::new();
    for (fi, &len) in lens.iter().enumerate() {
        let mut start = 0;
        while start < len {
            splits.push((fi, start, max_split.min(len - start)));
            start += max_split;
        }
    }
    splits.sort_by_key(|s| std::cmp::Reverse(s.2));
    let mut tasks: Vec<Vec<(usize, u64, u64)>> = Vec::new();
    let (mut current, mut size) = (Vec::new(), 0u64);
    for s in splits {
        if size + s.2 > max_split && !current.is_empty() {
            tasks.push(std::mem::take(&mut current));
            size = 0;
        }
        size += s.2 + OPEN_COST_BYTES;
        current.push(s);
    }
    if !current.is_empty() {
        tasks.push(current);
    }
    tasks
}

/// The row groups of file `fi` whose midpoint lies in [start, start + len).
fn row_groups_in(table: &Table, fi: usize, start: u64, len: u64) -> Vec<(usize, usize)> {
    let meta = table.files[fi].meta.metadata();
    (0..meta.num_row_groups()).filter(|&g| (start..start + len).contains(&midpoint(meta.row_group(g)))).map(|g| (fi, g)).collect()
}

/// A row group's midpoint: its first chunk's first page plus half its compressed bytes.
fn midpoint(rg: &RowGroupMetaData) -> u64 {
    let first = rg.columns().first().map_or(0, |c| {
        let data = c.data_page_offset();
        c.dictionary_page_offset().filter(|&d| d > 0 && d < data).unwrap_or(data)
    });
    let total: i64 = rg.columns().iter().map(|c| c.compressed_size()).sum();
    (first + total / 2).max(0) as u64
}

/// Records per shuffle partition when each map task sends at most `limit` rows per value of
/// `keys` (1: partial aggregation), counting the rows that pass `filter`.
pub fn reduced_records(table: &Table, keys: &KeySpec, filter: Option<&RowFilter>, tasks: &[MapTask], partitions: u32, limit: u64) -> Result<Vec<u64>> {
    if keys.columns.iter().any(|c| matches!(c.source, ColumnSource::Partition { .. })) {
        return Err(Error::Usage(format!("{}: a partition column key: the map-side records are not counted", table.display)));
    }
    let per_task: Vec<Vec<u64>> = tasks.par_iter().map(|t| task_records(table, keys, filter, t, partitions, limit)).collect::<Result<_>>()?;
    let mut out = vec![0u64; partitions.max(1) as usize];
    for t in per_task {
        out.iter_mut().zip(t).for_each(|(o, r)| *o += r);
    }
    Ok(out)
}

/// GROUP BY with one DISTINCT aggregate, as Spark plans it: each map task sends one record per
/// distinct (key, value) pair, shuffled by both; each task of that shuffle sends one record per
/// key it holds, shuffled by the key. The records per partition of each shuffle.
pub fn distinct_records(
    table: &Table,
    keys: &KeySpec,
    distinct: &ResolvedColumn,
    filter: Option<&RowFilter>,
    tasks: &[MapTask],
    partitions: u32,
) -> Result<(Vec<u64>, Vec<u64>)> {
    let mut both = keys.clone();
    both.columns.push(distinct.clone());
    if both.columns.iter().any(|c| matches!(c.source, ColumnSource::Partition { .. })) {
        return Err(Error::Usage(format!("{}: a partition column key: the map-side records are not counted", table.display)));
    }
    let (types, nk) = (both.types(), keys.columns.len());
    // Per pair: its partition in the first shuffle, its key's identity and partition.
    let new = |b: &[u8]| {
        let v = decode_key(b, &types);
        (spark_partition(&v, partitions), hash64(&encode_values(&v[..nk], &types[..nk])), spark_partition(&v[..nk], partitions))
    };
    let per_task: Vec<Rows<(u32, u64, u32)>> = tasks.par_iter().map(|t| task_rows(table, &both, filter, t, &new)).collect::<Result<_>>()?;
    let n = partitions.max(1) as usize;
    let mut first = vec![0u64; n];
    // Each (partition of the first shuffle, key) once, with the key's partition.
    let mut second_keys: hashbrown::HashMap<(u32, u64), u32> = hashbrown::HashMap::new();
    for rows in &per_task {
        for ((q, key, key_part), _) in rows.values() {
            first[*q as usize] += 1;
            second_keys.insert((*q, *key), *key_part);
        }
    }
    let mut second = vec![0u64; n];
    for key_part in second_keys.values() {
        second[*key_part as usize] += 1;
    }
    Ok((first, second))
}

/// One map task's records per shuffle partition.
fn task_records(table: &Table, keys: &KeySpec, filter: Option<&RowFilter>, task: &MapTask, partitions: u32, limit: u64) -> Result<Vec<u64>> {
    let types = keys.types();
    let rows = task_rows(table, keys, filter, task, &|b: &[u8]| spark_partition(&decode_key(b, &types), partitions))?;
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

/// One map task's rows per value of `keys`, of the rows that pass `filter`.
fn task_rows<V>(table: &Table, keys: &KeySpec, filter: Option<&RowFilter>, task: &MapTask, new: &(dyn Fn(&[u8]) -> V + Sync)) -> Result<Rows<V>> {
    let mut rows = Rows::default();
    let (key_names, types) = (keys.names(), keys.types());
    let names: Vec<String> = key_names.iter().cloned().chain(filter.map(|f| f.columns()).unwrap_or_default()).collect();
    for &(fi, g) in task {
        let file = &table.files[fi];
        let mut fields: Vec<usize> =
            names.iter().map(|n| field_ci(file, n).ok_or_else(|| Error::bad_file(&file.path, format!("no column {n}")))).collect::<Result<_>>()?;
        fields.sort_unstable();
        fields.dedup();
        let mask = ProjectionMask::roots(file.meta.parquet_schema(), fields.iter().copied());
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file.open()?, file.meta.clone())
            .with_projection(mask)
            .with_row_groups(vec![g])
            .with_batch_size(64 * 1024)
            .build()
            .map_err(|e| Error::bad_file(&file.path, e))?;
        for batch in reader {
            let batch = batch.map_err(|e| Error::bad_file(&file.path, format!("row group {g}: {e}")))?;
            let pass = match filter {
                Some(f) => Some(all_true(&f.conditions, &batch).map_err(|e| Error::bad_file(&file.path, e))?),
                None => None,
            };
            let schema = batch.schema();
            let cols = key_names
                .iter()
                .map(|n| schema.fields().iter().position(|f| f.name().eq_ignore_ascii_case(n)).map(|i| batch.column(i).clone()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Error::bad_file(&file.path, "a key column is missing"))?;
            count_batch(&cols, &types, pass.as_ref(), &mut rows, new).map_err(|e| Error::bad_file(&file.path, e))?;
        }
    }
    Ok(rows)
}

/// Each passing row of `cols` counted under its key (one reused buffer for the encoding).
fn count_batch<V>(
    cols: &[arrow_array::ArrayRef],
    types: &[KeyType],
    pass: Option<&BooleanArray>,
    rows: &mut Rows<V>,
    new: &(dyn Fn(&[u8]) -> V + Sync),
) -> std::result::Result<(), String> {
    let atoms: Vec<Atoms> = cols.iter().zip(types).map(|(a, t)| Atoms::from_array(a, *t)).collect::<std::result::Result<_, _>>()?;
    let mut buf = Vec::new();
    for row in 0..cols.first().map_or(0, |c| c.len()) {
        if pass.is_some_and(|p| !p.value(row)) {
            continue;
        }
        buf.clear();
        atoms.iter().for_each(|a| {
            a.encode(row, &mut buf);
        });
        rows.entry(hash64(&buf)).or_insert_with(|| (new(&buf), 0)).1 += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    #[test]
    fn a_large_cluster_splits_files_at_128_mib_and_packs_small_ones() {
        // 300 MiB: three splits (128, 128, 44); two 1 MiB files share a task with the 44 MiB.
        let t = splits(&[300 * MB, MB, MB], None);
        let sizes: Vec<Vec<u64>> = t.iter().map(|task| task.iter().map(|s| s.2 / MB).collect()).collect();
        assert_eq!(sizes, vec![vec![128], vec![128], vec![44, 1, 1]]);
    }

    #[test]
    fn few_cores_make_smaller_splits_and_open_costs_pack_small_files() {
        // Five 120 KB files on 2 cores: total 5 x (120 KB + 4 MiB), 10.3 MiB a core: three
        // files a task (each counts 4 MiB more), so two tasks, as Spark's local[2] reads them.
        let t = splits(&[120_000; 5], Some(2));
        assert_eq!(t.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 2]);
        // One small file is one task whatever the cores.
        assert_eq!(splits(&[500_000], Some(64)).len(), 1);
        // 100 MiB on 4 cores: 26 MiB splits (104 MiB / 4 a core, over 4 MiB): 26, 26, 26, 22.
        let t = splits(&[100 * MB], Some(4));
        assert_eq!(t.len(), 4);
        assert!(t.iter().all(|task| task.len() == 1 && task[0].2 <= 26 * MB), "{t:?}");
    }
}
