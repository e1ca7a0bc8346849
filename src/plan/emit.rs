//! The plan as Spark SQL: `SELECT * FROM left JOIN right ON ...` split into the branches of the
//! design note (rest, hot slices, salted pieces, anti joins for unmatched rows, NULL bypass),
//! each written by its strategy with `builder`, joined by UNION ALL, then parsed with sqlparser
//! and printed from the AST, so that what comes out is one query that parses, whatever the key
//! values contain.

use super::builder::{BranchSql, JoinSql};
use super::model::{HotKey, Plan};
use super::strategy::{broadcast_side, BRANCH_ORDER};
use crate::error::Result;
use crate::sql::{parse_query, render_query};

/// The plan's SQL: a whole side broadcast, or one branch per part of the split in
/// `strategy::BRANCH_ORDER`, joined by UNION ALL.
pub fn emit_sql(js: &JoinSql, plan: &Plan) -> Result<String> {
    let g = BranchSql { js };
    let hot: Vec<&HotKey> = plan.hot_keys.iter().collect();
    let branches: Vec<String> = match plan.broadcast_side {
        Some(b) => vec![broadcast_side::branch(&g, &hot, b)],
        None => BRANCH_ORDER.iter().flat_map(|branches| branches(&g, &hot)).collect(),
    };
    let text = branches.join("\nUNION ALL\n");
    let q = parse_query(&text).map_err(|e| {
        crate::Error::Internal(format!(
            "the generated SQL does not parse ({e}): {}",
            crate::format::one_line(&text, 200)
        ))
    })?;
    Ok(render_query(&q))
}
