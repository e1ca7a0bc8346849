//! Windows over a hot partition: the window functions of one SELECT, grouped by their
//! PARTITION BY; the stage's input traced to a table and counted through the SELECT's WHERE;
//! and a window over the whole partition whose hot values are taken out of the shuffle.
//!
//! The rewrite of `SELECT .., f(x) OVER (PARTITION BY k) .. FROM r WHERE w` with hot values
//! v1..vn is a UNION ALL of
//! - the rest, first (its column names are the output's): the SELECT as written, with
//!   `AND NOT (k = v1 OR ..)` added to WHERE; a window partition holds one value, so the other
//!   values' windows are unchanged;
//! - one branch per hot value: `SELECT .., __swN.__w1 .. FROM r CROSS JOIN (SELECT f(x) AS __w1
//!   FROM r WHERE w AND k = vi) __swN WHERE w AND k = vi`, the aggregate computed once (Spark
//!   aggregates it per map task, then in one task of one record per map task) and broadcast to
//!   the value's rows, which are read where they lie.
//!
//! Every value condition is written so that it is never NULL (`k IS NULL`, or `k IS NOT NULL
//! AND k = v`), so the rest's NOT keeps exactly the rows no branch takes.

use std::ops::ControlFlow;

use serde::Serialize;
use sqlparser::ast::{
    Expr, Function, FunctionArguments, GroupByExpr, ObjectNamePart, OrderByKind, Query, Select,
    SelectItem, SetExpr, TableWithJoins, Visit, VisitMut, Visitor, VisitorMut, WindowType,
};

use super::condition::{conjuncts, join_type};
use super::estimate::Used;
use super::filters::JoinScope;
use super::filters::{column_of, to_base};
use super::from::{chain_as_written, merges};
use super::input::{input_of, Input};
use super::names::{factor_alias, lc};
use super::reason::StageWhy;
use super::through::{rows_of_chain, Through};
use super::{At, Ctx};
use crate::count::filter::RowFilter;
use crate::count::KeySpec;
use crate::error::Result;
use crate::plan::{JoinType, SideInput};
use crate::sql::{ident, literal, parse_query, render_expr};
use crate::table::{ResolvedColumn, Table};
use crate::value::{KeyType, Value};
use crate::window::{self, Shape, WindowPlan};

/// Spark's largest group limit it pushes below a window
/// (`spark.sql.optimizer.windowGroupLimitThreshold`).
const GROUP_LIMIT_THRESHOLD: u64 = 1000;

/// Aggregate functions whose value over a whole partition is the GROUP BY aggregate's.
const WHOLE_PARTITION_AGGREGATES: [&str; 6] = ["sum", "count", "min", "max", "avg", "mean"];

/// Rankings Spark limits before the shuffle when filtered to a top N.
const RANKINGS: [&str; 3] = ["row_number", "rank", "dense_rank"];

/// One window stage of the query, rewritten, planned and left, or not planned.
#[derive(Debug, Serialize)]
pub struct WindowSeen {
    pub at: Option<At>,
    /// The stage as written: its window functions, or its GROUP BY.
    pub stage: String,
    /// `rewritten` or `left_as_written`.
    pub status: &'static str,
    /// The derived tables of its hot values' aggregates, when rewritten.
    pub alias: Option<String>,
    /// The stage planned: its hot values, tasks and verdict with the numbers.
    pub plan: Option<WindowPlan>,
    /// Why it was not planned or not rewritten, when that is not the plan's verdict.
    pub reason: Option<String>,
    /// The reason's stable code (`StageWhy::code`).
    pub code: Option<&'static str>,
    /// The WHERE conditions the counts could not apply.
    pub notes: Vec<String>,
}

impl WindowSeen {
    /// The stage as written (`stage`), left as written until it is planned and rewritten.
    pub(super) fn left(at: Option<At>, stage: String) -> WindowSeen {
        WindowSeen {
            at,
            stage,
            status: "left_as_written",
            alias: None,
            plan: None,
            reason: None,
            code: None,
            notes: vec![],
        }
    }

