//! The counting engine: how often each value of a key occurs in a table (`profile`), and how
//! many rows each Spark shuffle partition would receive (`scan`).
//!
//! `profile`, one pass over a table (two when a split count cannot prove its top):
//!
//! 1. `job`: per key, how it is counted (one fixed-width, wide decimal, string or composite
//!    key) and where its keys go (a stage, and past the memory budget a bounded counter).
//! 2. `units`: the row groups to read, whole or in part; for a sample, whole row groups,
//!    whole pages of the first key column, or random 512-row runs (each a sampling unit).
//! 3. `reader`: each unit is read in parallel, only its key columns. String and binary chunks
//!    are counted straight from their pages where they allow it (`pages`), the rest through
//!    Arrow one batch at a time (`batch`, with `arrays` and `encode` turning Arrow values
//!    into counting keys). Every worker thread has its `local` share of the counting: it
//!    stages its keys (`stage`), or past the budget feeds the bounded counter (`counter`); a
//!    large dictionary-encoded key may have its chunks split (`split`), for the exact top
//!    values without an exact table of every value. In sample mode each unit also keeps a
//!    `tally` of its frequent values and NULLs.
//! 4. `job` again: the staged keys are counted (exactly, partition by partition) into each
//!    key's top values and distinct count, and `profile` turns them into shares, scaled up
//!    from a sample with the error bounds of `stats`.
//!
//! `scan` makes one exact pass over a join key: the rows of each shuffle partition, by Spark's
//! hash, and the rows of a few looked-for keys. `table_size` reads a table's sizes from its
//! footers. `filter` writes the keys of the rows that pass a query's conditions, and `weights`
//! gives each row the rows it makes through the joins before.
//!
//! These are the embedded engine's; `engine` is the seam through which the measure steps reach
//! them or another engine that holds the table: Spark's, or `memory`'s Arrow batches (what the
//! rewrite tests describe their tables with).

mod arrays;
mod batch;
mod counter;
mod dense;
mod encode;
pub mod engine;
pub mod filter;
mod job;
mod local;
pub mod map_tasks;
pub mod memory;
mod pages;
mod profile;
mod reader;
mod scan;
pub mod shuffle_bytes;
mod spill;
mod split;
mod stage;
mod stats;
mod table_size;
mod tally;
mod units;
pub mod weights;

#[cfg(test)]
mod page_reader_tests;

pub(crate) use arrays::{each_i64, each_plain_i64};
pub(crate) use encode::{decode_key, encode_values, tally_key, Atoms};
pub use encode::{each_group_key, group_keys};
pub use engine::{Embedded, Engine, EngineRef};
pub use memory::InMemory;
pub use profile::profile;
pub use scan::{scan, scan_by_map, PartitionScan, MAX_LOOKUP};
pub(crate) use stats::share_error;
pub use table_size::TableSize;
pub(crate) use tally::UnitTally;

use crate::table::ResolvedColumn;
use crate::value::{KeyType, Value};

/// A key to count: one column, or several counted as one composite key.
#[derive(Debug, Clone)]
pub struct KeySpec {
    pub columns: Vec<ResolvedColumn>,
}

impl KeySpec {
    pub fn name(&self) -> String {
        self.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(",")
    }
    pub fn types(&self) -> Vec<KeyType> {
        self.columns.iter().map(|c| c.key_type).collect()
    }
    pub fn names(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.name.clone()).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sample {
    Fraction(f64),
    Rows(u64),
}

impl std::str::FromStr for Sample {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let s = s.trim();
        let bad = || {
            format!("bad sample {s:?}: give a fraction in (0, 1] such as 0.05, a percentage such as 5%, or a row count such as 1000000")
        };
        if let Some(p) = s.strip_suffix('%') {
            let f: f64 = p.trim().parse().map_err(|_| bad())?;
            if f > 0.0 && f <= 100.0 {
                return Ok(Sample::Fraction(f / 100.0));
            }
            return Err(bad());
        }
        if let Ok(n) = s.replace('_', "").parse::<u64>() {
            return if n == 0 {
                Err(bad())
            } else if n == 1 {
                Ok(Sample::Fraction(1.0))
            } else {
                Ok(Sample::Rows(n))
            };
        }
        match s.parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 1.0 => Ok(Sample::Fraction(f)),
            _ => Err(bad()),
        }
    }
}

/// The default memory for staged keys (`--memory`): keys past it are spilled, so that a key
/// of tens of millions of distinct values is counted exactly in bounded memory (BENCHMARKS.md,
/// "The 20M-distinct int64 key in bounded memory").
pub const STAGE_MEMORY: usize = 96 << 20;

#[derive(Debug, Clone)]
pub struct ProfileOptions {
    pub top: usize,
    pub sample: Option<Sample>,
    pub seed: u64,
    /// Memory for the staged keys, in bytes, shared by all keys: past it they spill to a
    /// temporary file (see `spill`), and the counts stay exact.
    pub memory: usize,
    /// Where the passes report the rows they read.
    pub progress: crate::progress::ProgressRef,
    /// Count every distinct value exactly, even where the exact top values alone are much
    /// cheaper (see `split`): the distinct count is then exact instead of an estimate.
    pub exact_distinct: bool,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            top: 20,
            sample: None,
            seed: 42,
            memory: STAGE_MEMORY,
            progress: Default::default(),
            exact_distinct: false,
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SampleInfo {
    /// "whole row groups", "whole pages" or "row selections".
    pub method: String,
    pub rows_read: u64,
    pub fraction: f64,
    pub row_groups_read: usize,
    pub row_groups_total: usize,
    /// With whole pages: the pages (of the first key column) read, and in the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_read: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_total: Option<usize>,
    /// The column whose pages were sampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_column: Option<String>,
    /// With whole files (the Spark engine's block sample): the files read, and in the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_read: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files_total: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct KeyCount {
    pub key: Vec<Value>,
    /// Rows with this key: exact, a lower bound (see `count_error`), or scaled up from a sample.
    pub count: u64,
    /// Rows with this key in the sample (sample mode only).
    pub sample_count: Option<u64>,
    pub share: f64,
    /// Half-width of the 95% interval of `share` (sample mode only).
    pub share_error: Option<f64>,
}

/// A key's share of the rows (0 of none), as every engine reports it.
pub(crate) fn share(count: u64, rows: u64) -> f64 {
    if rows == 0 {
        0.0
    } else {
        count as f64 / rows as f64
    }
}

#[derive(Debug, Clone)]
pub struct ColumnProfile {
    pub spec: KeySpec,
    /// Rows of the table.
    pub rows: u64,
    /// Rows read to count.
    pub rows_read: u64,
    /// Rows whose key is NULL (any part NULL for a composite key); scaled in sample mode.
    pub nulls: u64,
    pub distinct: u64,
    pub distinct_exact: bool,
    /// The distinct count is a HyperLogLog estimate, not a count of the values read (with a
    /// sample, `distinct_exact` is false either way: the sample's count is not the table's).
    pub distinct_estimate: bool,
    pub counts_exact: bool,
    /// Counts may be up to this much below the truth (bounded-memory mode), 0 when exact.
    pub count_error: u64,
    /// The most frequent keys, NULL included, most frequent first.
    pub top: Vec<KeyCount>,
    pub sample: Option<SampleInfo>,
}
