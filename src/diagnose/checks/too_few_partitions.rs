//! Too few partitions: three quarters of the tasks read over 500 MB and half of them spilled.
//! More partitions is the free fix, and the cause of the memory pressure such a stage shows.

use super::{Cause, Earlier, StageCtx};
use crate::diagnose::finding::{Check, Finding, Kind};
use crate::format::human_i64;

/// What "a task reads too much" means for the partition-count check.
const BIG_TASK_BYTES: i64 = 500 << 20;
/// The size per task the partition fixes aim at.
const TARGET_TASK_BYTES: i64 = 150 << 20;

/// Partitions that put about TARGET_TASK_BYTES in each task (at least twice the current `n`).
pub(super) fn partitions_for(total_bytes: i64, n: usize) -> i64 {
    ((total_bytes as f64 / TARGET_TASK_BYTES as f64).ceil() as i64).max(n as i64 * 2)
}

/// Most tasks read too much and spill.
pub(crate) struct TooFewPartitions;

impl Cause for TooFewPartitions {
    fn check(&self, c: &StageCtx, _: &Earlier) -> Option<(Check, Option<Finding>)> {
        Some(too_few_partitions(c))
    }
}

fn too_few_partitions(c: &StageCtx) -> (Check, Option<Finding>) {
    let tasks = c.ok_tasks();
    let n = tasks.len().max(1);
    let big =
        tasks.iter().filter(|t| t.shuffle_read_bytes + t.input_bytes > BIG_TASK_BYTES).count();
    let spilled = c.report.totals.spilled_tasks;
    let numbers = format!(
        "stage {}: {} of {} tasks read over {} (median {}); {} of {} spilled",
        c.report.stage_id,
        big,
        n,
        human_i64(BIG_TASK_BYTES),
        human_i64(
            c.report.task_summary.shuffle_read_bytes.median
                + c.report.task_summary.input_bytes.median
        ),
        spilled,
        n
    );
    let yes = big * 4 >= n * 3 && spilled * 2 >= n && n >= 2;
    let f = yes.then(|| {
        let total = c.report.totals.shuffle_read_bytes + c.report.totals.input_bytes;
        let want = partitions_for(total, n);
        Finding::new(
            Kind::TooFewPartitions,
            Some(c.report.stage_id),
            numbers.clone(),
            format!(
                "more partitions: spark.sql.shuffle.partitions={want} (from {}) puts about {} in each task, which fits the execution memory a task gets",
                n,
                human_i64(total / want.max(1))
            ),
            format!("{} more, smaller tasks to schedule; no new hardware", want - n as i64),
            format!("re-run: stage {} with {want} tasks, spill near 0 on most tasks, and a shorter stage", c.report.stage_id),
        )
    });
    (c.check(Kind::TooFewPartitions, yes, numbers), f)
}