    /// Left as written, for `why`.
    pub(super) fn left_because(&mut self, why: StageWhy) {
        self.code = Some(why.code);
        self.reason = Some(why.text);
    }
}

/// One window function of the SELECT.
struct WinFn {
    func: Function,
    partition: Vec<Expr>,
    ordered: bool,
    at: Option<At>,
    /// Its select item's alias.
    alias: Option<String>,
}

/// The window stages of `q`'s SELECT (when its body is one): planned, and the whole-partition
/// one rewritten when it is hot. `joins_rewritten`: a join of the SELECT's FROM was rewritten
/// (its windows are then left to it).
pub(super) fn process_windows(q: &mut Query, joins_rewritten: bool, ctx: &mut Ctx) -> Result<()> {
    let SetExpr::Select(sel) = q.body.as_ref() else { return Ok(()) };
    let fns = window_functions(sel);
    if fns.is_empty() {
        super::aggregate::aggregate(sel, ctx);
        return Ok(());
    }
    let text = fns
        .iter()
        .map(|w| crate::format::one_line(&w.func.to_string(), usize::MAX))
        .collect::<Vec<_>>()
        .join(", ");
    let mut seen = WindowSeen::left(fns[0].at, text);
    match stage(sel, &fns, joins_rewritten, ctx) {
        Err(why) => seen.left_because(why),
        Ok((p, notes)) => {
            seen.notes = notes;
            if p.acts() {
                match rewritable(q, sel, &fns, ctx) {
                    Ok(()) => {
                        let alias = format!("__sw{}", ctx.next_id);
                        ctx.next_id += 1;
                        *q.body = rewritten_body(sel, &fns, &p, &alias)?;
                        seen.status = "rewritten";
                        seen.alias = Some(alias);
                    }
                    Err(why) => seen.left_because(why),
                }
            }
            seen.plan = Some(p);
        }
    }
    ctx.windows.push(seen);
    Ok(())
}

/// The top-N filters of `sel`'s WHERE, as Spark reads them for a group limit: `rn <= 3`,
/// `rn < 4`, `rn = 3` (and the same written the other way round) keep at most 3 rows.
pub(super) fn rank_limits(sel: &Select) -> Vec<(String, u64)> {
    use sqlparser::ast::BinaryOperator as Op;
    let mut parts = Vec::new();
    if let Some(w) = &sel.selection {
        conjuncts(w, &mut parts);
    }
    let name = |e: &Expr| match e {
        Expr::Identifier(i) => Some(lc(&i.value)),
        Expr::CompoundIdentifier(p) => p.last().map(|i| lc(&i.value)),
        _ => None,
    };
    let number = |e: &Expr| match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, _) => n.parse::<u64>().ok(),
            _ => None,
        },
        _ => None,
    };
    let mut out = Vec::new();
    for c in &parts {
        let Expr::BinaryOp { left, op, right } = c else { continue };
        let found = match (name(left), number(right), number(left), name(right)) {
            (Some(col), Some(n), _, _) => match op {
                Op::LtEq | Op::Eq => Some((col, n)),
                Op::Lt => Some((col, n.saturating_sub(1))),
                _ => None,
            },
            (_, _, Some(n), Some(col)) => match op {
                Op::GtEq | Op::Eq => Some((col, n)),
                Op::Gt => Some((col, n.saturating_sub(1))),
                _ => None,
            },
            _ => None,
        };
        out.extend(found);
    }
    out
}

/// The window functions of the select list.
fn window_functions(sel: &Select) -> Vec<WinFn> {
    let mut out = Vec::new();
    for item in &sel.projection {
        let (e, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.clone())),
            _ => continue,
        };
        let _ = e.visit(&mut FnCollector { out: &mut out, alias, depth: 0 });
    }
    out
}

/// The window functions of one select item, not those of its subqueries (their own SELECTs).
struct FnCollector<'a> {
    out: &'a mut Vec<WinFn>,
    alias: Option<String>,
    depth: usize,
}

