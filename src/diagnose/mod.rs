//! `skewjoin diagnose`: a Spark event log in; the stage that owns the wall clock, its task
//! summary, the cause (checked in the order the suspects are cheapest to check, each with the
//! numbers that confirm or rule it out), the one fix, and the measurement that will prove it.
//!
//! `eventlog` reads the file (codecs, rolling folders, logs cut short), `model` builds the
//! application (stages, tasks, SQL plans), `plan` finds the join a stage runs, `idle` the time
//! no task ran (planning inside a query, the driver's own time outside); this module measures
//! and decides, `report` prints. A stage's finding is flagged only when the stage is material
//! (`Options::min_stage_ms` and `MIN_STAGE_SHARE`); below that it is listed as checked.

pub mod eventlog;
mod events;
pub mod fix;
pub mod history;
mod idle;
pub mod model;
pub mod plan;
pub mod report;
mod spark_expr;

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::format::fmt_count;
use crate::format::{fmt_ms, human_i64};
use model::{App, Stage, Task};
use plan::JoinInfo;

/// What "a task reads too much" means for the partition-count check.
const BIG_TASK_BYTES: i64 = 500 << 20;
/// The size per task the partition fixes aim at.
const TARGET_TASK_BYTES: i64 = 150 << 20;
/// The stage's wall clock lost to GC (its duration times GC's share of run time) below which
/// GC is not memory pressure, whatever its share of a short stage's run time.
const MIN_GC_MS: i64 = 5_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    InputGrowth,
    HotKey,
    TooFewPartitions,
    TinyTasks,
    ShuffleVolume,
    MemoryPressure,
    SlowCode,
    PlanningGap,
    DriverTime,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::InputGrowth => "input_growth",
            Kind::HotKey => "hot_key",
            Kind::TooFewPartitions => "too_few_partitions",
            Kind::TinyTasks => "tiny_tasks",
            Kind::ShuffleVolume => "shuffle_volume",
            Kind::MemoryPressure => "memory_pressure",
            Kind::SlowCode => "slow_code",
            Kind::PlanningGap => "planning_gap",
            Kind::DriverTime => "driver_time",
        }
    }
}

/// Min, 25th, median, 75th percentile and max, as the Spark UI's stage summary shows them.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Quantiles {
    pub min: i64,
    pub p25: i64,
    pub median: i64,
    pub p75: i64,
    pub max: i64,
}

impl Quantiles {
    /// Spark's own pick: the value at index min(q * n, n - 1) of the sorted values.
    pub fn of(mut v: Vec<i64>) -> Quantiles {
        if v.is_empty() {
            return Quantiles::default();
        }
        v.sort_unstable();
        let n = v.len();
        let at = |q: f64| v[((q * n as f64) as usize).min(n - 1)];
        Quantiles { min: v[0], p25: at(0.25), median: at(0.5), p75: at(0.75), max: v[n - 1] }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskSummary {
    pub duration_ms: Quantiles,
    pub run_ms: Quantiles,
    pub shuffle_read_bytes: Quantiles,
    pub shuffle_read_records: Quantiles,
    pub input_bytes: Quantiles,
    pub memory_spill_bytes: Quantiles,
    pub disk_spill_bytes: Quantiles,
    pub gc_ms: Quantiles,
    pub scheduler_delay_ms: Quantiles,
}

impl TaskSummary {
    /// What the tasks read: shuffle bytes for a stage that reads a shuffle, else input bytes.
    fn reads(&self) -> &Quantiles {
        if self.shuffle_read_bytes.max > 0 {
            &self.shuffle_read_bytes
        } else {
            &self.input_bytes
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub shuffle_read_bytes: i64,
    pub shuffle_read_records: i64,
    pub shuffle_write_bytes: i64,
    pub input_bytes: i64,
    pub input_records: i64,
    pub output_bytes: i64,
    pub memory_spill_bytes: i64,
    pub disk_spill_bytes: i64,
    pub spilled_tasks: usize,
    pub gc_ms: i64,
    pub run_ms: i64,
    pub cpu_ms: i64,
    pub task_ms: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub stage_id: i64,
    pub attempt: i64,
    pub name: String,
    pub job_id: Option<i64>,
    pub duration_ms: i64,
    /// Of the application's wall clock.
    pub share: f64,
    /// Of the time any stage ran (the wall clock less the driver's time with no stage running):
    /// what decides whether the stage is worth a finding, since an application's start-up and
    /// its driver's own work are not its stages' to fix.
    pub active_share: f64,
    pub tasks: usize,
    pub failed_tasks: usize,
    /// Executor cores while it ran, and tasks / cores.
    pub slots: i64,
    pub waves: f64,
    pub task_summary: TaskSummary,
    pub totals: Totals,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub stage_id: Option<i64>,
    pub evidence: String,
    pub fix: String,
    /// What the fix costs.
    pub cost: String,
    /// The measurement that will prove it.
    pub verify: String,
    /// For a hot key: the join, and the skewjoin commands to run next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join: Option<JoinInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub next_commands: Vec<String>,
}

impl Finding {
    /// A finding without a join (every kind but a hot key found in a plan).
    fn new(kind: Kind, stage_id: Option<i64>, evidence: String, fix: String, cost: String, verify: String) -> Finding {
        Finding { kind, stage_id, evidence, fix, cost, verify, join: None, next_commands: vec![] }
    }
}

/// A suspect checked: confirmed or ruled out, with its numbers.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub kind: Kind,
    pub stage_id: Option<i64>,
    pub confirmed: bool,
    pub numbers: String,
}

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
        let read = |t: &Task| (if shuffle { t.shuffle_read_records } else { t.input_records }).max(0) as u64;
        SlowStage {
            stage_id: st.id,
            reads: if shuffle { "shuffle records" } else { "input records" },
            tasks: ok.iter().map(|t| (t.duration, read(t))).collect(),
        }
    });
    Picture { app_ms, stages, slow }
}

