//! `skewjoin diagnose`: a Spark event log in; the stage that owns the wall clock, its task
//! summary, the cause (checked in the order the suspects are cheapest to check, each with the
//! numbers that confirm or rule it out), the one fix, and the measurement that will prove it.
//!
//! `eventlog` reads the file (codecs, rolling folders, logs cut short), `model` builds the
//! application (stages, tasks, SQL plans), `measures` a stage's task quantiles and totals,
//! `plan` finds the join a stage runs, `checks` holds one file per suspect cause and their
//! order, `idle` the time no task ran (planning inside a query, the driver's own time outside);
//! this module locates the stages and runs the checks, `report` prints. A stage's finding is
//! flagged only when the stage is material
//! (`Options::min_stage_ms` and `MIN_STAGE_SHARE`); below that it is listed as checked.

pub mod call_site;
mod checks;
pub mod eventlog;
mod events;
mod finding;
pub mod history;
mod idle;
pub mod job_log;
mod measures;
pub mod model;
pub mod plan;
pub mod report;
pub mod spark_expr;

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::format::{fmt_count, fmt_ms, human_i64};
use checks::{StageCtx, Verdicts, MIN_STAGE_SHARE};
pub use finding::{Check, Finding, Kind};
use measures::{pct, ratio, summarize, totals};
pub use measures::{Quantiles, StageReport, TaskSummary, Totals};
use model::{App, Stage, Task};

#[derive(Debug, Clone, Serialize)]
pub struct AppSummary {
    pub name: String,
    pub id: String,
    pub spark_version: Option<String>,
    pub duration_ms: i64,
    pub jobs: usize,
    pub stages: usize,
    pub tasks: usize,
    pub slots: i64,
    pub shuffle_partitions: Option<i64>,
    pub codec: String,
    pub files: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    pub app: AppSummary,
    /// Where the time went, in a sentence with its numbers.
    pub locate: String,
    pub stages: Vec<StageReport>,
    pub checks: Vec<Check>,
    pub findings: Vec<Finding>,
    /// What "just add memory" would change, and what not, with this job's figures.
    pub memory: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<AppSummary>,
    pub warnings: Vec<String>,
    /// What the HTML report and the text's task line draw (not in the JSON).
    #[serde(skip)]
    pub picture: Picture,
}

/// The stages over the application's clock, and the slowest stage's tasks.
#[derive(Debug, Clone, Default)]
pub struct Picture {
    pub app_ms: i64,
    /// (stage id, attempt, name, start and end in ms from the application's start), by start.
    pub stages: Vec<(i64, i64, String, i64, i64)>,
    pub slow: Option<SlowStage>,
}

/// The stage diagnosed first, task by task.
#[derive(Debug, Clone)]
pub struct SlowStage {
    pub stage_id: i64,
    /// What its tasks read: "shuffle records" or "input records".
    pub reads: &'static str,
    /// Per successful task in index order: (duration ms, records read).
    pub tasks: Vec<(i64, u64)>,
}

/// At most this many stages on the timeline (the longest, drawn in order of start).
const TIMELINE_STAGES: usize = 60;

fn picture(app: &App, all: &[StageReport], app_ms: i64, slow: Option<&StageReport>) -> Picture {
    let t0 = app.span().map(|s| s.0).unwrap_or(0);
    let mut stages: Vec<(i64, i64, String, i64, i64)> = all
        .iter()
        .take(TIMELINE_STAGES)
        .filter_map(|r| {
            let (a, b) = app.stages.get(&(r.stage_id, r.attempt))?.span()?;
            Some((r.stage_id, r.attempt, r.name.clone(), a - t0, b - t0))
        })
        .collect();
    stages.sort_by_key(|s| (s.3, s.0));
    let slow = slow.and_then(|r| app.stages.get(&(r.stage_id, r.attempt))).map(|st| {
        let mut ok: Vec<&Task> = st.tasks.iter().filter(|t| t.success).collect();
        ok.sort_by_key(|t| t.index);
        let shuffle = ok.iter().any(|t| t.shuffle_read_records > 0);
        let read = |t: &Task| {
            (if shuffle { t.shuffle_read_records } else { t.input_records }).max(0) as u64
        };
        SlowStage {
            stage_id: st.id,
            reads: if shuffle { "shuffle records" } else { "input records" },
            tasks: ok.iter().map(|t| (t.duration, read(t))).collect(),
        }
    });
    Picture { app_ms, stages, slow }
}

fn stage_report(app: &App, st: &Stage, app_ms: i64, active_ms: i64) -> StageReport {
    let ok: Vec<&Task> = st.tasks.iter().filter(|t| t.success).collect();
    let slots = st.span().map(|(a, b)| app.slots_at((a + b) / 2)).unwrap_or(0);
    StageReport {
        stage_id: st.id,
        attempt: st.attempt,
        name: st.name.clone(),
        job_id: st.job,
        duration_ms: st.duration(),
        share: ratio(st.duration(), app_ms),
        active_share: ratio(st.duration(), active_ms),
        tasks: ok.len(),
        failed_tasks: st.tasks.len() - ok.len(),
        slots,
        waves: if slots > 0 { ok.len() as f64 / slots as f64 } else { 0.0 },
        task_summary: summarize(&ok),
        totals: totals(&ok),
    }
}