impl Visitor for FnCollector<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        if self.depth > 0 {
            return ControlFlow::Continue(());
        }
        if let Expr::Function(f) = e {
            match &f.over {
                Some(WindowType::WindowSpec(spec)) => self.out.push(WinFn {
                    func: f.clone(),
                    partition: spec.partition_by.clone(),
                    ordered: !spec.order_by.is_empty() || spec.window_frame.is_some(),
                    at: At::of(e),
                    alias: self.alias.clone(),
                }),
                Some(WindowType::NamedWindow(_)) => self.out.push(WinFn {
                    func: f.clone(),
                    partition: vec![],
                    ordered: true,
                    at: At::of(e),
                    alias: self.alias.clone(),
                }),
                None => {}
            }
        }
        ControlFlow::Continue(())
    }
}

pub(super) fn fn_name(f: &Function) -> String {
    match f.name.0.last() {
        Some(ObjectNamePart::Identifier(i)) => lc(&i.value),
        _ => String::new(),
    }
}

/// The shape of the stage: every function an aggregate over the whole partition, a ranking
/// filtered to a top N by the query around it, or an ordered window.
fn shape_of(fns: &[WinFn], limits: &[(String, u64)]) -> Shape {
    if fns
        .iter()
        .all(|w| !w.ordered && WHOLE_PARTITION_AGGREGATES.contains(&fn_name(&w.func).as_str()))
    {
        return Shape::WholePartition;
    }
    let rankings = fns.iter().all(|w| w.ordered && RANKINGS.contains(&fn_name(&w.func).as_str()));
    let limit = fns
        .iter()
        .filter_map(|w| w.alias.as_ref())
        .filter_map(|a| limits.iter().find(|l| l.0 == lc(a)).map(|l| l.1))
        .min();
    match limit {
        Some(n) if rankings && n <= GROUP_LIMIT_THRESHOLD => Shape::TopN { n },
        _ => Shape::Ordered,
    }
}

/// The stage planned, or why it cannot be: one PARTITION BY of columns of one traced input.
fn stage(
    sel: &Select,
    fns: &[WinFn],
    joins_rewritten: bool,
    ctx: &Ctx,
) -> std::result::Result<(WindowPlan, Vec<String>), StageWhy> {
    let spec = |w: &WinFn| w.partition.iter().map(render_expr).collect::<Vec<_>>();
    if fns.iter().any(|w| spec(w) != spec(&fns[0])) || fns[0].partition.is_empty() {
        return Err(StageWhy::new(
            "partition_by_differs",
            "window functions with different PARTITION BY (or none, or a named window): each is its own stage; not planned",
        ));
    }
    if joins_rewritten || sel.from.len() != 1 {
        return Err(StageWhy::new(
            "input_is_a_rewritten_join",
            "the window's input is a comma join or a join rewritten above: not planned",
        ));
    }
    if !matches!(&sel.group_by, GroupByExpr::Expressions(g, _) if g.is_empty())
        || sel.having.is_some()
    {
        return Err(StageWhy::new(
            "window_over_groups",
            "the window runs over the SELECT's groups (GROUP BY), whose rows are not a table's",
        ));
    }
    let shape = shape_of(fns, &ctx.rank_limits);
    if sel.from[0].joins.is_empty() {
        let inp = input_of(&sel.from[0].relation, ctx, 0)
            .map_err(|e| StageWhy::new("input_not_traced", format!("its input: {e}")))?;
        return planned(sel, &inp, &fns[0].partition, shape, &[], ctx);
    }
    let (root, inp) = joined_input(&sel.from[0], &fns[0].partition, ctx)?;
    let why = match planned_on_joined_rows(sel, root, &inp, &fns[0].partition, shape, ctx) {
        Ok(planned) => return Ok(planned),
        Err(why) => why,
    };
    let (p, mut notes) = planned(sel, &inp, &fns[0].partition, shape, &[], ctx)?;
    notes.push(format!(
        "the partition key is counted on {} before its joins, which can drop or repeat its rows: the task sizes are estimates ({why})",
        inp.display()
    ));
    Ok((p, notes))
}

