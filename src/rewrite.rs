//! `skewjoin rewrite`: a Spark SQL query in, the same query with its skewed joins split into
//! branches (see `plan`) out.
//!
//! Each equi-join whose two inputs trace back to tables given with `--table` (directly, by
//! alias, through a CTE or a subquery in FROM that selects columns of one table) is planned with
//! the planner. A join with hot keys becomes one derived table `__sjN` that produces every
//! column of both inputs (a name both sides share is exposed as `alias__name`); the rest of the
//! SELECT is re-pointed at it, and `*` / `alias.*` are expanded to the same columns under their
//! original names, so WHERE, GROUP BY, HAVING, ORDER BY, windows and the output keep their
//! meaning. What cannot be rewritten safely is left as it was, with the reason.

use std::collections::HashMap;
use std::ops::ControlFlow;

use serde::Serialize;
use sqlparser::ast::{
    visit_expressions_mut, BinaryOperator, Expr, Ident, JoinConstraint, JoinOperator, ObjectName, ObjectNamePart, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableFactor, TableWithJoins,
};

use crate::classify::Classifier;
use crate::error::{Error, Result};
use crate::plan::{self, emit_sql, JoinSql, JoinType, Plan, PlanOptions, SideInput, Strategy};
use crate::profile::KeySpec;
use crate::source::Table;
use crate::sql::{ident, parse_query, render};

#[derive(Debug, Serialize)]
pub struct Change {
    /// The join as written, e.g. `e LEFT JOIN t ON e.k = t.k`.
    pub join: String,
    pub how: JoinType,
    pub keys: Vec<String>,
    pub alias: String,
    pub hot_keys: Vec<plan::HotKey>,
    pub broadcast_side: Option<plan::Side>,
    pub before: plan::TaskStats,
    pub after: plan::TaskStats,
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    pub results_change: bool,
}

#[derive(Debug, Serialize)]
pub struct Unchanged {
    pub join: String,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct Rewritten {
    pub sql: String,
    pub changes: Vec<Change>,
    pub unchanged_joins: Vec<Unchanged>,
}

/// One input of a join, traced to a base table where possible.
#[derive(Clone)]
struct Input {
    /// The name the input goes by (its alias, or the table name).
    alias: String,
    /// SQL that can follow FROM, without the alias.
    source: String,
    /// Output columns, in order.
    columns: Vec<String>,
    /// The base table (its `--table` name) and each output column's base column.
    base: (String, HashMap<String, String>),
    /// A WHERE in between: the counts are of the whole base table.
    filtered: bool,
}

impl Input {
    fn column(&self, name: &str) -> Option<String> {
        self.columns.iter().find(|c| c.eq_ignore_ascii_case(name)).cloned()
    }
}

struct Ctx<'a> {
    tables: &'a HashMap<String, Table>,
    ctes: HashMap<String, Query>,
    classifier: &'a Classifier,
    opts: &'a PlanOptions,
    changes: Vec<Change>,
    unchanged: Vec<Unchanged>,
    next_id: usize,
}

fn lc(s: &str) -> String {
    s.to_ascii_lowercase()
}

fn last_ident(name: &ObjectName) -> Option<&Ident> {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(i)) => Some(i),
        _ => None,
    }
}

/// Rewrite `sql` (one query). `tables` maps the names used in the query (lower case) to tables.
/// Several statements (`;`-separated) are rewritten one by one; INSERT ... SELECT and
/// CREATE TABLE ... AS SELECT have their query rewritten.
pub fn rewrite(sql: &str, tables: &HashMap<String, Table>, classifier: &Classifier, opts: &PlanOptions) -> Result<Rewritten> {
    let mut stmts = crate::sql::parse(sql)?;
    if stmts.is_empty() {
        return Err(Error::Usage("no SQL statement found".into()));
    }
    let mut ctx = Ctx { tables, ctes: HashMap::new(), classifier, opts, changes: Vec::new(), unchanged: Vec::new(), next_id: 1 };
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
            other => ctx.unchanged.push(Unchanged {
                join: other.to_string().chars().take(60).collect(),
                reason: "not a query, an INSERT ... SELECT or a CREATE TABLE ... AS SELECT".into(),
            }),
        }
    }
    let out = stmts.iter().map(render).collect::<Vec<_>>().join(";\n\n");
    Ok(Rewritten { sql: out, changes: ctx.changes, unchanged_joins: ctx.unchanged })
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
    let remaps = process_set(&mut q.body, ctx)?;
    // ORDER BY of a query whose body is one SELECT sees that SELECT's FROM.
    if let (Some(ob), false) = (&mut q.order_by, remaps.is_empty()) {
        let _ = visit_expressions_mut(ob, |e: &mut Expr| {
            repoint(e, &remaps);
            ControlFlow::<()>::Continue(())
        });
    }
    ctx.ctes = saved;
    Ok(())
}

