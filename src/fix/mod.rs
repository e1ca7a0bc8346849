//! `skewjoin fix`: from a slow job's event log to the query that fixes it. The slow stage is
//! located and diagnosed (as `diagnose` does); its join becomes a SQL query over the tables its
//! scans read (`query`: the log's SQL text, or the join rebuilt from the physical plan); the
//! tables are opened and set against what the job read (`tables`); the query is rewritten under
//! the job's own settings, and the stage's prediction set against what the log measured
//! (`stage`); with `--verify` both queries run. `report` renders the result.
//!
//! It sits above `diagnose`, `plan`, `rewrite` and `verify`, and uses each as the commands do:
//! none of them knows of it.

pub mod query;
pub mod report;
pub mod stage;
pub mod tables;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::classify::Classifier;
use crate::diagnose::call_site::{self, CallSite};
use crate::diagnose::eventlog::Log;
use crate::diagnose::job_log::JobLog;
use crate::diagnose::{self, Diagnosis};
use crate::error::{Error, Result};
use crate::plan::PlanOptions;
use crate::rewrite::{self, Rewritten};
use crate::spark::Session;
use crate::spark::SparkOptions;
use crate::table::Table;
use crate::verify::both::{on_polars, on_spark, BothQueries, Measuring};
use crate::verify::Verification;
use query::FixQuery;
use stage::StageCheck;
use tables::TableCheck;

/// What `fix` is asked: the command's arguments as a value.
pub struct FixRequest<'a> {
    /// The event log as the user named it (the job's settings are said to come from it).
    pub log_name: &'a str,
    /// What the diagnosis is told, and the run's statistics.
    pub diagnose: diagnose::Options,
    /// The planner's options under the job's settings. A function of the job, because the
    /// caller's flags decide where the job's settings sit among the others (after
    /// `--spark-defaults`, before each `--conf` and flag), and the job is known only once the
    /// slow stage is.
    pub options: &'a dyn Fn(&JobLog) -> Result<PlanOptions>,
    /// Classification rules that extend or replace the built-in ones.
    pub rules: Option<&'a Path>,
    /// With `--count-on-spark`: starts the Spark that counts the tables, by the catalog names
    /// the log's plan gives them. Started only once there is a query to count for.
    pub count_on_spark: Option<&'a dyn Fn() -> Result<Arc<Session>>>,
    /// With `--verify`: where both queries run, and how they are compared.
    pub verify: Option<Verifying>,
}

/// How `fix --verify` runs both queries.
pub struct Verifying {
    pub on: VerifyOn,
    pub how: Measuring,
}

/// The engine that runs both queries.
pub enum VerifyOn {
    /// Polars, in this process, on the tables' files here.
    Polars,
    /// The user's Spark.
    Spark(SparkOptions),
}

/// `fix`'s report: the diagnosis (locate, measure, diagnose), then the fix and its proof.
#[derive(Debug, Serialize)]
pub struct FixReport {
    pub diagnosis: Diagnosis,
    /// Why there is nothing to rewrite (then the fields below are null).
    pub no_query: Option<String>,
    pub query: Option<FixQuery>,
    pub rewrite: Option<Rewritten>,
    pub stage: Option<StageCheck>,
    /// Each table as the job read it and as it is now.
    pub tables: Vec<TableCheck>,
    pub verification: Option<Verification>,
    /// Where the slow stage's job is in the user's code, as the log records it.
    pub call_site: Option<CallSite>,
    /// Why the log gives no call site for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_site_note: Option<String>,
}

/// Why `fix` stopped, and the diagnosis when it was made: a table gone since the run leaves the
/// diagnosis standing, and the caller shows it before the error.
#[derive(Debug)]
pub struct Failed {
    pub error: Error,
    pub diagnosis: Option<Box<Diagnosis>>,
}

impl From<Error> for Failed {
    fn from(error: Error) -> Failed {
        Failed { error, diagnosis: None }
    }
}