/// What a stage Spark reduces per map task says of its records over joins.
pub(super) const BROADCAST_RECORDS: &str =
    "the records assume the joins run in its map tasks (broadcast)";

/// The stage over `keys` (of input `root` of the SELECT's joins, `inp`) planned on the rows
/// the joins give, or why the counts cannot follow them. A stage Spark reduces per map task (a
/// GROUP BY, a top N) is reduced in the map tasks of the joins' output: a note says its
/// records assume broadcast joins.
pub(super) fn planned_on_joined_rows(
    sel: &Select,
    root: usize,
    inp: &Input,
    keys: &[Expr],
    shape: Shape,
    ctx: &Ctx,
) -> std::result::Result<(WindowPlan, Vec<String>), String> {
    let (p, mut notes) = through_joins(sel, root, ctx)
        .and_then(|t| planned_through(sel, inp, keys, shape, t, ctx))?;
    if matches!(shape, Shape::TopN { .. } | Shape::Aggregate { .. }) {
        notes.push(BROADCAST_RECORDS.into());
    }
    Ok((p, notes))
}

/// The rows the SELECT's joins give, as weights on the rows of input `root` (the one that
/// holds the partition key), the WHERE applied to every input where it can be.
fn through_joins(sel: &Select, root: usize, ctx: &Ctx) -> std::result::Result<Through, String> {
    let twj = &sel.from[0];
    let chain = chain_as_written(twj, ctx)?;
    let mut parts = Vec::new();
    if let Some(w) = &sel.selection {
        conjuncts(w, &mut parts);
    }
    let used = Used::of(sel, &[]);
    let hints = super::hints::Hints::of(sel);
    let scope = JoinScope { conjuncts: &parts, later_outer: false, used: &used, hints: &hints };
    let before = chain.before();
    let mut text = twj.clone();
    crate::sql::fix_literals(&mut text);
    let text = text.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
    rows_of_chain((&before.members, before.links, before.cache), root, &scope, ctx, text)
}

/// The key's table and its columns for the stage's `keys` (expressions of the SELECT over `inp`).
fn key_columns(
    inp: &Input,
    keys: &[Expr],
    ctx: &Ctx,
) -> std::result::Result<(String, Vec<ResolvedColumn>), StageWhy> {
    let keys: Vec<String> = keys
        .iter()
        .map(|e| {
            column_of(e, inp).ok_or_else(|| {
                StageWhy::new(
                    "key_not_a_column",
                    format!("{} is not a column of its input", render_expr(e)),
                )
            })
        })
        .collect::<std::result::Result<_, _>>()?;
    inp.key_base(&keys, ctx.tables).map_err(|e| StageWhy::new("key_not_traced", e.to_string()))
}

/// The stage over `keys` planned on the rows of its joins (`t`): the WHERE conjuncts the
/// counts did not apply are listed.
pub(super) fn planned_through(
    sel: &Select,
    inp: &Input,
    keys: &[Expr],
    shape: Shape,
    t: Through,
    ctx: &Ctx,
) -> std::result::Result<(WindowPlan, Vec<String>), String> {
    let (tname, cols) = key_columns(inp, keys, ctx).map_err(|w| w.text)?;
    let table = &ctx.tables[&tname];
    let mut notes = Vec::new();
    if let Some(w) = &sel.selection {
        let mut parts = Vec::new();
        conjuncts(w, &mut parts);
        for c in parts.iter().filter(|c| !t.applied.contains(c)) {
            notes.push(format!("{}: not a condition on one input of the joins; the counts include the rows it drops", render_expr(c)));
        }
    }
    let joins = t.weights.joins.clone();
    let through = Some(std::sync::Arc::new(t.weights));
    let input = SideInput {
        filter: t.filter,
        through,
        ..SideInput::new(table, KeySpec { columns: cols }, inp.display())
    };
    let p =
        window::plan(&input, shape, &[], ctx.classifier, ctx.opts).map_err(|e| e.to_string())?;
    notes.insert(0, format!("the counts are of the {} rows its joins give ({joins}), computed from each table's counts", crate::format::fmt_count(p.rows)));
    Ok((p, notes))
}