fn process_set(body: &mut SetExpr, ctx: &mut Ctx) -> Result<Vec<Remap>> {
    match body {
        SetExpr::Select(s) => process_select(s, ctx),
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

/// A qualifier re-pointed at a rewritten join: `alias.col` -> `new_alias.exposed`.
#[derive(Clone)]
struct Remap {
    alias: String,
    new_alias: String,
    /// Column (lower case) -> exposed name.
    columns: HashMap<String, String>,
    /// The columns of `alias.*`, with their original names.
    star: Vec<(String, String)>,
}

fn repoint(e: &mut Expr, remaps: &[Remap]) {
    if let Expr::CompoundIdentifier(parts) = e {
        if parts.len() == 2 {
            if let Some(r) = remaps.iter().find(|r| r.alias.eq_ignore_ascii_case(&parts[0].value)) {
                if let Some(x) = r.columns.get(&lc(&parts[1].value)) {
                    parts[0] = Ident::with_quote('`', r.new_alias.clone());
                    parts[1] = Ident::with_quote('`', x.clone());
                }
            }
        }
    }
}

fn factor_alias(f: &TableFactor) -> Option<String> {
    match f {
        TableFactor::Table { name, alias, .. } => alias.as_ref().map(|a| a.name.value.clone()).or_else(|| last_ident(name).map(|i| i.value.clone())),
        TableFactor::Derived { alias, .. } => alias.as_ref().map(|a| a.name.value.clone()),
        _ => None,
    }
}

fn process_select(sel: &mut Select, ctx: &mut Ctx) -> Result<Vec<Remap>> {
    // Subqueries in FROM first: their joins are rewritten in their own scope.
    for twj in &mut sel.from {
        if let TableFactor::Derived { subquery, .. } = &mut twj.relation {
            process_query(subquery, ctx)?;
        }
        for j in &mut twj.joins {
            if let TableFactor::Derived { subquery, .. } = &mut j.relation {
                process_query(subquery, ctx)?;
            }
        }
    }
    let mut remaps: Vec<Remap> = Vec::new();
    // (from index, the derived alias, the join's `*` columns)
    let mut stars: Vec<(usize, String, Vec<(String, String)>)> = Vec::new();
    let mut relations: Vec<(usize, TableFactor)> = Vec::new();
    for fi in 0..sel.from.len() {
        if sel.from[fi].joins.is_empty() {
            continue;
        }
        let text = join_text(&sel.from[fi]);
        match try_join(sel, fi, ctx)? {
            Attempt::Unchanged(reason) => ctx.unchanged.push(Unchanged { join: text, reason }),
            Attempt::Rewritten { remaps: rs, new_alias, star, relation } => {
                stars.push((fi, new_alias, star));
                relations.push((fi, relation));
                remaps.extend(rs);
            }
        }
        for j in sel.from[fi].joins.iter().skip(1) {
            ctx.unchanged.push(Unchanged {
                join: format!("... {}", j.relation),
                reason: "its left input is itself a join (the first join of a chain is the one planned)".into(),
            });
        }
    }
    if remaps.is_empty() {
        return Ok(remaps);
    }
    // A bare `alias.col` in the select list keeps its output name (as written) once re-pointed.
    for item in sel.projection.iter_mut() {
        if let SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) = item {
            if parts.len() == 2 && remaps.iter().any(|r| r.alias.eq_ignore_ascii_case(&parts[0].value) && r.columns.contains_key(&lc(&parts[1].value))) {
                let alias = parts[1].clone();
                *item = SelectItem::ExprWithAlias { expr: Expr::CompoundIdentifier(parts.clone()), alias };
            }
        }
    }
    // Re-point every expression of this SELECT (the later joins' ON clauses included), then
    // put the derived tables in place of the joins they replace.
    let _ = visit_expressions_mut(sel, |e: &mut Expr| {
        repoint(e, &remaps);
        ControlFlow::<()>::Continue(())
    });
    for (fi, relation) in relations {
        sel.from[fi].relation = relation;
        sel.from[fi].joins.remove(0);
    }
    // `*` and `alias.*`: the same columns, under their original names.
    let mut projection = Vec::new();
    for item in std::mem::take(&mut sel.projection) {
        match &item {
            SelectItem::Wildcard(_) => {
                for (fi, twj) in sel.from.iter().enumerate() {
                    if let Some((_, new_alias, star)) = stars.iter().find(|s| s.0 == fi) {
                        projection.extend(star_items(new_alias, star)?);
                    } else if let Some(a) = factor_alias(&twj.relation) {
                        projection.push(parse_item(&format!("{}.*", ident(&a)))?);
                    }
                    for j in &twj.joins {
                        if let Some(a) = factor_alias(&j.relation) {
                            projection.push(parse_item(&format!("{}.*", ident(&a)))?);
                        }
                    }
                }
            }
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) if name.0.len() == 1 => {
                let q = last_ident(name).map(|i| i.value.clone()).unwrap_or_default();
                match remaps.iter().find(|r| r.alias.eq_ignore_ascii_case(&q)) {
                    Some(r) => projection.extend(star_items(&r.new_alias, &r.star)?),
                    None => projection.push(item),
                }
            }
            _ => projection.push(item),
        }
    }
    sel.projection = projection;
    Ok(remaps)
}

