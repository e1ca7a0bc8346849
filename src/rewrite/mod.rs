//! `skewjoin rewrite`: a Spark SQL query in, the same query with its skewed joins split into
//! branches (see `plan`) out.
//!
//! Each equi-join whose two inputs trace back to tables given with `--table` (directly, by
//! alias, through a CTE or a subquery in FROM that selects columns of one table) is planned with
//! the planner. A join with hot keys becomes one derived table `__sjN` that produces every
//! column of both inputs (a name both sides share is exposed as `alias__name`); the rest of the
//! SELECT is re-pointed at it, and `*` / `alias.*` are expanded to the same columns under their
//! original names, so WHERE, GROUP BY, HAVING, ORDER BY, windows and the output keep their
//! meaning. What cannot be rewritten safely is left as it was, with the reason ([`LeftAlone`]).
//!
//! The parts: `input` traces a FROM item to its table; `condition` reads a join's keys;
//! `join` plans one join and builds its derived table; `chain` and `from` handle the joins of
//! one FROM item left to right; `comma` and `subquery` write comma joins and IN / EXISTS
//! subqueries of WHERE as the explicit joins Spark makes of them; `hints` reads the join
//! strategy hints Spark follows; `select` and `scope` re-point the rest of the SELECT; `reason`
//! and `note` are what the reports say; `comments` prints the SQL with them.

mod aggregate;
mod branch_rows;
mod chain;
mod comma;
mod comments;
mod condition;
mod estimate;
mod filters;
mod from;
mod hints;
mod in_branches;
mod input;
mod join;
mod lift;
pub(crate) use lift::inline_lifted;
mod names;
mod note;
pub mod reads;
mod reason;
mod scope;
mod select;
mod subquery;
mod through;
mod window;

use std::collections::HashMap;

use serde::Serialize;
use sqlparser::ast::{Query, SetExpr, Statement};

use crate::classify::Classifier;
use crate::error::{Error, Result};
use crate::plan::{self, JoinType, PlanOptions};
use crate::sql::render;
use crate::table::Table;
pub use comments::sql_with_comments;
pub(crate) use condition::conjuncts as spark_conjuncts;
use names::lc;
pub use names::table_names;
pub use note::Note;
pub use reason::{LeftAlone, Untraced};
use scope::{repoint_all, Remap};
pub use window::WindowSeen;

/// Where a join is in the query as given: the line and column (from 1) where its joined table
/// (or its subquery of WHERE) starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct At {
    pub line: u64,
    pub column: u64,
}