/// The input of a joined FROM item that holds every key: any input of a chain of inner joins,
/// or the first input of a chain of inner, left, semi and anti joins (its rows reach the
/// window, each at least once). Not where an outer join can bring its rows back as NULLs.
pub(super) fn joined_input(
    twj: &TableWithJoins,
    keys: &[Expr],
    ctx: &Ctx,
) -> std::result::Result<(usize, Input), StageWhy> {
    let kinds: Vec<JoinType> = twj
        .joins
        .iter()
        .map(|j| join_type(&j.join_operator).map(|k| k.0))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| StageWhy::new("join_not_read", e.to_string()))?;
    let factors = std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation));
    let mut found = Vec::new();
    for (i, f) in factors.enumerate() {
        let Ok(inp) = input_of(f, ctx, 0) else { continue };
        if keys.iter().all(|e| column_of(e, &inp).is_some()) {
            found.push((i, inp));
        }
    }
    let [(i, inp)] = <[(usize, Input); 1]>::try_from(found).map_err(|_| {
        StageWhy::new(
            "key_of_no_single_input",
            "the window's PARTITION BY is not the columns of one traced input of its joins",
        )
    })?;
    let inner = kinds.iter().all(|k| *k == JoinType::Inner);
    let kept = i == 0
        && kinds.iter().all(|k| {
            matches!(k, JoinType::Inner | JoinType::Left | JoinType::Semi | JoinType::Anti)
        });
    if !inner && !kept {
        return Err(StageWhy::new(
            "key_nulled_by_outer_join",
            format!("the window's PARTITION BY is of {}, which an outer join can bring back as NULLs: not planned", inp.display()),
        ));
    }
    // Its member index in the chain: every input of inner joins is a member, in order.
    Ok((i, inp))
}

/// The stage over `keys` (expressions of `sel`) planned on the table `inp` traces to;
/// `distinct`: the argument of each DISTINCT aggregate (`Shape::DistinctAggregate`).
pub(super) fn planned(
    sel: &Select,
    inp: &Input,
    keys: &[Expr],
    shape: Shape,
    distinct: &[Expr],
    ctx: &Ctx,
) -> std::result::Result<(WindowPlan, Vec<String>), StageWhy> {
    let (tname, cols) = key_columns(inp, keys, ctx)?;
    let table = &ctx.tables[&tname];
    let (filter, notes) = where_filter(sel, inp, (&tname, table), ctx);
    let group_by = match &inp.grouped {
        Some(g) => Some(KeySpec {
            columns: g
                .iter()
                .map(|c| table.resolve(c))
                .collect::<Result<Vec<_>>>()
                .map_err(|e| StageWhy::new("not_counted", e.to_string()))?,
        }),
        None => None,
    };
    let distinct = distinct_columns(distinct, inp, &tname, ctx)?;
    let input = SideInput {
        filter,
        group_by,
        ..SideInput::new(table, KeySpec { columns: cols }, inp.display())
    };
    let p = window::plan(&input, shape, &distinct, ctx.classifier, ctx.opts)
        .map_err(|e| StageWhy::new("not_counted", e.to_string()))?;
    Ok((p, notes))
}

/// The DISTINCT aggregates' arguments as columns of the key's table.
fn distinct_columns(
    distinct: &[Expr],
    inp: &Input,
    tname: &str,
    ctx: &Ctx,
) -> std::result::Result<Vec<ResolvedColumn>, StageWhy> {
    let mut out = Vec::new();
    for e in distinct {
        let col = column_of(e, inp).ok_or_else(|| {
            StageWhy::new(
                "key_not_a_column",
                format!("DISTINCT {} is not a column of its input", render_expr(e)),
            )
        })?;
        let (t, mut c) = inp
            .key_base(&[col], ctx.tables)
            .map_err(|e| StageWhy::new("key_not_traced", e.to_string()))?;
        if t != tname {
            return Err(StageWhy::new(
                "distinct_of_another_table",
                "a DISTINCT aggregate's column is not of the key's table",
            ));
        }
        out.push(c.remove(0));
    }
    Ok(out)
}

