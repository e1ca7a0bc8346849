//! Where a table's counts are made: the seam between what the planner, rewrite and window
//! measure and the engine that counts. `Embedded` reads the table's Parquet files in this
//! process; the Spark engine (`spark::SparkEngine`) counts a table its session holds;
//! `memory::InMemory` counts Arrow batches held in this process (the rewrite tests'). A run
//! picks one (the counting flags) and the measure steps receive it in their options, so
//! nothing below them asks where a table lives.

use std::sync::Arc;

use sqlparser::ast::Expr;

use super::filter::{Filtered, RowFilter};
use super::weights::{RowWeights, Sums};
use super::{ColumnProfile, KeySpec, PartitionScan, ProfileOptions};
use crate::error::Result;
use crate::table::Table;
use crate::value::{KeyType, Value};

/// The counts a measure step asks of a table.
pub trait Engine: Send + Sync {
    /// For messages: `embedded`, `spark`.
    fn name(&self) -> &'static str;
    /// Every key of `specs`: rows, NULL rows, distinct values, the most frequent values.
    fn profile(
        &self,
        table: &Table,
        specs: &[KeySpec],
        opts: &ProfileOptions,
    ) -> Result<Vec<ColumnProfile>>;
    /// The rows of every shuffle partition, by Spark's hash, and of each of `keys`.
    fn scan(
        &self,
        table: &Table,
        spec: &KeySpec,
        partitions: u32,
        keys: &[Vec<Value>],
    ) -> Result<PartitionScan>;
    /// `scan`, and the same per map task of a job that reads the table: the tasks as the
    /// engine's own Spark cuts the table's files, for a table whose files are not read here.
    /// None where the engine does not know them (the embedded engine's tasks come from the
    /// files: `map_tasks`).
    fn scan_by_map_tasks(
        &self,
        _table: &Table,
        _spec: &KeySpec,
        _partitions: u32,
        _keys: &[Vec<Value>],
    ) -> Result<Option<(PartitionScan, Vec<PartitionScan>)>> {
        Ok(None)
    }
    /// The key columns of the rows that pass `filter` (one row per group with `group_by`).
    fn filtered_keys(
        &self,
        table: &Table,
        keys: &KeySpec,
        filter: &RowFilter,
        group_by: Option<&KeySpec>,
    ) -> Result<Filtered>;
    /// Whether the engine can apply `cond` to `table`'s rows (why not, when it cannot): the
    /// conditions it is given in a `RowFilter` are those it accepted.
    fn can_filter(&self, cond: &Expr, table: &Table) -> std::result::Result<(), String>;
    /// The rows of `table` that pass `filter`, each weighted by `weights` (the rows it makes
    /// through the joins before), summed per value of the `by` columns (of `types`); rows with a
    /// NULL among them only with `nulls`. Also the rows read.
    fn weighted_sums(&self, table: &Table, sum: &WeightedSum) -> Result<(Sums, u64)>;
}

/// What `Engine::weighted_sums` sums.
pub struct WeightedSum<'a> {
    pub by: &'a [String],
    pub types: &'a [KeyType],
    pub filter: &'a RowFilter,
    pub weights: &'a RowWeights,
    /// Rows with a NULL among the `by` columns count too (a join's key counts), else they are
    /// left out (they join nothing).
    pub nulls: bool,
}

/// This process's Parquet reader (`profile`, `scan`, `filter::filtered_keys`, `filter::check`,
/// `filter::sum_rows`).
pub struct Embedded;

impl Engine for Embedded {
    fn name(&self) -> &'static str {
        "embedded"
    }
    fn profile(
        &self,
        table: &Table,
        specs: &[KeySpec],
        opts: &ProfileOptions,
    ) -> Result<Vec<ColumnProfile>> {
        super::profile::profile(table, specs, opts)
    }
    fn scan(
        &self,
        table: &Table,
        spec: &KeySpec,
        partitions: u32,
        keys: &[Vec<Value>],
    ) -> Result<PartitionScan> {
        super::scan::scan(table, spec, partitions, keys)
    }
    fn filtered_keys(
        &self,
        table: &Table,
        keys: &KeySpec,
        filter: &RowFilter,
        group_by: Option<&KeySpec>,
    ) -> Result<Filtered> {
        super::filter::filtered_keys(table, keys, filter, group_by)
    }
    fn can_filter(&self, cond: &Expr, table: &Table) -> std::result::Result<(), String> {
        super::filter::check(cond, table)
    }
    fn weighted_sums(&self, table: &Table, sum: &WeightedSum) -> Result<(Sums, u64)> {
        super::filter::sum_rows(table, sum)
    }
}

/// The engine of a run, shared by its options (cloned with them).
#[derive(Clone)]
pub struct EngineRef(Arc<dyn Engine>);

impl EngineRef {
    pub fn new(engine: impl Engine + 'static) -> EngineRef {
        EngineRef(Arc::new(engine))
    }
}

impl Default for EngineRef {
    fn default() -> Self {
        EngineRef::new(Embedded)
    }
}

impl std::ops::Deref for EngineRef {
    type Target = dyn Engine;
    fn deref(&self) -> &(dyn Engine + 'static) {
        self.0.as_ref()
    }
}

impl std::fmt::Debug for EngineRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EngineRef({})", self.0.name())
    }
}
