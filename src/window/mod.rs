//! Skew in a window or an aggregate: the rows of one PARTITION BY (or GROUP BY) value all go to
//! the task that owns its shuffle partition. Whether that task is slow depends on what Spark
//! runs over the partition, the stage's `Shape`:
//!
//! - a window over the whole partition (an aggregate `OVER (PARTITION BY k)`, no ORDER BY, no
//!   frame) reads every row of the partition in one task, and can be rewritten: the aggregate
//!   per hot value computed on its own (Spark aggregates it partially, per map task) and joined
//!   back to that value's rows;
//! - an ordered window (running sums, lag/lead, a ranking not filtered to a top N) needs the
//!   partition's rows in order in one task: nothing safe splits it;
//! - a ranking filtered to its first N rows per partition is limited before the shuffle by
//!   Spark 3.5+ (`WindowGroupLimit`): at most N rows per partition value per map task;
//! - GROUP BY and DISTINCT are aggregated per map task before the shuffle: at most one record
//!   per key per map task (a `collect_list` record still holds the value's whole list).
//!
//! `measure` reads the input once ([`crate::plan::measure_one`]); `decide` is a pure function
//! from the measurements, the shape and the options to a [`WindowPlan`].

mod decide;
mod map_side;
mod report;
#[cfg(test)]
mod tests;

pub use decide::decide;
pub use map_side::{distinct_records, map_tasks, reduced_records, DistinctRecords, MapTask};
pub use report::text;

use serde::Serialize;
use serde_json::Value as Json;

use crate::classify::{Class, Classifier};
use crate::error::{Error, Result};
use crate::plan::{measure_one, PlanOptions, SideInput, SideMeasure, TaskStats};
use crate::table::ResolvedColumn;
use crate::value::Value;

/// What Spark runs over the rows of one partition value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Shape {
    /// Aggregate functions over the whole partition: no ORDER BY, no frame.
    WholePartition,
    /// A window that needs the partition's rows in order in one task.
    Ordered,
    /// A ranking (row_number, rank, dense_rank) filtered to its first `n` rows.
    TopN { n: u64 },
    /// GROUP BY or DISTINCT; `lists` when an aggregate builds a list (collect_list, collect_set).
    Aggregate { lists: bool },
    /// GROUP BY with DISTINCT aggregates of `groups` different columns: Spark aggregates by the
    /// key and the distinct column first (a shuffle by both), then by the key (a second
    /// shuffle). Over several columns it first copies each row once per column (`Expand`, with
    /// a group id), and once more for the other aggregates when `regular` (any aggregate that is
    /// not DISTINCT, `count(*)` included).
    DistinctAggregate { groups: u32, regular: bool },
}

impl Shape {
    pub fn label(self) -> String {
        match self {
            Shape::WholePartition => "window over the whole partition".into(),
            Shape::Ordered => "ordered window".into(),
            Shape::TopN { n } => format!("top {n} per partition"),
            Shape::Aggregate { lists: false } => "aggregate".into(),
            Shape::Aggregate { lists: true } => "aggregate building lists".into(),
            Shape::DistinctAggregate { groups: 1, .. } => {
                "aggregate with a DISTINCT aggregate".into()
            }
            Shape::DistinctAggregate { groups, .. } => {
                format!("aggregate with DISTINCT aggregates of {groups} columns")
            }
        }
    }
}

/// What the plan does with the stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Each hot value's aggregate is computed on its own and joined back to its rows.
    Rewrite,
    /// No partition is over the hot line.
    NothingHot,
    /// Spark's partial aggregation already reduces the hot value to records per map task.
    PartialAggregation,
    /// Spark 3.5+ limits the ranking per map task before the shuffle.
    GroupLimit,
    /// An ordered window over a hot partition: no rewrite keeps its result.
    LeftAlone,
}

/// The input of a window or aggregate, measured.
#[derive(Debug, Clone)]
pub struct WindowMeasured {
    pub partitions: u32,
    /// The most frequent non-NULL values of the partition key, in `side.scan.key_rows` order.
    pub candidates: Vec<Vec<Value>>,
    pub side: SideMeasure,
    /// For a stage Spark reduces per map task (a GROUP BY, a top N): the records it sends.
    pub reduced: Option<Reduced>,
}

