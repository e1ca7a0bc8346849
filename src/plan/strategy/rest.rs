//! The rest: every key no strategy moves, through the join as written (the ordinary shuffle),
//! without the moved keys and without the NULL keys that bypass the join. The first branch of
//! every rewrite.

use super::null_bypass;
use crate::plan::builder::{BranchSql, ROWS};
use crate::plan::model::{HotKey, Side, Strategy};

/// Every key that is not moved, through the ordinary shuffle join; a side whose NULL keys
/// bypass the join brings only its non-NULL keys.
pub(crate) fn branches(g: &BranchSql, hot: &[&HotKey]) -> Vec<String> {
    let moved = g.set_of(hot, Strategy::moves);
    let pred = |side: Side| -> Option<String> {
        match (moved.is_empty(), null_bypass::bypasses(hot.iter().copied(), side)) {
            (true, false) => None,
            (true, true) => Some(g.not_null(ROWS, side)),
            (false, true) => Some(format!(
                "{} AND NOT ({})",
                g.not_null(ROWS, side),
                g.in_set(ROWS, side, &moved)
            )),
            (false, false) => {
                Some(format!("{} OR NOT ({})", g.is_null(ROWS, side), g.in_set(ROWS, side, &moved)))
            }
        }
    };
    vec![g.join(
        g.js.how,
        &[],
        g.filtered(Side::Left, pred(Side::Left)),
        g.filtered(Side::Right, pred(Side::Right)),
        "",
    )]
}