/// The fix of the slow job whose event log is `log`: its diagnosis, and when a hot key slows a
/// join the log has a plan for, that join as a query, rewritten (and run, with `--verify`).
pub fn fix(log: &Log, req: &FixRequest) -> std::result::Result<FixReport, Failed> {
    let diagnosis = diagnose::diagnose_log(log, None, &req.diagnose)?;
    let mut rep = FixReport {
        no_query: query::no_query(&diagnosis),
        diagnosis,
        query: None,
        rewrite: None,
        stage: None,
        tables: Vec::new(),
        verification: None,
        call_site: None,
        call_site_note: None,
    };
    let Some((stage_id, join)) = query::hot_join(&rep.diagnosis).map(|(s, j)| (s, j.clone()))
    else {
        return Ok(rep);
    };
    match call_site::of_stage_id(&log.app, stage_id) {
        Ok(site) => rep.call_site = Some(site),
        Err(why) => rep.call_site_note = Some(why),
    }
    let found = query::from_sql_text(&log.app, stage_id).map_or_else(|| query::rebuild(&join), Ok);
    match found {
        Ok(q) => fix_query(log, req, stage_id, q, rep),
        Err(why) => {
            rep.no_query =
                Some(format!("stage {stage_id}'s join cannot be rebuilt as a query: {why}"));
            Ok(rep)
        }
    }
}

/// The stage's query `q`: its tables opened and checked, rewritten under the job's settings,
/// the stage predicted, and with `--verify` both queries run.
fn fix_query(
    log: &Log,
    req: &FixRequest,
    stage_id: i64,
    q: FixQuery,
    mut rep: FixReport,
) -> std::result::Result<FixReport, Failed> {
    let stats = &req.diagnose.stats;
    let session = counting_session(req)?;
    let named = tables::named(&log.app, stage_id, &q, session.is_some());
    let opened = match crate::open::tables(&named, session.as_ref(), stats) {
        Ok(t) => t,
        Err(error) => return Err(Failed { error, diagnosis: Some(Box::new(rep.diagnosis)) }),
    };
    rep.tables = tables::table_checks(&log.app, stage_id, &q, &tables::files_now(&opened));
    let job = JobLog::of(&log.app, req.log_name, Some(stage_id));
    let mut opts = (req.options)(&job)?;
    opts.engine = crate::open::engine(session.as_ref());
    let classifier = Classifier::with_file(req.rules)?;
    let r = rewrite::rewrite(&q.sql, &opened, &classifier, &opts)?;
    rep.stage = Some(StageCheck::new(&rep.diagnosis, stage_id, &r));
    if let Some(v) = &req.verify {
        rep.verification = Some(run_both(v, &q, &r, &named, &opened, &opts)?);
    }
    rep.query = Some(q);
    rep.rewrite = Some(r);
    Ok(rep)
}

/// The Spark that counts the tables, with `--count-on-spark`.
fn counting_session(req: &FixRequest) -> Result<Option<Arc<Session>>> {
    let Some(start) = req.count_on_spark else { return Ok(None) };
    if matches!(req.verify, Some(Verifying { on: VerifyOn::Polars, .. })) {
        return Err(Error::Usage("--count-on-spark: Polars reads the tables' files here; verify on Spark with --engine spark".into()));
    }
    start().map(Some)
}

/// Both queries on the engine `--verify` names, with the job's settings.
fn run_both(
    v: &Verifying,
    q: &FixQuery,
    r: &Rewritten,
    named: &[(String, String)],
    tables: &HashMap<String, Table>,
    opts: &PlanOptions,
) -> Result<Verification> {
    let both = BothQueries { original: &q.sql, rewritten: &r.sql, planned: Some(r), named };
    match &v.on {
        VerifyOn::Spark(spark) => on_spark(&both, spark, v.how, opts.sample.is_some(), opts),
        VerifyOn::Polars => on_polars(&both, tables, opts.sample, v.how),
    }
}
