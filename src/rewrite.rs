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
    visit_expressions_mut, BinaryOperator, Expr, Ident, Join, JoinConstraint, JoinOperator, ObjectName, ObjectNamePart, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableFactor, TableWithJoins, VisitMut, VisitorMut,
};

use crate::classify::Classifier;
use crate::count::KeySpec;
use crate::error::{Error, Result};
use crate::plan::{self, emit_sql, JoinSql, JoinType, Plan, PlanOptions, SideInput, Strategy};
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
    /// Output column (lower case) -> its base table (`--table` name) and column there.
    base: HashMap<String, (String, String)>,
    /// A WHERE in between: the counts are of the whole base table.
    filtered: bool,
    /// For the joins before a chained join, made one input: the aliases they answer to, each
    /// with its columns (lower case) -> the column of this input.
    quals: Vec<(String, HashMap<String, String>)>,
    /// Bare names that mean one column though several inputs have it (USING keys, merged).
    bare: HashMap<String, String>,
    /// Those joins as written.
    joined: Option<String>,
}

impl Input {
    fn column(&self, name: &str) -> Option<String> {
        self.columns.iter().find(|c| c.eq_ignore_ascii_case(name)).cloned()
    }

    /// `qual.col` or a bare `col`, as a column of this input.
    fn resolve(&self, qual: Option<&str>, col: &str) -> Option<String> {
        if self.quals.is_empty() {
            return match qual {
                Some(q) if !q.eq_ignore_ascii_case(&self.alias) => None,
                _ => self.column(col),
            };
        }
        match qual {
            Some(q) => self.quals.iter().find(|(a, _)| a.eq_ignore_ascii_case(q)).and_then(|(_, m)| m.get(&lc(col)).cloned()),
            None if self.bare.contains_key(&lc(col)) => self.bare.get(&lc(col)).cloned(),
            None => {
                let hits: Vec<&String> = self.quals.iter().filter_map(|(_, m)| m.get(&lc(col))).collect();
                if hits.len() == 1 {
                    Some(hits[0].clone())
                } else {
                    None
                }
            }
        }
    }