/// The input's own conditions and the SELECT's WHERE conjuncts on its table (Spark filters
/// before the window), and those the counts cannot apply, with why.
fn where_filter(
    sel: &Select,
    inp: &Input,
    (tname, table): (&str, &Table),
    ctx: &Ctx,
) -> (Option<RowFilter>, Vec<String>) {
    let mut parts = Vec::new();
    if let Some(w) = &sel.selection {
        conjuncts(w, &mut parts);
    }
    let (mut conds, mut notes) = (Vec::new(), Vec::new());
    let own = inp.conditions.iter().map(|c| (render_expr(c), Some(c.clone())));
    let outer = parts.iter().map(|c| (render_expr(c), to_base(c, inp, tname)));
    for (text, base) in own.chain(outer) {
        match base.map(|b| ctx.opts.engine.can_filter(&b, table).map(|()| b)) {
            Some(Ok(b)) => conds.push(b),
            Some(Err(why)) => {
                notes.push(format!("{text}: {why}; the counts include the rows it drops"))
            }
            None => notes.push(format!(
                "{text}: not a condition on {}'s table alone; the counts include the rows it drops",
                inp.display()
            )),
        }
    }
    ((!conds.is_empty()).then_some(RowFilter { conditions: conds }), notes)
}

/// Whether the rewrite can keep the query's meaning around the SELECT.
fn rewritable(
    q: &Query,
    sel: &Select,
    fns: &[WinFn],
    ctx: &Ctx,
) -> std::result::Result<(), StageWhy> {
    if sel.distinct.is_some()
        || sel.top.is_some()
        || sel.into.is_some()
        || sel.qualify.is_some()
        || !sel.named_window.is_empty()
    {
        return Err(StageWhy::new(
            "select_clause_kept",
            "the SELECT has DISTINCT, TOP, INTO, QUALIFY or a WINDOW clause: not rewritten",
        ));
    }
    if !sel.lateral_views.is_empty()
        || sel.from.len() != 1
        || !sel.cluster_by.is_empty()
        || !sel.distribute_by.is_empty()
        || !sel.sort_by.is_empty()
    {
        return Err(StageWhy::new(
            "select_clause_kept",
            "the SELECT has LATERAL VIEW, several FROM items, CLUSTER BY, DISTRIBUTE BY or SORT BY: not rewritten",
        ));
    }
    if fns.iter().any(|w| {
        matches!(&w.func.args, FunctionArguments::List(l) if l.duplicate_treatment.is_some())
            || w.func.filter.is_some()
    }) {
        return Err(StageWhy::new("distinct_or_filter_in_window", "a DISTINCT aggregate or a FILTER clause in the window (Spark runs neither): not rewritten"));
    }
    if let Some(f) = nondeterministic(sel, ctx) {
        return Err(StageWhy::new(
            "nondeterministic_input",
            format!("{f}() in the SELECT's FROM or WHERE: each branch would draw other rows than its aggregate: not rewritten"),
        ));
    }
    if columns_of_from(sel, ctx).iter().any(|c| lc(c).starts_with(AGG_COLUMN)) {
        return Err(StageWhy::new("column_name_clash", format!("a column named {AGG_COLUMN}N in the input would clash with the rewrite's: not rewritten")));
    }
    if sel.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(_)))
        && sel.from[0].joins.iter().any(|j| merges(&j.join_operator))
    {
        return Err(StageWhy::new("star_over_using_join", "SELECT * over a USING or NATURAL join: its columns cannot be listed in the rewrite's branches"));
    }
    let star = sel
        .projection
        .iter()
        .any(|i| matches!(i, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)));
    let outputs: Vec<String> = sel.projection.iter().filter_map(output_name).collect();
    if let Some(ob) = &q.order_by {
        let OrderByKind::Expressions(items) = &ob.kind else {
            return Err(StageWhy::new("order_by_not_an_output", "ORDER BY ALL: not rewritten"));
        };
        for o in items {
            let ok = match &o.expr {
                Expr::Value(_) => true,
                Expr::Identifier(i) => star || outputs.contains(&lc(&i.value)),
                _ => false,
            };
            if !ok {
                return Err(StageWhy::new(
                    "order_by_not_an_output",
                    format!("ORDER BY {} is not an output column of the SELECT, which the UNION ALL of the rewrite needs", render_expr(&o.expr)),
                ));
            }
        }
    }
    Ok(())
}

