//! `skewjoin diagnose`: a Spark event log in; the slow stage, its cause, the fix and the next command.

use std::path::PathBuf;

use clap::Args;

use skewjoin::diagnose::{self, report};
use skewjoin::Result;

use super::flags::TextOrJson;

/// A Spark event log in: the slow stage, its task summary, the cause, the fix and the next command
#[derive(Args)]
pub struct DiagnoseArgs {
    /// A Spark event log: a file (plain, zstd, lz4, snappy or lzf) or a rolling eventlog_v2_* folder
    #[arg(value_name = "EVENT_LOG")]
    event_log: PathBuf,
    /// An earlier run of the same job, to tell what changed (input growth)
    #[arg(long, value_name = "EVENT_LOG")]
    baseline: Option<PathBuf>,
    #[command(flatten)]
    format: TextOrJson,
}

pub fn run(a: DiagnoseArgs) -> Result<String> {
    let d = diagnose::diagnose(&a.event_log, a.baseline.as_deref())?;
    Ok(a.format.render(&d, report::text, report::json))
}