fn ratio(a: i64, b: i64) -> f64 {
    a as f64 / (b.max(1)) as f64
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn summarize(tasks: &[&Task]) -> TaskSummary {
    let q = |f: &dyn Fn(&Task) -> i64| Quantiles::of(tasks.iter().map(|t| f(t)).collect());
    TaskSummary {
        duration_ms: q(&|t| t.duration),
        run_ms: q(&|t| t.run),
        shuffle_read_bytes: q(&|t| t.shuffle_read_bytes),
        shuffle_read_records: q(&|t| t.shuffle_read_records),
        input_bytes: q(&|t| t.input_bytes),
        memory_spill_bytes: q(&|t| t.memory_spill),
        disk_spill_bytes: q(&|t| t.disk_spill),
        gc_ms: q(&|t| t.gc),
        scheduler_delay_ms: q(&|t| t.scheduler_delay),
    }
}

fn totals(tasks: &[&Task]) -> Totals {
    let mut t = Totals::default();
    for x in tasks {
        t.shuffle_read_bytes += x.shuffle_read_bytes;
        t.shuffle_read_records += x.shuffle_read_records;
        t.shuffle_write_bytes += x.shuffle_write_bytes;
        t.input_bytes += x.input_bytes;
        t.input_records += x.input_records;
        t.output_bytes += x.output_bytes + x.result_size;
        t.memory_spill_bytes += x.memory_spill;
        t.disk_spill_bytes += x.disk_spill;
        t.spilled_tasks += usize::from(x.memory_spill > 0 || x.disk_spill > 0);
        t.gc_ms += x.gc;
        t.run_ms += x.run;
        t.cpu_ms += x.cpu_ms;
        t.task_ms += x.duration;
    }
    t
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
    /// A progress bar by bytes while the log is read (on a terminal only).
    pub progress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { min_stage_ms: MIN_STAGE_MS, progress: false }
    }
}

/// A finding on a stage shorter than this is not worth a user's attention (`--min-stage-seconds`).
pub const MIN_STAGE_MS: i64 = 10_000;
/// Nor on a stage with a smaller share of the time stages ran.
const MIN_STAGE_SHARE: f64 = 0.10;

pub fn diagnose(path: &Path, baseline: Option<&Path>, opts: &Options) -> Result<Diagnosis> {
    diagnose_log(&eventlog::read(path, opts.progress)?, baseline, opts)
}