/// Read the log at `path` (and a baseline run of the same job) and diagnose it.
/// What `diagnose` may be told.
#[derive(Debug, Clone)]
pub struct Options {
    /// A stage shorter than this gets no finding (its checks are still listed).
    pub min_stage_ms: i64,
    /// Where the reading of the log reports its progress.
    pub progress: crate::progress::ProgressRef,
    /// The run's statistics (what it fetched from object stores).
    pub stats: std::sync::Arc<crate::stats::RunStats>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            min_stage_ms: MIN_STAGE_MS,
            progress: Default::default(),
            stats: crate::stats::RunStats::new(),
        }
    }
}

/// A finding on a stage shorter than this is not worth a user's attention (`--min-stage-seconds`).
pub const MIN_STAGE_MS: i64 = 10_000;

pub fn diagnose(path: &Path, baseline: Option<&Path>, opts: &Options) -> Result<Diagnosis> {
    diagnose_log(&eventlog::read(path, &*opts.progress, &opts.stats)?, baseline, opts)
}

/// `diagnose` of a log already read (`fix` reads the job's settings from the same one).
pub fn diagnose_log(
    ev: &eventlog::Log,
    baseline: Option<&Path>,
    opts: &Options,
) -> Result<Diagnosis> {
    let app = &ev.app;
    let mut warnings = ev.warnings.clone();
    let base = match baseline {
        Some(b) => {
            let bev = eventlog::read(b, &*opts.progress, &opts.stats)?;
            warnings.extend(bev.warnings.iter().map(|w| format!("baseline: {w}")));
            Some(bev)
        }
        None => None,
    };
    warnings.extend(unfinished_warnings(app));
    let app_sum = app_summary(app, ev);
    let app_ms = app_sum.duration_ms;

    // 1. Locate.
    let active = active_ms(app);
    let all = stage_reports(app, app_ms, active);
    let locate = locate_text(&all, app_ms, active);
    let top = worth_diagnosing(&all);

    // 2-3. Measure and diagnose.
    let mut verdicts = Verdicts { min_stage_ms: opts.min_stage_ms, ..Verdicts::default() };
    let shuffle_partitions = app_sum.shuffle_partitions.unwrap_or(200);
    for sr in &top {
        let st = &app.stages[&(sr.stage_id, sr.attempt)];
        let ctx = StageCtx { app, stage: st, report: sr, shuffle_partitions };
        verdicts.check_stage(&ctx, base.as_ref().map(|b| &b.app));
    }
    for c in idle::checks(app) {
        verdicts.add(c);
    }
    let Verdicts { checks, findings, .. } = verdicts;
    let memory = top.first().map(|s| {
        memory_text(s, findings.iter().find(|f| f.stage_id == Some(s.stage_id)).map(|f| f.kind))
    });
    let picture = picture(app, &all, app_ms, top.first());
    let stages: Vec<StageReport> = all.into_iter().take(10).collect();
    let baseline = base.as_ref().map(|b| app_summary(&b.app, b));
    Ok(Diagnosis {
        app: app_sum,
        locate,
        stages,
        checks,
        findings,
        memory,
        baseline,
        warnings,
        picture,
    })
}