impl At {
    /// The start of a parsed node, when the parser recorded one.
    pub(crate) fn of(node: &impl sqlparser::ast::Spanned) -> Option<At> {
        let start = node.span().start;
        (start.line > 0).then_some(At { line: start.line, column: start.column })
    }
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

#[derive(Debug, Serialize)]
pub struct Change {
    /// The join as written, e.g. `e LEFT JOIN t ON e.k = t.k`.
    pub join: String,
    /// Where it is in the query.
    pub at: Option<At>,
    pub how: JoinType,
    pub keys: Vec<String>,
    pub alias: String,
    pub hot_keys: Vec<plan::HotKey>,
    pub broadcast_side: Option<plan::Side>,
    pub before: plan::TaskStats,
    pub after: plan::TaskStats,
    pub notes: Vec<Note>,
    pub warnings: Vec<String>,
    pub results_change: bool,
    /// It comes before another rewritten join of its chain, so its branches run again in each
    /// of that join's branches, on their rows: `after` bounds its tasks there.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_branches: bool,
    /// Why it is rewritten: the rewrite is predicted faster (or `--min-gain off`).
    pub decision: plan::verdict::Verdict,
    /// What AQE does to the join before and after (None: AQE off in the settings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqe: Option<plan::AqeEffect>,
    /// The predicted times as written and rewritten.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<plan::cost::JoinCost>,
    /// What its fix as DataFrame code needs (`--emit pyspark|scala`).
    #[serde(skip)]
    pub code: Option<Box<plan::code::CodeParts>>,
}

#[derive(Debug, Serialize)]
pub struct Unchanged {
    pub join: String,
    /// Where it is in the query.
    pub at: Option<At>,
    /// The reason's stable code (`LeftAlone::code`).
    pub code: String,
    pub reason: LeftAlone,
    /// Its tasks as written, where the join was measured and nothing needed moving.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<plan::TaskStats>,
    /// It comes before a rewritten join of its chain, so it runs in each of that join's
    /// branches, on the branch's rows: `after` gives its tasks there, counted on each branch's
    /// rows, or where they could not be, `before` bounds them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_branches: bool,
    /// Its largest tasks after the rewrite, where it runs in the branches (`in_branches`): of
    /// the branch whose rows give it the largest task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<plan::TaskStats>,
    /// Where the rewrite was not predicted faster: the choice, with its code and times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<plan::verdict::Verdict>,
}

impl Unchanged {
    pub(crate) fn new(join: String, at: Option<At>, reason: LeftAlone) -> Unchanged {
        let decision = match &reason {
            LeftAlone::NotFaster(v) => Some(v.clone()),
            _ => None,
        };
        Unchanged {
            join,
            at,
            code: reason.code(),
            reason,
            before: None,
            in_branches: false,
            after: None,
            decision,
        }
    }
}

/// Every join the rewrite saw, rewritten or left as written, in the order of the query.
#[derive(Debug, Serialize)]
pub struct Seen {
    pub at: Option<At>,
    pub join: String,
    /// `rewritten` or `left_as_written`.
    pub status: &'static str,
    /// The join type, where it was planned.
    pub how: Option<JoinType>,
    /// The derived table that replaces it, when rewritten.
    pub alias: Option<String>,
    /// The reason's stable code, when left as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Why it stays, when left as written.
    pub reason: Option<LeftAlone>,
}

#[derive(Debug, Serialize)]
pub struct Rewritten {
    pub sql: String,
    /// Every join seen, by where it is in the query.
    pub joins: Vec<Seen>,
    pub changes: Vec<Change>,
    pub unchanged_joins: Vec<Unchanged>,
    /// Every window stage seen (its PARTITION BY), rewritten or left as written.
    pub windows: Vec<WindowSeen>,
    /// The Spark settings the predictions assumed, with where each came from.
    pub settings: Vec<crate::settings::Setting>,
    /// The cluster the decisions were made for: its cores, and where they were read.
    pub cluster: crate::cluster::ClusterSize,
}

impl Rewritten {
    /// Something in the query was rewritten (a join or a window).
    pub fn changed(&self) -> bool {
        !self.changes.is_empty() || self.windows.iter().any(|w| w.status == "rewritten")
    }
}

/// The joins of `changes` and `unchanged`, by where they are (those without a place last).
fn seen(changes: &[Change], unchanged: &[Unchanged]) -> Vec<Seen> {
    let rewritten = changes.iter().map(|c| Seen {
        at: c.at,
        join: c.join.clone(),
        status: "rewritten",
        how: Some(c.how),
        alias: Some(c.alias.clone()),
        code: None,
        reason: None,
    });
    let left = unchanged.iter().map(|u| Seen {
        at: u.at,
        join: u.join.clone(),
        status: "left_as_written",
        how: None,
        alias: None,
        code: Some(u.code.clone()),
        reason: Some(u.reason.clone()),
    });
    let mut all: Vec<Seen> = rewritten.chain(left).collect();
    all.sort_by_key(|s| (s.at.is_none(), s.at));
    all
}

/// What the rewrite knows and has done so far.
struct Ctx<'a> {
    tables: &'a HashMap<String, Table>,
    /// The CTEs in scope, by name (lower case), as rewritten.
    ctes: HashMap<String, Query>,
    classifier: &'a Classifier,
    opts: &'a PlanOptions,
    changes: Vec<Change>,
    unchanged: Vec<Unchanged>,
    /// The number of the next derived table (`__sjN`, `__sjpN`, `__swN`).
    next_id: usize,
    /// The window stages seen.
    windows: Vec<WindowSeen>,
    /// The top-N filters of the SELECT around the subquery being rewritten: a column's name
    /// (lower case) and the rows kept (`rn <= 3` keeps 3).
    rank_limits: Vec<(String, u64)>,
    /// The ORDER BY of the query whose SELECT is being rewritten: columns it reads too.
    order_by: Vec<sqlparser::ast::Expr>,
    /// The weights of tables' rows through joins computed last, for the run (half of the
    /// staging memory, 48 MB by default).
    weights: std::sync::Arc<crate::count::weights::WeightMemo>,
    /// What the rewrites so far added to the SQL, and may add.
    growth: SqlGrowth,
}

/// The bound on the SQL a rewrite adds: a few KB per hot key moved. A chained join rewritten
/// after another repeats the one before in each of its branches, so without a bound the SQL
/// grows with the product of the branches.
#[derive(Default)]
struct SqlGrowth {
    /// Bytes the rewritten joins added over their text as written.
    added: usize,
    /// Hot keys the rewritten joins moved.
    hot_keys: usize,
}

