//! Memory pressure: half the tasks spilled over even work, or GC took over 10% of run time and
//! 5 s of the stage. Not on a hot key's stage (the hot task is the cause); its finding gives
//! way to too few partitions, which causes it and has the free fix.

use super::too_few_partitions::partitions_for;
use super::{Cause, Earlier, StageCtx};
use crate::diagnose::finding::{Check, Finding, Kind};
use crate::diagnose::measures::{pct, ratio};
use crate::format::{fmt_ms, human_i64};

/// The stage's wall clock lost to GC (its duration times GC's share of run time) below which
/// GC is not memory pressure, whatever its share of a short stage's run time.
const MIN_GC_MS: i64 = 5_000;

/// Spills and GC over even work.
pub(crate) struct MemoryPressure;

impl Cause for MemoryPressure {
    fn check(&self, c: &StageCtx, earlier: &Earlier) -> Option<(Check, Option<Finding>)> {
        let (check, finding) = memory_pressure(c, earlier.hot);
        Some((check, if earlier.few { None } else { finding }))
    }
}

fn memory_pressure(c: &StageCtx, hot: bool) -> (Check, Option<Finding>) {
    let t = &c.report.totals;
    let n = c.report.tasks.max(1);
    let s = &c.report.task_summary;
    let gc = ratio(t.gc_ms, t.run_ms);
    // Even work: the tasks read about the same (durations of short tasks are noisy: the first
    // tasks of an executor also pay for warming up).
    let read = s.reads();
    let even_data = ratio(read.max, read.median) < 2.0;
    let even = ratio(s.duration_ms.max, s.duration_ms.median) < 3.0 || even_data;
    let numbers = format!(
        "stage {}: {} of {} tasks spilled ({} in memory, {} to disk); GC {} of run time (about {} of the stage's {}); work {} (largest read {} vs median {}; max duration {} vs median {})",
        c.report.stage_id,
        t.spilled_tasks,
        n,
        human_i64(t.memory_spill_bytes),
        human_i64(t.disk_spill_bytes),
        pct(gc),
        fmt_ms((c.report.duration_ms as f64 * gc) as i64),
        fmt_ms(c.report.duration_ms),
        if even { "even" } else { "uneven" },
        human_i64(read.max),
        human_i64(read.median),
        fmt_ms(s.duration_ms.max),
        fmt_ms(s.duration_ms.median)
    );
    // GC is pressure when it costs the stage real seconds of its wall clock, not only a share
    // of a short stage's run time.
    let gc_wall_ms = (c.report.duration_ms as f64 * gc) as i64;
    let yes = !hot
        && ((t.spilled_tasks * 2 >= n && even && n >= 2) || (gc > 0.10 && gc_wall_ms >= MIN_GC_MS));
    let f = yes.then(|| {
        let total = t.shuffle_read_bytes + t.input_bytes;
        let per_task = total / n as i64;
        let want = partitions_for(total, n);
        Finding::new(
            Kind::MemoryPressure,
            Some(c.report.stage_id),
            numbers.clone(),
            format!(
                "first more partitions (free): spark.sql.shuffle.partitions={want} takes each task from about {} to {}; then fewer cores per executor (more memory per task); only then more executor memory",
                human_i64(per_task),
                human_i64(total / want.max(1))
            ),
            format!("{} more tasks to schedule; fewer cores per executor means fewer tasks at once", want - n as i64),
            format!("re-run: spill near 0 on stage {}'s tasks and GC under 10% of run time", c.report.stage_id),
        )
    });
    (c.check(Kind::MemoryPressure, yes, numbers), f)
}