/// The records a map-side reduction sends through the shuffle, per shuffle partition.
#[derive(Debug, Clone)]
pub struct Reduced {
    pub map_tasks: u64,
    /// The cores the splits were computed for (None: 128 MiB splits).
    pub cores: Option<u32>,
    pub records: Vec<u64>,
    /// Which shuffle `records` is, when the stage has two.
    pub stage: Option<String>,
    /// Over DISTINCT aggregates of several columns, `records` is the order of the columns that
    /// gives the largest task; this says how many orders there are and the smallest result.
    pub orders: Option<RecordsOrders>,
}

/// The largest task over the orders in which Spark can number the DISTINCT columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RecordsOrders {
    pub orders: u32,
    /// The largest task in records, in the order that makes it smallest.
    pub least_max_task_rows: u64,
}

/// One hot partition value.
#[derive(Debug, Clone, Serialize)]
pub struct HotGroup {
    /// Native JSON, as in `keys`; an array for a composite key; null for the NULL value.
    pub value: Json,
    #[serde(skip)]
    pub key: Vec<Value>,
    #[serde(skip)]
    pub display: String,
    pub rows: u64,
    pub share: f64,
    pub class: Class,
    pub reason: String,
    pub spark_partition: u32,
}

/// The stage of a window or aggregate before and after, and what to do about it.
#[derive(Debug, Clone, Serialize)]
pub struct WindowPlan {
    pub shape: Shape,
    pub input: String,
    pub keys: Vec<String>,
    #[serde(skip)]
    pub key_types: Vec<crate::value::KeyType>,
    pub shuffle_partitions: u32,
    /// Rows that reach the stage (after the input's conditions).
    pub rows: u64,
    pub bytes_per_row: f64,
    pub hot: Vec<HotGroup>,
    pub verdict: Verdict,
    /// Why, with the numbers.
    pub why: String,
    /// The stage as written, in rows per task before any partial aggregation or limit.
    pub before: TaskStats,
    /// The stage after the rewrite: the rows of the other values, in the window as written;
    /// the hot values' rows are read where they lie. None when nothing is rewritten.
    pub after: Option<TaskStats>,
    /// For a GROUP BY or top N: the records per task Spark sends after reducing each map
    /// task's rows (with `map_tasks` and the `cores` they were split for).
    pub records: Option<TaskStats>,
    pub map_tasks: Option<u64>,
    pub cores: Option<u32>,
    pub records_orders: Option<RecordsOrders>,
    /// For a list-building aggregate over a fixed-width column: the bytes of the largest hot
    /// value's list, which one task merges (its rows times the type's width).
    pub list_bytes: Option<u64>,
    /// The conditions the counts applied, when the input has any.
    pub conditions: Option<String>,
    #[serde(skip)]
    pub before_tasks: Vec<u64>,
    #[serde(skip)]
    pub after_tasks: Vec<u64>,
}

impl WindowPlan {
    /// The plan rewrites the stage.
    pub fn acts(&self) -> bool {
        self.verdict == Verdict::Rewrite
    }

    /// A list-building aggregate over a column of `bytes_per_value`: the largest hot value's
    /// list, which one task holds and merges, in bytes, said in `why`.
    pub fn with_list_bytes(mut self, bytes_per_value: f64) -> WindowPlan {
        if let Some(h) = self.hot.first() {
            let bytes = (h.rows as f64 * bytes_per_value).round() as u64;
            self.why.push_str(&format!(
                ". {}'s list holds about {} ({} values of {:.0} B, before any per-element overhead): the map tasks' records carry its pieces and one task merges them into one",
                h.display,
                crate::format::human(bytes),
                crate::format::fmt_count(h.rows),
                bytes_per_value
            ));
            self.list_bytes = Some(bytes);
        }
        self
    }
}

/// Read the input of a window or aggregate over `input.keys`: its key counts.
pub fn measure(input: &SideInput, opts: &PlanOptions) -> Result<WindowMeasured> {
    let (candidates, side) = measure_one(input, opts)?;
    Ok(WindowMeasured { partitions: opts.partitions.max(1), candidates, side, reduced: None })
}

