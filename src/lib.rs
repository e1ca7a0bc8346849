//! skewjoin: find the hot keys of a Spark join and take them out of the shuffle.
//!
//! Data flows one way: `table` (files, footers, columns) -> `count` (count keys; `spark` counts
//! them on the user's Spark) -> `classify` (null / placeholder / junk / demand) -> `keys` (one
//! table's report), or `plan` (a join measured, decided, emitted; `window` for a window or GROUP
//! BY) -> `rewrite` (a query's joins planned and spliced) -> `verify` (both queries run).
//! `diagnose` reads a Spark event log beside this flow. `hash` is Spark's own Murmur3, for the
//! partition of a key; `footer` (what every report adds, from the run's statistics) and `html` (the
//! drawing of the `--html` pages) are what the commands' reports share (docs/architecture.md has every
//! file).

pub mod cache;
pub mod classify;
pub mod cluster;
pub mod count;
pub mod diagnose;
pub mod error;
pub mod fix;
pub mod footer;
pub mod format;
pub mod guard;
pub mod hash;
pub mod html;
pub mod keys;
pub mod open;
mod page;
pub mod plan;
pub mod progress;
pub mod replay;
pub mod rewrite;
pub mod settings;
pub mod size;
pub mod spark;
pub mod sql;
pub mod stats;
pub mod table;
pub mod value;
pub mod verify;
pub mod window;

pub use error::{Error, Result};

/// A seeded xorshift64 generator for the unit tests' data.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Write `batch` to one Parquet file with `props` (the writer's defaults when None): the unit
/// tests' one Parquet writer.
#[cfg(test)]
pub(crate) fn write_test_parquet(
    path: &std::path::Path,
    batch: &arrow_array::RecordBatch,
    props: Option<parquet::file::properties::WriterProperties>,
) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), props).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}