fn star_items(alias: &str, cols: &[(String, String)]) -> Result<Vec<SelectItem>> {
    cols.iter().map(|(exposed, original)| parse_item(&format!("{}.{} AS {}", ident(alias), ident(exposed), ident(original)))).collect()
}

fn parse_item(text: &str) -> Result<SelectItem> {
    let q = parse_query(&format!("SELECT {text}"))?;
    match *q.body {
        SetExpr::Select(mut s) if s.projection.len() == 1 => Ok(s.projection.remove(0)),
        _ => Err(Error::Usage(format!("internal error: cannot build select item {text}"))),
    }
}

fn join_text(twj: &TableWithJoins) -> String {
    let mut twj = twj.clone();
    crate::sql::fix_literals(&mut twj);
    match twj.joins.first() {
        Some(j) => {
            let t = format!("{} {}", twj.relation, j);
            t.split_whitespace().collect::<Vec<_>>().join(" ")
        }
        None => twj.relation.to_string(),
    }
}

enum Attempt {
    Unchanged(String),
    Rewritten { remaps: Vec<Remap>, new_alias: String, star: Vec<(String, String)>, relation: TableFactor },
}

fn join_type(op: &JoinOperator) -> std::result::Result<(JoinType, &JoinConstraint), String> {
    Ok(match op {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => (JoinType::Inner, c),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinType::Left, c),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinType::Right, c),
        JoinOperator::FullOuter(c) => (JoinType::Full, c),
        JoinOperator::Semi(c) | JoinOperator::LeftSemi(c) => (JoinType::Semi, c),
        JoinOperator::Anti(c) | JoinOperator::LeftAnti(c) => (JoinType::Anti, c),
        JoinOperator::CrossJoin(_) => return Err("a CROSS JOIN has no key to skew on: left alone".into()),
        other => return Err(format!("join operator {other:?} is not supported").chars().take(120).collect()),
    })
}

