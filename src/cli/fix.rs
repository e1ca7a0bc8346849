//! `skewjoin fix`: a slow job's event log in; the slow stage located, measured and
//! diagnosed (as `diagnose` does), its join rebuilt as a query over the tables the log names,
//! rewritten under the job's own settings, the prediction set against what the log measured,
//! and with `--verify` both queries run. The work is `skewjoin::fix`'s; this file reads the
//! arguments and prints.

use std::path::PathBuf;

use clap::Args;

use skewjoin::diagnose::job_log::JobLog;
use skewjoin::diagnose::{self, eventlog};
use skewjoin::fix::{self, report, FixReport, FixRequest, VerifyOn, Verifying};
use skewjoin::plan::JoinType;
use skewjoin::stats::RunStats;
use skewjoin::verify::both::Measuring;
use skewjoin::{rewrite, Error, Result};

use super::diagnose::{from_server, log_at, LogAt};
use super::flags::{
    AlsoText, EmitArgs, HtmlOut, MinStage, PlannerArgs, Quiet, Runs, SparkArgs, TextOrJson,
    WithCode,
};
use super::verify::Engine;

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
    let log = eventlog::read(&path, &*a.quiet.bars(&stats), &stats)?;
    let options = |job: &JobLog| {
        a.planner.options_with_job(JoinType::Inner, &a.spark, &a.quiet, Some(job), &stats)
    };
    let start_spark = || a.spark.start_session(&stats);
    let req = FixRequest {
        log_name: &a.event_log,
        diagnose: diagnose::Options {
            min_stage_ms: a.min_stage.ms()?,
            progress: a.quiet.bars(&stats),
            stats: stats.clone(),
        },
        options: &options,
        rules: a.planner.hot.rules.as_deref(),
        count_on_spark: if a.count_on_spark { Some(&start_spark) } else { None },
        verify: match a.verify {
            true => Some(Verifying { on: verify_on(&a)?, how: measuring(&a) }),
            false => None,
        },
    };
    let rep = fix::fix(&log, &req).map_err(|f| {
        // A table gone since the run: the diagnosis still stands, printed before the error.
        if let Some(d) = &f.diagnosis {
            print!("{}", diagnose::report::text(d));
        }
        f.error
    })?;
    if let (Some(out), Some(r)) = (&a.output, &rep.rewrite) {
        let fixed = match a.emit.language() {
            Some(lang) => report::code(&rep, lang).unwrap_or_default(),
            None => rewrite::sql_with_comments(r),
        };
        std::fs::write(out, fixed).map_err(|e| Error::Io { path: out.clone(), source: e })?;
    }
    finish(&a, rep, &stats)
}

/// The engine `--verify` runs both queries on.
fn verify_on(a: &FixArgs) -> Result<VerifyOn> {
    Ok(match Engine::or_default(a.engine) {
        Engine::Spark => VerifyOn::Spark(a.spark.options(None)?),
        Engine::Polars => VerifyOn::Polars,
    })
}

/// How `--verify` compares both queries: `--runs` each, floating-point values to verify's
/// default tolerance.
fn measuring(a: &FixArgs) -> Measuring {
    Measuring { tolerance: TOLERANCE, runs: a.runs.count() }
}

/// Floating-point values compared to this relative tolerance (verify's default).
const TOLERANCE: f64 = 1e-9;

/// The log's path here: the file or folder given, or the History Server's copy.
fn log_path(a: &FixArgs, fetched: &mut Vec<tempfile::TempDir>) -> Result<PathBuf> {
    match log_at(&a.event_log, a.app.as_deref(), a.attempt.as_deref())? {
        LogAt::Here(path) => Ok(path),
        LogAt::Server(t) => from_server(&t, fetched),
    }
}

fn finish(a: &FixArgs, rep: FixReport, stats: &RunStats) -> Result<(String, bool)> {
    let same = rep.verification.as_ref().is_none_or(|v| v.identical);
    let code = a.emit.language().and_then(|lang| report::code(&rep, lang));
    let text = |r: &FixReport| report::text(r, a.output.as_deref(), code.as_deref());
    a.also_text.write(|| text(&rep))?;
    a.html.write(&rep, report::html)?;
    let out = if a.format.is_text() {
        text(&rep)
    } else {
        let rewrites = rep.stage.as_ref().is_some_and(|s| s.rewritten);
        let code = code.clone().map(|c| a.emit.out(c, rewrites));
        skewjoin::footer::json(&WithCode { report: &rep, code }, stats)
    };
    Ok((out, same))
}
