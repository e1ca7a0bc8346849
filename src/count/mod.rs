//! The counting engine: how often each value of a key occurs in a table (`profile`), and how
//! many rows each Spark shuffle partition would receive (`scan`).
//!
//! `profile` reads only the key columns, one row group (or a sample of it) per task, in
//! parallel. String and binary chunks are counted straight from their pages where they allow
//! it (`pages`); the rest is read through Arrow. Every worker thread stages its keys
//! (`stage`) and they are counted exactly at the end; past the memory budget the bounded
//! counter (`counter`) takes over. A large dictionary-encoded key may have its chunks split
//! (`split`): the exact top values without an exact table of every value.
//!
//! `scan` makes one exact pass over a join key for the rows per shuffle partition and the
//! rows of the hot keys.

mod counter;
mod pages;
mod profile;
mod scan;
mod split;
mod stage;

#[cfg(test)]
mod page_reader_tests;

pub use profile::{profile, ColumnProfile, KeyCount, KeySpec, ProfileOptions, Sample, SampleInfo};
pub use scan::{scan, PartitionScan, TableSize, MAX_LOOKUP};
