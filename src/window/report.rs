//! A window or aggregate stage as `plan --partition-by` prints it: the input, the stage before,
//! each hot value and what it is, the verdict with its numbers, the stage after.

use std::fmt::Write;

use super::{Verdict, WindowPlan};
use crate::format::{fmt_count, fmt_share};

pub fn text(p: &WindowPlan) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{} of {} by {}", p.shape.label(), p.input, p.keys.join(", "));
    let _ = writeln!(
        o,
        "  {} rows reach the stage ({:.0} B/row in memory)",
        fmt_count(p.rows),
        p.bytes_per_row
    );
    if let Some(c) = &p.conditions {
        let _ = writeln!(o, "  counted on the rows where {c}");
    }
    let _ = writeln!(o);
    let reduced = matches!(p.verdict, Verdict::GroupLimit | Verdict::PartialAggregation);
    let what =
        if reduced { "Rows per task before Spark's reduction per map task" } else { "Before" };
    let _ = writeln!(o, "{what}: {} shuffle partitions: {}", p.shuffle_partitions, p.before.line());
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) && p.before_tasks.len() > 1 {
        let _ = writeln!(
            o,
            "  rows per partition, 0 to {}: {}",
            p.before_tasks.len() - 1,
            crate::html::sparkline(&p.before_tasks, 60)
        );
    }
    if !p.hot.is_empty() {
        let _ = writeln!(o, "\nHot values:");
    }
    for h in &p.hot {
        let _ = writeln!(
            o,
            "  {} [{}]: {} rows ({} of the input); Spark partition {}",
            h.display,
            h.class.as_str(),
            fmt_count(h.rows),
            fmt_share(h.share),
            h.spark_partition
        );
        let _ = writeln!(o, "    what: {}", h.reason);
    }
    let _ = writeln!(o, "\n{}: {}", verdict_label(p.verdict), p.why);
    if let (Some(r), Some(m)) = (&p.records, p.map_tasks) {
        let _ = writeln!(
            o,
            "Records Spark shuffles after its reduction over {} map tasks: largest task {} records, median {}, {:.1}x",
            fmt_count(m),
            fmt_count(r.max_task_rows),
            fmt_count(r.median_task_rows),
            r.ratio()
        );
    }
    if let Some(a) = &p.after {
        let _ = writeln!(o, "After: {}", a.line());
        let _ = writeln!(
            o,
            "  the SQL: skewjoin rewrite --table {}=TABLE QUERY_FILE rewrites the query's window",
            p.input
        );
    }
    o
}

fn verdict_label(v: Verdict) -> &'static str {
    match v {
        Verdict::Rewrite => "Fix",
        Verdict::NothingHot => "Nothing hot",
        Verdict::PartialAggregation => "Spark copes (partial aggregation)",
        Verdict::GroupLimit => "Spark copes (group limit)",
        Verdict::LeftAlone => "Left alone",
    }
}
