//! The keys report as an aligned table or CSV (its JSON is the report's fields).

use comfy_table::presets::NOTHING;
use comfy_table::{CellAlignment, Table};

use super::{ColumnReport, KeysReport};
use crate::count::SampleInfo;
use crate::format::{fmt_count, fmt_share};

/// The report as an aligned table, a block per key column.
pub fn table(report: &KeysReport) -> String {
    let mut out = String::new();
    for c in &report.columns {
        out.push_str(&column_heading(c));
        out.push('\n');
        for line in top_values_table(c).to_string().lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.push_str(&verdict_lines(c));
        out.push('\n');
    }
    out.trim_end().to_string() + "\n"
}

/// A column's first lines: its type and counts, then how it was sampled or how far its counts
/// may be off.
fn column_heading(c: &ColumnReport) -> String {
    let mut head = format!(
        "{} ({}): {} rows, {} NULL ({}), {} distinct{}",
        c.column,
        c.types.join(", "),
        fmt_count(c.rows),
        fmt_count(c.nulls),
        fmt_share(if c.rows == 0 { 0.0 } else { c.nulls as f64 / c.rows as f64 }),
        fmt_count(c.distinct),
        distinct_qualifier(c),
    );
    if let Some(s) = &c.sample {
        head.push_str(&sample_line(c, s));
    } else if c.count_error > 0 {
        head.push_str(&format!(
            "\nmemory bound reached: counts are lower bounds, each at most {} rows below the truth",
            fmt_count(c.count_error)
        ));
    }
    head
}

/// What the distinct count is, when it is not exact.
fn distinct_qualifier(c: &ColumnReport) -> &'static str {
    if c.distinct_exact {
        ""
    } else if c.sample.is_some() {
        if c.distinct_estimate {
            " in the sample (estimate)"
        } else {
            " in the sample"
        }
    } else if c.counts_exact {
        // Exact top counts, HyperLogLog distinct (see `split`).
        " (estimate +-1.6%; exact with --exact-distinct)"
    } else {
        " (estimate)"
    }
}

/// The line that says what a sample read (it starts with a line break).
fn sample_line(c: &ColumnReport, s: &SampleInfo) -> String {
    format!(
        "\nsampled {} of {} rows ({}) by {}{}; counts scaled to the table, shares +- 95% interval",
        fmt_count(s.rows_read),
        fmt_count(c.rows),
        fmt_share(s.fraction),
        s.method,
        units_read(s),
    )
}

/// The units a sample read, after a comma: pages in row groups, row groups, or files (the
/// Spark engine's row sample reads every file and has none to say).
fn units_read(s: &SampleInfo) -> String {
    let n = |x: usize| fmt_count(x as u64);
    match (s.pages_read, s.pages_total, &s.pages_column, s.files_read, s.files_total) {
        (Some(r), Some(t), Some(col), _, _) => format!(
            ", {} of {} pages of {col}, in {} of {} row groups",
            n(r),
            n(t),
            s.row_groups_read,
            s.row_groups_total
        ),
        (_, _, _, Some(r), Some(t)) => format!(", {} of {} files", n(r), n(t)),
        _ if s.row_groups_total == 0 => String::new(),
        _ => format!(", {} of {} row groups", s.row_groups_read, s.row_groups_total),
    }
}

/// The column's top values, one row each, with the share's interval when sampled.
fn top_values_table(c: &ColumnReport) -> Table {
    let mut t = Table::new();
    t.load_preset(NOTHING);
    let sampled = c.sample.is_some();
    let mut header = vec!["#", "value", "count", "share"];
    if sampled {
        header.push("+-");
    }
    header.extend(["class", "partition", "reason"]);
    t.set_header(header);
    for (i, v) in c.top.iter().enumerate() {
        let mut row = vec![
            (i + 1).to_string(),
            truncate(&v.display, 40),
            fmt_count(v.count),
            fmt_share(v.share),
        ];
        if sampled {
            row.push(v.share_error.map(fmt_share).unwrap_or_default());
        }
        let class = if v.hot { format!("{} HOT", v.class) } else { v.class.clone() };
        row.extend([class, v.spark_partition.to_string(), v.reason.clone()]);
        t.add_row(row);
    }
    for col in [0usize, 2, 3] {
        if let Some(c) = t.column_mut(col) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The verdict and its details, one line each.
fn verdict_lines(c: &ColumnReport) -> String {
    let mut out = format!("verdict: {}\n", c.verdict.text);
    for d in &c.verdict.details {
        out.push_str(&format!("  - {d}\n"));
    }
    out
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let cut: String = s.chars().take(n - 3).collect();
        format!("{cut}...")
    }
}

pub fn csv(report: &KeysReport) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "column",
        "rank",
        "value",
        "count",
        "share",
        "share_error",
        "class",
        "hot",
        "spark_partition",
        "spark_hash",
        "reason",
    ]);
    for c in &report.columns {
        for (i, v) in c.top.iter().enumerate() {
            let value = match &v.value {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let _ = w.write_record([
                c.column.clone(),
                (i + 1).to_string(),
                value,
                v.count.to_string(),
                format!("{:.6}", v.share),
                v.share_error.map(|e| format!("{e:.6}")).unwrap_or_default(),
                v.class.clone(),
                v.hot.to_string(),
                v.spark_partition.to_string(),
                v.spark_hash.to_string(),
                v.reason.clone(),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