/// `diagnose` of a log already read (`fix` reads the job's settings from the same one).
pub fn diagnose_log(ev: &eventlog::Log, baseline: Option<&Path>, opts: &Options) -> Result<Diagnosis> {
    let app = &ev.app;
    let mut warnings = ev.warnings.clone();
    let base = match baseline {
        Some(b) => {
            let bev = eventlog::read(b, opts.progress)?;
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
        let ctx = StageCtx { app, st, sr, shuffle_partitions };
        verdicts.check_stage(&ctx, base.as_ref().map(|b| &b.app));
    }
    for c in idle::checks(app) {
        verdicts.add(c);
    }
    let Verdicts { checks, findings, .. } = verdicts;
    let memory = top.first().map(|s| memory_text(s, findings.iter().find(|f| f.stage_id == Some(s.stage_id)).map(|f| f.kind)));
    let picture = picture(app, &all, app_ms, top.first());
    let stages: Vec<StageReport> = all.into_iter().take(10).collect();
    let baseline = base.as_ref().map(|b| app_summary(&b.app, b));
    Ok(Diagnosis { app: app_sum, locate, stages, checks, findings, memory, baseline, warnings, picture })
}

/// The warnings for a log whose application or stages did not finish.
fn unfinished_warnings(app: &App) -> Vec<String> {
    let mut warnings = Vec::new();
    if app.end.is_none() {
        warnings.push("no application end event: the application was still running, crashed, or the log is cut short; times run to the last event".into());
    }
    let running: Vec<&Stage> = app.stages.values().filter(|s| s.completed.is_none() && !s.tasks.is_empty()).collect();
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
        slots: a.executors.iter().filter(|x| x.removed.is_none()).map(|x| x.cores).sum::<i64>().max(a.executors.iter().map(|x| x.cores).max().unwrap_or(0)),
        shuffle_partitions: a.properties.get("spark.sql.shuffle.partitions").and_then(|x| x.parse().ok()),
        codec: e.codec.to_string(),
        files: e.files.len(),
    }
}

/// Every stage that ran or completed, the longest first (ties by stage ID).
fn stage_reports(app: &App, app_ms: i64, active_ms: i64) -> Vec<StageReport> {
    let mut all: Vec<StageReport> =
        app.stages.values().filter(|s| !s.tasks.is_empty() || s.completed.is_some()).map(|s| stage_report(app, s, app_ms, active_ms)).collect();
    all.sort_by(|a, b| b.duration_ms.cmp(&a.duration_ms).then(a.stage_id.cmp(&b.stage_id)));
    all
}

/// The stages worth a diagnosis: the 3 longest over 10% of the time stages ran (at least the
/// longest), then up to 2 more over 10% that read a shuffle: a hot key's stage is checked even
/// when scans that ran while the JVM warmed up took longer.
fn worth_diagnosing(all: &[StageReport]) -> Vec<StageReport> {
    let material = all.iter().filter(|s| s.active_share >= MIN_STAGE_SHARE);
    let mut top: Vec<StageReport> = material.clone().take(3).cloned().collect();
    let shuffled = material.skip(3).filter(|s| s.task_summary.shuffle_read_bytes.max > 0 || s.task_summary.shuffle_read_records.max > 0);
    top.extend(shuffled.take(2).cloned());
    if top.is_empty() {
        top.extend(all.first().cloned());
    }
    top
}

/// The suspects checked so far, and the findings among them.
#[derive(Default)]
struct Verdicts {
    checks: Vec<Check>,
    findings: Vec<Finding>,
    min_stage_ms: i64,
}

