//! Shuffle volume: the job shuffles twice its input and ten times its output (64 MB at least)
//! over even tasks. Not checked on a hot key's stage; one finding per job, as its map and
//! reduce stages tell the same story.

use super::{Cause, Earlier, StageCtx};
use crate::diagnose::finding::{Check, Finding, Kind};
use crate::diagnose::measures::ratio;
use crate::format::{fmt_ms, human_i64};

/// The job's shuffled bytes against what it read and wrote.
pub(crate) struct ShuffleVolume;

impl Cause for ShuffleVolume {
    fn check(&self, c: &StageCtx, earlier: &Earlier) -> Option<(Check, Option<Finding>)> {
        if earlier.hot {
            return None;
        }
        let (check, finding) = shuffle_volume(c);
        let seen = finding.is_some() && in_job(earlier.findings, c);
        Some((check, if seen { None } else { finding }))
    }
}

/// Whether a shuffle-volume finding already names a stage of this stage's job.
fn in_job(findings: &[Finding], c: &StageCtx) -> bool {
    let job = c.stage.job;
    findings.iter().any(|x| {
        x.kind == Kind::ShuffleVolume
            && x.stage_id
                .and_then(|s| c.app.stages.values().find(|st| st.id == s))
                .and_then(|st| st.job)
                == job
    })
}

fn shuffle_volume(c: &StageCtx) -> (Check, Option<Finding>) {
    // The job's bytes: shuffled against read and written out.
    let job = c.stage.job;
    let mut sh = 0;
    let mut input = 0;
    let mut output = 0;
    for st in c.app.stages.values().filter(|s| s.job == job) {
        for t in st.tasks.iter().filter(|t| t.success) {
            sh += t.shuffle_write_bytes;
            input += t.input_bytes;
            output += t.output_bytes + t.result_size;
        }
    }
    let s = &c.report.task_summary;
    let read = s.reads();
    let even =
        ratio(s.duration_ms.max, s.duration_ms.median) < 3.0 || ratio(read.max, read.median) < 2.0;
    let vs_input = if input > 0 {
        format!("{:.1}x the input", ratio(sh, input))
    } else {
        "no input read: generated data".into()
    };
    let numbers = format!(
        "job {}: {} shuffled against {} read and {} written out ({vs_input}, {:.0}x the output); stage {} tasks even: max {} vs median {}",
        job.map(|j| j.to_string()).unwrap_or("?".into()),
        human_i64(sh),
        human_i64(input),
        human_i64(output),
        ratio(sh, output),
        c.report.stage_id,
        fmt_ms(s.duration_ms.max),
        fmt_ms(s.duration_ms.median)
    );
    let stage_shuffles =
        c.report.totals.shuffle_read_bytes + c.report.totals.shuffle_write_bytes > 0;
    let yes = stage_shuffles && even && sh >= 64 << 20 && sh >= 2 * input && sh >= 10 * output;
    let f = yes.then(|| Finding::new(
        Kind::ShuffleVolume,
        Some(c.report.stage_id),
        numbers.clone(),
        "shuffle less: select only the columns the join or aggregate needs before it, filter before the shuffle, aggregate before joining, broadcast the small side".into(),
        "a change to the query; nothing to buy".into(),
        format!("re-run: the job's shuffle write well below {} and stage {} shorter", human_i64(sh), c.report.stage_id),
    ));
    (c.check(Kind::ShuffleVolume, yes, numbers), f)
}
