//! What to do when nothing is hot: tasks that are all large want more partitions; a skewed
//! stage without a hot key is many mid-size keys sharing a partition; a balanced stage points
//! at the event log.

use crate::format::{fmt_count, human};

use super::tasks::{Task, TaskStats};

/// Median tasks over this are too large whatever the keys (bytes).
const LARGE_MEDIAN_TASK: u64 = 500 << 20;
/// The task size more partitions should aim for (bytes).
const TARGET_TASK: u64 = 128 << 20;

pub(crate) fn next_step(
    before: &TaskStats,
    before_tasks: &[Task],
    partitions: u32,
    hot_factor: f64,
) -> String {
    if before.median_task_bytes > LARGE_MEDIAN_TASK {
        let total: u64 = before_tasks.iter().map(|t| t.1 as u64).sum();
        let want = (total / TARGET_TASK).max(partitions as u64 + 1);
        format!(
            "no hot key: the largest task is {:.1}x the median, but every task reads about {} (median); raise spark.sql.shuffle.partitions to {} for ~128 MB tasks",
            before.ratio(),
            human(before.median_task_bytes),
            want
        )
    } else if before.ratio() > hot_factor {
        format!(
            "no single hot key: the largest task ({} rows) is {:.1}x the median ({} rows), but no value in it has twice the median's rows: many mid-size keys share one partition; a different spark.sql.shuffle.partitions (say {}) spreads them",
            fmt_count(before.max_task_rows),
            before.ratio(),
            fmt_count(before.median_task_rows),
            partitions + 1
        )
    } else {
        format!(
            "no hot key: the largest task ({} rows, {}) is {:.1}x the median ({} rows); if the stage is still slow, look at the event log (skewjoin diagnose) for spill, GC or a slow executor",
            fmt_count(before.max_task_rows),
            human(before.max_task_bytes),
            before.ratio(),
            fmt_count(before.median_task_rows)
        )
    }
}