impl Verdicts {
    fn add(&mut self, r: (Check, Option<Finding>)) {
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

    /// Check one stage's suspects in order; one cause can rule out or take over another's finding.
    fn check_stage(&mut self, ctx: &StageCtx, base: Option<&App>) {
        if let Some(b) = base {
            self.add_stage(ctx.sr, input_growth(ctx, b));
        }
        let hot = hot_key(ctx);
        let is_hot = hot.1.is_some();
        self.add_stage(ctx.sr, hot);
        let few = too_few_partitions(ctx);
        let is_few = few.1.is_some();
        self.add_stage(ctx.sr, few);
        self.add_stage(ctx.sr, tiny_tasks(ctx));
        if !is_hot {
            let (c, f) = shuffle_volume(ctx);
            // One finding per job: its map and reduce stages tell the same story.
            let seen = f.is_some() && self.has_shuffle_volume_in_job(ctx.app, ctx.st.job);
            self.add_stage(ctx.sr, (c, if seen { None } else { f }));
        }
        // Too few partitions is the memory pressure's cause, with its own (first) fix.
        let (mc, mf) = memory_pressure(ctx, is_hot);
        self.add_stage(ctx.sr, (mc, if is_few { None } else { mf }));
        if !is_hot {
            self.add_stage(ctx.sr, slow_code(ctx));
        }
    }

    /// Whether a shuffle-volume finding already names a stage of `job`.
    fn has_shuffle_volume_in_job(&self, app: &App, job: Option<i64>) -> bool {
        self.findings
            .iter()
            .any(|x| x.kind == Kind::ShuffleVolume && x.stage_id.and_then(|s| app.stages.values().find(|st| st.id == s)).and_then(|st| st.job) == job)
    }
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
    let idle = if active < app_ms { format!("; stages ran during {} of the {} wall clock", fmt_ms(active), fmt_ms(app_ms)) } else { String::new() };
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

struct StageCtx<'a> {
    app: &'a App,
    st: &'a Stage,
    sr: &'a StageReport,
    shuffle_partitions: i64,
}

impl StageCtx<'_> {
    fn ok_tasks(&self) -> Vec<&Task> {
        self.st.tasks.iter().filter(|t| t.success).collect()
    }
    fn sql_plan(&self) -> Option<&serde_json::Value> {
        let job = self.app.jobs.get(&self.st.job?)?;
        self.app.sql.get(&job.sql?)?.plan.as_ref()
    }
    fn c(&self, kind: Kind, confirmed: bool, numbers: String) -> Check {
        Check { kind, stage_id: Some(self.sr.stage_id), confirmed, numbers }
    }
}

fn input_growth(c: &StageCtx, base: &App) -> (Check, Option<Finding>) {
    // The same stage in the baseline: the same name, the same position among stages of that name.
    let nth = c.app.stages.values().filter(|s| s.name == c.st.name && (s.id, s.attempt) < (c.st.id, c.st.attempt)).count();
    let Some(b) = base.stages.values().filter(|s| s.name == c.st.name).nth(nth) else {
        return (c.c(Kind::InputGrowth, false, format!("no stage named \"{}\" in the baseline to compare with", c.st.name)), None);
    };
    let bt: Vec<&Task> = b.tasks.iter().filter(|t| t.success).collect();
    let bt = totals(&bt);
    let now = &c.sr.totals;
    let read_now = now.input_bytes + now.shuffle_read_bytes;
    let read_then = bt.input_bytes + bt.shuffle_read_bytes;
    let rows_now = now.input_records + now.shuffle_read_records;
    let rows_then = bt.input_records + bt.shuffle_read_records;
    let g_bytes = ratio(read_now, read_then);
    let g_rows = ratio(rows_now, rows_then);
    let g_time = ratio(c.sr.duration_ms, b.duration());
    let numbers = format!(
        "stage {} read {} ({} rows) against {} ({} rows) in the baseline's stage {}: {:.1}x the bytes, {:.1}x the rows; it took {} against {} ({:.1}x)",
        c.sr.stage_id,
        human_i64(read_now),
        fmt_count(rows_now.max(0) as u64),
        human_i64(read_then),
        fmt_count(rows_then.max(0) as u64),
        b.id,
        g_bytes,
        g_rows,
        fmt_ms(c.sr.duration_ms),
        fmt_ms(b.duration()),
        g_time
    );
    let grew = (g_bytes >= 1.5 || g_rows >= 1.5) && g_time >= 1.3;
    let f = grew.then(|| Finding::new(
        Kind::InputGrowth,
        Some(c.sr.stage_id),
        numbers.clone(),
        format!(
            "the job does more work, not worse work: check upstream that the growth is real (not duplicated or late-arriving data); if it is, scale the stage with it: {:.0} shuffle partitions instead of {} keeps each task at its old size",
            (c.shuffle_partitions as f64 * g_bytes.max(g_rows)).ceil(),
            c.shuffle_partitions
        ),
        "more partitions: more, smaller tasks to schedule; more executors if the deadline must hold".into(),
        format!("a re-run takes about {:.1}x the baseline's time for {:.1}x its input, not more", g_bytes.max(g_rows), g_bytes.max(g_rows)),
    ));
    (c.c(Kind::InputGrowth, grew, numbers), f)
}

/// How far a stage's largest shuffle reader stands out from the median task.
struct Skew<'a> {
    /// The task that read the most shuffle bytes (then records).
    heavy: &'a Task,
    /// Largest over median: shuffle bytes, shuffle records, duration.
    bytes: f64,
    records: f64,
    duration: f64,
}

