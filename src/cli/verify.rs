//! `skewjoin verify`: run the original query and its rewrite side by side; the same rows, and
//! the largest task before and after.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use skewjoin::classify::Classifier;
use skewjoin::cluster::{self, SizeSource};
use skewjoin::plan::{JoinType, PlanOptions};
use skewjoin::rewrite;
use skewjoin::settings::{self, Origin};
use skewjoin::verify;
use skewjoin::verify::both::{on_polars, on_spark, BothQueries, Measuring};
use skewjoin::{Error, Result};

use super::flags::{AlsoText, HtmlOut, PlannerArgs, QueryArgs, Quiet, Runs, SparkArgs, TextOrJson};

/// Run the original query and the rewrite side by side: same rows, and the largest task before and
/// after
#[derive(Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    query: QueryArgs,
    /// Check this rewrite (e.g. one edited by hand) instead of rewriting the query
    #[arg(long, value_name = "FILE")]
    rewritten: Option<PathBuf>,
    /// The engine that runs both queries (default: polars in a build with the `polars` feature,
    /// else spark). With polars, --sample also samples the tables the queries run on
    #[arg(long, value_enum)]
    engine: Option<Engine>,
    #[command(flatten)]
    spark: SparkArgs,
    /// With --remote: the Connect server's Spark UI, where the tasks are read (default: the
    /// server's host at its spark.ui.port, 4040)
    #[arg(long, value_name = "URL", requires = "remote")]
    spark_ui: Option<String>,
    /// Relative tolerance when comparing floating-point values
    #[arg(long, default_value_t = 1e-9, value_name = "REL")]
    tolerance: f64,
    #[command(flatten)]
    runs: Runs,
    #[command(flatten)]
    planner: PlannerArgs,
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    quiet: Quiet,
    #[command(flatten)]
    html: HtmlOut,
    #[command(flatten)]
    also_text: AlsoText,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Engine {
    /// The user's Spark, through pyspark (local mode unless --master)
    Spark,
    /// Polars, in this process (a build with the `polars` cargo feature)
    Polars,
}

/// The output, and whether both queries gave the same rows and the rewrite ran no slower
/// (false: exit code 1).
pub fn run(a: VerifyArgs) -> Result<(String, bool)> {
    let engine = Engine::or_default(a.engine);
    if engine == Engine::Polars && !cfg!(feature = "polars") {
        return Err(Error::Usage(
            "this skewjoin was built without the polars engine: use --engine spark (pyspark), or build with `cargo build --release --features polars`".into(),
        ));
    }
    if engine == Engine::Polars && a.spark.remote.is_some() {
        return Err(Error::Usage(
            "--remote runs both queries on a Spark Connect server: add --engine spark".into(),
        ));
    }
    if !(a.tolerance > 0.0 && a.tolerance < 1.0) {
        return Err(Error::Usage("--tolerance must be between 0 and 1".into()));
    }
    let stats = a.planner.run_stats();
    let mut opts = a.planner.options(JoinType::Inner, &a.spark, &a.quiet, &stats)?;
    if engine == Engine::Spark
        && a.spark.remote.is_none()
        && opts.settings.get(settings::MASTER).is_none()
    {
        opts.settings.set(settings::MASTER, &a.spark.master, Origin::Flag, Some("--master".into()));
        here_unless_told(&mut opts)?;
    }
    let sql = a.query.read()?;
    let named = a.query.named(&sql, &a.quiet, &stats)?;
    let tables = skewjoin::open::tables(&named, None, &stats)?;
    let classifier = Classifier::with_file(a.planner.hot.rules.as_deref())?;
    let r = rewrite::rewrite(&sql, &tables, &classifier, &opts)?;
    let rewritten = match &a.rewritten {
        Some(p) => {
            std::fs::read_to_string(p).map_err(|e| Error::Io { path: p.clone(), source: e })?
        }
        None => r.sql.clone(),
    };
    let planned = if a.rewritten.is_some() { None } else { Some(&r) };
    // A query the rewrite left as it was runs twice the same: its times differ by noise only.
    let planned_changed = a.rewritten.is_some() || r.changed();
    let both = BothQueries { original: &sql, rewritten: &rewritten, planned, named: &named };
    let how = Measuring { tolerance: a.tolerance, runs: a.runs.count() };
    let v = match engine {
        Engine::Polars => on_polars(&both, &tables, a.planner.hot.sample, how)?,
        Engine::Spark => on_spark(
            &both,
            &a.spark.options(a.spark_ui.clone())?,
            how,
            a.planner.hot.sample.is_some(),
            &opts,
        )?,
    };
    a.html.write(&v, verify::html)?;
    a.also_text.write(|| verify::text(&v))?;
    // With --min-gain off the rewrite was asked for whatever its cost: a slower run is reported,
    // not failed.
    let slower_fails = v.slower && opts.min_gain.is_some() && planned_changed;
    Ok((a.format.render(&v, verify::text, verify::json), v.identical && !slower_fails))
}

/// With no cluster size read, the predictions are of the Spark that runs here: local[N] has
/// N cores (said so, with how to give the cluster's).
pub(super) fn here_unless_told(opts: &mut PlanOptions) -> Result<()> {
    if opts.cluster.source == SizeSource::Assumed {
        if let Some(mut here) = cluster::from_settings(&opts.settings)? {
            here.detail = format!(
                "{}; the Spark that runs here, as no cluster size was given: --cores N for your cluster's",
                here.detail
            );
            opts.cores = opts.cores.or(Some(here.cores));
            opts.cluster = here;
        }
    }
    Ok(())
}

impl Engine {
    /// The engine asked for, else this build's own: Polars when it has it.
    pub(super) fn or_default(given: Option<Engine>) -> Engine {
        given.unwrap_or(if cfg!(feature = "polars") { Engine::Polars } else { Engine::Spark })
    }
}