/// Trace a FROM item to its base table.
fn input_of(f: &TableFactor, ctx: &Ctx, depth: usize) -> std::result::Result<Input, String> {
    if depth > 8 {
        return Err("too many nested subqueries to trace".into());
    }
    match f {
        TableFactor::Table { name, alias, args: None, .. } => {
            let last = last_ident(name).ok_or("a table name the tool cannot read")?;
            let alias = alias.as_ref().map(|a| a.name.value.clone()).unwrap_or_else(|| last.value.clone());
            if name.0.len() == 1 {
                if let Some(cte) = ctx.ctes.get(&lc(&last.value)) {
                    let mut inner = query_input(cte, ctx, depth + 1).map_err(|e| format!("CTE {}: {e}", last.value))?;
                    inner.alias = alias;
                    inner.source = name.to_string();
                    return Ok(inner);
                }
            }
            let key = lc(&name.to_string().replace('`', ""));
            let short = lc(&last.value);
            let (tname, table) = ctx
                .tables
                .get_key_value(&key)
                .or_else(|| ctx.tables.get_key_value(&short))
                .ok_or_else(|| format!("table {name} was not given with --table"))?;
            let columns = table.column_names();
            let map = columns.iter().map(|c| (lc(c), c.clone())).collect();
            Ok(Input { alias, source: name.to_string(), columns, base: (tname.clone(), map), filtered: false })
        }
        TableFactor::Derived { lateral: false, subquery, alias: Some(alias), .. } => {
            if !alias.columns.is_empty() {
                return Err("a subquery with column aliases".into());
            }
            let mut inner = query_input(subquery, ctx, depth + 1)?;
            inner.alias = alias.name.value.clone();
            inner.source = format!("({})", crate::sql::render_inline(subquery));
            Ok(inner)
        }
        TableFactor::Derived { alias: None, .. } => Err("a subquery without an alias".into()),
        other => Err(format!("the input {} is not a table or a subquery of one", other.to_string().chars().take(60).collect::<String>())),
    }
}

/// The columns of a simple query over one table: `SELECT cols FROM t [WHERE ...]`.
fn query_input(q: &Query, ctx: &Ctx, depth: usize) -> std::result::Result<Input, String> {
    let SetExpr::Select(s) = q.body.as_ref() else { return Err("a subquery that is not a plain SELECT".into()) };
    if q.with.is_some() || q.limit_clause.is_some() || s.distinct.is_some() || s.from.len() != 1 || !s.from[0].joins.is_empty() || s.having.is_some() || !s.lateral_views.is_empty() {
        return Err("a subquery that joins, aggregates, limits or de-duplicates: its key values are not a base table's".into());
    }
    if !matches!(&s.group_by, sqlparser::ast::GroupByExpr::Expressions(e, _) if e.is_empty()) {
        return Err("a subquery that aggregates: its key values are not a base table's".into());
    }
    let inner = input_of(&s.from[0].relation, ctx, depth)?;
    let mut columns = Vec::new();
    let mut map = HashMap::new();
    let base = &inner.base;
    for item in &s.projection {
        match item {
            SelectItem::Wildcard(_) => {
                for c in &inner.columns {
                    columns.push(c.clone());
                    if let Some(b) = base.1.get(&lc(c)) {
                        map.insert(lc(c), b.clone());
                    }
                }
            }
            SelectItem::QualifiedWildcard(..) => {
                for c in &inner.columns {
                    columns.push(c.clone());
                    if let Some(b) = base.1.get(&lc(c)) {
                        map.insert(lc(c), b.clone());
                    }
                }
            }
            SelectItem::UnnamedExpr(e) => {
                let name = match e {
                    Expr::Identifier(i) => i.value.clone(),
                    Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.clone()).unwrap_or_default(),
                    _ => return Err("a subquery with an unnamed expression in its select list".into()),
                };
                if let Some(b) = base.1.get(&lc(&name)) {
                    map.insert(lc(&name), b.clone());
                }
                columns.push(name);
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let src = match expr {
                    Expr::Identifier(i) => Some(i.value.clone()),
                    Expr::CompoundIdentifier(p) if p.len() == 2 => p.last().map(|i| i.value.clone()),
                    _ => None,
                };
                // A renamed column still traces; an expression does not (it cannot be a key).
                if let Some(b) = src.and_then(|n| base.1.get(&lc(&n)).cloned()) {
                    map.insert(lc(&alias.value), b);
                }
                columns.push(alias.value.clone());
            }
            _ => return Err("a subquery with a select item the tool cannot read".into()),
        }
    }
    Ok(Input { alias: String::new(), source: String::new(), columns, base: (base.0.clone(), map), filtered: inner.filtered || s.selection.is_some() })
}

/// Split `a AND b AND c`.
fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(inner) if matches!(inner.as_ref(), Expr::BinaryOp { op: BinaryOperator::And, .. }) => conjuncts(inner, out),
        other => out.push(other.clone()),
    }
}

