//! `skewjoin verify`: run the original query and the rewrite on the same data, compare the rows
//! as multisets, and put the largest and median task of each next to the planner's prediction.
//!
//! Two engines:
//! - `polars` (cargo feature `polars`): both queries in this process on Polars' lazy SQL engine,
//!   rendered for Polars SQL from the same AST (`polars_sql`), on the full tables or a sample;
//! - `spark`: the user's own Spark, through the pyspark driver every Spark request goes
//!   through (`crate::spark::Session`, started for verify): local mode unless `--master` says
//!   otherwise, each stage's tasks read from Spark's REST API.

pub mod both;
#[cfg(feature = "polars")]
pub mod polars_engine;
pub mod polars_sql;
pub mod timing;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::format::{fmt_count, fmt_ms, human_i64};
use crate::plan::TaskStats;
use crate::rewrite::Rewritten;
use crate::spark::{Purpose, Session, SparkOptions};

/// How the two queries are run and compared.
#[derive(Debug, Clone, Copy)]
pub struct Measuring {
    /// Floating-point values are equal within this relative tolerance.
    pub tolerance: f64,
    /// Each query runs this many times (`--runs`), alternating, the original first.
    pub runs: usize,
}

/// How the Polars engine runs both queries.
pub struct PolarsOptions {
    /// Run on a sample of each table (as the planner counted).
    pub sample: Option<crate::count::Sample>,
    /// Relative tolerance for floating-point values.
    pub tolerance: f64,
    /// Each query runs this many times, alternating, the original first.
    pub runs: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StageStats {
    pub stage_id: i64,
    pub tasks: i64,
    pub duration_ms: i64,
    pub max_task_records: i64,
    pub median_task_records: i64,
    pub max_task_bytes: i64,
    pub max_task_ms: i64,
    pub median_task_ms: i64,
    pub spill_bytes: i64,
    /// The stage's task durations summed: the slot time it took.
    #[serde(default)]
    pub task_ms: i64,
    /// Shuffle records read per task, in task index order (for the HTML report; not in the
    /// JSON).
    #[serde(default, skip_serializing)]
    pub task_records: Vec<i64>,
    /// When the stage was submitted, its last task finished and it completed (epoch ms), and
    /// each task's duration in task index order: for the replay on the cluster's cores
    /// (`timing`); not in the JSON.
    #[serde(default, skip_serializing)]
    pub submitted_ms: Option<i64>,
    #[serde(default, skip_serializing)]
    pub last_finish_ms: Option<i64>,
    #[serde(default, skip_serializing)]
    pub completed_ms: Option<i64>,
    #[serde(default, skip_serializing)]
    pub task_durations_ms: Vec<i64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunStats {
    /// The query's wall time: of its median timed run, when it ran several times.
    pub wall_ms: i64,
    /// Each timed run's wall time, in the order run (one entry: it ran once).
    #[serde(default)]
    pub runs_ms: Vec<i64>,
    /// The first run's wall time, when it was the warm-up (JIT, caches) and not timed.
    #[serde(default)]
    pub warmup_ms: Option<i64>,
    /// Its stages' task durations summed (`StageStats::task_ms`), of the run `wall_ms` is: what
    /// the query costs the cluster's slots, whatever the waits between tasks.
    #[serde(default)]
    pub total_task_ms: i64,
    pub rows: i64,
    pub columns: Vec<String>,
    pub stages: Vec<StageStats>,
    /// What AQE did, from the final plan's metrics (None: not measured, or AQE off).
    #[serde(default)]
    pub aqe: Option<AqeDid>,
    /// The time Spark took to analyse, optimise and plan the query (classic sessions).
    #[serde(default)]
    pub planning_ms: Option<i64>,
    /// When the run started and ended (epoch ms; Spark), for the replay; not in the JSON.
    #[serde(default, skip_serializing)]
    pub start_ms: Option<i64>,
    #[serde(default, skip_serializing)]
    pub end_ms: Option<i64>,
}

/// What AQE did in a query, from its final plan's metrics (Spark's SQL tab / REST API).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AqeDid {
    /// Partitions split as skewed, and the tasks they became (each side's read counts them).
    pub skewed_partitions: i64,
    pub skewed_splits: i64,
    /// Shuffle reads that coalesced partitions, and the tasks that read several.
    pub coalesced_reads: i64,
    pub coalesced_partitions: i64,
    pub sort_merge_joins: i64,
    /// Sort-merge joins that ran with skew splits.
    pub skew_joins: i64,
    pub broadcast_joins: i64,
    pub shuffled_hash_joins: i64,
}

impl AqeDid {
    /// One line: what AQE did, with its numbers.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if self.skewed_partitions > 0 {
            parts.push(format!(
                "split {} skewed partition(s) into {} tasks",
                self.skewed_partitions, self.skewed_splits
            ));
        }
        if self.coalesced_reads > 0 {
            parts.push(format!(
                "coalesced partitions in {} shuffle read(s) ({} tasks read several)",
                self.coalesced_reads, self.coalesced_partitions
            ));
        }
        parts.push(format!(
            "joins run: {} sort-merge ({} with skew splits), {} broadcast hash, {} shuffled hash",
            self.sort_merge_joins, self.skew_joins, self.broadcast_joins, self.shuffled_hash_joins
        ));
        parts.join("; ")
    }
}