/// The records Spark's map-side reduction sends, for the shapes that have one.
fn reduced(
    input: &SideInput,
    shape: Shape,
    distinct: &[ResolvedColumn],
    opts: &PlanOptions,
) -> Result<Option<Reduced>> {
    let parts = opts.partitions.max(1);
    let tasks = || map_tasks(input.table, &opts.file_splits());
    let mut orders = None;
    let (tasks, records, stage) = match shape {
        Shape::Aggregate { .. } => {
            let t = tasks();
            let r = reduced_records(
                input.table,
                &input.keys,
                input.filter.as_ref(),
                input.through.as_deref(),
                &t,
                parts,
                1,
            )?;
            (t, r, None)
        }
        Shape::TopN { n } => {
            let t = tasks();
            let r = reduced_records(
                input.table,
                &input.keys,
                input.filter.as_ref(),
                input.through.as_deref(),
                &t,
                parts,
                n,
            )?;
            (t, r, None)
        }
        Shape::DistinctAggregate { .. } if !distinct.is_empty() && input.through.is_some() => {
            return Err(Error::Usage(format!(
                "{}: the records of DISTINCT aggregates are not counted through joins",
                input.name
            )));
        }
        Shape::DistinctAggregate { regular, .. } if !distinct.is_empty() => {
            let t = tasks();
            let all = distinct_records(
                input.table,
                &input.keys,
                distinct,
                regular,
                input.filter.as_ref(),
                &t,
                parts,
            )?;
            let (records, stage, o) = distinct_stage(input, distinct, &all);
            orders = o;
            (t, records, Some(stage))
        }
        _ => return Ok(None),
    };
    Ok(Some(Reduced { map_tasks: tasks.len() as u64, cores: opts.cores, records, stage, orders }))
}

/// The larger of a DISTINCT aggregate's two shuffles, and which it is. Over several columns,
/// the numbering of the columns that makes it largest, and the range over the others.
fn distinct_stage(
    input: &SideInput,
    distinct: &[ResolvedColumn],
    orders: &[DistinctRecords],
) -> (Vec<u64>, String, Option<RecordsOrders>) {
    let max = |v: &[u64]| v.iter().copied().max().unwrap_or(0);
    let largest = |o: &DistinctRecords| max(&o.first).max(max(&o.second));
    let worst = orders.iter().max_by_key(|o| largest(o)).expect("one order at least");
    let keys = input.keys.names().join(", ");
    let cols = distinct.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ");
    let id = if distinct.len() > 1 { " and the group id" } else { "" };
    let (records, mut stage) = if max(&worst.first) >= max(&worst.second) {
        (worst.first.clone(), format!("the first of its two shuffles, by {keys}, {cols}{id}"))
    } else {
        (worst.second.clone(), format!("the second of its two shuffles, by {keys}"))
    };
    let mut spread = None;
    if orders.len() > 1 {
        let least = orders.iter().map(largest).min().unwrap_or(0);
        spread = Some(RecordsOrders { orders: orders.len() as u32, least_max_task_rows: least });
        stage += &format!(
            " (Spark numbers the {} columns in an order of its own: the largest task over the {} orders; {} in the order that gives the smallest)",
            distinct.len(),
            orders.len(),
            crate::format::fmt_count(least)
        );
    }
    (records, stage, spread)
}

/// Measure then decide; where Spark reduces a hot stage per map task (a GROUP BY, a top N),
/// count the records each task sends too (a second pass over the key columns, per map task:
/// not for an input that groups, whose rows are not the files') and decide with them.
/// `distinct`: the column of each DISTINCT aggregate (for `Shape::DistinctAggregate`).
pub fn plan(
    input: &SideInput,
    shape: Shape,
    distinct: &[ResolvedColumn],
    classifier: &Classifier,
    opts: &PlanOptions,
) -> Result<WindowPlan> {
    let mut m = measure(input, opts)?;
    let first = decide(&m, shape, classifier, opts);
    if !matches!(first.verdict, Verdict::PartialAggregation | Verdict::GroupLimit)
        || input.group_by.is_some()
    {
        return Ok(first);
    }
    if input.table.is_held() {
        input.table.stats.note(format!(
            "{}: the records each map task sends are counted from Parquet row groups, which --engine spark does not read: not predicted",
            input.table.display
        ));
        return Ok(first);
    }
    m.reduced = reduced(input, shape, distinct, opts)?;
    Ok(decide(&m, shape, classifier, opts))
}