/// Which input a column reference belongs to, and its name there.
fn side_of(e: &Expr, l: &Input, r: &Input) -> Option<(plan::Side, String)> {
    match e {
        Expr::CompoundIdentifier(p) if p.len() == 2 => {
            if p[0].value.eq_ignore_ascii_case(&l.alias) {
                l.column(&p[1].value).map(|c| (plan::Side::Left, c))
            } else if p[0].value.eq_ignore_ascii_case(&r.alias) {
                r.column(&p[1].value).map(|c| (plan::Side::Right, c))
            } else {
                None
            }
        }
        Expr::Identifier(i) => match (l.column(&i.value), r.column(&i.value)) {
            (Some(c), None) => Some((plan::Side::Left, c)),
            (None, Some(c)) => Some((plan::Side::Right, c)),
            _ => None,
        },
        Expr::Nested(inner) => side_of(inner, l, r),
        _ => None,
    }
}

/// `alias.col`, renamed only when the exposed name differs: Spark 4.3's optimizer
/// (RemoveRedundantAliases) fails on a UNION of `x AS x` items under a window function.
fn select_item(alias: &str, col: &str, exposed: &str) -> String {
    if col == exposed {
        format!("{}.{}", ident(alias), ident(col))
    } else {
        format!("{}.{} AS {}", ident(alias), ident(col), ident(exposed))
    }
}