/// Spark's non-deterministic functions: evaluated again in each branch, they pick other rows.
const NONDETERMINISTIC: [&str; 12] = [
    "rand",
    "randn",
    "random",
    "randstr",
    "uniform",
    "uuid",
    "shuffle",
    "monotonically_increasing_id",
    "spark_partition_id",
    "input_file_name",
    "input_file_block_start",
    "input_file_block_length",
];

/// The first non-deterministic function of the SELECT's FROM (the CTEs it reads included) or
/// WHERE.
fn nondeterministic(sel: &Select, ctx: &Ctx) -> Option<String> {
    struct Find(Option<String>);
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let (None, Expr::Function(f)) = (&self.0, e) {
                let name = fn_name(f);
                if NONDETERMINISTIC.contains(&name.as_str()) {
                    self.0 = Some(name);
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, t: &sqlparser::ast::TableFactor) -> ControlFlow<()> {
            if matches!(t, sqlparser::ast::TableFactor::Table { sample: Some(_), .. }) {
                self.0.get_or_insert_with(|| "TABLESAMPLE".into());
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find(None);
    let _ = sel.from.visit(&mut find);
    let _ = sel.selection.visit(&mut find);
    for twj in &sel.from {
        for f in std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation)) {
            if let sqlparser::ast::TableFactor::Table { name, .. } = f {
                if let Some(cte) = name
                    .0
                    .last()
                    .and_then(|p| p.as_ident())
                    .and_then(|i| ctx.ctes.get(&lc(&i.value)))
                {
                    let _ = cte.visit(&mut find);
                }
            }
        }
    }
    find.0
}

/// The columns of the SELECT's traced inputs.
fn columns_of_from(sel: &Select, ctx: &Ctx) -> Vec<String> {
    let factors = sel
        .from
        .iter()
        .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)));
    factors.filter_map(|f| input_of(f, ctx, 0).ok()).flat_map(|i| i.columns).collect()
}

/// The name a select item gives its column, lower case, when it is a plain one.
fn output_name(i: &SelectItem) -> Option<String> {
    match i {
        SelectItem::ExprWithAlias { alias, .. } => Some(lc(&alias.value)),
        SelectItem::UnnamedExpr(Expr::Identifier(i)) => Some(lc(&i.value)),
        SelectItem::UnnamedExpr(Expr::CompoundIdentifier(p)) => p.last().map(|i| lc(&i.value)),
        _ => None,
    }
}

/// The UNION ALL of the rest and one branch per hot value.
fn rewritten_body(sel: &Select, fns: &[WinFn], p: &WindowPlan, alias: &str) -> Result<SetExpr> {
    let conds: Vec<String> =
        p.hot.iter().map(|h| value_condition(&fns[0].partition, &h.key, &p.key_types)).collect();
    let mut branches = vec![rest_branch(sel, &conds)];
    for (i, c) in conds.iter().enumerate() {
        branches.push(hot_branch(sel, fns, c, &format!("{alias}_{}", i + 1))?);
    }
    let q = parse_query(&branches.join("\nUNION ALL\n"))?;
    Ok(*q.body)
}

/// `k IS NULL` or `(k IS NOT NULL AND k = v)` per key column, joined by AND: never NULL.
fn value_condition(keys: &[Expr], values: &[Value], types: &[KeyType]) -> String {
    let parts: Vec<String> = keys
        .iter()
        .zip(values.iter().zip(types))
        .map(|(k, (v, t))| {
            let k = render_expr(k);
            if v.is_null() {
                format!("{k} IS NULL")
            } else if v.is_nan() {
                // Not `k = NaN`: Spark pushes it to Parquet, whose statistics (as pyarrow
                // writes them) leave NaN out, and the row groups holding it are skipped.
                format!("({k} IS NOT NULL AND isnan({k}))")
            } else {
                format!("({k} IS NOT NULL AND {k} = {})", literal(v, *t))
            }
        })
        .collect();
    format!("({})", parts.join(" AND "))
}