impl Skew<'_> {
    /// One task reads 5x the median or more, and enough to matter.
    fn is_hot(&self) -> bool {
        self.bytes.max(self.records) >= 5.0 && (self.heavy.shuffle_read_bytes >= 1 << 20 || self.heavy.shuffle_read_records >= 10_000)
    }
}

fn hot_key(c: &StageCtx) -> (Check, Option<Finding>) {
    let s = &c.sr.task_summary;
    let tasks = c.ok_tasks();
    if tasks.len() < 2 || (s.shuffle_read_bytes.max == 0 && s.shuffle_read_records.max == 0) {
        return (
            c.c(Kind::HotKey, false, format!("stage {} reads no shuffle ({} tasks): no join or aggregate key to skew on", c.sr.stage_id, tasks.len())),
            None,
        );
    }
    let Some(heavy) = tasks.iter().max_by_key(|t| (t.shuffle_read_bytes, t.shuffle_read_records)) else {
        return (c.c(Kind::HotKey, false, "no task".into()), None);
    };
    let skew = Skew {
        heavy,
        bytes: ratio(s.shuffle_read_bytes.max, s.shuffle_read_bytes.median),
        records: ratio(s.shuffle_read_records.max, s.shuffle_read_records.median),
        duration: ratio(s.duration_ms.max, s.duration_ms.median),
    };
    let numbers = hot_key_numbers(c, &skew);
    if !skew.is_hot() {
        return (c.c(Kind::HotKey, false, numbers), None);
    }
    let f = hot_key_finding(c, &skew, numbers.clone());
    (c.c(Kind::HotKey, true, numbers), Some(f))
}

fn hot_key_numbers(c: &StageCtx, skew: &Skew) -> String {
    let s = &c.sr.task_summary;
    let heavy = skew.heavy;
    format!(
        "stage {}: the largest task (partition {}) read {} / {} records against a median of {} / {} ({:.1}x the bytes, {:.1}x the records, {} of the stage's shuffle) and ran {} against a median of {} ({:.1}x)",
        c.sr.stage_id,
        heavy.index,
        human_i64(heavy.shuffle_read_bytes),
        fmt_count(heavy.shuffle_read_records.max(0) as u64),
        human_i64(s.shuffle_read_bytes.median),
        fmt_count(s.shuffle_read_records.median.max(0) as u64),
        skew.bytes,
        skew.records,
        pct(ratio(heavy.shuffle_read_bytes, c.sr.totals.shuffle_read_bytes)),
        fmt_ms(heavy.duration),
        fmt_ms(s.duration_ms.median),
        skew.duration
    )
}

fn hot_key_finding(c: &StageCtx, skew: &Skew, numbers: String) -> Finding {
    let join = c.sql_plan().and_then(|p| plan::join_of_stage(p, &c.st.accums));
    let (fix, next) = hot_key_fix(join.as_ref(), c.shuffle_partitions);
    let aqe_note = aqe_note(&c.app.properties, join.as_ref(), skew.heavy);
    Finding {
        kind: Kind::HotKey,
        stage_id: Some(c.sr.stage_id),
        evidence: format!("{numbers}; {aqe_note}"),
        fix,
        cost: "the rewrite's extra branches scan the inputs again and broadcast a few hot rows; more executors or memory would not help: one key's rows still meet in one task".into(),
        verify: format!(
            "re-run on the same input: stage {}'s largest task within 2x of the median (now {:.1}x by duration, {:.1}x by shuffle read); skewjoin verify runs both queries and compares the rows",
            c.sr.stage_id,
            skew.duration,
            skew.bytes.max(skew.records)
        ),
        join,
        next_commands: next,
    }
}