fn try_join(sel: &Select, fi: usize, ctx: &mut Ctx) -> Result<Attempt> {
    let twj = &sel.from[fi];
    let join = &twj.joins[0];
    let (how, constraint) = match join_type(&join.join_operator) {
        Ok(x) => x,
        Err(r) => return Ok(Attempt::Unchanged(r)),
    };
    let l = match input_of(&twj.relation, ctx, 0) {
        Ok(i) => i,
        Err(r) => return Ok(Attempt::Unchanged(format!("left input: {r}"))),
    };
    let r = match input_of(&join.relation, ctx, 0) {
        Ok(i) => i,
        Err(r) => return Ok(Attempt::Unchanged(format!("right input: {r}"))),
    };
    if l.alias.eq_ignore_ascii_case(&r.alias) {
        return Ok(Attempt::Unchanged("both inputs go by the same name".into()));
    }
    // Keys and the other predicates.
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut extras: Vec<Expr> = Vec::new();
    let using = match constraint {
        JoinConstraint::On(e) => {
            let mut cs = Vec::new();
            conjuncts(e, &mut cs);
            for c in cs {
                if let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = &c {
                    match (side_of(left, &l, &r), side_of(right, &l, &r)) {
                        (Some((plan::Side::Left, a)), Some((plan::Side::Right, b))) | (Some((plan::Side::Right, b)), Some((plan::Side::Left, a))) => {
                            keys.push((a, b));
                            continue;
                        }
                        _ => {}
                    }
                }
                extras.push(c);
            }
            false
        }
        JoinConstraint::Using(cols) => {
            for c in cols {
                let name = last_ident(c).map(|i| i.value.clone()).unwrap_or_default();
                match (l.column(&name), r.column(&name)) {
                    (Some(a), Some(b)) => keys.push((a, b)),
                    _ => return Ok(Attempt::Unchanged(format!("USING column {name} is not on both sides"))),
                }
            }
            true
        }
        JoinConstraint::Natural => return Ok(Attempt::Unchanged("NATURAL JOIN: the keys are implicit; write them out with USING or ON".into())),
        JoinConstraint::None => return Ok(Attempt::Unchanged("no join condition".into())),
    };
    if keys.is_empty() {
        return Ok(Attempt::Unchanged("no equality between a column of each side in ON (a non-equi join)".into()));
    }
    // Key columns of the base tables.
    let (lb, rb) = (&l.base, &r.base);
    let lt = &ctx.tables[&lb.0];
    let rt = &ctx.tables[&rb.0];
    let mut lcols = Vec::new();
    let mut rcols = Vec::new();
    for (a, b) in &keys {
        let (Some(ba), Some(bb)) = (lb.1.get(&lc(a)), rb.1.get(&lc(b))) else {
            return Ok(Attempt::Unchanged(format!("key {a} = {b} is an expression of a subquery the tool cannot trace to a table column")));
        };
        match (lt.resolve(ba), rt.resolve(bb)) {
            (Ok(x), Ok(y)) => {
                lcols.push(x);
                rcols.push(y);
            }
            (Err(e), _) | (_, Err(e)) => return Ok(Attempt::Unchanged(e.to_string())),
        }
    }
    let mut opts = ctx.opts.clone();
    opts.how = how;
    opts.extra_predicates = !extras.is_empty();
    let left = SideInput { table: lt, keys: KeySpec { columns: lcols }, name: l.alias.clone() };
    let right = SideInput { table: rt, keys: KeySpec { columns: rcols }, name: r.alias.clone() };
    let p: Plan = match plan::plan(&left, &right, ctx.classifier, &opts) {
        Ok(p) => p,
        Err(Error::Usage(m)) if m.contains("types differ") => return Ok(Attempt::Unchanged(m)),
        Err(e) => return Err(e),
    };
    let text = join_text(&sel.from[fi]);
    let acts = p.broadcast_side.is_some() || p.hot_keys.iter().any(|h| !matches!(h.strategy, Strategy::Keep { .. }));
    if !acts {
        let reason = match (&p.next, p.hot_keys.is_empty()) {
            (Some(n), _) => format!("{n}"),
            (None, false) => format!("hot keys, but none can be moved safely: {}", p.hot_keys.iter().map(|h| format!("{}: {}", h.display, h.why)).collect::<Vec<_>>().join("; ")),
            (None, true) => "no hot key".into(),
        };
        return Ok(Attempt::Unchanged(reason));
    }

    // The columns the derived table exposes.
    let dup = |c: &str, other: &Input| other.column(c).is_some();
    let mut select = Vec::new();
    let mut columns_l = HashMap::new();
    let mut columns_r = HashMap::new();
    let mut star_l = Vec::new();
    let mut star_r = Vec::new();
    let mut merged = Vec::new();
    let using_keys: Vec<String> = if using { keys.iter().map(|k| lc(&k.0)).collect() } else { vec![] };
    if using {
        for (a, b) in &keys {
            select.push(match how {
                JoinType::Right => select_item(&r.alias, b, a),
                JoinType::Full => format!("coalesce({}.{}, {}.{}) AS {}", ident(&l.alias), ident(a), ident(&r.alias), ident(b), ident(a)),
                _ => select_item(&l.alias, a, a),
            });
            merged.push((a.clone(), a.clone()));
        }
    }
    for c in &l.columns {
        let exposed = if dup(c, &r) || using_keys.contains(&lc(c)) { format!("{}__{}", l.alias, c) } else { c.clone() };
        select.push(select_item(&l.alias, c, &exposed));
        columns_l.insert(lc(c), exposed.clone());
        if !using_keys.contains(&lc(c)) {
            star_l.push((exposed, c.clone()));
        }
    }
    if how.outputs_right() {
        for c in &r.columns {
            let exposed = if dup(c, &l) || using_keys.contains(&lc(c)) { format!("{}__{}", r.alias, c) } else { c.clone() };
            select.push(select_item(&r.alias, c, &exposed));
            columns_r.insert(lc(c), exposed.clone());
            if !using_keys.contains(&lc(c)) {
                star_r.push((exposed, c.clone()));
            }
        }
    }
    let new_alias = format!("__sj{}", ctx.next_id);
    ctx.next_id += 1;
    let hashable = |t: &Table, inp: &Input| -> Vec<String> {
        let ok: Vec<String> = plan::hashable_columns(t).iter().map(|c| lc(c)).collect();
        let map = &inp.base.1;
        inp.columns.iter().filter(|c| map.get(&lc(c)).is_some_and(|b| ok.contains(&lc(b)))).cloned().collect()
    };
    let js = JoinSql {
        how,
        left_source: l.source.clone(),
        right_source: r.source.clone(),
        left_alias: ident(&l.alias),
        right_alias: ident(&r.alias),
        select_list: select.join(", "),
        extra_on: if extras.is_empty() { None } else { Some(extras.iter().map(crate::sql::render_expr).collect::<Vec<_>>().join(" AND ")) },
        left_keys: keys.iter().map(|k| k.0.clone()).collect(),
        right_keys: keys.iter().map(|k| k.1.clone()).collect(),
        key_types: left.keys.types(),
        left_columns: l.columns.clone(),
        right_columns: r.columns.clone(),
        left_hashable: hashable(lt, &l),
        right_hashable: hashable(rt, &r),
    };
    let union = emit_sql(&js, &p)?;
    let derived = parse_query(&format!("SELECT * FROM ({union}) AS {}", ident(&new_alias)))?;
    let SetExpr::Select(mut s) = *derived.body else { return Err(Error::Usage("internal error: derived table".into())) };
    let relation = s.from.remove(0).relation;

    let mut notes = p.notes.clone();
    if sel.selection.is_some() {
        notes.push("the counts are of whole tables; Spark pushes the query's WHERE below the join, so the real tasks may be smaller".into());
    }
    for inp in [&l, &r] {
        if inp.filtered {
            notes.push(format!("{}: the counts are of the whole table {}; the subquery's filter was not applied to them", inp.alias, inp.base.0));
        }
    }
    ctx.changes.push(Change {
        join: text,
        how,
        keys: keys.iter().map(|(a, b)| format!("{}.{a} = {}.{b}", l.alias, r.alias)).collect(),
        alias: new_alias.clone(),
        hot_keys: p.hot_keys.clone(),
        broadcast_side: p.broadcast_side,
        before: p.before.clone(),
        after: p.after.clone(),
        notes,
        warnings: p.warnings.clone(),
        results_change: p.results_change,
    });
    // `*` of the join: USING keys merged first, then the left columns, then the right ones.
    let mut star = merged;
    star.extend(star_l);
    star.extend(star_r);
    // `alias.*`: every column of that input, USING keys included.
    let all = |inp: &Input, cols: &HashMap<String, String>| -> Vec<(String, String)> { inp.columns.iter().filter_map(|c| cols.get(&lc(c)).map(|e| (e.clone(), c.clone()))).collect() };
    let star_of_l = all(&l, &columns_l);
    let star_of_r = all(&r, &columns_r);
    let mut remaps = vec![Remap { alias: l.alias.clone(), new_alias: new_alias.clone(), columns: columns_l, star: star_of_l }];
    if how.outputs_right() {
        remaps.push(Remap { alias: r.alias.clone(), new_alias: new_alias.clone(), columns: columns_r, star: star_of_r });
    }
    Ok(Attempt::Rewritten { remaps, new_alias, star, relation })
}

