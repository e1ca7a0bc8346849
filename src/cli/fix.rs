//! `skewjoin fix`: a slow job's event log in; the slow stage located, measured and
//! diagnosed (as `diagnose` does), its join rebuilt as a query over the tables the log names,
//! rewritten under the job's own settings, the prediction set against what the log measured,
//! and with `--verify` both queries run.

use std::collections::HashMap;
use std::path::PathBuf;

use clap::Args;

use skewjoin::classify::Classifier;
use skewjoin::diagnose::fix::{self, FixQuery, FixReport, StageCheck, TableCheck};
use skewjoin::diagnose::{self, eventlog, report};
use skewjoin::plan::{JoinType, PlanOptions};
use skewjoin::stats::RunStats;
use skewjoin::table::Table;
use skewjoin::verify::{self, Verification};
use skewjoin::{rewrite, Error, Result};

use super::diagnose::{from_server, log_at, LogAt};
use super::flags::{
    open_tables, AlsoText, CountingArgs, EmitArgs, HtmlOut, JobLog, MinStage, PlannerArgs, Quiet,
    Runs, SparkArgs, TextOrJson, WithCode,
};
use super::verify::{verify_polars, verify_spark, BothQueries, Engine, Measuring};

/// From a slow job's event log to the rewritten query: locate, measure, diagnose, fix, verify
#[derive(Args)]
pub struct FixArgs {
    /// The slow job's event log: a file, a rolling eventlog_v2_* folder, an object, or a Spark
    /// History Server application (http://HOST:18080 with --app, or a URL that names it)
    #[arg(value_name = "EVENT_LOG")]
    event_log: String,
    /// The application, when EVENT_LOG is a History Server
    #[arg(long, value_name = "APP_ID")]
    app: Option<String>,
    /// The attempt of a retried application (default: its last)
    #[arg(long, value_name = "N")]
    attempt: Option<String>,
    /// Also run the query and its rewrite (on Polars in this process, or on Spark with
    /// --engine spark) and compare their rows and tasks
    #[arg(long)]
    verify: bool,
    #[command(flatten)]
    min_stage: MinStage,
    /// With --verify: the engine that runs both queries (default: polars in a build with the
    /// `polars` feature, else spark)
    #[arg(long, value_enum, requires = "verify")]
    engine: Option<Engine>,
    #[command(flatten)]
    runs: Runs,
    #[command(flatten)]
    spark: SparkArgs,
    /// Count the tables on Spark (local, --master or --remote), by the catalog names the log's
    /// plan gives them, instead of reading their files here: for a job whose files this
    /// machine cannot read
    #[arg(long)]
    count_on_spark: bool,
    /// With --count-on-spark: the longest Spark's start or one counting job may take, in seconds
    #[arg(long, default_value_t = 3600, value_name = "SECONDS", requires = "count_on_spark")]
    spark_timeout: u64,
    /// The planner's options; the job's settings are the log's own (--settings-from another
    /// log, --spark-defaults or --conf change them)
    #[command(flatten)]
    planner: PlannerArgs,
    /// Write the rewritten query to FILE (the report says so in place of the SQL)
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    emit: EmitArgs,
    #[command(flatten)]
    quiet: Quiet,
    #[command(flatten)]
    html: HtmlOut,
    #[command(flatten)]
    also_text: AlsoText,
}

/// The output, and false (exit code 1) when verify found different rows.
pub fn run(a: FixArgs) -> Result<(String, bool)> {
    let mut fetched = Vec::new();
    let stats = a.planner.run_stats();
    let path = log_path(&a, &mut fetched)?;
    let log = eventlog::read(&path, a.quiet.progress(), &stats)?;
    let opts = diagnose::Options {
        min_stage_ms: a.min_stage.ms()?,
        progress: a.quiet.progress(),
        stats: stats.clone(),
    };
    let d = diagnose::diagnose_log(&log, None, &opts)?;
    let mut rep = FixReport {
        no_query: fix::no_query(&d),
        diagnosis: d,
        query: None,
        rewrite: None,
        stage: None,
        tables: Vec::new(),
        verification: None,
        call_site: None,
        call_site_note: None,
    };
    let Some((stage_id, join)) = fix::hot_join(&rep.diagnosis).map(|(s, j)| (s, j.clone())) else {
        return finish(&a, rep, &stats);
    };
    match fix::call_site(&log.app, stage_id) {
        Ok(site) => rep.call_site = Some(site),
        Err(why) => rep.call_site_note = Some(why),
    }
    let query = match fix::from_sql_text(&log.app, stage_id).map_or_else(|| fix::rebuild(&join), Ok)
    {
        Ok(q) => q,
        Err(why) => {
            rep.no_query =
                Some(format!("stage {stage_id}'s join cannot be rebuilt as a query: {why}"));
            return finish(&a, rep, &stats);
        }
    };
    let session = spark_session(&a, &stats)?;
    let named = named_tables(&log.app, stage_id, &query, session.is_some());
    // A table gone since the run: the diagnosis still stands, printed before the error.
    let tables = open_tables(&named, session.as_ref(), &stats)
        .inspect_err(|_| print!("{}", report::text(&rep.diagnosis)))?;
    rep.tables = fix::table_checks(&log.app, stage_id, &query, &files_now(&tables));
    let job = JobLog::of(&log.app, &a.event_log, Some(stage_id));
    let mut opts =
        a.planner.options_with_job(JoinType::Inner, &a.spark, &a.quiet, Some(&job), &stats)?;
    opts.engine = CountingArgs::engine(session.as_ref());
    let classifier = Classifier::with_file(a.planner.hot.rules.as_deref())?;
    let r = rewrite::rewrite(&query.sql, &tables, &classifier, &opts)?;
    rep.stage = Some(StageCheck::new(&rep.diagnosis, stage_id, &r));
    if a.verify {
        rep.verification = Some(run_both(&a, &query, &r, &named, &tables, &opts)?);
    }
    rep.query = Some(query);
    rep.rewrite = Some(r);
    if let (Some(out), Some(r)) = (&a.output, &rep.rewrite) {
        let fixed = match a.emit.language() {
            Some(lang) => stage_code(&rep, lang).unwrap_or_default(),
            None => rewrite::sql_with_comments(r),
        };
        std::fs::write(out, fixed).map_err(|e| Error::Io { path: out.clone(), source: e })?;
    }
    finish(&a, rep, &stats)
}

