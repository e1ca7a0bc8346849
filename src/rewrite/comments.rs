//! The rewritten SQL as `skewjoin rewrite` prints it: after `--` lines that explain each
//! change with its numbers, and each join left as written with the reason.

use super::{Change, Rewritten, WindowSeen};
use crate::format::{fmt_count, fmt_share};
use crate::plan::BROADCAST_SIDE_COMMENT;
use crate::window::Verdict;

/// The rewritten SQL, after `--` lines that explain each change with its numbers; a query with
/// nothing rewritten comes back byte for byte after them.
pub fn sql_with_comments(r: &Rewritten) -> String {
    let mut o = String::new();
    if !r.changed() {
        o.push_str("-- skewjoin: no join rewritten (nothing hot, nothing that can be rewritten safely, or no rewrite predicted faster)\n");
    }
    for c in &r.changes {
        change_comments(c, &mut o);
    }
    for u in &r.unchanged_joins {
        o.push_str(&format!(
            "-- skewjoin: left as written{}: {}: {}\n",
            place(u.at),
            one_line(&u.join),
            one_line(&u.reason.to_string())
        ));
        in_branches_comment(u, &mut o);
    }
    for w in &r.windows {
        window_comments(w, &mut o);
    }
    if r.settings.iter().any(|s| s.origin != crate::settings::Origin::Default) {
        o.push_str(&format!("-- skewjoin: {}\n", crate::settings::line(&r.settings)));
    }
    if !r.changes.is_empty() || !r.unchanged_joins.is_empty() {
        o.push_str(&format!("-- skewjoin: decided for {}\n", r.cluster.describe()));
    }
    o.push_str(&r.sql);
    if r.changed() {
        o.push_str(";\n");
    }
    o
}

/// For a join left as written that runs in a rewritten join's branches: its tasks there.
fn in_branches_comment(u: &super::Unchanged, o: &mut String) {
    let (Some(b), true) = (&u.before, u.in_branches) else { return };
    match &u.after {
        Some(a) => o.push_str(&format!(
            "--   it runs in each branch of a rewritten join after it, on the branch's rows: largest task {} rows -> {} (median {} -> {})\n",
            fmt_count(b.max_task_rows),
            fmt_count(a.max_task_rows),
            fmt_count(b.median_task_rows),
            fmt_count(a.median_task_rows)
        )),
        None => o.push_str(&format!(
            "--   it runs in each branch of a rewritten join after it, on the branch's rows (not counted): at most its largest task as written, {} rows\n",
            fmt_count(b.max_task_rows)
        )),
    }
}

/// The lines of one change: the join, each hot key and what happens to it, the task sizes,
/// the warnings and notes.
fn change_comments(c: &Change, o: &mut String) {
    o.push_str(&format!(
        "-- skewjoin: {} ({}){} is now the derived table {}\n",
        one_line(&c.join),
        c.how.as_str(),
        place(c.at),
        c.alias
    ));
    for h in &c.hot_keys {
        o.push_str(&format!(
            "--   {} [{}]: {} rows ({} of the {} side) {}\n",
            one_line(&h.display),
            h.class.as_str(),
            fmt_count(h.rows),
            fmt_share(h.share),
            h.side,
            h.strategy.comment()
        ));
    }
    if c.broadcast_side.is_some() {
        o.push_str(&format!("--   {BROADCAST_SIDE_COMMENT}\n"));
    }
    o.push_str(&format!(
        "--   largest task {} rows -> {} (median {} -> {})\n",
        fmt_count(c.before.max_task_rows),
        fmt_count(c.after.max_task_rows),
        fmt_count(c.before.median_task_rows),
        fmt_count(c.after.median_task_rows)
    ));
    if let Some(a) = c.aqe.as_ref() {
        o.push_str(&format!("--   before, {}\n", one_line(&a.before.summary())));
    }
    if c.cost.is_some() {
        o.push_str(&format!("--   decision: {}\n", one_line(&c.decision.to_string())));
    }
    if c.in_branches {
        o.push_str("--   note: it runs again in each branch of a rewritten join after it, on that branch's rows: its largest task after is a bound there\n");
    }
    let notes = c.warnings.iter().cloned().chain(c.notes.iter().map(ToString::to_string));
    for w in notes {
        o.push_str(&format!("--   note: {}\n", one_line(&w)));
    }
}

/// The lines of one window stage: what it is, its hot values, the tasks, the verdict or reason.
fn window_comments(w: &WindowSeen, o: &mut String) {
    let head = format!(
        "-- skewjoin: {}{}",
        one_line(&crate::format::one_line(&w.stage, 160)),
        place(w.at)
    );
    let Some(p) = &w.plan else {
        o.push_str(&format!(
            "{head}: not planned: {}\n",
            one_line(w.reason.as_deref().unwrap_or(""))
        ));
        return;
    };
    let status = match &w.alias {
        Some(a) => format!("rewritten, each hot value's aggregate in {a}_N"),
        None => "left as written".into(),
    };
    o.push_str(&format!(
        "{head} ({}, by {} of {}): {status}\n",
        p.shape.label(),
        p.keys.join(", "),
        p.input
    ));
    for h in &p.hot {
        o.push_str(&format!(
            "--   {} [{}]: {} rows ({} of the input), partition {}\n",
            one_line(&h.display),
            h.class.as_str(),
            fmt_count(h.rows),
            fmt_share(h.share),
            h.spark_partition
        ));
    }
    let after = p.after.as_ref().map(|a| {
        format!(
            " -> {} (median {} -> {})",
            fmt_count(a.max_task_rows),
            fmt_count(p.before.median_task_rows),
            fmt_count(a.median_task_rows)
        )
    });
    let reduced = matches!(p.verdict, Verdict::GroupLimit | Verdict::PartialAggregation);
    let what = if reduced {
        "before Spark's reduction per map task, the largest task would read"
    } else {
        "largest task"
    };
    o.push_str(&format!(
        "--   {what} {} rows{}\n",
        fmt_count(p.before.max_task_rows),
        after.unwrap_or_else(|| format!(" (median {})", fmt_count(p.before.median_task_rows)))
    ));
    if let (Some(r), Some(m)) = (&p.records, p.map_tasks) {
        o.push_str(&format!(
            "--   records Spark shuffles after its reduction over {} map tasks: largest task {} (median {})\n",
            fmt_count(m),
            fmt_count(r.max_task_rows),
            fmt_count(r.median_task_rows)
        ));
    }
    o.push_str(&format!("--   {}\n", one_line(&p.why)));
    if let Some(r) = &w.reason {
        o.push_str(&format!("--   not rewritten: {}\n", one_line(r)));
    }
    for n in &w.notes {
        o.push_str(&format!("--   note: {}\n", one_line(n)));
    }
}

/// ` at line L, column C`, where the join is known to be.
fn place(at: Option<super::At>) -> String {
    at.map(|a| format!(" at {a}")).unwrap_or_default()
}

/// Comment text on one line (a value may hold a newline).
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}
