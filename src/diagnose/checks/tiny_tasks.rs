//! Tiny tasks: thousands of short tasks whose per-task cost (scheduling, launch, result) is
//! paid in many waves, or is a large part of each task.

use super::{Cause, Earlier, StageCtx};
use crate::diagnose::finding::{Check, Finding, Kind};
use crate::diagnose::measures::{pct, ratio};
use crate::format::{fmt_ms, human_i64};

/// Many short tasks, their overhead against their run time.
pub(crate) struct TinyTasks;

impl Cause for TinyTasks {
    fn check(&self, c: &StageCtx, _: &Earlier) -> Option<(Check, Option<Finding>)> {
        Some(tiny_tasks(c))
    }
}

fn tiny_tasks(c: &StageCtx) -> (Check, Option<Finding>) {
    let s = &c.report.task_summary;
    let n = c.report.tasks;
    let t = &c.report.totals;
    let overhead = ratio(t.task_ms - t.run_ms, t.task_ms);
    let busy = if c.report.slots > 0 {
        ratio(t.task_ms, c.report.duration_ms * c.report.slots).min(1.0)
    } else {
        0.0
    };
    let numbers = format!(
        "stage {}: {} tasks ({:.1} waves over {} cores), median task {} of which {} running; median scheduler delay {}; {} of task time is overhead (not running); the cores were busy {} of the stage",
        c.report.stage_id,
        n,
        c.report.waves,
        c.report.slots,
        fmt_ms(s.duration_ms.median),
        fmt_ms(s.run_ms.median),
        fmt_ms(s.scheduler_delay_ms.median),
        pct(overhead),
        pct(busy)
    );
    // Thousands of short tasks: the per-task cost (scheduling, launch, result) is paid in every
    // one of many waves, or it is a large part of each task.
    let yes = n >= 1000
        && s.run_ms.median <= 2000
        && (s.scheduler_delay_ms.median * 2 >= s.run_ms.median
            || overhead >= 0.3
            || busy <= 0.5
            || c.report.waves >= 10.0);
    let f = yes.then(|| {
        let data = t.input_bytes + t.shuffle_read_bytes;
        let want = ((data as f64 / (128 << 20) as f64).ceil() as i64).max(c.report.slots * 2).max(1);
        Finding::new(
            Kind::TinyTasks,
            Some(c.report.stage_id),
            numbers.clone(),
            format!(
                "fewer, larger tasks: about {want} tasks for {} (coalesce, a larger spark.sql.files.maxPartitionBytes, or compact the small files); the driver schedules every task one by one, so more executors will not help",
                human_i64(data)
            ),
            "compaction is a job of its own; coalescing lowers parallelism if the data later grows".into(),
            format!("re-run: stage {} with about {want} tasks, each running seconds, not milliseconds, and a scheduler delay well under the run time", c.report.stage_id),
        )
    });
    (c.check(Kind::TinyTasks, yes, numbers), f)
}
