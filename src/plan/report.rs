//! The plan as an engineer would say it: what is hot, what it is, the fix and its cost, the
//! tasks before and after, and how to check it on the real job.

use std::fmt::Write;

use super::strategy::broadcast_side;
use super::{HotKey, Plan};
use crate::format::{fmt_count, fmt_share, human};

pub fn text(plan: &Plan) -> String {
    text_with(plan, None)
}

/// The text report, ending with the fix as `code` (`--emit pyspark|scala`) in place of the SQL.
pub fn text_with(plan: &Plan, code: Option<&str>) -> String {
    let mut o = String::new();
    header(&mut o, plan);
    before(&mut o, plan);
    if plan.hot_keys.is_empty() {
        if let Some(n) = &plan.next {
            let _ = writeln!(o, "{n}");
        }
    } else {
        hot_keys(&mut o, plan);
        after(&mut o, plan);
    }
    for w in &plan.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    if plan.results_change {
        let _ = writeln!(
            o,
            "warning: --drop-junk removes rows: the result differs from the original query's"
        );
    }
    let _ = writeln!(o);
    match code {
        Some(code) => o.push_str(code),
        None => {
            let _ = writeln!(o, "-- SQL (Spark 3.5 and 4.x)");
            let _ = writeln!(o, "{};", plan.sql);
        }
    }
    o
}

/// The join, each side's size, and the notes.
fn header(o: &mut String, plan: &Plan) {
    let (l, r) = (&plan.left, &plan.right);
    let on: Vec<String> = l
        .keys
        .iter()
        .zip(&r.keys)
        .map(|(a, b)| format!("{}.{a} = {}.{b}", l.name, r.name))
        .collect();
    let _ = writeln!(
        o,
        "{} {} JOIN {} ON {}",
        l.name,
        plan.how.as_str().to_uppercase(),
        r.name,
        on.join(" AND ")
    );
    for s in [l, r] {
        let _ = writeln!(
            o,
            "  {}: {} rows, {} on disk, {} in memory ({:.0} B/row), {} NULL keys",
            s.name,
            fmt_count(s.rows),
            human(s.disk_bytes),
            human(s.memory_bytes),
            s.bytes_per_row,
            fmt_count(s.null_key_rows)
        );
    }
    if !plan.settings.is_empty() {
        let _ = writeln!(o, "{}", crate::settings::line(&plan.settings));
    }
    for n in &plan.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let _ = writeln!(o);
}

fn before(o: &mut String, plan: &Plan) {
    match &plan.aqe {
        None => {
            let _ = writeln!(
                o,
                "Before: sort-merge join over {} shuffle partitions (AQE off): {}",
                plan.shuffle_partitions,
                plan.before.line()
            );
        }
        Some(a) => {
            let _ = writeln!(
                o,
                "Before: {} shuffle partitions, as AQE runs them: {}",
                plan.shuffle_partitions,
                plan.before.line()
            );
            let _ = writeln!(o, "  {}", a.before.summary());
        }
    }
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) && plan.before_tasks.len() > 1 {
        let _ = writeln!(
            o,
            "  rows per partition, 0 to {}: {}",
            plan.before_tasks.len() - 1,
            crate::html::sparkline(&plan.before_tasks, 60)
        );
    }
    if plan.sample.is_some() {
        let _ = writeln!(o, "  (hot candidates found from a sample; every count below is exact)");
    }
    let _ = writeln!(o);
}

/// Each hot key: its rows, what it is, the fix and why; then the whole-side broadcast.
fn hot_keys(o: &mut String, plan: &Plan) {
    let _ = writeln!(
        o,
        "Hot keys ({} rows in one partition is more than {}x the median partition of {} rows):",
        fmt_count((plan.hot_factor * plan.partition_median_rows.max(1) as f64) as u64),
        plan.hot_factor,
        fmt_count(plan.partition_median_rows)
    );
    for h in &plan.hot_keys {
        hot_key(o, plan, h);
    }
    if let Some(b) = plan.broadcast_side {
        let _ = writeln!(o, "{}", broadcast_side::fix(plan, b));
    }
    let _ = writeln!(o);
}

fn hot_key(o: &mut String, plan: &Plan, h: &HotKey) {
    let _ = writeln!(
        o,
        "  {} [{}] hot on {}: {} rows ({} of that side); rows left {}, right {}; Spark partition {}",
        h.display,
        h.class.as_str(),
        h.side,
        fmt_count(h.rows),
        fmt_share(h.share),
        fmt_count(h.left_rows),
        fmt_count(h.right_rows),
        h.spark_partition
    );
    let _ = writeln!(o, "    what: {}", h.reason);
    let _ = writeln!(o, "    fix: {}", h.strategy.fix([&plan.left.name, &plan.right.name]));
    let _ = writeln!(o, "    why: {}", h.why);
}