/// The warnings for a log whose application or stages did not finish.
fn unfinished_warnings(app: &App) -> Vec<String> {
    let mut warnings = Vec::new();
    if app.end.is_none() {
        warnings.push("no application end event: the application was still running, crashed, or the log is cut short; times run to the last event".into());
    }
    let running: Vec<&Stage> =
        app.stages.values().filter(|s| s.completed.is_none() && !s.tasks.is_empty()).collect();
    if !running.is_empty() {
        warnings.push(format!(
            "{} stage(s) never completed in the log ({}); their tasks are counted up to the last one that finished",
            running.len(),
            running.iter().map(|s| s.id.to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    warnings
}

fn app_summary(a: &App, e: &eventlog::Log) -> AppSummary {
    AppSummary {
        name: a.name.clone(),
        id: a.id.clone(),
        spark_version: a.spark_version.clone(),
        duration_ms: a.span().map(|(x, y)| y - x).unwrap_or(0),
        jobs: a.jobs.len(),
        stages: a.stages.len(),
        tasks: a.stages.values().map(|s| s.tasks.len()).sum(),
        slots: a
            .executors
            .iter()
            .filter(|x| x.removed.is_none())
            .map(|x| x.cores)
            .sum::<i64>()
            .max(a.executors.iter().map(|x| x.cores).max().unwrap_or(0)),
        shuffle_partitions: a
            .properties
            .get("spark.sql.shuffle.partitions")
            .and_then(|x| x.parse().ok()),
        codec: e.codec.to_string(),
        files: e.files.len(),
    }
}

/// Every stage that ran or completed, the longest first (ties by stage ID).
fn stage_reports(app: &App, app_ms: i64, active_ms: i64) -> Vec<StageReport> {
    let mut all: Vec<StageReport> = app
        .stages
        .values()
        .filter(|s| !s.tasks.is_empty() || s.completed.is_some())
        .map(|s| stage_report(app, s, app_ms, active_ms))
        .collect();
    all.sort_by(|a, b| b.duration_ms.cmp(&a.duration_ms).then(a.stage_id.cmp(&b.stage_id)));
    all
}

/// The stages worth a diagnosis: the 3 longest over 10% of the time stages ran (at least the
/// longest), then up to 2 more over 10% that read a shuffle: a hot key's stage is checked even
/// when scans that ran while the JVM warmed up took longer.
fn worth_diagnosing(all: &[StageReport]) -> Vec<StageReport> {
    let material = all.iter().filter(|s| s.active_share >= MIN_STAGE_SHARE);
    let mut top: Vec<StageReport> = material.clone().take(3).cloned().collect();
    let shuffled = material.skip(3).filter(|s| {
        s.task_summary.shuffle_read_bytes.max > 0 || s.task_summary.shuffle_read_records.max > 0
    });
    top.extend(shuffled.take(2).cloned());
    if top.is_empty() {
        top.extend(all.first().cloned());
    }
    top
}

/// Milliseconds during which at least one stage was running.
fn active_ms(app: &App) -> i64 {
    let mut iv: Vec<(i64, i64)> = app.stages.values().filter_map(|s| s.span()).collect();
    iv.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(i64, i64)> = None;
    for (a, b) in iv {
        match cur {
            Some((x, y)) if a <= y => cur = Some((x, y.max(b))),
            Some((x, y)) => {
                total += y - x;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    total + cur.map(|(x, y)| y - x).unwrap_or(0)
}

fn locate_text(all: &[StageReport], app_ms: i64, active: i64) -> String {
    let Some(first) = all.first() else { return "no stage ran".into() };
    let of_active = ratio(first.duration_ms, active);
    let top3: f64 = all.iter().take(3).map(|s| ratio(s.duration_ms, active)).sum();
    let idle = if active < app_ms {
        format!("; stages ran during {} of the {} wall clock", fmt_ms(active), fmt_ms(app_ms))
    } else {
        String::new()
    };
    if first.share >= 0.5 || of_active >= 0.5 {
        format!(
            "stage {} ({}) owns the time: {}, {} of the {} wall clock and {} of the time stages ran{idle}",
            first.stage_id,
            first.name,
            fmt_ms(first.duration_ms),
            pct(first.share),
            fmt_ms(app_ms),
            pct(of_active)
        )
    } else if all.len() > 5 && top3 < 0.5 {
        format!(
            "the time is spread: the longest stage ({}, {}) is {} of the time stages ran and the top 3 together {}, over {} stages{idle}; no single stage to fix, so look at the job's shape (stage count, gaps, repeated work) rather than one task",
            first.stage_id,
            fmt_ms(first.duration_ms),
            pct(of_active),
            pct(top3),
            all.len()
        )
    } else {
        format!(
            "the longest stage, {} ({}), takes {}: {} of the {} wall clock and {} of the time stages ran{idle}",
            first.stage_id,
            first.name,
            fmt_ms(first.duration_ms),
            pct(first.share),
            fmt_ms(app_ms),
            pct(of_active)
        )
    }
}

/// "Just add memory": what it would change in the top stage (spill) and what it would not.
fn memory_text(s: &StageReport, cause: Option<Kind>) -> String {
    let t = &s.totals;
    let changes = if t.spilled_tasks > 0 {
        format!(
            "it would shrink the spill ({} in memory, {} to disk over {} of {} tasks)",
            human_i64(t.memory_spill_bytes),
            human_i64(t.disk_spill_bytes),
            t.spilled_tasks,
            s.tasks
        )
    } else {
        "it would change nothing: no task of this stage spilled".to_string()
    };
    let q = &s.task_summary;
    let reads = if q.shuffle_read_bytes.max > 0 {
        format!(
            "{} records ({}) shuffled to the largest task against a median of {} ({})",
            fmt_count(q.shuffle_read_records.max.max(0) as u64),
            human_i64(q.shuffle_read_bytes.max),
            fmt_count(q.shuffle_read_records.median.max(0) as u64),
            human_i64(q.shuffle_read_bytes.median)
        )
    } else {
        format!(
            "{} read by the largest task against a median of {}",
            human_i64(q.input_bytes.max),
            human_i64(q.input_bytes.median)
        )
    };
    let mut o = format!(
        "more executor memory for stage {}: {changes}; it would not change the rows each task processes ({reads}), the bytes shuffled ({} read, {} written), or the task count ({})",
        s.stage_id,
        human_i64(t.shuffle_read_bytes),
        human_i64(t.shuffle_write_bytes),
        s.tasks
    );
    if cause == Some(Kind::HotKey) {
        o.push_str("; the hot task would still read its data alone");
    }
    o
}
