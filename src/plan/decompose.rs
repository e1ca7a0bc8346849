//! Outer-join decomposition, shared by the strategies that need it. A hot key's branch is
//! run as an inner join when the join type cannot run it as written (a broadcast slice of a
//! side the join type may not broadcast; any salted branch). The rows of a kept side that
//! then match nothing are found apart: the side's rows for those keys, anti-joined with the
//! other side's distinct keys (broadcast), padded with NULLs. That test sees keys only, so
//! it is safe with predicates beyond the key equalities in ON only where they read one side:
//! the other side's keys are then those of its rows that pass them, and a kept side's row
//! that fails them matches nothing (the anti join's ON tests them).

use super::builder::{BranchSql, DISTINCT_KEYS, ROWS, SOURCE_ROWS};
use super::model::{HotKey, JoinType, PlanOptions, Side, Strategy};
use crate::sql::ident;
use crate::value::Value;

/// A slice broadcast from `side` runs as the join itself only where the join type may
/// broadcast that side.
pub(crate) fn slice_is_decomposed(how: JoinType, side: Side) -> bool {
    !how.may_broadcast(side)
}

/// A salted branch is always an inner join (a kept side is never copied).
pub(crate) fn salt_is_decomposed(how: JoinType) -> bool {
    how != JoinType::Inner
}

/// A decomposed branch is safe unless ON has predicates beyond the keys that read both sides.
pub(crate) fn is_safe(decomposed: bool, opts: &PlanOptions) -> bool {
    !(decomposed && opts.extra_predicates && !opts.extras_one_side)
}

fn is_decomposed(s: &Strategy) -> bool {
    matches!(
        s,
        Strategy::BroadcastSlice { decomposed: true, .. } | Strategy::Salt { decomposed: true, .. }
    )
}

/// The unmatched rows of every kept side for the decomposed keys, one branch per kept side.
pub(crate) fn branches(g: &BranchSql, hot: &[&HotKey]) -> Vec<String> {
    let set = g.set_of(hot, is_decomposed);
    if set.is_empty() {
        return vec![];
    }
    [Side::Left, Side::Right]
        .into_iter()
        .filter(|s| g.js.how.preserves(*s))
        .map(|side| g.padded(side, unmatched(g, side, &set)))
        .collect()
}

/// Rows of `side` whose key is in `set` and has no row on the other side.
fn unmatched(g: &BranchSql, side: Side, set: &[&[Value]]) -> String {
    let other = side.other();
    let dk: Vec<String> = g.keys(other).iter().map(|c| ident(c)).collect();
    let mut on: Vec<String> = g
        .keys(side)
        .iter()
        .zip(g.keys(other))
        .map(|(a, b)| format!("{ROWS}.{} = {DISTINCT_KEYS}.{}", ident(a), ident(b)))
        .collect();
    let mut other_rows = g.in_set(SOURCE_ROWS, other, set);
    match &g.js.extra_on_side {
        Some(e) if e.side == other => other_rows = format!("{other_rows} AND ({})", e.on_u),
        Some(e) => on.push(format!("({})", e.on_t)),
        None => {}
    }
    format!(
        "(SELECT /*+ BROADCAST({DISTINCT_KEYS}) */ {ROWS}.* FROM (SELECT * FROM {} {SOURCE_ROWS} WHERE {}) {ROWS} LEFT ANTI JOIN (SELECT DISTINCT {} FROM {} {SOURCE_ROWS} WHERE {other_rows}) {DISTINCT_KEYS} ON {}) {}",
        g.table(side),
        g.in_set(SOURCE_ROWS, side, set),
        dk.join(", "),
        g.table(other),
        on.join(" AND "),
        g.alias(side)
    )
}