/// The rewritten SQL, after `--` lines that explain each change with its numbers.
pub fn sql_with_comments(r: &Rewritten) -> String {
    use crate::keys::{fmt_count, fmt_share};
    let mut o = String::new();
    if r.changes.is_empty() {
        o.push_str("-- skewjoin: no join rewritten (nothing hot, or nothing that can be rewritten safely)\n");
    }
    for c in &r.changes {
        o.push_str(&format!("-- skewjoin: {} ({}) is now the derived table {}\n", one_line(&c.join), c.how.as_str(), c.alias));
        for h in &c.hot_keys {
            let what = match &h.strategy {
                Strategy::NullBypass => "skips the join (NULL never matches)".to_string(),
                Strategy::Drop => "is dropped (--drop-junk: the result changes)".to_string(),
                Strategy::BroadcastSlice { slice_rows, .. } => format!("joins a broadcast slice of {} row{}", fmt_count(*slice_rows), if *slice_rows == 1 { "" } else { "s" }),
                Strategy::BroadcastKeys => "is checked against the broadcast distinct keys".to_string(),
                Strategy::Salt { n, .. } => format!("is salted {n} ways"),
                Strategy::Keep { reason } => format!("stays in the shuffle: {reason}"),
            };
            o.push_str(&format!(
                "--   {} [{}]: {} rows ({} of the {} side) {}\n",
                one_line(&h.display),
                h.class.as_str(),
                fmt_count(h.rows),
                fmt_share(h.share),
                h.side,
                what
            ));
        }
        if c.broadcast_side.is_some() {
            o.push_str("--   one side fits under the broadcast threshold: broadcast whole, no shuffle\n");
        }
        o.push_str(&format!(
            "--   largest task {} rows -> {} (median {} -> {})\n",
            fmt_count(c.before.max_task_rows),
            fmt_count(c.after.max_task_rows),
            fmt_count(c.before.median_task_rows),
            fmt_count(c.after.median_task_rows)
        ));
        for w in c.warnings.iter().chain(c.notes.iter()) {
            o.push_str(&format!("--   note: {}\n", one_line(w)));
        }
    }
    for u in &r.unchanged_joins {
        o.push_str(&format!("-- skewjoin: left as written: {}: {}\n", one_line(&u.join), one_line(&u.reason)));
    }
    o.push_str(&r.sql);
    o.push_str(";\n");
    o
}

/// Comment text on one line (a value may hold a newline).
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}
