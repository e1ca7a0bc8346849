//! Slow code: even tasks of a stage that shuffles nothing and spills little, long per task or
//! running a Python UDF: the per-row code is the cost. Not checked on a hot key's stage.

use super::{Cause, Earlier, StageCtx};
use crate::diagnose::finding::{Check, Finding, Kind};
use crate::diagnose::measures::{pct, ratio};
use crate::diagnose::plan;
use crate::format::{fmt_ms, human_i64};

/// Per-row cost over even tasks.
pub(crate) struct SlowCode;

impl Cause for SlowCode {
    fn check(&self, c: &StageCtx, earlier: &Earlier) -> Option<(Check, Option<Finding>)> {
        (!earlier.hot).then(|| slow_code(c))
    }
}

fn slow_code(c: &StageCtx) -> (Check, Option<Finding>) {
    let t = &c.report.totals;
    let s = &c.report.task_summary;
    let n = c.report.tasks.max(1);
    let udf = c.sql_plan().and_then(plan::python_udf);
    let even = ratio(s.duration_ms.max, s.duration_ms.median) < 2.0;
    // A map stage that writes a big shuffle is the shuffle's cost, not per-row code (unless a
    // Python UDF runs there).
    let no_shuffle = t.shuffle_read_bytes == 0 && (t.shuffle_write_bytes == 0 || udf.is_some());
    let no_spill = t.spilled_tasks * 10 < n;
    let cpu = ratio(t.cpu_ms, t.run_ms);
    let numbers = format!(
        "stage {}: tasks {} (max {} vs median {}), shuffle read {}, {} of {} tasks spilled, JVM CPU {} of run time{}",
        c.report.stage_id,
        if even { "even" } else { "uneven" },
        fmt_ms(s.duration_ms.max),
        fmt_ms(s.duration_ms.median),
        human_i64(t.shuffle_read_bytes),
        t.spilled_tasks,
        n,
        pct(cpu),
        match &udf {
            Some(u) => format!("; the plan runs a Python UDF ({u})"),
            None => "; no Python UDF in the plan".into(),
        }
    );
    let yes = even
        && no_shuffle
        && no_spill
        && c.report.active_share >= 0.25
        && (udf.is_some() || c.report.task_summary.run_ms.median >= 1000);
    let f = yes.then(|| Finding::new(
        Kind::SlowCode,
        Some(c.report.stage_id),
        numbers.clone(),
        match &udf {
            Some(u) => format!("the per-row code is the cost: every row goes to a Python worker and back ({u}); use Spark's built-in functions, or a vectorized pandas_udf (Arrow batches) if Python is needed"),
            None => "the per-row code is the cost: look at the stage's expressions (regexes, JSON parsing, UDFs) and replace them with cheaper built-ins".into(),
        },
        "a code change; more executors only divide the same per-row cost".into(),
        format!("re-run: stage {}'s median task well under {}", c.report.stage_id, fmt_ms(s.duration_ms.median)),
    ));
    (c.check(Kind::SlowCode, yes, numbers), f)
}
