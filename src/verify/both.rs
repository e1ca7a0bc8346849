//! Both queries run on the engine the caller chose, as `verify` and `fix --verify` run them:
//! on Polars in this process over the tables opened here, or on the user's Spark with the
//! settings the predictions assumed.

use std::collections::HashMap;

pub use super::Measuring;
use super::Verification;
use crate::count::Sample;
use crate::error::Result;
use crate::plan::PlanOptions;
use crate::rewrite::Rewritten;
use crate::settings;
use crate::spark::SparkOptions;
use crate::table::Table;

/// The two queries to run, and what the planner predicted for the rewrite (None: a rewrite
/// given by hand).
pub struct BothQueries<'a> {
    pub original: &'a str,
    pub rewritten: &'a str,
    pub planned: Option<&'a Rewritten>,
    /// Each table's name in the queries and its path.
    pub named: &'a [(String, String)],
}

/// Both queries on the user's Spark, with the settings the predictions assumed (they hold the
/// `--conf`s of `spark`, and replace them); `sampled`: the planner counted a sample (said in a
/// note).
pub fn on_spark(
    q: &BothQueries,
    spark: &SparkOptions,
    how: Measuring,
    sampled: bool,
    opts: &PlanOptions,
) -> Result<Verification> {
    let run = SparkOptions { conf: with_cluster_parallelism(opts), ..spark.clone() };
    // A Connect server reads the tables from its own working folder: paths here go absolute.
    let named: Vec<(String, String)> = q
        .named
        .iter()
        .map(|(n, p)| {
            (
                n.clone(),
                std::path::absolute(p)
                    .ok()
                    .filter(|a| a.exists())
                    .map(|a| a.to_string_lossy().into_owned())
                    .unwrap_or_else(|| p.clone()),
            )
        })
        .collect();
    let mut v =
        super::spark(q.original, q.rewritten, q.planned, &named, &run, how, Some(&opts.cluster))?;
    if sampled {
        v.notes.push("--sample: the planner counted a sample; the Spark engine ran both queries on the full tables".into());
    }
    Ok(v)
}

/// The settings both queries run with: the job's, and the cluster's parallelism where they
/// do not set it, so that the stages here have the tasks the cluster's would (AQE coalesces a
/// shuffle into about as many tasks as `spark.default.parallelism`; files split by it).
fn with_cluster_parallelism(opts: &PlanOptions) -> Vec<(String, String)> {
    let mut conf = opts.settings.all();
    let parallelism = settings::DEFAULT_PARALLELISM;
    if opts.cluster.known().is_some() && !conf.iter().any(|(k, _)| k == parallelism) {
        conf.push((parallelism.to_string(), opts.cluster.cores.to_string()));
    }
    conf
}

/// Both queries on Polars, in this process.
#[cfg(feature = "polars")]
pub fn on_polars(
    q: &BothQueries,
    tables: &HashMap<String, Table>,
    sample: Option<Sample>,
    how: Measuring,
) -> Result<Verification> {
    let list: Vec<(String, &Table)> =
        q.named.iter().filter_map(|(n, _)| tables.get(n).map(|t| (n.clone(), t))).collect();
    let polars = super::PolarsOptions { sample, tolerance: how.tolerance, runs: how.runs };
    super::polars(q.original, q.rewritten, q.planned, &list, &polars)
}

#[cfg(not(feature = "polars"))]
pub fn on_polars(
    _: &BothQueries,
    _: &HashMap<String, Table>,
    _: Option<Sample>,
    _: Measuring,
) -> Result<Verification> {
    Err(crate::error::Error::Usage("this skewjoin was built without the polars engine".into()))
}
