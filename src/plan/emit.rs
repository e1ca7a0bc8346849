//! The plan as Spark SQL: `SELECT * FROM left JOIN right ON ...` split into the branches of the
//! design note (rest, hot slices, salted pieces, anti joins for unmatched rows, NULL bypass),
//! each written by its strategy with `builder`, joined by UNION ALL, then parsed with sqlparser
//! and printed from the AST, so that what comes out is one query that parses, whatever the key
//! values contain.

use super::builder::{BranchSql, JoinSql, ROWS};
use super::decompose;
use super::model::{HotKey, Plan, Side, Strategy};
use super::strategy::{broadcast_keys, broadcast_side, broadcast_slice, null_bypass, salt};
use crate::error::Result;
use crate::sql::{parse_query, render_query};

/// The plan's SQL: one branch per part of the split, in a fixed order (the rest through the
/// ordinary shuffle join, the slices broadcast into the join type, the semi/anti distinct
/// keys, the decomposed inner joins and salted pieces, the kept sides' unmatched rows, the
/// NULL bypasses), joined by UNION ALL.
pub fn emit_sql(js: &JoinSql, plan: &Plan) -> Result<String> {
    let g = BranchSql { js };
    let hot: Vec<&HotKey> = plan.hot_keys.iter().collect();
    let branches: Vec<String> = match plan.broadcast_side {
        Some(b) => vec![broadcast_side::branch(&g, &hot, b)],
        None => [
            vec![rest(&g, &hot)],
            broadcast_slice::direct_branches(&g, &hot),
            broadcast_keys::branches(&g, &hot),
            broadcast_slice::decomposed_branches(&g, &hot),
            salt::branches(&g, &hot),
            decompose::branches(&g, &hot),
            null_bypass::branches(&g, &hot),
        ]
        .concat(),
    };
    let text = branches.join("\nUNION ALL\n");
    let q =
        parse_query(&text).map_err(|e| crate::Error::Internal(format!("the generated SQL does not parse ({e}): {}", crate::format::one_line(&text, 200))))?;
    Ok(render_query(&q))
}

/// Every key that is not moved, through the ordinary shuffle join; a side whose NULL keys
/// bypass the join brings only its non-NULL keys.
fn rest(g: &BranchSql, hot: &[&HotKey]) -> String {
    let moved = g.set_of(hot, Strategy::moves);
    let pred = |side: Side| -> Option<String> {
        match (moved.is_empty(), null_bypass::bypasses(hot.iter().copied(), side)) {
            (true, false) => None,
            (true, true) => Some(g.not_null(ROWS, side)),
            (false, true) => Some(format!("{} AND NOT ({})", g.not_null(ROWS, side), g.in_set(ROWS, side, &moved))),
            (false, false) => Some(format!("{} OR NOT ({})", g.is_null(ROWS, side), g.in_set(ROWS, side, &moved))),
        }
    };
    g.join(g.js.how, &[], g.filtered(Side::Left, pred(Side::Left)), g.filtered(Side::Right, pred(Side::Right)), "")
}