/// The hot-key fix, and the skewjoin commands that measure the keys and plan the rewrite: for
/// the join the plan names, or with placeholders when the log names none.
fn hot_key_fix(join: Option<&JoinInfo>, partitions: i64) -> (String, Vec<String>) {
    let mut next = Vec::new();
    let mut fix = String::from("take the hot key(s) out of the shuffle: NULL keys skip the join, other hot values meet a broadcast slice of the other side, or salt a value hot on both sides");
    if let Some(j) = join {
        let lk: Vec<String> = j.left_keys.iter().map(|k| plan::attr_name(k)).collect();
        let rk: Vec<String> = j.right_keys.iter().map(|k| plan::attr_name(k)).collect();
        let l = j.left_table.clone().unwrap_or_else(|| "LEFT_TABLE".into());
        let r = j.right_table.clone().unwrap_or_else(|| "RIGHT_TABLE".into());
        let on: Vec<String> = lk.iter().zip(&rk).map(|(a, b)| if a == b { format!("--on {a}") } else { format!("--on {a}={b}") }).collect();
        next.push(format!("skewjoin keys {} --column {} --shuffle-partitions {partitions}", shell(&l), lk.join(",")));
        next.push(format!("skewjoin plan --left {} --right {} {} --how {} --shuffle-partitions {partitions}", shell(&l), shell(&r), on.join(" "), j.how()));
        fix = format!(
            "the stage runs the {} {} join on {} = {}: {fix}; measure the hot keys and get the rewrite with the commands below",
            j.operator,
            j.join_type,
            lk.join(", "),
            rk.join(", ")
        );
    }
    if join.is_none() {
        fix.push_str("; the log does not name the join this stage runs (no SQL plan for it), so find it in the SQL tab of the Spark UI and put its tables and key in the commands below");
        next.push(format!("skewjoin keys LEFT_TABLE --column KEY --shuffle-partitions {partitions}"));
        next.push(format!(
            "skewjoin plan --left LEFT_TABLE --right RIGHT_TABLE --on KEY --how inner|left|right|full|semi|anti --shuffle-partitions {partitions}"
        ));
    }
    (fix, next)
}

/// Why Spark's adaptive execution did not split the hot task.
fn aqe_note(props: &HashMap<String, String>, join: Option<&JoinInfo>, heavy: &Task) -> String {
    let aqe = props.get("spark.sql.adaptive.enabled").map(|v| v == "true").unwrap_or(true);
    let full = join.is_some_and(|j| j.join_type == "FullOuter");
    if !aqe {
        "AQE is off in this run (spark.sql.adaptive.enabled=false), so nothing split the task".to_string()
    } else if full {
        "AQE's skew-join split never applies to a full outer join".to_string()
    } else if heavy.shuffle_read_bytes < 256 << 20 {
        format!(
            "AQE would not split it: it reads {} (< 256 MB, spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes)",
            human_i64(heavy.shuffle_read_bytes)
        )
    } else {
        "AQE's skew-join split did not apply here (not a sort-merge join it can split, or a side it may not split for this join type), and when it does it only acts after the map side has run".to_string()
    }
}