/// The stage after the plan and how to check it on the real job.
fn after(o: &mut String, plan: &Plan) {
    let (before, after) = (&plan.before, &plan.after);
    let _ = writeln!(o, "Decision: {}", plan.decision);
    if let Some(c) = &plan.cost {
        let _ = writeln!(
            o,
            "  predicted on {}: {:.2} s as written (largest task {:.2} s), {:.2} s rewritten (largest task {:.2} s, {} rows read again)",
            plan.cluster.describe(),
            c.before_seconds,
            c.before_stage.largest_task_seconds,
            c.after_seconds,
            c.after_stage.largest_task_seconds,
            fmt_count(c.rows_read_again)
        );
    }
    if !plan.acts() {
        return;
    }
    if after.tasks == 0 {
        let _ = writeln!(
            o,
            "After: no shuffle join (broadcast). largest task {} rows -> no shuffle read",
            fmt_count(before.max_task_rows)
        );
        let _ = writeln!(o, "  verify on the real job: the join stage should show a broadcast hash join and no shuffle read for the join");
        return;
    }
    let _ = writeln!(o, "After: {}", after.line());
    if let Some(a) = plan.aqe.as_ref().and_then(|a| a.after.as_ref()) {
        let _ = writeln!(o, "  {}", a.summary());
    }
    let _ = writeln!(
        o,
        "  largest task {} rows -> {} (median {})",
        fmt_count(before.max_task_rows),
        fmt_count(after.max_task_rows),
        fmt_count(after.median_task_rows)
    );
    let _ = writeln!(
        o,
        "  verify on the real job: run the SQL below with the job's settings and check the join stage (Spark UI, Stages, Shuffle Read Records): the largest task should read about {} records, {:.1}x the median{}",
        fmt_count(after.max_task_rows),
        after.ratio(),
        if after.ratio() <= 2.0 { "" } else { " (what is left is many mid-size keys sharing partitions, not one hot key)" }
    );
}

/// The plan as one self-contained HTML page: rows per shuffle partition before and after on
/// one scale (the hot keys' partitions marked with their values), the hot keys, the SQL.
pub fn html(plan: &Plan) -> crate::html::Page {
    use crate::html::{Bars, Page};
    let (l, r) = (&plan.left, &plan.right);
    let on: Vec<String> = l
        .keys
        .iter()
        .zip(&r.keys)
        .map(|(a, b)| format!("{}.{a} = {}.{b}", l.name, r.name))
        .collect();
    let mut p = Page::new(&format!(
        "skewjoin plan: {} {} JOIN {} ON {}",
        l.name,
        plan.how.as_str().to_uppercase(),
        r.name,
        on.join(" AND ")
    ));
    let sides: Vec<Vec<String>> = [l, r]
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.table.clone(),
                fmt_count(s.rows),
                human(s.disk_bytes),
                human(s.memory_bytes),
                fmt_count(s.null_key_rows),
            ]
        })
        .collect();
    p.table(&["side", "table", "rows", "on disk", "in memory", "NULL keys"], &sides);
    for n in &plan.notes {
        p.para(&format!("note: {n}"));
    }
    let top = plan.before_tasks.iter().chain(&plan.after_tasks).copied().max();
    let mut marks: Vec<(usize, String)> = Vec::new();
    for h in &plan.hot_keys {
        let i = h.spark_partition as usize;
        match marks.iter_mut().find(|m| m.0 == i) {
            Some(m) => m.1.push_str(&format!(", {}", h.display)),
            None => marks.push((i, h.display.clone())),
        }
    }
    p.heading(&format!("Before: {}", plan.before.line()));
    p.svg(
        Bars {
            title: &format!(
                "rows per shuffle partition before ({} partitions; hot keys red)",
                plan.shuffle_partitions
            ),
            item: "partition",
            unit: "rows",
            values: &plan.before_tasks,
            marks,
            top,
        }
        .svg(),
    );
    if !plan.hot_keys.is_empty() {
        p.heading("Hot keys");
        let rows: Vec<Vec<String>> = plan
            .hot_keys
            .iter()
            .map(|h| {
                vec![
                    h.display.clone(),
                    h.class.as_str().into(),
                    h.side.to_string(),
                    fmt_count(h.rows),
                    fmt_share(h.share),
                    h.spark_partition.to_string(),
                    h.strategy.fix([&l.name, &r.name]),
                ]
            })
            .collect();
        p.table(&["key", "class", "hot on", "rows", "share", "partition", "fix"], &rows);
        if plan.after_tasks.is_empty() {
            p.heading("After: no shuffle join (a whole side is broadcast)");
        } else {
            p.heading(&format!("After: {}", plan.after.line()));
            let pieces = plan.after_tasks.len().saturating_sub(plan.shuffle_partitions as usize);
            let title = format!(
                "rows per task after, on the same scale: partitions 0 to {}{}",
                plan.shuffle_partitions.saturating_sub(1),
                if pieces > 0 { format!(", then {pieces} salted pieces") } else { String::new() }
            );
            p.svg(
                Bars {
                    title: &title,
                    item: "task",
                    unit: "rows",
                    values: &plan.after_tasks,
                    marks: Vec::new(),
                    top,
                }
                .svg(),
            );
        }
    } else if let Some(n) = &plan.next {
        p.para(n);
    }
    for w in &plan.warnings {
        p.note(true, "warning", std::slice::from_ref(w));
    }
    p.heading("SQL (Spark 3.5 and 4.x)");
    p.pre(&format!("{};", plan.sql));
    p
}
