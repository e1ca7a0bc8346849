//! Input growth (with a baseline run only): the stage read 1.5x the bytes or rows of the same
//! stage in the baseline and took 1.3x as long. The job does more work, not worse work.

use super::{Cause, Earlier, StageCtx};
use crate::diagnose::finding::{Check, Finding, Kind};
use crate::diagnose::measures::{ratio, totals};
use crate::diagnose::model::{App, Task};
use crate::format::{fmt_count, fmt_ms, human_i64};

/// Compared with the baseline's stage of the same name and place.
pub(crate) struct InputGrowth;

impl Cause for InputGrowth {
    fn check(&self, c: &StageCtx, earlier: &Earlier) -> Option<(Check, Option<Finding>)> {
        earlier.baseline.map(|b| input_growth(c, b))
    }
}

fn input_growth(c: &StageCtx, base: &App) -> (Check, Option<Finding>) {
    // The same stage in the baseline: the same name, the same position among stages of that name.
    let nth = c
        .app
        .stages
        .values()
        .filter(|s| s.name == c.stage.name && (s.id, s.attempt) < (c.stage.id, c.stage.attempt))
        .count();
    let Some(b) = base.stages.values().filter(|s| s.name == c.stage.name).nth(nth) else {
        return (
            c.check(
                Kind::InputGrowth,
                false,
                format!("no stage named \"{}\" in the baseline to compare with", c.stage.name),
            ),
            None,
        );
    };
    let bt: Vec<&Task> = b.tasks.iter().filter(|t| t.success).collect();
    let bt = totals(&bt);
    let now = &c.report.totals;
    let read_now = now.input_bytes + now.shuffle_read_bytes;
    let read_then = bt.input_bytes + bt.shuffle_read_bytes;
    let rows_now = now.input_records + now.shuffle_read_records;
    let rows_then = bt.input_records + bt.shuffle_read_records;
    let g_bytes = ratio(read_now, read_then);
    let g_rows = ratio(rows_now, rows_then);
    let g_time = ratio(c.report.duration_ms, b.duration());
    let numbers = format!(
        "stage {} read {} ({} rows) against {} ({} rows) in the baseline's stage {}: {:.1}x the bytes, {:.1}x the rows; it took {} against {} ({:.1}x)",
        c.report.stage_id,
        human_i64(read_now),
        fmt_count(rows_now.max(0) as u64),
        human_i64(read_then),
        fmt_count(rows_then.max(0) as u64),
        b.id,
        g_bytes,
        g_rows,
        fmt_ms(c.report.duration_ms),
        fmt_ms(b.duration()),
        g_time
    );
    let grew = (g_bytes >= 1.5 || g_rows >= 1.5) && g_time >= 1.3;
    let f = grew.then(|| Finding::new(
        Kind::InputGrowth,
        Some(c.report.stage_id),
        numbers.clone(),
        format!(
            "the job does more work, not worse work: check upstream that the growth is real (not duplicated or late-arriving data); if it is, scale the stage with it: {:.0} shuffle partitions instead of {} keeps each task at its old size",
            (c.shuffle_partitions as f64 * g_bytes.max(g_rows)).ceil(),
            c.shuffle_partitions
        ),
        "more partitions: more, smaller tasks to schedule; more executors if the deadline must hold".into(),
        format!("a re-run takes about {:.1}x the baseline's time for {:.1}x its input, not more", g_bytes.max(g_rows), g_bytes.max(g_rows)),
    ));
    (c.check(Kind::InputGrowth, grew, numbers), f)
}