/// The SELECT's WHERE with `extra` added.
fn where_with(sel: &Select, extra: &str) -> String {
    match &sel.selection {
        Some(w) => format!("WHERE ({}) AND {extra}", render_expr(w)),
        None => format!("WHERE {extra}"),
    }
}

/// The SELECT as written over the values no branch takes.
fn rest_branch(sel: &Select, conds: &[String]) -> String {
    let mut rest = sel.clone();
    rest.selection = None;
    let text = crate::sql::render_select(&rest);
    format!("{text} {}", where_with(sel, &format!("NOT ({})", conds.join(" OR "))))
}

/// One hot value's rows with the window functions' values from its aggregate `agg`.
fn hot_branch(sel: &Select, fns: &[WinFn], cond: &str, agg: &str) -> Result<String> {
    let mut twj = sel.from[0].clone();
    crate::sql::fix_literals(&mut twj);
    let from = twj.to_string();
    let mut aggs: Vec<String> = Vec::new();
    for (i, w) in fns.iter().enumerate() {
        let mut f = w.func.clone();
        f.over = None;
        aggs.push(format!("{f} AS {AGG_COLUMN}{}", i + 1));
    }
    let mut out = sel.clone();
    out.selection = None;
    out.optimizer_hints.clear();
    let mut projection = Vec::new();
    for item in std::mem::take(&mut out.projection) {
        match item {
            SelectItem::Wildcard(_) => projection.extend(stars_of(&sel.from[0])?),
            other => projection.push(other),
        }
    }
    out.projection = projection;
    let mut n = 0;
    let _ = VisitMut::visit(&mut out.projection, &mut Replace { agg, n: &mut n, depth: 0 });
    let text = crate::sql::render_select(&out);
    let select = text.strip_prefix("SELECT ").unwrap_or(&text);
    Ok(format!(
        "SELECT /*+ BROADCAST({a}) */ {select_rest} CROSS JOIN (SELECT {aggs} FROM {from} {w}) {a} {w}",
        a = ident(agg),
        select_rest = select,
        aggs = aggs.join(", "),
        w = where_with(sel, cond)
    ))
}

/// `*` over a FROM item as `alias.*` of each input it outputs (not the right input of a semi
/// or anti join).
fn stars_of(twj: &TableWithJoins) -> Result<Vec<SelectItem>> {
    let right_outputs = |j: &sqlparser::ast::Join| {
        !matches!(join_type(&j.join_operator), Ok((JoinType::Semi | JoinType::Anti, _)))
    };
    let factors = std::iter::once(&twj.relation)
        .chain(twj.joins.iter().filter(|j| right_outputs(j)).map(|j| &j.relation));
    factors
        .map(|f| {
            super::names::parse_item(&format!("{}.*", ident(&factor_alias(f).unwrap_or_default())))
        })
        .collect()
}

/// Each window function, in order, replaced by its aggregate's column.
/// (Not those of subqueries, which are their own SELECTs.)
struct Replace<'a> {
    agg: &'a str,
    n: &'a mut usize,
    depth: usize,
}

impl VisitorMut for Replace<'_> {
    type Break = ();
    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }
    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }
    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if self.depth == 0 && matches!(e, Expr::Function(f) if f.over.is_some()) {
            *self.n += 1;
            *e = Expr::CompoundIdentifier(vec![
                sqlparser::ast::Ident::new(self.agg),
                sqlparser::ast::Ident::new(format!("{AGG_COLUMN}{}", self.n)),
            ]);
        }
        ControlFlow::Continue(())
    }
}

/// The prefix of the columns of a hot value's aggregates (`__skewjoin_w1`, ...).
const AGG_COLUMN: &str = "__skewjoin_w";
