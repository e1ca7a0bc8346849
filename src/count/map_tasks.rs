//! Spark's map tasks over a table read from files (`FilePartition`): which row groups each
//! task reads. A shuffle's map outputs are these tasks', so they bound how finely AQE can split
//! a skewed partition, and what a GROUP BY's partial aggregation sends.

use parquet::file::metadata::RowGroupMetaData;

use crate::settings::FileSplits;
use crate::table::Table;

/// One map task: the row groups it reads, as (file, row group).
pub type MapTask = Vec<(usize, usize)>;

/// Spark's map tasks over `table` (FilePartition): files cut into splits of at most
/// min(max partition bytes, max(open cost, total bytes / min partitions)), packed largest
/// first into tasks of that size (each file counting the open cost more); a row group is read
/// by the split that holds its midpoint (parquet-mr's rule).
pub fn map_tasks(table: &Table, files: &FileSplits) -> Vec<MapTask> {
    let lens: Vec<u64> = table.files.iter().map(|f| f.byte_len()).collect();
    splits(&lens, files)
        .into_iter()
        .map(|task| {
            task.into_iter()
                .flat_map(|(fi, start, len)| row_groups_in(table, fi, start, len))
                .collect()
        })
        .collect()
}

/// Spark's file partitions for files of these lengths: per task, its splits as (file, start,
/// length).
fn splits(lens: &[u64], files: &FileSplits) -> Vec<Vec<(usize, u64, u64)>> {
    let open = files.open_cost;
    let total: u64 = lens.iter().map(|l| l + open).sum();
    let per_core = files.min_partitions.map_or(u64::MAX, |c| total / u64::from(c.max(1)));
    let max_split = files.max_partition_bytes.min(open.max(per_core)).max(1);
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
        size += s.2 + open;
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
    (0..meta.num_row_groups())
        .filter(|&g| (start..start + len).contains(&midpoint(meta.row_group(g))))
        .map(|g| (fi, g))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    #[test]
    fn a_large_cluster_splits_files_at_128_mib_and_packs_small_ones() {
        // 300 MiB: three splits (128, 128, 44); two 1 MiB files share a task with the 44 MiB.
        let t = splits(&[300 * MB, MB, MB], &FileSplits::with_cores(None));
        let sizes: Vec<Vec<u64>> =
            t.iter().map(|task| task.iter().map(|s| s.2 / MB).collect()).collect();
        assert_eq!(sizes, vec![vec![128], vec![128], vec![44, 1, 1]]);
    }

    #[test]
    fn few_cores_make_smaller_splits_and_open_costs_pack_small_files() {
        // Five 120 KB files on 2 cores: total 5 x (120 KB + 4 MiB), 10.3 MiB a core: three
        // files a task (each counts 4 MiB more), so two tasks, as Spark's local[2] reads them.
        let t = splits(&[120_000; 5], &FileSplits::with_cores(Some(2)));
        assert_eq!(t.iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 2]);
        // One small file is one task whatever the cores.
        assert_eq!(splits(&[500_000], &FileSplits::with_cores(Some(64))).len(), 1);
        // 100 MiB on 4 cores: 26 MiB splits (104 MiB / 4 a core, over 4 MiB): 26, 26, 26, 22.
        let t = splits(&[100 * MB], &FileSplits::with_cores(Some(4)));
        assert_eq!(t.len(), 4);
        assert!(t.iter().all(|task| task.len() == 1 && task[0].2 <= 26 * MB), "{t:?}");
    }
}
