//! `skewjoin diagnose`: a Spark event log in; the slow stage, its cause, the fix and the next command.

use std::path::PathBuf;

use clap::Args;

use skewjoin::diagnose::{self, report};
use skewjoin::Result;

use super::flags::{Quiet, TextOrJson};

/// A Spark event log in: the slow stage, its task summary, the cause, the fix and the next command
#[derive(Args)]
pub struct DiagnoseArgs {
    /// A Spark event log: a file (plain, zstd, lz4, snappy or lzf) or a rolling eventlog_v2_* folder
    #[arg(value_name = "EVENT_LOG")]
    event_log: PathBuf,
    /// An earlier run of the same job, to tell what changed (input growth)
    #[arg(long, value_name = "EVENT_LOG")]
    baseline: Option<PathBuf>,
    /// A stage shorter than this gets no finding (its checks are still listed): a cost of a few
    /// seconds is not worth a user's attention
    #[arg(long, value_name = "SECONDS", default_value_t = diagnose::MIN_STAGE_MS as f64 / 1000.0)]
    min_stage_seconds: f64,
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    quiet: Quiet,
}

pub fn run(a: DiagnoseArgs) -> Result<String> {
    if !(a.min_stage_seconds >= 0.0 && a.min_stage_seconds.is_finite()) {
        return Err(skewjoin::Error::Usage(format!("--min-stage-seconds must be 0 or more, not {}", a.min_stage_seconds)));
    }
    let opts = diagnose::Options { min_stage_ms: (a.min_stage_seconds * 1000.0).round() as i64, progress: a.quiet.progress() };
    let d = diagnose::diagnose(&a.event_log, a.baseline.as_deref(), &opts)?;
    let io = if a.format.is_text() { a.quiet.io_line() } else { String::new() };
    Ok(a.format.render(&d, report::text, report::json) + &io)
}
