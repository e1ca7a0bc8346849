//! The footer of every report: what a command run says beside its answer, the tables' notes (a
//! table format's version, counts that are bounds), what it fetched from object stores, spilled
//! and decoded, and the Spark that counted. `json` adds them to any report's JSON; `table_notes`
//! and `io_line` are their text lines. All of it is the run's `RunStats`. The command line adds
//! the footer to the report a command's module rendered from its value: a report module does
//! not import this one.

use crate::format::fmt_count;
use crate::stats::RunStats;

/// A report as pretty JSON, with `io` (requests and bytes fetched from object stores) when the
/// run read any.
pub fn json<T: serde::Serialize>(report: &T, stats: &RunStats) -> String {
    #[derive(serde::Serialize)]
    struct WithIo<'a, T: serde::Serialize> {
        #[serde(flatten)]
        report: &'a T,
        #[serde(skip_serializing_if = "Option::is_none")]
        io: Option<crate::stats::Io>,
        /// Bytes of counted keys written to a temporary file past `--memory`.
        #[serde(skip_serializing_if = "Option::is_none")]
        spilled_bytes: Option<u64>,
        /// In a run that plans joins: column chunks decoded, decoded again, served from memory.
        #[serde(skip_serializing_if = "Option::is_none")]
        column_chunks: Option<crate::table::columns::Reads>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        table_notes: Vec<String>,
        /// With `--engine spark`: the Spark that counted, and the time its jobs took.
        #[serde(skip_serializing_if = "Option::is_none")]
        spark: Option<crate::stats::SparkRun>,
    }
    let io = Some(stats.io()).filter(|io| io.requests > 0);
    let spilled_bytes = Some(stats.spilled()).filter(|&b| b > 0);
    serde_json::to_string_pretty(&WithIo {
        report,
        io,
        spilled_bytes,
        column_chunks: crate::table::columns::kept_reads(stats),
        table_notes: stats.notes(),
        spark: stats.spark(),
    })
    .unwrap_or_default()
        + "\n"
}

/// The tables' notes, a line each, and with `--engine spark` the Spark that counted.
pub fn table_notes(stats: &RunStats) -> String {
    let mut out: String = stats.notes().iter().map(|n| format!("note: {n}\n")).collect();
    if let Some(s) = stats.spark() {
        out += &format!("{}\n", s.line());
    }
    out
}

/// What the run fetched from object stores, spilled to temporary files and decoded (in a
/// run that plans joins), a line each; None when there is nothing to say.
pub fn io_line(stats: &RunStats) -> Option<String> {
    let io = stats.io();
    let fetched = (io.requests > 0).then(|| {
        format!(
            "object stores: {} requests, {} fetched\n",
            fmt_count(io.requests),
            crate::format::human(io.bytes)
        )
    });
    let spilled = stats.spilled();
    let spilled = (spilled > 0).then(|| {
        format!(
            "keys past --memory: {} spilled to a temporary file and read back\n",
            crate::format::human(spilled)
        )
    });
    let columns = crate::table::columns::kept_reads(stats).map(|r| {
        format!(
            "column chunks: {} decoded ({} again), {} reads from memory, {} kept\n",
            fmt_count(r.decoded),
            fmt_count(r.decoded_again),
            fmt_count(r.from_memory),
            crate::format::human(r.kept_bytes)
        )
    });
    let lines: String = [fetched, spilled, columns].into_iter().flatten().collect();
    (!lines.is_empty()).then_some(lines)
}