impl RunStats {
    /// The spread of its timed runs' wall times (slowest minus fastest); None under two.
    pub fn spread_ms(&self) -> Option<i64> {
        let (lo, hi) = (self.runs_ms.iter().min()?, self.runs_ms.iter().max()?);
        (self.runs_ms.len() >= 2).then_some(hi - lo)
    }

    /// `total_task_ms` from its stages.
    fn with_task_total(mut self) -> RunStats {
        self.total_task_ms = self.stages.iter().map(|s| s.task_ms).sum();
        self
    }

    /// The stage that holds the largest shuffle-read task: the join stage when one task owns a key.
    pub fn join_stage(&self) -> Option<&StageStats> {
        self.stages
            .iter()
            .filter(|s| s.max_task_records > 0)
            .max_by_key(|s| (s.max_task_records, s.max_task_bytes))
    }
}

/// The driver's answer to a `verify` request.
#[derive(Debug, Deserialize)]
struct VerifyAnswer {
    spark_version: Option<String>,
    master: Option<String>,
    identical: Option<bool>,
    before: Option<RunStats>,
    after: Option<RunStats>,
    #[serde(default)]
    only_in_original: Vec<String>,
    #[serde(default)]
    only_in_rewritten: Vec<String>,
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Verification {
    pub engine: String,
    /// The engine's version (Spark's, or the Polars crate's).
    pub engine_version: String,
    /// Spark: the version and master. Empty for Polars.
    pub spark_version: String,
    pub master: String,
    /// Polars: what was rendered differently from the Spark SQL, one line each.
    pub rendered_for_polars: Vec<String>,
    /// What each table was read as: whole, or which sample.
    pub inputs: Vec<String>,
    pub identical: bool,
    pub columns_match: bool,
    pub tolerance: f64,
    pub rows_original: i64,
    pub rows_rewritten: i64,
    /// Up to 5 rows each that the other side lacks.
    pub only_in_original: Vec<String>,
    pub only_in_rewritten: Vec<String>,
    /// The planner's figures for the first rewritten join (rows per task).
    pub predicted_before: Option<TaskStats>,
    pub predicted_after: Option<TaskStats>,
    pub measured_before: RunStats,
    pub measured_after: RunStats,
    pub conf: Vec<(String, String)>,
    pub notes: Vec<String>,
    /// How many times each query ran (alternating, the original first; with more than one,
    /// the first is the warm-up and is not timed).
    pub runs: usize,
    /// The noise measured: the larger spread of one query's timed runs (None: fewer than two).
    pub noise_ms: Option<i64>,
    /// The rewrite ran slower than the original by more than the noise (`slower_by`): exit
    /// code 1, as for different rows. Judged at the cluster's size when the queries' tasks are
    /// replayed on it (`timing`), else here.
    pub slower: bool,
    /// Both queries' times replayed on the cluster's cores from the tasks measured here (Spark;
    /// None: no task times).
    pub timing: Option<timing::Timing>,
}

/// The median of some run times (of an even count, the upper one). The Spark runner takes its
/// own median, so only the Polars engine calls this.
#[cfg(any(feature = "polars", test))]
pub(crate) fn median(ms: &[i64]) -> i64 {
    let mut v = ms.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// How much slower than the original the rewrite may run before it counts as slower: the
/// noise measured (the larger spread of one query's runs), or with one run each, an allowance
/// for one run's noise (a quarter of the original's time and half a second; the original runs
/// first, on a colder JVM, so the test leans towards the rewrite only by that).
fn allowed_ms(before: &RunStats, after: &RunStats) -> (Option<i64>, f64) {
    match before.spread_ms().max(after.spread_ms()) {
        Some(noise) => (Some(noise), noise as f64),
        None => (None, before.wall_ms as f64 * 0.25 + 500.0),
    }
}

/// The rewrite ran slower than the original by more than the allowance, and the noise.
fn ran_slower(before: &RunStats, after: &RunStats) -> (bool, Option<i64>) {
    let (noise, allowed) = allowed_ms(before, after);
    ((after.wall_ms - before.wall_ms) as f64 > allowed, noise)
}

/// One query, as Spark's `spark.sql` takes it: no trailing semicolon, a single statement.
fn one_query(sql: &str, what: &str) -> Result<String> {
    let stmts = crate::sql::parse(sql)?;
    match stmts.as_slice() {
        [sqlparser::ast::Statement::Query(_)] => {
            Ok(sql.trim().trim_end_matches(';').trim().to_string())
        }
        [_] => Err(Error::Usage(format!(
            "verify runs one query (a SELECT); the {what} is another kind of statement"
        ))),
        s => Err(Error::Usage(format!(
            "verify runs one query (a SELECT); the {what} has {} statements",
            s.len()
        ))),
    }
}

/// Run `original` and the rewrite on Spark through pyspark.
pub fn spark(
    original: &str,
    rewritten: &str,
    r: Option<&Rewritten>,
    tables: &[(String, String)],
    opts: &SparkOptions,
    how: Measuring,
    cluster: Option<&crate::cluster::ClusterSize>,
) -> Result<Verification> {
    let original = one_query(original, "query")?;
    let rewritten = one_query(rewritten, "rewrite")?;
    let (original, rewritten, views) = one_part_views(&original, &rewritten, tables)?;
    // A run of its own: the session's summary is verify's, not the report's counting.
    let session = Session::start(opts, Purpose::Verify, &crate::stats::RunStats::new())?;
    // Each run of each query is bounded by --spark-timeout, as one counting job is.
    let runs = 2 * how.runs.max(1) as u32;
    let answer = session.request_within(
        &verify_request(&original, &rewritten, &views, opts, how),
        "running both queries",
        runs,
    )?;
    drop(session);
    let parsed: VerifyAnswer = serde_json::from_value(answer)
        .map_err(|e| Error::Internal(format!("Spark engine: unreadable verify answer: {e}")))?;
    let (mut before, mut after) = (
        parsed.before.unwrap_or_default().with_task_total(),
        parsed.after.unwrap_or_default().with_task_total(),
    );
    if opts
        .conf
        .iter()
        .any(|(k, v)| k == crate::settings::AQE_ENABLED && v.eq_ignore_ascii_case("false"))
    {
        (before.aqe, after.aqe) = (None, None);
    }
    let (predicted_before, predicted_after) = predicted(r);
    let (slower_here, noise_ms) = ran_slower(&before, &after);
    let here = crate::cluster::local_cores(&opts.master).filter(|_| opts.remote.is_none());
    let timing = cluster.and_then(|c| timing::Timing::of(&before, &after, c, here));
    let slower = match &timing {
        Some(t) if !t.cluster_is_here() => t.slower_on_cluster(noise_ms),
        _ => slower_here,
    };
    let mut notes = rewrite_notes(r);
    notes.extend(aqe_predicted(r));
    notes.extend(parsed.notes);
    let version = parsed.spark_version.unwrap_or_default();
    Ok(Verification {
        engine: "spark".into(),
        engine_version: version.clone(),
        spark_version: version,
        master: match &opts.remote {
            Some(url) => crate::spark::redacted(url),
            None => parsed.master.unwrap_or_default(),
        },
        rendered_for_polars: vec![],
        inputs: tables.iter().map(|(n, _)| format!("{n}: all rows")).collect(),
        identical: parsed.identical.unwrap_or(false) && before.columns == after.columns,
        columns_match: before.columns == after.columns,
        tolerance: how.tolerance,
        rows_original: before.rows,
        rows_rewritten: after.rows,
        only_in_original: parsed.only_in_original,
        only_in_rewritten: parsed.only_in_rewritten,
        predicted_before,
        predicted_after,
        runs: how.runs,
        noise_ms,
        slower,
        timing,
        measured_before: before,
        measured_after: after,
        conf: opts.conf.clone(),
        notes,
    })
}

/// What the planner predicted AQE does to each rewritten join, before and after.
fn aqe_predicted(r: Option<&Rewritten>) -> Vec<String> {
    let Some(r) = r else { return Vec::new() };
    r.changes
        .iter()
        .filter_map(|c| {
            let a = c.aqe.as_ref()?;
            let after = a.after.as_ref().map(|x| x.summary()).unwrap_or_default();
            Some(format!(
                "predicted for {}: before, {}; after, {after}",
                crate::format::one_line(&c.join, 80),
                a.before.summary()
            ))
        })
        .collect()
}

/// Table names and their paths.
type Named = Vec<(String, String)>;

/// Spark registers a temporary view under a one-part name: where a table is named `db.t`, it
/// becomes the one quoted name `` `db.t` ``, for its view and in both queries.
fn one_part_views(
    original: &str,
    rewritten: &str,
    tables: &[(String, String)],
) -> Result<(String, String, Named)> {
    if !tables.iter().any(|(n, _)| n.contains('.')) {
        return Ok((original.to_string(), rewritten.to_string(), tables.to_vec()));
    }
    let one_part = |sql: &str| -> Result<String> {
        let mut stmts = crate::sql::parse(sql)?;
        let _ = sqlparser::ast::visit_relations_mut(&mut stmts, |n| {
            if n.0.len() > 1 {
                let name = polars_sql::name_of(n);
                *n = sqlparser::ast::ObjectName(vec![sqlparser::ast::ObjectNamePart::Identifier(
                    sqlparser::ast::Ident::with_quote('`', name),
                )]);
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        Ok(stmts.iter().map(crate::sql::render).collect::<Vec<_>>().join(";\n"))
    };
    let views = tables
        .iter()
        .map(|(n, p)| {
            (
                if n.contains('.') {
                    crate::sql::ident(&n.to_ascii_lowercase())
                } else {
                    n.clone()
                },
                p.clone(),
            )
        })
        .collect();
    Ok((one_part(original)?, one_part(rewritten)?, views))
}

/// The driver's `verify` request: the tables, both queries, the digits that floating-point values
/// are compared to, the runs, and the Connect server's UI.
fn verify_request(
    original: &str,
    rewritten: &str,
    tables: &[(String, String)],
    opts: &SparkOptions,
    how: Measuring,
) -> serde_json::Value {
    let digits = (-how.tolerance.log10()).round().clamp(1.0, 17.0) as i64;
    serde_json::json!({
        "op": "verify",
        "spark_ui": opts.spark_ui,
        "tables": tables.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
        "original": original,
        "rewritten": rewritten,
        "digits": digits,
        "runs": how.runs,
    })
}

/// The version of the Polars crate this binary embeds.
#[cfg(feature = "polars")]
pub const POLARS_VERSION: &str = "0.55.2";

/// Run `original` and the rewrite in this process on Polars.
#[cfg(feature = "polars")]
pub fn polars(
    original: &str,
    rewritten: &str,
    r: Option<&Rewritten>,
    tables: &[(String, &crate::table::Table)],
    how: &PolarsOptions,
) -> Result<Verification> {
    let original = one_query(original, "query")?;
    let rewritten = one_query(rewritten, "rewrite")?;
    let (sample, tolerance) = (how.sample, how.tolerance);
    let run = polars_engine::run(&original, &rewritten, tables, how)?;
    let (predicted_before, predicted_after) = predicted(r);
    let mut rendered: Vec<String> = run.original.changes.clone();
    for c in &run.rewritten.changes {
        if !rendered.contains(c) {
            rendered.push(c.clone());
        }
    }
    let mut notes = rewrite_notes(r);
    if sample.is_some() {
        notes.push(
            "a sample: the rows are compared on the sampled tables, not the full ones".into(),
        );
    }
    let columns_match = run.before.columns == run.after.columns;
    Ok(Verification {
        engine: "polars".into(),
        engine_version: POLARS_VERSION.into(),
        spark_version: String::new(),
        master: String::new(),
        rendered_for_polars: rendered,
        inputs: run.inputs,
        identical: run.identical && columns_match,
        columns_match,
        tolerance,
        rows_original: run.before.rows,
        rows_rewritten: run.after.rows,
        only_in_original: run.only_in_original,
        only_in_rewritten: run.only_in_rewritten,
        predicted_before,
        predicted_after,
        runs: how.runs,
        noise_ms: ran_slower(&run.before, &run.after).1,
        measured_before: run.before,
        measured_after: run.after,
        conf: vec![],
        notes,
        // Polars' times are not Spark's: reported, never failed on.
        slower: false,
        timing: None,
    })
}

/// The planner's largest task before and after, for the query: the largest of every stage it
/// measured, joins and windows, rewritten or left as written (a stage left as written has the
/// same tasks after, unless it is a join that runs in a rewritten join's branches: then its
/// tasks counted on the branches' rows, or where they were not, its tasks as written are a
/// bound: see `rewrite_notes`). None when nothing was rewritten.
fn predicted(
    r: Option<&Rewritten>,
) -> (Option<crate::plan::TaskStats>, Option<crate::plan::TaskStats>) {
    let Some(r) = r.filter(|r| r.changed()) else { return (None, None) };
    let (before, after) = stages(r);
    let largest =
        |v: Vec<&crate::plan::TaskStats>| v.into_iter().max_by_key(|t| t.max_task_rows).cloned();
    (largest(before), largest(after))
}

/// Every stage the planner measured, as written and after the rewrite.
fn stages(r: &Rewritten) -> (Vec<&crate::plan::TaskStats>, Vec<&crate::plan::TaskStats>) {
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for c in &r.changes {
        before.push(&c.before);
        after.push(&c.after);
    }
    for u in &r.unchanged_joins {
        if let Some(b) = &u.before {
            before.push(b);
            match (&u.after, u.in_branches) {
                (Some(a), true) => after.push(a),
                (None, true) => {}
                (_, false) => after.push(b),
            }
        }
    }
    for w in &r.windows {
        let Some(p) = &w.plan else { continue };
        // What Spark shuffles: the records after a map-side reduction, where it has one (not
        // predicted for a stage with nothing hot: its rows would overstate them).
        let reduced = matches!(
            p.verdict,
            crate::window::Verdict::PartialAggregation | crate::window::Verdict::GroupLimit
        );
        let written = match &p.records {
            Some(records) => records,
            None if reduced => continue,
            None => &p.before,
        };
        before.push(written);
        after.push(if w.status == "rewritten" {
            p.after.as_ref().unwrap_or(written)
        } else {
            written
        });
    }
    (before, after)
}

/// What the reader of a verification should know about the rewrite itself.
fn rewrite_notes(r: Option<&Rewritten>) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(r) = r {
        if stages(r).0.len() > 1 {
            notes
                .push("the predicted figures are the largest task of the stages the planner measured (joins and windows), rewritten or left as written".into());
        }
        let after = predicted(Some(r)).1.map(|t| t.max_task_rows).unwrap_or(0);
        for c in r.changes.iter().filter(|c| c.in_branches && c.after.max_task_rows >= after) {
            notes.push(format!(
                "{} is rewritten and runs again in each branch of a rewritten join after it, on the branch's rows: its largest task after, {} rows, bounds its tasks there",
                c.join,
                crate::format::fmt_count(c.after.max_task_rows)
            ));
        }
        for u in r.unchanged_joins.iter().filter(|u| u.in_branches && u.after.is_none()) {
            match &u.before {
                Some(b) if b.max_task_rows > after => notes.push(format!(
                    "{} runs in each branch of a rewritten join after it, on the branch's rows: its largest task as written, {} rows, bounds its tasks after",
                    u.join,
                    crate::format::fmt_count(b.max_task_rows)
                )),
                _ => {}
            }
        }
        if !r.changed() {
            notes.push("nothing was rewritten: the two queries are the same query".into());
        }
        if let Some(c) = r.changes.first() {
            notes.extend(c.notes.iter().filter(|n| n.on_counts()).map(ToString::to_string));
        }
    }
    notes
}

pub fn json(v: &Verification) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

pub fn text(v: &Verification) -> String {
    let mut o = engine_heading(v);
    o.push_str(&rows_verdict(v));
    for line in tasks_table(v).to_string().lines() {
        o.push_str(line.trim_end());
        o.push('\n');
    }
    if let (Some(b), Some(a)) = (v.measured_before.join_stage(), v.measured_after.join_stage()) {
        o.push_str(&format!(
            "largest task: {} -> {} records ({:.1}x smaller); after, it is {:.1}x the median task\n",
            fmt_count(b.max_task_records.max(0) as u64),
            fmt_count(a.max_task_records.max(0) as u64),
            b.max_task_records as f64 / a.max_task_records.max(1) as f64,
            a.max_task_records as f64 / a.median_task_records.max(1) as f64
        ));
    }
    o.push_str(&times_line(v));
    if let Some(t) = &v.timing {
        o.push_str(&format!("time at the cluster's size: {}\n", t.line()));
    }
    let on_cluster = v.timing.as_ref().filter(|t| !t.cluster_is_here());
    if let (true, Some(t)) = (v.slower, on_cluster) {
        o.push_str(&format!(
            "SLOWER: at {} cores the rewrite's tasks take {} against the original's {}, more than the noise measured here allows\n",
            t.cluster.cores,
            fmt_ms(t.after.cluster_ms),
            fmt_ms(t.before.cluster_ms)
        ));
    } else if v.slower {
        let over = match v.noise_ms {
            Some(n) => format!("more than the noise measured ({})", fmt_ms(n)),
            None => "more than a quarter and half a second over it".to_string(),
        };
        o.push_str(&format!(
            "SLOWER: the rewrite took {} against the original's {}, {over}\n",
            fmt_ms(v.measured_after.wall_ms),
            fmt_ms(v.measured_before.wall_ms)
        ));
    }
    for (when, run) in [("before", &v.measured_before), ("after", &v.measured_after)] {
        if let Some(a) = &run.aqe {
            o.push_str(&format!("AQE {when}: {}\n", a.line()));
        }
    }
    if v.engine != "spark" {
        o.push_str("tasks: Polars runs in one process, so only the planner's figures (Spark's hash partitioning of the counted keys) are shown; --engine spark measures them\n");
    }
    for n in &v.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    o
}

/// The queries' times: the median run's, each query's range over its runs and the noise, and
/// (Spark) the task time summed over their stages.
fn times_line(v: &Verification) -> String {
    let (b, a) = (&v.measured_before, &v.measured_after);
    let range = |r: &RunStats| {
        let (lo, hi) = (r.runs_ms.iter().min(), r.runs_ms.iter().max());
        lo.zip(hi).map(|(lo, hi)| format!("{}-{}", fmt_ms(*lo), fmt_ms(*hi))).unwrap_or_default()
    };
    let runs = match v.noise_ms {
        Some(n) => format!(
            "median of {} timed runs each after a warm-up; {} and {}; noise {}",
            b.runs_ms.len(),
            range(b),
            range(a),
            fmt_ms(n)
        ),
        None if v.runs == 2 => "one timed run each after a warm-up, noise not measured".into(),
        None => "one run each, noise not measured".to_string(),
    };
    let mut o = format!("time: {} -> {} ({runs})", fmt_ms(b.wall_ms), fmt_ms(a.wall_ms));
    if v.engine == "spark" && b.total_task_ms + a.total_task_ms > 0 {
        o.push_str(&format!(
            "; task time summed over the stages: {} -> {}",
            fmt_ms(b.total_task_ms),
            fmt_ms(a.total_task_ms)
        ));
    }
    o + "\n"
}

/// The verification as one self-contained HTML page: the verdict on the rows, the tasks table,
/// and the join stage's records per task before and after on one scale, as Spark measured them.
pub fn html(v: &Verification) -> crate::html::Page {
    let verdict = if v.identical { "identical rows" } else { "DIFFERENT rows" };
    let mut p = crate::html::Page::new(&format!("skewjoin verify: {verdict}"));
    html_section(&mut p, v);
    p
}

/// The verification's paragraphs, table and charts, on `p` (its own page, or `fix`'s).
pub fn html_section(p: &mut crate::html::Page, v: &Verification) {
    use crate::html::Bars;
    p.para(engine_heading(v).trim_end());
    p.para(rows_verdict(v).trim_end());
    p.comfy(&tasks_table(v));
    let stages =
        [("before", v.measured_before.join_stage()), ("after", v.measured_after.join_stage())];
    let as_u64 =
        |s: &StageStats| s.task_records.iter().map(|&r| r.max(0) as u64).collect::<Vec<u64>>();
    let top = stages.iter().filter_map(|(_, s)| s.map(|s| s.max_task_records.max(0) as u64)).max();
    for (when, s) in stages {
        let Some(s) = s.filter(|s| !s.task_records.is_empty()) else { continue };
        let values = as_u64(s);
        let largest = values.iter().enumerate().max_by_key(|x| x.1).map(|x| x.0);
        let marks = largest.map(|i| vec![(i, "the largest".to_string())]).unwrap_or_default();
        let title = format!(
            "{when}: shuffle records per task of stage {} (the join stage), measured",
            s.stage_id
        );
        p.svg(
            Bars { title: &title, item: "task", unit: "records", values: &values, marks, top }
                .svg(),
        );
    }
    for n in &v.notes {
        p.para(&format!("note: {n}"));
    }
}

/// The first lines: the engine, and for Spark its settings, for Polars what was rendered
/// differently and what each table was read as.
fn engine_heading(v: &Verification) -> String {
    if v.engine == "spark" {
        return format!(
            "skewjoin verify: engine spark (Spark {}, master {}); {}\n",
            v.spark_version,
            v.master,
            v.conf.iter().map(|(k, x)| format!("{k}={x}")).collect::<Vec<_>>().join(", ")
        );
    }
    let mut o =
        format!("skewjoin verify: engine polars {} (in this process, no Spark); both queries rendered for Polars SQL from the same AST\n", v.engine_version);
    for c in &v.rendered_for_polars {
        o.push_str(&format!("  rendered: {c}\n"));
    }
    o.push_str(&format!("  read: {}\n", v.inputs.join("; ")));
    o
}

/// Whether the rows are the same; if not, the counts and the first rows that differ.
fn rows_verdict(v: &Verification) -> String {
    if v.identical {
        return format!(
            "rows: identical as multisets, {} rows each (floating-point values compared to a relative {:e})\n",
            fmt_count(v.rows_original.max(0) as u64),
            v.tolerance
        );
    }
    let mut o = format!(
        "rows: DIFFERENT: {} rows in the original, {} in the rewrite{} (floating-point values compared to a relative {:e})\n",
        fmt_count(v.rows_original.max(0) as u64),
        fmt_count(v.rows_rewritten.max(0) as u64),
        if v.columns_match { String::new() } else { format!("; columns {:?} against {:?}", v.measured_before.columns, v.measured_after.columns) },
        v.tolerance
    );
    for r in &v.only_in_original {
        o.push_str(&format!("  only in the original: {r}\n"));
    }
    for r in &v.only_in_rewritten {
        o.push_str(&format!("  only in the rewrite:  {r}\n"));
    }
    o
}

/// The largest and median task before and after: the planner's prediction, then the run's.
fn tasks_table(v: &Verification) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    t.set_header(vec![
        "",
        "query time",
        "join stage",
        "stage time",
        "largest task (records)",
        "median task",
        "max/median",
        "largest shuffle read",
        "spill",
    ]);
    let measured = if v.engine == "spark" { "measured" } else { "polars" };
    if let Some(p) = &v.predicted_before {
        t.add_row(predicted_row("before, predicted", p));
    }
    t.add_row(measured_row(
        &format!("before, {measured}"),
        v.measured_before.join_stage(),
        v.measured_before.wall_ms,
    ));
    if let Some(p) = &v.predicted_after {
        t.add_row(predicted_row("after, predicted", p));
    }
    t.add_row(measured_row(
        &format!("after, {measured}"),
        v.measured_after.join_stage(),
        v.measured_after.wall_ms,
    ));
    t
}

/// A row of the tasks table for a run: the query's time, and its join stage's tasks if known.
fn measured_row(label: &str, s: Option<&StageStats>, wall_ms: i64) -> Vec<String> {
    let dash = || "-".to_string();
    let (a, b) = s.map(|s| (s.max_task_records, s.median_task_records)).unwrap_or((0, 0));
    vec![
        label.to_string(),
        fmt_ms(wall_ms),
        s.map(|s| s.stage_id.to_string()).unwrap_or_else(dash),
        s.map(|s| fmt_ms(s.duration_ms)).unwrap_or_else(dash),
        s.map(|_| fmt_count(a.max(0) as u64)).unwrap_or_else(dash),
        s.map(|_| fmt_count(b.max(0) as u64)).unwrap_or_else(dash),
        s.map(|_| format!("{:.1}x", a as f64 / b.max(1) as f64)).unwrap_or_else(dash),
        s.map(|s| human_i64(s.max_task_bytes)).unwrap_or_else(dash),
        s.map(|s| human_i64(s.spill_bytes)).unwrap_or_else(dash),
    ]
}

/// A row of the tasks table for the planner's prediction (it has no times and no spill).
fn predicted_row(label: &str, p: &TaskStats) -> Vec<String> {
    let dash = "-".to_string();
    vec![
        label.to_string(),
        dash.clone(),
        dash.clone(),
        dash.clone(),
        fmt_count(p.max_task_rows),
        fmt_count(p.median_task_rows),
        format!("{:.1}x", p.max_task_rows as f64 / p.median_task_rows.max(1) as f64),
        human_i64(p.max_task_bytes as i64),
        dash,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(timed: &[i64]) -> RunStats {
        RunStats { wall_ms: median(timed), runs_ms: timed.to_vec(), ..Default::default() }
    }

    #[test]
    fn slower_is_past_the_noise_measured_or_one_runs_allowance() {
        // Timed runs: the noise is the larger spread of one query's runs (here 300 ms).
        let (before, after) = (ran(&[1_000, 1_300]), ran(&[1_350, 1_400]));
        assert_eq!(allowed_ms(&before, &after), (Some(300), 300.0));
        assert_eq!(ran_slower(&before, &after), (false, Some(300)));
        assert_eq!(ran_slower(&before, &ran(&[1_700, 1_650])), (true, Some(300)));
        // One run each: a quarter of the original's time and half a second.
        let (before, after) = (ran(&[2_000]), ran(&[2_999]));
        assert_eq!(allowed_ms(&before, &after), (None, 1_000.0));
        assert!(!ran_slower(&before, &after).0 && ran_slower(&before, &ran(&[3_001])).0);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_upper() {
        assert_eq!((median(&[5, 1, 3]), median(&[4, 2]), median(&[])), (3, 4, 0));
    }

    #[test]
    fn task_time_is_the_stages_summed() {
        let stage = |task_ms| StageStats { task_ms, ..Default::default() };
        let r = RunStats { stages: vec![stage(1_200), stage(300)], ..Default::default() };
        assert_eq!(r.with_task_total().total_task_ms, 1_500);
    }
}