/// Each table of the query and where it is read: its path, or on Spark (`by_name`) its catalog
/// name where the plan gives one.
fn named_tables(
    app: &skewjoin::diagnose::model::App,
    stage_id: i64,
    q: &FixQuery,
    by_name: bool,
) -> Vec<(String, String)> {
    let names =
        if by_name { fix::catalog_names(app, stage_id, q) } else { vec![None; q.tables.len()] };
    q.tables
        .iter()
        .zip(names)
        .map(|(t, c)| (t.name.clone(), c.unwrap_or_else(|| t.table.clone())))
        .collect()
}

/// The files and bytes of each table read here (a table Spark reads has none to compare).
fn files_now(tables: &HashMap<String, Table>) -> HashMap<String, (u64, u64)> {
    tables
        .iter()
        .filter(|(_, t)| !t.is_held())
        .map(|(n, t)| {
            (n.clone(), (t.files.len() as u64, t.files.iter().map(|f| f.byte_len()).sum()))
        })
        .collect()
}

/// The Spark that counts the tables, with --count-on-spark.
fn spark_session(
    a: &FixArgs,
    stats: &std::sync::Arc<RunStats>,
) -> Result<Option<std::sync::Arc<skewjoin::spark::Session>>> {
    if !a.count_on_spark {
        return Ok(None);
    }
    if a.verify && Engine::or_default(a.engine) == Engine::Polars {
        return Err(Error::Usage("--count-on-spark: Polars reads the tables' files here; verify on Spark with --engine spark".into()));
    }
    a.spark.start_session(a.spark_timeout, stats).map(Some)
}

/// The log's path here: the file or folder given, or the History Server's copy.
fn log_path(a: &FixArgs, fetched: &mut Vec<tempfile::TempDir>) -> Result<PathBuf> {
    match log_at(&a.event_log, a.app.as_deref(), a.attempt.as_deref())? {
        LogAt::Here(path) => Ok(path),
        LogAt::Server(t) => from_server(&t, fetched),
    }
}

/// Both queries on the engine --verify names, with the job's settings.
fn run_both(
    a: &FixArgs,
    q: &FixQuery,
    r: &rewrite::Rewritten,
    named: &[(String, String)],
    tables: &HashMap<String, Table>,
    opts: &PlanOptions,
) -> Result<Verification> {
    let both = BothQueries { original: &q.sql, rewritten: &r.sql, planned: Some(r), named };
    let how = Measuring { tolerance: TOLERANCE, runs: a.runs.count() };
    match Engine::or_default(a.engine) {
        Engine::Spark => {
            verify_spark(&both, &a.spark, None, how, a.planner.hot.sample.is_some(), opts)
        }
        Engine::Polars => verify_polars(&both, tables, a.planner.hot.sample, how),
    }
}

/// Floating-point values compared to this relative tolerance (verify's default).
const TOLERANCE: f64 = 1e-9;

fn finish(a: &FixArgs, rep: FixReport, stats: &RunStats) -> Result<(String, bool)> {
    let same = rep.verification.as_ref().is_none_or(|v| v.identical);
    let code = a.emit.language().and_then(|lang| stage_code(&rep, lang));
    let text = |r: &FixReport| fix_text(r, a.output.as_ref(), code.as_deref());
    a.also_text.write(|| text(&rep))?;
    a.html.write(&rep, fix::html)?;
    let out = if a.format.is_text() {
        text(&rep)
    } else {
        let rewrites = rep.stage.as_ref().is_some_and(|s| s.rewritten);
        let code = code.clone().map(|c| a.emit.out(c, rewrites));
        skewjoin::run::json(&WithCode { report: &rep, code }, stats)
    };
    Ok((out, same))
}

