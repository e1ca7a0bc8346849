//! `skewjoin diagnose`: a Spark event log in; the slow stage, its cause, the fix and the next
//! command.

use std::path::PathBuf;

use clap::Args;

use skewjoin::diagnose::{self, history, report};
use skewjoin::Result;

use super::flags::{AlsoText, HtmlOut, MinStage, Quiet, TextOrJson};

/// A Spark event log in: the slow stage, its task summary, the cause, the fix and the next command
#[derive(Args)]
pub struct DiagnoseArgs {
    /// A Spark event log: a file (plain, zstd, lz4, snappy or lzf), a rolling eventlog_v2_*
    /// folder, either in an object store (s3://...), or a Spark History Server
    /// (http://HOST:18080: its applications listed, or one diagnosed with --app or a URL that
    /// names it)
    #[arg(value_name = "EVENT_LOG")]
    event_log: String,
    /// An earlier run of the same job, to tell what changed (input growth): a log, or an
    /// application of the same History Server by its id
    #[arg(long, value_name = "EVENT_LOG")]
    baseline: Option<String>,
    /// The application to diagnose, when EVENT_LOG is a History Server
    #[arg(long, value_name = "APP_ID")]
    app: Option<String>,
    /// The attempt of a retried application (default: its last)
    #[arg(long, value_name = "N")]
    attempt: Option<String>,
    #[command(flatten)]
    min_stage: MinStage,
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    quiet: Quiet,
    #[command(flatten)]
    html: HtmlOut,
    #[command(flatten)]
    also_text: AlsoText,
}

pub fn run(a: DiagnoseArgs) -> Result<String> {
    let stats = skewjoin::stats::RunStats::new();
    let opts = diagnose::Options {
        min_stage_ms: a.min_stage.ms()?,
        progress: a.quiet.bars(&stats),
        stats,
    };
    let mut fetched = Vec::new();
    let mut server_of = None;
    let log = match log_at(&a.event_log, a.app.as_deref(), a.attempt.as_deref())? {
        LogAt::Here(path) => path,
        LogAt::Server(t) => {
            if t.app.is_none() {
                if a.html.is_set() || a.baseline.is_some() {
                    return Err(skewjoin::Error::Usage(format!(
                        "--html and --baseline are for one application: name it with --app (the listing of {} names them)",
                        t.base
                    )));
                }
                let listing = history::list(&t)?;
                a.also_text.write(|| report::listing_text(&listing))?;
                return Ok(a.format.render(&listing, report::listing_text, report::listing_json));
            }
            let log = from_server(&t, &mut fetched)?;
            server_of = Some(t);
            log
        }
    };
    let baseline = match (&a.baseline, &server_of) {
        (Some(b), _) if history::is_server(b) => {
            Some(from_server(&history::target(b, None, None)?, &mut fetched)?)
        }
        (Some(b), Some(t)) if !b.contains('/') && !std::path::Path::new(b).exists() => {
            Some(from_server(&t.other_app(b), &mut fetched)?)
        }
        (Some(b), _) => Some(PathBuf::from(b)),
        (None, _) => None,
    };
    let d = diagnose::diagnose(&log, baseline.as_deref(), &opts)?;
    a.html.write(&d, report::html)?;
    a.also_text.write(|| report::text(&d) + &a.quiet.io_line(&opts.stats))?;
    let io = if a.format.is_text() { a.quiet.io_line(&opts.stats) } else { String::new() };
    Ok(a.format.render(&d, report::text, report::json) + &io)
}

/// Where an EVENT_LOG argument points: a log here (a file, a folder, an object), or a History
/// Server and perhaps one of its applications.
pub(super) enum LogAt {
    Here(PathBuf),
    Server(history::Target),
}

/// EVENT_LOG with its `--app` and `--attempt` (which only a History Server takes).
pub(super) fn log_at(event_log: &str, app: Option<&str>, attempt: Option<&str>) -> Result<LogAt> {
    if history::is_server(event_log) {
        return Ok(LogAt::Server(history::target(event_log, app, attempt)?));
    }
    if app.is_some() || attempt.is_some() {
        return Err(skewjoin::Error::Usage("--app and --attempt name an application of a Spark History Server: give its URL (http://HOST:18080)".into()));
    }
    Ok(LogAt::Here(PathBuf::from(event_log)))
}

/// The application's event log, downloaded from the History Server into a temporary folder
/// that lives as long as `fetched`.
pub(super) fn from_server(
    t: &history::Target,
    fetched: &mut Vec<tempfile::TempDir>,
) -> Result<PathBuf> {
    if t.app.is_none() {
        return Err(skewjoin::Error::Usage(format!(
            "{}: name the application (--app, or a URL with its id)",
            t.base
        )));
    }
    let dir = tempfile::tempdir()
        .map_err(|source| skewjoin::Error::Io { path: std::env::temp_dir(), source })?;
    let log = history::fetch_log(t, dir.path())?;
    fetched.push(dir);
    Ok(log)
}