fn shell(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-=:,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Partitions that put about TARGET_TASK_BYTES in each task (at least twice the current `n`).
fn partitions_for(total_bytes: i64, n: usize) -> i64 {
    ((total_bytes as f64 / TARGET_TASK_BYTES as f64).ceil() as i64).max(n as i64 * 2)
}

fn too_few_partitions(c: &StageCtx) -> (Check, Option<Finding>) {
    let tasks = c.ok_tasks();
    let n = tasks.len().max(1);
    let big = tasks.iter().filter(|t| t.shuffle_read_bytes + t.input_bytes > BIG_TASK_BYTES).count();
    let spilled = c.sr.totals.spilled_tasks;
    let numbers = format!(
        "stage {}: {} of {} tasks read over {} (median {}); {} of {} spilled",
        c.sr.stage_id,
        big,
        n,
        human_i64(BIG_TASK_BYTES),
        human_i64(c.sr.task_summary.shuffle_read_bytes.median + c.sr.task_summary.input_bytes.median),
        spilled,
        n
    );
    let yes = big * 4 >= n * 3 && spilled * 2 >= n && n >= 2;
    let f = yes.then(|| {
        let total = c.sr.totals.shuffle_read_bytes + c.sr.totals.input_bytes;
        let want = partitions_for(total, n);
        Finding::new(
            Kind::TooFewPartitions,
            Some(c.sr.stage_id),
            numbers.clone(),
            format!(
                "more partitions: spark.sql.shuffle.partitions={want} (from {}) puts about {} in each task, which fits the execution memory a task gets",
                n,
                human_i64(total / want.max(1))
            ),
            format!("{} more, smaller tasks to schedule; no new hardware", want - n as i64),
            format!("re-run: stage {} with {want} tasks, spill near 0 on most tasks, and a shorter stage", c.sr.stage_id),
        )
    });
    (c.c(Kind::TooFewPartitions, yes, numbers), f)
}

fn tiny_tasks(c: &StageCtx) -> (Check, Option<Finding>) {
    let s = &c.sr.task_summary;
    let n = c.sr.tasks;
    let t = &c.sr.totals;
    let overhead = ratio(t.task_ms - t.run_ms, t.task_ms);
    let busy = if c.sr.slots > 0 { ratio(t.task_ms, c.sr.duration_ms * c.sr.slots).min(1.0) } else { 0.0 };
    let numbers = format!(
        "stage {}: {} tasks ({:.1} waves over {} cores), median task {} of which {} running; median scheduler delay {}; {} of task time is overhead (not running); the cores were busy {} of the stage",
        c.sr.stage_id,
        n,
        c.sr.waves,
        c.sr.slots,
        fmt_ms(s.duration_ms.median),
        fmt_ms(s.run_ms.median),
        fmt_ms(s.scheduler_delay_ms.median),
        pct(overhead),
        pct(busy)
    );
    // Thousands of short tasks: the per-task cost (scheduling, launch, result) is paid in every
    // one of many waves, or it is a large part of each task.
    let yes =
        n >= 1000 && s.run_ms.median <= 2000 && (s.scheduler_delay_ms.median * 2 >= s.run_ms.median || overhead >= 0.3 || busy <= 0.5 || c.sr.waves >= 10.0);
    let f = yes.then(|| {
        let data = t.input_bytes + t.shuffle_read_bytes;
        let want = ((data as f64 / (128 << 20) as f64).ceil() as i64).max(c.sr.slots * 2).max(1);
        Finding::new(
            Kind::TinyTasks,
            Some(c.sr.stage_id),
            numbers.clone(),
            format!(
                "fewer, larger tasks: about {want} tasks for {} (coalesce, a larger spark.sql.files.maxPartitionBytes, or compact the small files); the driver schedules every task one by one, so more executors will not help",
                human_i64(data)
            ),
            "compaction is a job of its own; coalescing lowers parallelism if the data later grows".into(),
            format!("re-run: stage {} with about {want} tasks, each running seconds, not milliseconds, and a scheduler delay well under the run time", c.sr.stage_id),
        )
    });
    (c.c(Kind::TinyTasks, yes, numbers), f)
}

fn shuffle_volume(c: &StageCtx) -> (Check, Option<Finding>) {
    // The job's bytes: shuffled against read and written out.
    let job = c.st.job;
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
    let s = &c.sr.task_summary;
    let read = s.reads();
    let even = ratio(s.duration_ms.max, s.duration_ms.median) < 3.0 || ratio(read.max, read.median) < 2.0;
    let vs_input = if input > 0 { format!("{:.1}x the input", ratio(sh, input)) } else { "no input read: generated data".into() };
    let numbers = format!(
        "job {}: {} shuffled against {} read and {} written out ({vs_input}, {:.0}x the output); stage {} tasks even: max {} vs median {}",
        job.map(|j| j.to_string()).unwrap_or("?".into()),
        human_i64(sh),
        human_i64(input),
        human_i64(output),
        ratio(sh, output),
        c.sr.stage_id,
        fmt_ms(s.duration_ms.max),
        fmt_ms(s.duration_ms.median)
    );
    let stage_shuffles = c.sr.totals.shuffle_read_bytes + c.sr.totals.shuffle_write_bytes > 0;
    let yes = stage_shuffles && even && sh >= 64 << 20 && sh >= 2 * input && sh >= 10 * output;
    let f = yes.then(|| Finding::new(
        Kind::ShuffleVolume,
        Some(c.sr.stage_id),
        numbers.clone(),
        "shuffle less: select only the columns the join or aggregate needs before it, filter before the shuffle, aggregate before joining, broadcast the small side".into(),
        "a change to the query; nothing to buy".into(),
        format!("re-run: the job's shuffle write well below {} and stage {} shorter", human_i64(sh), c.sr.stage_id),
    ));
    (c.c(Kind::ShuffleVolume, yes, numbers), f)
}

fn memory_pressure(c: &StageCtx, hot: bool) -> (Check, Option<Finding>) {
    let t = &c.sr.totals;
    let n = c.sr.tasks.max(1);
    let s = &c.sr.task_summary;
    let gc = ratio(t.gc_ms, t.run_ms);
    // Even work: the tasks read about the same (durations of short tasks are noisy: the first
    // tasks of an executor also pay for warming up).
    let read = s.reads();
    let even_data = ratio(read.max, read.median) < 2.0;
    let even = ratio(s.duration_ms.max, s.duration_ms.median) < 3.0 || even_data;
    let numbers = format!(
        "stage {}: {} of {} tasks spilled ({} in memory, {} to disk); GC {} of run time (about {} of the stage's {}); work {} (largest read {} vs median {}; max duration {} vs median {})",
        c.sr.stage_id,
        t.spilled_tasks,
        n,
        human_i64(t.memory_spill_bytes),
        human_i64(t.disk_spill_bytes),
        pct(gc),
        fmt_ms((c.sr.duration_ms as f64 * gc) as i64),
        fmt_ms(c.sr.duration_ms),
        if even { "even" } else { "uneven" },
        human_i64(read.max),
        human_i64(read.median),
        fmt_ms(s.duration_ms.max),
        fmt_ms(s.duration_ms.median)
    );
    // GC is pressure when it costs the stage real seconds of its wall clock, not only a share
    // of a short stage's run time.
    let gc_wall_ms = (c.sr.duration_ms as f64 * gc) as i64;
    let yes = !hot && ((t.spilled_tasks * 2 >= n && even && n >= 2) || (gc > 0.10 && gc_wall_ms >= MIN_GC_MS));
    let f = yes.then(|| {
        let total = t.shuffle_read_bytes + t.input_bytes;
        let per_task = total / n as i64;
        let want = partitions_for(total, n);
        Finding::new(
            Kind::MemoryPressure,
            Some(c.sr.stage_id),
            numbers.clone(),
            format!(
                "first more partitions (free): spark.sql.shuffle.partitions={want} takes each task from about {} to {}; then fewer cores per executor (more memory per task); only then more executor memory",
                human_i64(per_task),
                human_i64(total / want.max(1))
            ),
            format!("{} more tasks to schedule; fewer cores per executor means fewer tasks at once", want - n as i64),
            format!("re-run: spill near 0 on stage {}'s tasks and GC under 10% of run time", c.sr.stage_id),
        )
    });
    (c.c(Kind::MemoryPressure, yes, numbers), f)
}

fn slow_code(c: &StageCtx) -> (Check, Option<Finding>) {
    let t = &c.sr.totals;
    let s = &c.sr.task_summary;
    let n = c.sr.tasks.max(1);
    let udf = c.sql_plan().and_then(plan::python_udf);
    let even = ratio(s.duration_ms.max, s.duration_ms.median) < 2.0;
    // A map stage that writes a big shuffle is the shuffle's cost, not per-row code (unless a
    // Python UDF runs there).
    let no_shuffle = t.shuffle_read_bytes == 0 && (t.shuffle_write_bytes == 0 || udf.is_some());
    let no_spill = t.spilled_tasks * 10 < n;
    let cpu = ratio(t.cpu_ms, t.run_ms);
    let numbers = format!(
        "stage {}: tasks {} (max {} vs median {}), shuffle read {}, {} of {} tasks spilled, JVM CPU {} of run time{}",
        c.sr.stage_id,
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
    let yes = even && no_shuffle && no_spill && c.sr.active_share >= 0.25 && (udf.is_some() || c.sr.task_summary.run_ms.median >= 1000);
    let f = yes.then(|| Finding::new(
        Kind::SlowCode,
        Some(c.sr.stage_id),
        numbers.clone(),
        match &udf {
            Some(u) => format!("the per-row code is the cost: every row goes to a Python worker and back ({u}); use Spark's built-in functions, or a vectorized pandas_udf (Arrow batches) if Python is needed"),
            None => "the per-row code is the cost: look at the stage's expressions (regexes, JSON parsing, UDFs) and replace them with cheaper built-ins".into(),
        },
        "a code change; more executors only divide the same per-row cost".into(),
        format!("re-run: stage {}'s median task well under {}", c.sr.stage_id, fmt_ms(s.duration_ms.median)),
    ));
    (c.c(Kind::SlowCode, yes, numbers), f)
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
        format!("{} read by the largest task against a median of {}", human_i64(q.input_bytes.max), human_i64(q.input_bytes.median))
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
