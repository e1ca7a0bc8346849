//! The progress bars the command line draws on stderr, when it is a terminal and `--quiet` is
//! not given: the library reports each step through `skewjoin::progress::Progress`, and this
//! is the one implementation that shows it.

use std::io::IsTerminal;
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use skewjoin::progress::{Progress, Step, StepProgress};
use skewjoin::stats::RunStats;

/// A count of fewer rows than this, from local files, is over before a bar would help.
const BAR_ROWS: u64 = 2_000_000;

/// Bars on stderr; `stats`: the run's, for the bytes a count fetches from an object store.
pub struct Bars {
    pub stats: Arc<RunStats>,
}

impl Progress for Bars {
    fn start(&self, step: Step, total: u64) -> Box<dyn StepProgress> {
        Box::new(match step {
            Step::CountingRows { remote } => counting_bar(total, remote, &self.stats),
            Step::ReadingLog => log_bar(total),
        })
    }
}

/// An indicatif bar is one step's progress.
struct Bar(ProgressBar);

impl StepProgress for Bar {
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }

    fn grow(&self, n: u64) {
        self.0.inc_length(n);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// The bar of a long count: rows read of the rows to read, and for a table in an object store
/// (whatever its rows) the bytes fetched so far and their rate.
fn counting_bar(total: u64, remote: bool, stats: &Arc<RunStats>) -> Bar {
    if !std::io::stderr().is_terminal() || (total < BAR_ROWS && !remote) {
        return Bar(ProgressBar::hidden());
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(5));
    let template = if remote {
        "{spinner} counting keys {bar:30} {human_pos}/{human_len} rows, {fetched} fetched ({fetch_rate}), eta {eta}"
    } else {
        "{spinner} counting keys {bar:30} {human_pos}/{human_len} rows, {per_sec}, eta {eta}"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        let start = stats.io().bytes;
        let fetched = move |s: &RunStats| s.io().bytes.saturating_sub(start);
        let (a, b) = (stats.clone(), stats.clone());
        let style = style
            .with_key("fetched", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&skewjoin::format::human(fetched(&a)));
            })
            .with_key("fetch_rate", move |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                let rate = fetched(&b) as f64 / st.elapsed().as_secs_f64().max(0.001);
                let _ = w.write_str(&format!("{}/s", skewjoin::format::human(rate as u64)));
            });
        bar.set_style(style);
    }
    Bar(bar)
}

/// A bar by bytes of the log files read.
fn log_bar(total: u64) -> Bar {
    if !std::io::stderr().is_terminal() {
        return Bar(ProgressBar::hidden());
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(5));
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} reading the event log {bar:30} {binary_bytes}/{binary_total_bytes}, {binary_bytes_per_sec}, eta {eta}",
    ) {
        bar.set_style(style);
    }
    Bar(bar)
}
