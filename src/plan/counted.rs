//! A join counted elsewhere: the counts a Spark session made of its two DataFrames
//! (`skewjoin.spark.skew_join`, where a side is not a whole scan of files this machine
//! reads), handed over as JSON (`plan --counts FILE`) and read into the `Measured` value that
//! `decide` takes, so the same decision, report and code follow. The key values come as the
//! pyspark driver sends them (`spark::wire`): integers as numbers, dates as days, timestamps as
//! microseconds, floats and decimals as strings, binaries as hex.

use std::path::Path;

use arrow_schema::Field;
use serde::Deserialize;
use serde_json::Value as Json;

use super::measure::{MapOutputs, Measured, SideMeasure};
use crate::count::{PartitionScan, TableSize};
use crate::error::{Error, Result};
use crate::value::{KeyType, Value};

/// The file: the shuffle partitions the counts were made for, the hot candidates (the most
/// frequent non-NULL keys of each side), and each side.
#[derive(Deserialize)]
struct Counts {
    partitions: u32,
    candidates: Vec<Vec<Json>>,
    left: SideCounts,
    right: SideCounts,
}

/// One side as Spark counted it.
#[derive(Deserialize)]
struct SideCounts {
    name: String,
    keys: Vec<String>,
    /// Every column: its name and Spark type (`simpleString`).
    columns: Vec<(String, String)>,
    rows: u64,
    /// Spark's estimate of the side's size (what it compares to the broadcast threshold).
    size_bytes: u64,
    /// The tasks that write its shuffle (its input partitions).
    map_tasks: u32,
    partition_rows: Vec<u64>,
    null_partition_rows: Vec<u64>,
    /// Rows of each candidate, in the order of `candidates`.
    key_rows: Vec<u64>,
}

fn usage(path: &Path, what: String) -> Error {
    Error::Usage(format!("--counts {}: {what}", path.display()))
}

/// The counts of `path`, made for `partitions` shuffle partitions.
pub fn read(path: &Path, partitions: u32) -> Result<Measured> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    let c: Counts = serde_json::from_str(&text)
        .map_err(|e| usage(path, format!("not the counts' JSON: {e}")))?;
    if c.partitions != partitions {
        return Err(usage(path, format!("counted for {} shuffle partitions, planned for {partitions}: give the same spark.sql.shuffle.partitions", c.partitions)));
    }
    let left = side(path, c.left, c.partitions, c.candidates.len())?;
    let right = side(path, c.right, c.partitions, c.candidates.len())?;
    if left.key_types.len() != right.key_types.len() || left.keys.is_empty() {
        return Err(usage(path, "the sides have different numbers of keys".into()));
    }
    let candidates =
        c.candidates.iter().map(|k| key(path, k, &left.key_types)).collect::<Result<Vec<_>>>()?;
    Ok(Measured { partitions, candidates, left, right })
}

/// A candidate's values in the keys' types.
fn key(path: &Path, k: &[Json], types: &[KeyType]) -> Result<Vec<Value>> {
    if k.len() != types.len() {
        return Err(usage(
            path,
            format!("a candidate has {} values for {} keys", k.len(), types.len()),
        ));
    }
    k.iter()
        .zip(types)
        .map(|(j, t)| {
            crate::spark::wire::value(j, *t)
                .ok_or_else(|| usage(path, format!("{j} is not a {} value", t.spark_name())))
        })
        .collect()
}

fn side(path: &Path, s: SideCounts, partitions: u32, candidates: usize) -> Result<SideMeasure> {
    let n = partitions as usize;
    if s.partition_rows.len() != n
        || s.null_partition_rows.len() != n
        || s.key_rows.len() != candidates
    {
        return Err(usage(path, format!("{}: the rows per partition or per candidate do not match the partitions and candidates", s.name)));
    }
    let type_of = |c: &str| s.columns.iter().find(|(n, _)| n.eq_ignore_ascii_case(c)).map(|x| &x.1);
    let key_types = s
        .keys
        .iter()
        .map(|k| {
            let t = type_of(k).ok_or_else(|| usage(path, format!("{}: no column {k}", s.name)))?;
            let field = Field::new(k, crate::spark::wire::arrow_type(t), true);
            crate::table::key_type_of(&field)
                .map_err(|why| usage(path, format!("{}: key {k}: {why}", s.name)))
        })
        .collect::<Result<Vec<_>>>()?;
    let null_rows = s.null_partition_rows.iter().sum();
    let scan = PartitionScan {
        rows: s.rows,
        null_rows,
        null_partition_rows: s.null_partition_rows,
        partition_rows: s.partition_rows,
        key_rows: s.key_rows,
    };
    let columns: Vec<String> = s.columns.iter().map(|c| c.0.clone()).collect();
    let hashable =
        s.columns.iter().filter(|c| !c.1.starts_with("map")).map(|c| c.0.clone()).collect();
    Ok(SideMeasure {
        table: format!("the DataFrame {}", s.name),
        name: s.name,
        keys: s.keys,
        key_types,
        columns,
        hashable,
        size: TableSize { rows: s.rows, disk_bytes: s.size_bytes, memory_bytes: s.size_bytes },
        read_bytes: read_bytes(s.size_bytes, s.rows),
        scan,
        maps: MapOutputs::Assumed(s.map_tasks.max(1)),
        shuffle: None,
        filter: None,
    })
}

/// A DataFrame's bytes read, from Spark's size estimate: that is the files' size for a scan, but
/// a product of its inputs' for a join, and Long.MaxValue where Spark does not know: taken at
/// most `MAX_ROW_BYTES` a row, so that an unknown size prices a scan high, not without end.
fn read_bytes(size_bytes: u64, rows: u64) -> u64 {
    const MAX_ROW_BYTES: u64 = 256;
    size_bytes.min(rows.saturating_mul(MAX_ROW_BYTES))
}
