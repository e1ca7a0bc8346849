//! The rewritten SQL as `skewjoin rewrite` prints it: after `--` lines that explain each
//! change with its numbers, and each join left as written with the reason.

use super::{Change, Rewritten};
use crate::format::{fmt_count, fmt_share};
use crate::plan::BROADCAST_SIDE_COMMENT;

/// The rewritten SQL, after `--` lines that explain each change with its numbers; a query with
/// nothing rewritten comes back byte for byte after them.
pub fn sql_with_comments(r: &Rewritten) -> String {
    let mut o = String::new();
    if r.changes.is_empty() {
        o.push_str("-- skewjoin: no join rewritten (nothing hot, or nothing that can be rewritten safely)\n");
    }
    for c in &r.changes {
        change_comments(c, &mut o);
    }
    for u in &r.unchanged_joins {
        o.push_str(&format!("-- skewjoin: left as written{}: {}: {}\n", place(u.at), one_line(&u.join), one_line(&u.reason.to_string())));
    }
    o.push_str(&r.sql);
    if !r.changes.is_empty() {
        o.push_str(";\n");
    }
    o
}

/// The lines of one change: the join, each hot key and what happens to it, the task sizes,
/// the warnings and notes.
fn change_comments(c: &Change, o: &mut String) {
    o.push_str(&format!("-- skewjoin: {} ({}){} is now the derived table {}\n", one_line(&c.join), c.how.as_str(), place(c.at), c.alias));
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
    let notes = c.warnings.iter().cloned().chain(c.notes.iter().map(ToString::to_string));
    for w in notes {
        o.push_str(&format!("--   note: {}\n", one_line(&w)));
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
