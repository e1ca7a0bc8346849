//! The planner: two tables and a join key in; the hot keys, what they are, the strategy for
//! each, and the join stage Spark would run before and after, task by task.
//!
//! Two steps, so that a decision can be tested without a file: `measure` reads the tables into
//! a plain `Measured` value (key counts, rows per shuffle partition, sizes), and `decide` is a
//! pure function from that value and the options to the `Plan`, its SQL included. Each strategy
//! lives in one file under `strategy/` (when it applies, the tasks it leaves, its SQL branches,
//! its words); `strategy::choose` holds the order they are tried in. `emit` writes the plan as
//! SQL, `code` as PySpark or Scala.
//!
//! The algebra is `../shared/design/rewrite-algebra.md`: for a set V of non-NULL key values a
//! join splits exactly into the join of the rest, the join of the V rows, and the NULL-keyed
//! rows (which match nothing under `=`). Each branch gets its own physical strategy.

mod advice;
pub mod aqe;
mod builder;
pub mod code;
pub mod cost;
pub mod counted;
mod decide;
mod decompose;
mod emit;
mod hot;
mod measure;
mod model;
mod report;
mod strategy;
mod tasks;
#[cfg(test)]
mod tests;
pub mod verdict;

pub use builder::{table_name, ExtraOnSide, JoinSql, HELPER_ALIASES, SALT_COLUMN};
pub(crate) use builder::{ROWS as HELPER_T, SOURCE_ROWS as HELPER_U};
pub use decide::decide;
pub use emit::emit_sql;
pub use measure::{hashable_columns, measure, measure_one, Measured, SideFilter, SideMeasure};
pub use model::{
    display_key, AqeEffect, HotKey, HotSide, JoinType, KeepReason, Plan, PlanOptions, Side,
    SideInput, SideReport, Strategy,
};
pub use report::{html, text, text_with};
pub use strategy::broadcast_side::COMMENT as BROADCAST_SIDE_COMMENT;
pub use tasks::TaskStats;

use crate::classify::Classifier;
use crate::error::Result;

/// Plan the join of `left` and `right`: measure both tables, then decide.
pub fn plan(
    left: &SideInput,
    right: &SideInput,
    classifier: &Classifier,
    opts: &PlanOptions,
) -> Result<Plan> {
    decide(&measure(left, right, opts)?, classifier, opts)
}
