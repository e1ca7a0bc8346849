//! The suspects of a slow stage, one file per cause, each a small type with its rule, its
//! evidence (the numbers that confirm or rule it out) and its fix. `ORDER` is the one list of
//! the order they are checked in, with why each stands where it does; `Verdicts` runs it on a
//! stage and keeps a finding only where the stage is material.

mod hot_key;
mod input_growth;
mod memory_pressure;
mod shuffle_volume;
mod slow_code;
mod tiny_tasks;
mod too_few_partitions;

use super::finding::{Check, Finding, Kind};
use super::measures::{pct, StageReport};
use super::model::{App, Stage, Task};
use crate::format::fmt_ms;

/// Nor is a finding worth attention on a stage with a smaller share of the time stages ran.
pub(crate) const MIN_STAGE_SHARE: f64 = 0.10;

/// One stage and what its checks read.
pub(crate) struct StageCtx<'a> {
    pub app: &'a App,
    pub stage: &'a Stage,
    pub report: &'a StageReport,
    pub shuffle_partitions: i64,
}

impl StageCtx<'_> {
    fn ok_tasks(&self) -> Vec<&Task> {
        self.stage.tasks.iter().filter(|t| t.success).collect()
    }
    fn sql_plan(&self) -> Option<&serde_json::Value> {
        let job = self.app.jobs.get(&self.stage.job?)?;
        self.app.sql.get(&job.sql?)?.plan.as_ref()
    }
    /// A check of this stage.
    fn check(&self, kind: Kind, confirmed: bool, numbers: String) -> Check {
        Check { kind, stage_id: Some(self.report.stage_id), confirmed, numbers }
    }
}

/// What a check may need beyond its stage: the baseline run, what the checks before it found
/// on the stage, and the findings of the run so far.
pub(crate) struct Earlier<'a> {
    pub baseline: Option<&'a App>,
    /// A hot key was found on the stage (whether or not the stage is material).
    pub hot: bool,
    /// Too few partitions was found on the stage.
    pub few: bool,
    pub findings: &'a [Finding],
}

/// One suspect cause of a slow stage.
pub(crate) trait Cause: Sync {
    /// The suspect checked on one stage, with its finding when confirmed; None when an earlier
    /// finding (or a missing baseline) means it is not checked.
    fn check(&self, c: &StageCtx, earlier: &Earlier) -> Option<(Check, Option<Finding>)>;
}

/// The order the suspects are checked in, and why each stands there.
const ORDER: [&dyn Cause; 7] = [
    // With a baseline only: a stage that reads more does more work, whatever else it shows.
    &input_growth::InputGrowth,
    // The cheapest to confirm from the task summary, and it rules out what follows: one task
    // reading most of the shuffle explains an uneven stage, its spills and its slow code.
    &hot_key::HotKey,
    // Before memory pressure: too few partitions is its cause, with the free fix.
    &too_few_partitions::TooFewPartitions,
    &tiny_tasks::TinyTasks,
    // Not on a hot key's stage; one finding per job.
    &shuffle_volume::ShuffleVolume,
    // Not on a hot key's stage; gives way to too few partitions.
    &memory_pressure::MemoryPressure,
    // Last: what is left of an even, slow stage that shuffles and spills little.
    &slow_code::SlowCode,
];

/// The suspects checked so far, and the findings among them.
#[derive(Default)]
pub(crate) struct Verdicts {
    pub checks: Vec<Check>,
    pub findings: Vec<Finding>,
    pub min_stage_ms: i64,
}

impl Verdicts {
    pub(crate) fn add(&mut self, r: (Check, Option<Finding>)) {
        self.checks.push(r.0);
        self.findings.extend(r.1);
    }

    /// A stage's check; its finding only when the stage is material, else the check says why
    /// it is not flagged.
    fn add_stage(&mut self, sr: &StageReport, r: (Check, Option<Finding>)) {
        let (mut check, finding) = r;
        let material = sr.duration_ms >= self.min_stage_ms && sr.active_share >= MIN_STAGE_SHARE;
        if finding.is_some() && !material {
            check.confirmed = false;
            check.numbers.push_str(&format!(
                "; not flagged: stage {} takes {} ({} of the time stages ran), under the {} and {} a finding needs",
                sr.stage_id,
                fmt_ms(sr.duration_ms),
                pct(sr.active_share),
                fmt_ms(self.min_stage_ms),
                pct(MIN_STAGE_SHARE)
            ));
        }
        self.add((check, finding.filter(|_| material)));
    }

    /// Check one stage's suspects in `ORDER`.
    pub(crate) fn check_stage(&mut self, ctx: &StageCtx, baseline: Option<&App>) {
        let (mut hot, mut few) = (false, false);
        for cause in ORDER {
            let earlier = Earlier { baseline, hot, few, findings: &self.findings };
            let Some((check, finding)) = cause.check(ctx, &earlier) else { continue };
            match check.kind {
                Kind::HotKey => hot = finding.is_some(),
                Kind::TooFewPartitions => few = finding.is_some(),
                _ => {}
            }
            self.add_stage(ctx.report, (check, finding));
        }
    }
}
