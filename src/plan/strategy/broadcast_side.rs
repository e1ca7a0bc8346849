//! Broadcasting a whole side: when a side the join type may broadcast is under the threshold
//! in memory, the simplest fix is to broadcast all of it. Nothing shuffles, so no task is
//! left, and the query is one join with a broadcast hint (junk dropped on request).

use crate::format::human;
use crate::plan::builder::BranchSql;
use crate::plan::model::{HotKey, JoinType, Plan, Side, SideReport};
use crate::plan::strategy::drop_junk;

/// The side to broadcast whole: of those the join type may broadcast and that fit in memory
/// under `threshold`, the smaller (the right on a tie). Only when something is hot.
pub(crate) fn choose(
    how: JoinType,
    hot: &[HotKey],
    sides: [&SideReport; 2],
    threshold: u64,
) -> Option<Side> {
    if hot.is_empty() {
        return None;
    }
    [(Side::Right, sides[1]), (Side::Left, sides[0])]
        .into_iter()
        .filter(|(s, r)| how.may_broadcast(*s) && r.memory_bytes <= threshold)
        .min_by_key(|(_, r)| r.memory_bytes)
        .map(|(s, _)| s)
}

/// The plan's text report's line for it.
pub(crate) fn fix(plan: &Plan, side: Side) -> String {
    let s = if side == Side::Left { &plan.left } else { &plan.right };
    format!(
        "  Simplest fix: {} is {} in memory, under the {} broadcast threshold: broadcast all of it and nothing shuffles.",
        s.name,
        human(s.memory_bytes),
        human(plan.broadcast_threshold)
    )
}

/// The rewritten SQL's header comment for it.
pub const COMMENT: &str =
    "one side fits under the broadcast threshold: broadcast whole, no shuffle";

/// The one branch: the join as written with `side` broadcast, junk rows dropped if asked.
pub(crate) fn branch(g: &BranchSql, hot: &[&HotKey], side: Side) -> String {
    let input = |s: Side| g.filtered(s, drop_junk::filter(g, hot, s));
    g.join(g.js.how, &[side], input(Side::Left), input(Side::Right), "")
}