impl SqlGrowth {
    /// Bytes allowed for every statement, and for each hot key moved.
    const BASE: usize = 16 << 10;
    const PER_HOT_KEY: usize = 8 << 10;

    /// The bound with `hot_keys` more keys moved.
    fn limit(&self, hot_keys: usize) -> usize {
        Self::BASE + Self::PER_HOT_KEY * (self.hot_keys + hot_keys)
    }
}

/// Rewrite `sql` (one query). `tables` maps the names used in the query (lower case) to tables.
/// Several statements (`;`-separated) are rewritten one by one; INSERT ... SELECT and
/// CREATE TABLE ... AS SELECT have their query rewritten.
pub fn rewrite(
    sql: &str,
    tables: &HashMap<String, Table>,
    classifier: &Classifier,
    opts: &PlanOptions,
) -> Result<Rewritten> {
    let mut stmts = crate::sql::parse(sql)?;
    if stmts.is_empty() {
        return Err(Error::Usage("no SQL statement found".into()));
    }
    let mut ctx = Ctx {
        tables,
        ctes: HashMap::new(),
        classifier,
        opts,
        changes: Vec::new(),
        unchanged: Vec::new(),
        next_id: 1,
        windows: Vec::new(),
        rank_limits: Vec::new(),
        order_by: Vec::new(),
        weights: std::sync::Arc::new(crate::count::weights::WeightMemo::new(
            opts.memory.min(crate::count::STAGE_MEMORY) / 2,
        )),
        growth: SqlGrowth::default(),
    };
    for stmt in &mut stmts {
        match stmt {
            Statement::Query(q) => process_query(q, &mut ctx)?,
            Statement::Insert(ins) => {
                if let Some(q) = &mut ins.source {
                    process_query(q, &mut ctx)?;
                }
            }
            Statement::CreateTable(ct) => {
                if let Some(q) = &mut ct.query {
                    process_query(q, &mut ctx)?;
                }
            }
            other => ctx.unchanged.push(Unchanged::new(
                other.to_string().chars().take(60).collect(),
                None,
                LeftAlone::NotAQuery,
            )),
        }
    }
    // Nothing rewritten: the query exactly as given, not re-printed.
    let changed = !ctx.changes.is_empty() || ctx.windows.iter().any(|w| w.status == "rewritten");
    let out = if changed {
        stmts.iter().map(render).collect::<Vec<_>>().join(";\n\n")
    } else {
        sql.to_string()
    };
    Ok(Rewritten {
        sql: out,
        joins: seen(&ctx.changes, &ctx.unchanged),
        changes: ctx.changes,
        unchanged_joins: ctx.unchanged,
        windows: ctx.windows,
        settings: opts.settings.listed(),
        cluster: opts.cluster.clone(),
    })
}

fn process_query(q: &mut Query, ctx: &mut Ctx) -> Result<()> {
    let saved = ctx.ctes.clone();
    if let Some(with) = &mut q.with {
        for cte in &mut with.cte_tables {
            process_query(&mut cte.query, ctx)?;
            // Later CTEs and the body see this one (as rewritten: same rows, same columns).
            ctx.ctes.insert(lc(&cte.alias.name.value), (*cte.query).clone());
        }
    }
    let order_by = match &q.order_by {
        Some(sqlparser::ast::OrderBy {
            kind: sqlparser::ast::OrderByKind::Expressions(es),
            ..
        }) => es.iter().map(|e| e.expr.clone()).collect(),
        _ => vec![],
    };
    let saved_order = std::mem::replace(&mut ctx.order_by, order_by);
    let remaps = process_set(&mut q.body, ctx);
    ctx.order_by = saved_order;
    let remaps = remaps?;
    window::process_windows(q, !remaps.is_empty(), ctx)?;
    // After its windows (which may copy the joins' derived tables too).
    lift::lift_repeated(q);
    // ORDER BY of a query whose body is one SELECT sees that SELECT's FROM.
    if let (Some(ob), false) = (&mut q.order_by, remaps.is_empty()) {
        repoint_all(ob, &remaps);
    }
    ctx.ctes = saved;
    Ok(())
}

fn process_set(body: &mut SetExpr, ctx: &mut Ctx) -> Result<Vec<Remap>> {
    match body {
        SetExpr::Select(s) => select::process_select(s, ctx),
        SetExpr::Query(q) => {
            process_query(q, ctx)?;
            Ok(vec![])
        }
        SetExpr::SetOperation { left, right, .. } => {
            process_set(left, ctx)?;
            process_set(right, ctx)?;
            Ok(vec![])
        }
        _ => Ok(vec![]),
    }
}