    /// The name the reports give this input.
    fn display(&self) -> String {
        if self.quals.is_empty() {
            self.alias.clone()
        } else {
            self.quals.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>().join("+")
        }
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
        repoint_all(ob, &remaps);
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

/// Re-point `alias.col` everywhere in `node`, except inside a subquery that defines a table
/// of that name itself (its own `alias.col` means its own table).
fn repoint_all<T: VisitMut>(node: &mut T, remaps: &[Remap]) {
    struct R<'a> {
        remaps: &'a [Remap],
        shadow: Vec<Vec<String>>,
    }
    impl VisitorMut for R<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
            let mut names = Vec::new();
            if let Some(w) = &q.with {
                names.extend(w.cte_tables.iter().map(|c| lc(&c.alias.name.value)));
            }
            fn of_set(b: &SetExpr, names: &mut Vec<String>) {
                match b {
                    SetExpr::Select(s) => {
                        for twj in &s.from {
                            names.extend(factor_alias(&twj.relation).map(|a| lc(&a)));
                            names.extend(twj.joins.iter().filter_map(|j| factor_alias(&j.relation)).map(|a| lc(&a)));
                        }
                    }
                    SetExpr::SetOperation { left, right, .. } => {
                        of_set(left, names);
                        of_set(right, names);
                    }
                    _ => {}
                }
            }
            of_set(&q.body, &mut names);
            self.shadow.push(names);
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _q: &mut Query) -> ControlFlow<()> {
            self.shadow.pop();
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::CompoundIdentifier(parts) = e {
                if parts.len() == 2 && self.shadow.iter().any(|s| s.contains(&lc(&parts[0].value))) {
                    return ControlFlow::Continue(());
                }
            }
            repoint(e, self.remaps);
            ControlFlow::Continue(())
        }
    }
    let _ = node.visit(&mut R { remaps, shadow: Vec::new() });
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
    let saved = ctx.changes.len();
    // (from index, the new FROM item, its `*` items)
    let mut done: Vec<(usize, TableWithJoins, Option<Vec<SelectItem>>)> = Vec::new();
    for fi in 0..sel.from.len() {
        if sel.from[fi].joins.is_empty() {
            continue;
        }
        if let Some(d) = process_from(&sel.from[fi], sel.selection.is_some(), ctx)? {
            remaps.extend(d.remaps);
            done.push((fi, d.twj, d.star));
        }
    }
    if remaps.is_empty() {
        return Ok(remaps);
    }
    // `*` must list the same columns after the rewrite; where it cannot, leave the SELECT alone.
    if sel.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(_))) {
        let unlisted = done.iter().any(|d| d.2.is_none())
            || sel.from.iter().enumerate().any(|(fi, twj)| {
                !done.iter().any(|d| d.0 == fi)
                    && twj.joins.iter().any(|j| matches!(join_type(&j.join_operator), Ok((_, JoinConstraint::Using(_) | JoinConstraint::Natural))))
            });
        if unlisted {
            for c in ctx.changes.split_off(saved) {
                ctx.unchanged.push(Unchanged {
                    join: c.join,
                    reason: "the SELECT's `*` covers an input or a USING/NATURAL join whose columns the tool cannot list: left as written (name the columns to have it rewritten)".into(),
                });
            }
            return Ok(vec![]);
        }
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
    // Re-point every expression of this SELECT, then put the new FROM items in place (their
    // derived tables are not re-pointed: inside them the original aliases are still valid).
    repoint_all(sel, &remaps);
    let mut stars: Vec<(usize, Vec<SelectItem>)> = Vec::new();
    for (fi, twj, star) in done {
        sel.from[fi] = twj;
        stars.push((fi, star.unwrap_or_default()));
    }
    // `*` and `alias.*`: the same columns, under their original names.
    let mut projection = Vec::new();
    for item in std::mem::take(&mut sel.projection) {
        match &item {
            SelectItem::Wildcard(_) => {
                for (fi, twj) in sel.from.iter().enumerate() {
                    if let Some((_, star)) = stars.iter().find(|s| s.0 == fi) {
                        projection.extend(star.iter().cloned());
                        continue;
                    }
                    if let Some(a) = factor_alias(&twj.relation) {
                        projection.push(parse_item(&format!("{}.*", ident(&a)))?);
                    }
                    for j in &twj.joins {
                        let outputs_right = !matches!(join_type(&j.join_operator), Ok((JoinType::Semi | JoinType::Anti, _)));
                        if let (Some(a), true) = (factor_alias(&j.relation), outputs_right) {
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

/// A column of the joins so far in one FROM item: how the current SQL reaches it
/// (`qual.name`), the name it had as written, and the input it came from.
#[derive(Clone)]
struct Slot {
    qual: String,
    name: String,
    orig: String,
    owner: Option<String>,
}

/// An input of the chain, with the slot of each of its columns.
struct Member {
    input: Input,
    slots: Vec<usize>,
}

/// The joins of one FROM item processed so far (`a JOIN b ON ... JOIN c ON ...`, left to
/// right), as SQL that is valid in the SELECT's scope, and where each column of each input is.
struct Prefix {
    cur: TableWithJoins,
    slots: Vec<Slot>,
    members: Vec<Member>,
    /// What `*` of the prefix lists: a slot and the output name, or (RAW, alias) for `alias.*`.
    star: Vec<(usize, String)>,
    /// False when `*` of the prefix cannot be listed.
    star_ok: bool,
    rewritten: bool,
    /// Why a later join cannot take the prefix as its input.
    broken: Option<String>,
}

struct FromDone {
    twj: TableWithJoins,
    remaps: Vec<Remap>,
    /// `*` of the FROM item; None when it cannot be listed.
    star: Option<Vec<SelectItem>>,
}

/// A `*` entry that is `alias.*` of an input whose columns are not known.
const RAW: usize = usize::MAX;

impl Prefix {
    fn add_member(&mut self, input: Input) -> Vec<usize> {
        let start = self.slots.len();
        for c in &input.columns {
            self.slots.push(Slot { qual: input.alias.clone(), name: c.clone(), orig: c.clone(), owner: Some(input.alias.clone()) });
        }
        let slots: Vec<usize> = (start..self.slots.len()).collect();
        self.members.push(Member { input, slots: slots.clone() });
        slots
    }

    /// `alias.col` of the inputs that moved into a derived table, pointed at it.
    fn remaps(&self) -> Vec<Remap> {
        let mut out = Vec::new();
        for m in &self.members {
            let Some(&first) = m.slots.first() else { continue };
            let qual = &self.slots[first].qual;
            if qual.eq_ignore_ascii_case(&m.input.alias) {
                continue;
            }
            let columns = m.input.columns.iter().zip(&m.slots).map(|(c, &s)| (lc(c), self.slots[s].name.clone())).collect();
            let star = m.input.columns.iter().zip(&m.slots).map(|(c, &s)| (self.slots[s].name.clone(), c.clone())).collect();
            out.push(Remap { alias: m.input.alias.clone(), new_alias: qual.clone(), columns, star });
        }
        out
    }

    /// The prefix as one input of the next join. A single table as written is itself;
    /// anything else becomes `(SELECT <every column, under unique names> FROM <prefix>)`.
    fn as_input(&self, right: &Input, right_out: bool, ctx: &mut Ctx) -> Input {
        if !self.rewritten && self.cur.joins.is_empty() && self.members.len() == 1 {
            return self.members[0].input.clone();
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        for s in &self.slots {
            *seen.entry(lc(&s.orig)).or_default() += 1;
        }
        let mut taken: std::collections::HashSet<String> = if right_out { right.columns.iter().map(|c| lc(c)).collect() } else { Default::default() };
        let mut wraps = Vec::new();
        let mut bare = HashMap::new();
        for s in &self.slots {
            // A USING key's merged column keeps the bare name; the columns it merges do not.
            let mut w = if (s.owner.is_none() || seen[&lc(&s.orig)] == 1) && !taken.contains(&lc(&s.orig)) {
                s.orig.clone()
            } else {
                format!("{}__{}", s.owner.as_deref().unwrap_or("using"), s.orig)
            };
            let stem = w.clone();
            let mut n = 2;
            while taken.contains(&lc(&w)) {
                w = format!("{stem}_{n}");
                n += 1;
            }
            taken.insert(lc(&w));
            if s.owner.is_none() {
                bare.insert(lc(&s.orig), w.clone());
            }
            wraps.push(w);
        }
        let mut cur = self.cur.clone();
        crate::sql::fix_literals(&mut cur);
        let list: Vec<String> = self.slots.iter().zip(&wraps).map(|(s, w)| select_item(&s.qual, &s.name, w)).collect();
        let alias = format!("__sjp{}", ctx.next_id);
        ctx.next_id += 1;
        let mut base = HashMap::new();
        let mut quals = Vec::new();
        for m in &self.members {
            let mut q = HashMap::new();
            for (c, &s) in m.input.columns.iter().zip(&m.slots) {
                q.insert(lc(c), wraps[s].clone());
                if let Some(b) = m.input.base.get(&lc(c)) {
                    base.insert(lc(&wraps[s]), b.clone());
                }
            }
            quals.push((m.input.alias.clone(), q));
        }
        Input {
            alias,
            source: format!("(SELECT {} FROM {cur})", list.join(", ")),
            columns: wraps,
            base,
            filtered: self.members.iter().any(|m| m.input.filtered),
            quals,
            bare,
            joined: Some(String::new()),
        }
    }

    /// A join left as written joins the prefix.
    fn append(&mut self, join: &Join, right: Option<Input>) {
        let mut join = join.clone();
        if self.rewritten {
            let remaps = self.remaps();
            if let Some(e) = crate::sql::on_condition_mut(&mut join.join_operator) {
                repoint_all(e, &remaps);
            }
        }
        let op = join.join_operator.clone();
        let right_alias = factor_alias(&join.relation);
        self.cur.joins.push(join);
        let how = match &op {
            JoinOperator::CrossJoin(c) => Ok((JoinType::Inner, c)),
            other => join_type(other),
        };
        let (how, constraint) = match how {
            Ok(x) => x,
            Err(e) => {
                self.star_ok = false;
                self.broken.get_or_insert(e);
                return;
            }
        };
        if !how.outputs_right() {
            return;
        }
        let right = match (right, &self.broken) {
            (Some(r), None) => r,
            (r, _) => {
                // Its columns are not known here: `*` lists them as `alias.*` after the rest.
                match (&right_alias, constraint) {
                    (Some(a), JoinConstraint::On(_) | JoinConstraint::None) => self.star.push((RAW, a.clone())),
                    _ => self.star_ok = false,
                }
                if r.is_none() {
                    self.broken.get_or_insert_with(|| "an input before it is not a traced table".into());
                }
                return;
            }
        };
        let before = self.star.clone();
        let rslots = self.add_member(right);
        match constraint {
            JoinConstraint::Using(cols) => {
                // `*` of `a JOIN b USING (k)`: k (merged), then the rest of a, then of b.
                if how == JoinType::Full {
                    self.broken = Some("a FULL JOIN ... USING before it (its merged key is an expression)".into());
                    return;
                }
                let keys: Vec<String> = cols.iter().filter_map(|c| last_ident(c).map(|i| lc(&i.value))).collect();
                let mut star = Vec::new();
                for k in &keys {
                    let from_right = how == JoinType::Right;
                    let pick = if from_right {
                        rslots.iter().find(|&&s| lc(&self.slots[s].orig) == *k).map(|&s| (s, self.slots[s].orig.clone()))
                    } else {
                        before.iter().find(|(i, o)| *i != RAW && lc(o) == *k).cloned()
                    };
                    match pick {
                        Some((slot, out)) => {
                            // The merged column: a slot of its own, so a bare `k` finds it.
                            let mut m = self.slots[slot].clone();
                            m.owner = None;
                            self.slots.push(m);
                            star.push((self.slots.len() - 1, out));
                        }
                        None => {
                            self.broken = Some(format!("USING column {k} is not on both sides"));
                            return;
                        }
                    }
                }
                star.extend(before.into_iter().filter(|(_, o)| !keys.contains(&lc(o))));
                star.extend(rslots.iter().filter(|&&s| !keys.contains(&lc(&self.slots[s].orig))).map(|&s| (s, self.slots[s].orig.clone())));
                self.star = star;
            }
            JoinConstraint::Natural => self.broken = Some("a NATURAL JOIN before it".into()),
            _ => {
                let extra: Vec<(usize, String)> = rslots.iter().map(|&s| (s, self.slots[s].orig.clone())).collect();
                self.star.extend(extra);
            }
        }
    }

    /// A join rewritten into the derived table `j.alias`: every column is now there.
    fn absorb(&mut self, left: &Input, right: &Input, j: Joined) {
        for (i, c) in left.columns.iter().enumerate() {
            if let Some(e) = j.left.get(&lc(c)) {
                self.slots[i].qual = j.alias.clone();
                self.slots[i].name = e.clone();
            }
        }
        let before = std::mem::take(&mut self.star);
        let mut merged = Vec::new();
        for k in &j.using {
            self.slots.push(Slot { qual: j.alias.clone(), name: k.clone(), orig: k.clone(), owner: None });
            merged.push((self.slots.len() - 1, k.clone()));
        }
        let keys: Vec<String> = j.using.iter().map(|k| lc(k)).collect();
        let mut star = merged;
        star.extend(before.into_iter().filter(|(_, o)| !keys.contains(&lc(o))));
        if j.how.outputs_right() {
            let rslots = self.add_member(right.clone());
            for (&s, c) in rslots.iter().zip(&right.columns) {
                self.slots[s].qual = j.alias.clone();
                self.slots[s].name = j.right.get(&lc(c)).cloned().unwrap_or_else(|| c.clone());
                if !keys.contains(&lc(c)) {
                    star.push((s, c.clone()));
                }
            }
        }
        self.star = star;
        self.cur = TableWithJoins { relation: j.relation, joins: vec![] };
        self.rewritten = true;
    }
}

/// The joins of one FROM item, left to right: each equi-join whose inputs trace to tables is
/// planned (a later join's left input is the joins before it) and rewritten if it has
/// something to fix. `None` when nothing changed.
fn process_from(twj: &TableWithJoins, has_where: bool, ctx: &mut Ctx) -> Result<Option<FromDone>> {
    if twj.joins.len() > 1
        && twj.joins.iter().skip(1).any(|j| matches!(join_type(&j.join_operator), Ok((_, JoinConstraint::Using(_) | JoinConstraint::Natural))))
    {
        for j in 0..twj.joins.len() {
            ctx.unchanged.push(Unchanged {
                join: join_text(twj, j),
                reason: "a chain of joins with USING or NATURAL after its first join: the merged columns of the later joins are not rewritten".into(),
            });
        }
        return Ok(None);
    }
    let mut p = Prefix {
        cur: TableWithJoins { relation: twj.relation.clone(), joins: vec![] },
        slots: vec![],
        members: vec![],
        star: vec![],
        star_ok: true,
        rewritten: false,
        broken: None,
    };
    match input_of(&twj.relation, ctx, 0) {
        Ok(inp) => {
            let slots = p.add_member(inp);
            p.star = slots.iter().map(|&s| (s, p.slots[s].orig.clone())).collect();
        }
        Err(r) => {
            p.broken = Some(format!("left input: {r}"));
            match factor_alias(&twj.relation) {
                Some(a) => p.star.push((RAW, a)),
                None => p.star_ok = false,
            }
        }
    }
    for (j, join) in twj.joins.iter().enumerate() {
        let text = join_text(twj, j);
        let right = input_of(&join.relation, ctx, 0);
        let attempt: std::result::Result<(), String> = match (&p.broken, &right) {
            (Some(r), _) if j == 0 => Err(r.clone()),
            (Some(r), _) => Err(format!("its left input, the joins before it, cannot be traced: {r}")),
            (None, Err(r)) => Err(format!("right input: {r}")),
            (None, Ok(r)) => {
                let right_out = join_type(&join.join_operator).map(|x| x.0.outputs_right()).unwrap_or(true);
                let mut l = p.as_input(r, right_out, ctx);
                if l.joined.is_some() {
                    let mut before = TableWithJoins { relation: twj.relation.clone(), joins: twj.joins[..j].to_vec() };
                    crate::sql::fix_literals(&mut before);
                    l.joined = Some(before.to_string().split_whitespace().collect::<Vec<_>>().join(" "));
                }
                match try_join(&l, r, join, text.clone(), has_where, ctx)? {
                    Ok(joined) => {
                        p.absorb(&l, r, joined);
                        continue;
                    }
                    Err(reason) => Err(reason),
                }
            }
        };
        if let Err(reason) = attempt {
            ctx.unchanged.push(Unchanged { join: text, reason });
        }
        p.append(join, right.ok());
    }
    if !p.rewritten {
        return Ok(None);
    }
    let star = if p.star_ok {
        Some(
            p.star
                .iter()
                .map(
                    |(s, out)| {
                        if *s == RAW {
                            parse_item(&format!("{}.*", ident(out)))
                        } else {
                            parse_item(&select_item(&p.slots[*s].qual, &p.slots[*s].name, out))
                        }
                    },
                )
                .collect::<Result<Vec<_>>>()?,
        )
    } else {
        None
    };
    Ok(Some(FromDone { remaps: p.remaps(), twj: p.cur, star }))
}

fn star_items(alias: &str, cols: &[(String, String)]) -> Result<Vec<SelectItem>> {
    cols.iter().map(|(exposed, original)| parse_item(&format!("{}.{} AS {}", ident(alias), ident(exposed), ident(original)))).collect()
}

fn parse_item(text: &str) -> Result<SelectItem> {
    let q = parse_query(&format!("SELECT {text}"))?;
    match *q.body {
        SetExpr::Select(mut s) if s.projection.len() == 1 => Ok(s.projection.remove(0)),
        _ => Err(Error::Internal(format!("cannot build select item {text}"))),
    }
}

fn join_text(twj: &TableWithJoins, j: usize) -> String {
    let mut twj = twj.clone();
    crate::sql::fix_literals(&mut twj);
    let t = match twj.joins.get(j) {
        Some(x) if j == 0 => format!("{} {}", twj.relation, x),
        Some(x) => format!("{} ... {}", twj.relation, x),
        None => twj.relation.to_string(),
    };
    t.split_whitespace().collect::<Vec<_>>().join(" ")
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
        TableFactor::Table { alias: Some(a), .. } if !a.columns.is_empty() => Err("a table alias with column names".into()),
        TableFactor::Table { sample: Some(_), .. } | TableFactor::Derived { sample: Some(_), .. } => Err("a TABLESAMPLE input".into()),
        TableFactor::Table { version: Some(_), .. } => Err("a table read at a version or time".into()),
        TableFactor::Table { partitions, .. } if !partitions.is_empty() => Err("a table read by partition".into()),
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
            let base = columns.iter().map(|c| (lc(c), (tname.clone(), c.clone()))).collect();
            Ok(Input { alias, source: name.to_string(), columns, base, filtered: false, quals: vec![], bare: HashMap::new(), joined: None })
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
    if q.with.is_some()
        || q.limit_clause.is_some()
        || s.distinct.is_some()
        || s.from.len() != 1
        || !s.from[0].joins.is_empty()
        || s.having.is_some()
        || !s.lateral_views.is_empty()
    {
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
                    if let Some(b) = base.get(&lc(c)) {
                        map.insert(lc(c), b.clone());
                    }
                }
            }
            SelectItem::QualifiedWildcard(..) => {
                for c in &inner.columns {
                    columns.push(c.clone());
                    if let Some(b) = base.get(&lc(c)) {
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
                if let Some(b) = base.get(&lc(&name)) {
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
                if let Some(b) = src.and_then(|n| base.get(&lc(&n)).cloned()) {
                    map.insert(lc(&alias.value), b);
                }
                columns.push(alias.value.clone());
            }
            _ => return Err("a subquery with a select item the tool cannot read".into()),
        }
    }
    Ok(Input {
        alias: String::new(),
        source: String::new(),
        columns,
        base: map,
        filtered: inner.filtered || s.selection.is_some(),
        quals: vec![],
        bare: HashMap::new(),
        joined: None,
    })
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
            if p[0].value.eq_ignore_ascii_case(&r.alias) {
                r.column(&p[1].value).map(|c| (plan::Side::Right, c))
            } else {
                l.resolve(Some(&p[0].value), &p[1].value).map(|c| (plan::Side::Left, c))
            }
        }
        Expr::Identifier(i) => match (l.resolve(None, &i.value), r.column(&i.value)) {
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

/// A join rewritten: the derived table that replaces it and where each input column went.
struct Joined {
    alias: String,
    relation: TableFactor,
    how: JoinType,
    /// Input column (lower case) -> its name in the derived table.
    left: HashMap<String, String>,
    right: HashMap<String, String>,
    /// USING keys, merged into one column each (named as the key).
    using: Vec<String>,
}

/// Rewrite references of an ON predicate to the inputs as the branches name them (the
/// joins before a chained join are one subquery there).
fn to_branch_names(e: &mut Expr, l: &Input, r: &Input) {
    if l.quals.is_empty() {
        return;
    }
    let _ = visit_expressions_mut(e, |x: &mut Expr| {
        let to = match &*x {
            Expr::CompoundIdentifier(p) if p.len() == 2 && !p[0].value.eq_ignore_ascii_case(&r.alias) => l.resolve(Some(&p[0].value), &p[1].value),
            Expr::Identifier(i) if r.column(&i.value).is_none() => l.resolve(None, &i.value),
            _ => None,
        };
        if let Some(c) = to {
            *x = Expr::CompoundIdentifier(vec![Ident::with_quote('`', l.alias.clone()), Ident::with_quote('`', c)]);
        }
        ControlFlow::<()>::Continue(())
    });
}

/// The base table of a side's key columns, and each key's base column; an error names why not.
fn key_base(inp: &Input, keys: &[String], ctx: &Ctx) -> std::result::Result<(String, Vec<crate::source::ResolvedColumn>), String> {
    let mut table: Option<String> = None;
    let mut cols = Vec::new();
    for k in keys {
        let Some((t, b)) = inp.base.get(&lc(k)) else {
            return Err(format!("key {k} of {} is an expression the tool cannot trace to a table column", inp.alias));
        };
        match &table {
            Some(t0) if t0 != t => return Err(format!("the keys of {} come from two tables ({t0} and {t})", inp.alias)),
            _ => table = Some(t.clone()),
        }
        let resolved = ctx.tables[t].resolve(b).map_err(|e| e.to_string())?;
        cols.push(resolved);
    }
    Ok((table.unwrap_or_default(), cols))
}

fn try_join(l: &Input, r: &Input, join: &Join, text: String, has_where: bool, ctx: &mut Ctx) -> Result<std::result::Result<Joined, String>> {
    let (how, constraint) = match join_type(&join.join_operator) {
        Ok(x) => x,
        Err(r) => return Ok(Err(r)),
    };
    if l.alias.eq_ignore_ascii_case(&r.alias) || l.quals.iter().any(|(a, _)| a.eq_ignore_ascii_case(&r.alias)) {
        return Ok(Err("both inputs go by the same name".into()));
    }
    // Keys and the other predicates.
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut key_text: Vec<String> = Vec::new();
    let mut extras: Vec<Expr> = Vec::new();
    let using = match constraint {
        JoinConstraint::On(e) => {
            let mut cs = Vec::new();
            conjuncts(e, &mut cs);
            for c in cs {
                if let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = &c {
                    match (side_of(left, l, r), side_of(right, l, r)) {
                        (Some((plan::Side::Left, a)), Some((plan::Side::Right, b))) | (Some((plan::Side::Right, b)), Some((plan::Side::Left, a))) => {
                            keys.push((a, b));
                            key_text.push(format!("{} = {}", crate::sql::render_expr(left), crate::sql::render_expr(right)));
                            continue;
                        }
                        _ => {}
                    }
                }
                let mut c = c;
                to_branch_names(&mut c, l, r);
                extras.push(c);
            }
            false
        }
        JoinConstraint::Using(cols) => {
            for c in cols {
                let name = last_ident(c).map(|i| i.value.clone()).unwrap_or_default();
                match (l.column(&name), r.column(&name)) {
                    (Some(a), Some(b)) => {
                        key_text.push(format!("{}.{a} = {}.{b}", l.alias, r.alias));
                        keys.push((a, b));
                    }
                    _ => return Ok(Err(format!("USING column {name} is not on both sides"))),
                }
            }
            true
        }
        JoinConstraint::Natural => return Ok(Err("NATURAL JOIN: the keys are implicit; write them out with USING or ON".into())),
        JoinConstraint::None => return Ok(Err("no join condition".into())),
    };
    if keys.is_empty() {
        return Ok(Err("no equality between a column of each side in ON (a non-equi join)".into()));
    }
    // Key columns of the base tables.
    let lkeys: Vec<String> = keys.iter().map(|k| k.0.clone()).collect();
    let rkeys: Vec<String> = keys.iter().map(|k| k.1.clone()).collect();
    let (ltn, lcols) = match key_base(l, &lkeys, ctx) {
        Ok(x) => x,
        Err(e) => return Ok(Err(e)),
    };
    let (rtn, rcols) = match key_base(r, &rkeys, ctx) {
        Ok(x) => x,
        Err(e) => return Ok(Err(e)),
    };
    let lt = &ctx.tables[&ltn];
    let rt = &ctx.tables[&rtn];
    let mut opts = ctx.opts.clone();
    opts.how = how;
    opts.extra_predicates = !extras.is_empty();
    let left = SideInput { table: lt, keys: KeySpec { columns: lcols }, name: l.display().to_string() };
    let right = SideInput { table: rt, keys: KeySpec { columns: rcols }, name: r.alias.clone() };
    let p: Plan = match plan::plan(&left, &right, ctx.classifier, &opts) {
        Ok(p) => p,
        Err(Error::KeyTypes(m)) => return Ok(Err(m)),
        Err(e) => return Err(e),
    };
    let acts = p.broadcast_side.is_some() || p.hot_keys.iter().any(|h| !matches!(h.strategy, Strategy::Keep { .. }));
    if !acts {
        let reason = match (&p.next, p.hot_keys.is_empty()) {
            (Some(n), _) => format!("{n}"),
            (None, false) => format!(
                "hot keys, but none can be moved safely: {}",
                p.hot_keys.iter().map(|h| format!("{}: {}", h.display, h.why)).collect::<Vec<_>>().join("; ")
            ),
            (None, true) => "no hot key".into(),
        };
        return Ok(Err(reason));
    }

    // The columns the derived table exposes.
    let dup = |c: &str, other: &Input| other.column(c).is_some();
    let mut select = Vec::new();
    let mut columns_l = HashMap::new();
    let mut columns_r = HashMap::new();
    let mut merged = Vec::new();
    let using_keys: Vec<String> = if using { keys.iter().map(|k| lc(&k.0)).collect() } else { vec![] };
    if using {
        for (a, b) in &keys {
            select.push(match how {
                JoinType::Right => select_item(&r.alias, b, a),
                JoinType::Full => format!("coalesce({}.{}, {}.{}) AS {}", ident(&l.alias), ident(a), ident(&r.alias), ident(b), ident(a)),
                _ => select_item(&l.alias, a, a),
            });
            merged.push(a.clone());
        }
    }
    for c in &l.columns {
        let exposed = if (how.outputs_right() && dup(c, r)) || using_keys.contains(&lc(c)) { format!("{}__{}", l.alias, c) } else { c.clone() };
        select.push(select_item(&l.alias, c, &exposed));
        columns_l.insert(lc(c), exposed);
    }
    if how.outputs_right() {
        for c in &r.columns {
            let exposed = if dup(c, l) || using_keys.contains(&lc(c)) { format!("{}__{}", r.alias, c) } else { c.clone() };
            select.push(select_item(&r.alias, c, &exposed));
            columns_r.insert(lc(c), exposed);
        }
    }
    let new_alias = format!("__sj{}", ctx.next_id);
    ctx.next_id += 1;
    let hashable = |inp: &Input| -> Vec<String> {
        inp.columns
            .iter()
            .filter(|c| {
                inp.base
                    .get(&lc(c))
                    .is_some_and(|(t, b)| ctx.tables.get(t).is_some_and(|t| plan::hashable_columns(t).iter().any(|h| h.eq_ignore_ascii_case(b))))
            })
            .cloned()
            .collect()
    };
    let js = JoinSql {
        how,
        left_source: l.source.clone(),
        right_source: r.source.clone(),
        left_alias: ident(&l.alias),
        right_alias: ident(&r.alias),
        select_list: select.join(", "),
        extra_on: if extras.is_empty() { None } else { Some(extras.iter().map(crate::sql::render_expr).collect::<Vec<_>>().join(" AND ")) },
        left_keys: lkeys,
        right_keys: rkeys,
        key_types: left.keys.types(),
        left_columns: l.columns.clone(),
        right_columns: r.columns.clone(),
        left_hashable: hashable(l),
        right_hashable: hashable(r),
    };
    let union = emit_sql(&js, &p)?;
    let derived = parse_query(&format!("SELECT * FROM ({union}) AS {}", ident(&new_alias)))?;
    let branches = match derived.body.as_ref() {
        SetExpr::Select(s) => match s.from.first().map(|f| &f.relation) {
            Some(TableFactor::Derived { subquery, .. }) => count_branches(&subquery.body),
            _ => 1,
        },
        _ => 1,
    };
    let SetExpr::Select(mut s) = *derived.body else { return Err(Error::Internal("derived table".into())) };
    let relation = s.from.remove(0).relation;

    let mut notes = p.notes.clone();
    if let Some(prefix) = &l.joined {
        notes.push(format!(
            "the left input is the joins before this one ({prefix}); its key counts are those of the base table {ltn}, before those joins, which may drop or repeat rows, so the task sizes are estimates; the joins before run once in each of the {branches} branches (Spark reuses identical shuffles)"
        ));
    }
    if has_where {
        notes.push("the counts are of whole tables; Spark pushes the query's WHERE below the join, so the real tasks may be smaller".into());
    }
    for inp in [l, r] {
        if inp.filtered {
            let tables: std::collections::BTreeSet<&str> = inp.base.values().map(|(t, _)| t.as_str()).collect();
            let tables: Vec<&str> = tables.into_iter().collect();
            notes.push(format!("{}: the counts are of the whole table {}; the subquery's filter was not applied to them", inp.display(), tables.join(", ")));
        }
    }
    ctx.changes.push(Change {
        join: text,
        how,
        keys: key_text,
        alias: new_alias.clone(),
        hot_keys: p.hot_keys.clone(),
        broadcast_side: p.broadcast_side,
        before: p.before.clone(),
        after: p.after.clone(),
        notes,
        warnings: p.warnings.clone(),
        results_change: p.results_change,
    });
    Ok(Ok(Joined { alias: new_alias, relation, how, left: columns_l, right: columns_r, using: merged }))
}

/// How many SELECTs a UNION ALL of branches has.
fn count_branches(body: &SetExpr) -> usize {
    match body {
        SetExpr::SetOperation { left, right, .. } => count_branches(left) + count_branches(right),
        _ => 1,
    }
}

/// The rewritten SQL, after `--` lines that explain each change with its numbers.
pub fn sql_with_comments(r: &Rewritten) -> String {
    use crate::format::{fmt_count, fmt_share};
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
                Strategy::BroadcastSlice { slice_rows, .. } => {
                    format!("joins a broadcast slice of {} row{}", fmt_count(*slice_rows), if *slice_rows == 1 { "" } else { "s" })
                }
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