/// The slow stage's join as DataFrame code, for the place the log's call site names.
fn stage_code(r: &FixReport, lang: skewjoin::plan::code::Language) -> Option<String> {
    let (rw, st) = (r.rewrite.as_ref()?, r.stage.as_ref()?);
    let change = fix::stage_change(&r.diagnosis, st.stage_id, rw)?;
    let site = r.call_site.as_ref().map(|s| s.place());
    let mut parts = (**change.code.as_ref()?).clone();
    let q = r.query.as_ref()?;
    if q.source == "rebuilt_from_plan" && q.tables.len() == 2 {
        // The job's DataFrames, called after their tables (the rebuilt SQL's aliases are `l`
        // and `r`); a DataFrame job names its keys in `on` when both sides' are alike.
        parts.names = [q.tables[0].name.clone(), q.tables[1].name.clone()];
        parts.using = parts.plan.left.keys.iter().zip(&parts.plan.right.keys).all(|(a, b)| a == b);
    }
    let day = skewjoin::plan::code::today();
    let inputs = format!(
        "{} the inputs are the DataFrames the job joins, as it joins them (its filters applied)\n",
        if lang == skewjoin::plan::code::Language::PySpark { "#" } else { "//" }
    );
    Some(inputs + &parts.emit(lang, &day, site.as_deref()))
}

/// Where the stage's job is in the user's code, as the text says it.
fn call_site_text(r: &FixReport, stage_id: i64) -> String {
    match (&r.call_site, &r.call_site_note) {
        (Some(site), _) => format!(
            "where: stage {stage_id} ran for `{site}` in the job's code: the join is in the DataFrame that call runs\n"
        ),
        (None, Some(why)) => format!("where: not recorded: {why}\n"),
        (None, None) => String::new(),
    }
}

/// The text report: the diagnosis, then the fix and the verification; the rewritten join as
/// `code` (`--emit pyspark|scala`) in place of the SQL.
fn fix_text(r: &FixReport, written_to: Option<&PathBuf>, code: Option<&str>) -> String {
    let mut o = report::text(&r.diagnosis);
    o.push_str("\n== fix\n");
    if let Some(why) = &r.no_query {
        o.push_str(&format!("{why}\n"));
        return o;
    }
    let (Some(q), Some(rw), Some(st)) = (&r.query, &r.rewrite, &r.stage) else {
        return o;
    };
    o.push_str(&format!("query ({}):\n", q.source.replace('_', " ")));
    o.extend(q.sql.lines().map(|l| format!("  {l}\n")));
    for t in &q.tables {
        o.push_str(&format!("  {} = {}\n", t.name, t.table));
    }
    o.extend(r.tables.iter().map(table_text));
    o.extend(q.notes.iter().map(|n| format!("  note: {n}\n")));
    o.push_str(&call_site_text(r, st.stage_id));
    o.push_str(&stage_text(st));
    match (written_to, code) {
        (Some(p), _) => o.push_str(&format!("rewritten query written to {}\n", p.display())),
        (None, Some(code)) => o.push_str(code),
        (None, None) => o.push_str(&rewrite::sql_with_comments(rw)),
    }
    o.push_str("\n== verify\n");
    match &r.verification {
        Some(v) => o.push_str(&verify::text(v)),
        None => o.push_str(
            "not run: add --verify to run both queries and compare their rows and tasks\n",
        ),
    }
    o
}

/// What the job read of a table against what is there now.
fn table_text(t: &TableCheck) -> String {
    let (then, now) = (t.read_text(), t.now_text());
    let verdict = if t.pruned {
        "the job read only some partitions"
    } else if t.changed {
        "the table changed since the run: the predictions are of today's files"
    } else {
        "the same files"
    };
    format!("  {}: the job read {then}; now {now}: {verdict}\n", t.name)
}

fn stage_text(st: &StageCheck) -> String {
    use skewjoin::format::fmt_count as count;
    let mut o = String::new();
    if let Some(b) = &st.predicted_before {
        let gap =
            st.before_gap.map(|g| format!(" (predicted {:+.1}%)", g * 100.0)).unwrap_or_default();
        o.push_str(&format!(
            "stage {} as written: largest task {} rows predicted; the log measured {} records{gap}, median {}\n",
            st.stage_id,
            count(b.max_task_rows),
            count(st.measured_max_task_records.max(0) as u64),
            count(st.measured_median_task_records.max(0) as u64)
        ));
    }
    o.extend(st.notes.iter().map(|n| format!("  note: {n}\n")));
    if !st.rewritten {
        o.push_str(
            "the rewrite leaves the join as written (the reason is in the SQL's header below)\n",
        );
    } else if let Some(after) = &st.predicted_after {
        o.push_str(&format!(
            "after the rewrite: largest task {} rows predicted, median {}\n",
            count(after.max_task_rows),
            count(after.median_task_rows)
        ));
    }
    o
}
