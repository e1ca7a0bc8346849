//! Subqueries in WHERE as the joins Spark makes of them: a top-level conjunct
//! `x IN (SELECT k FROM t ...)` is a left semi join on `x = k`, a correlated
//! `EXISTS (SELECT ... FROM t WHERE t.k = x AND ...)` a left semi join on its equalities with the
//! outer query, `NOT EXISTS` a left anti join. Written as explicit joins appended to the FROM
//! item, the chain code plans them like any other join. `x NOT IN (subquery)` is Spark's
//! null-aware anti join, which broadcasts the subquery or loops over it: there is no shuffle on
//! the key to skew, and it is listed with that reason.
//!
//! Why the rows stay the same: WHERE applies after every join of FROM, and a conjunct `x IN S`
//! keeps a row exactly when some s of S equals x (a NULL x, or no match, drops it: UNKNOWN and
//! FALSE both fail WHERE), which is the left semi join of all of FROM with S on `x = s`; the
//! semi join never repeats a row. EXISTS over its correlated equalities is the same semi join;
//! NOT EXISTS keeps the rows with no match, a NULL x among them, as the anti join does. The
//! subquery's own conditions stay inside it.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, BinaryOperator, Expr, Ident, Join, JoinConstraint, JoinOperator, Query,
    Select, SelectItem, SetExpr, TableFactor, TableWithJoins,
};

use super::condition::conjuncts;
use super::input::{input_of, Input};
use super::names::{factor_alias, lc};
use super::reason::LeftAlone;
use super::{At, Ctx};
use crate::error::{Error, Result};
use crate::sql::{ident, parse_query, render_expr, render_inline};

/// How a join added from WHERE was written there, for the reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Written {
    In,
    Exists,
    NotExists,
}

impl Written {
    pub fn label(self) -> &'static str {
        match self {
            Written::In => "(written as IN (subquery))",
            Written::Exists => "(written as EXISTS (subquery))",
            Written::NotExists => "(written as NOT EXISTS (subquery))",
        }
    }
}

/// The SELECT with subqueries of its WHERE written as joins, and the alias of each join added
/// with how and where it was written.
pub(super) struct Explicit {
    pub select: Box<Select>,
    pub added: Vec<(String, Written, Option<At>)>,
}

/// What `explicit_form` found: the SELECT with joins added (None when none could be), and each
/// subquery of WHERE left where it is, as written, where, with the reason.
pub(super) struct Found {
    pub explicit: Option<Explicit>,
    pub left: Vec<(String, Option<At>, LeftAlone)>,
}

/// The relations of the SELECT's one FROM item, by the name each goes by, with its columns
/// (lower case) where they can be listed.
struct Outer {
    relations: Vec<(String, Option<Vec<String>>)>,
}

impl Outer {
    fn of(twj: &TableWithJoins, ctx: &Ctx) -> Outer {
        let factors = std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation));
        let relations = factors
            .filter_map(|f| {
                let cols =
                    input_of(f, ctx, 0).ok().map(|i| i.columns.iter().map(|c| lc(c)).collect());
                factor_alias(f).map(|a| (a, cols))
            })
            .collect();
        Outer { relations }
    }

    fn has_alias(&self, a: &str) -> bool {
        self.relations.iter().any(|(x, _)| x.eq_ignore_ascii_case(a))
    }

    /// A column of the FROM, as (relation, column): `alias.col`, or a bare name that exactly
    /// one relation has (when every relation's columns are known).
    fn column(&self, e: &Expr) -> Option<(String, String)> {
        match e {
            Expr::CompoundIdentifier(p) if p.len() == 2 => self
                .relations
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(&p[0].value))
                .map(|(a, _)| (a.clone(), p[1].value.clone())),
            Expr::Identifier(i) if self.relations.iter().all(|(_, c)| c.is_some()) => {
                let hits: Vec<&String> = self
                    .relations
                    .iter()
                    .filter(|(_, c)| c.as_ref().is_some_and(|c| c.contains(&lc(&i.value))))
                    .map(|(a, _)| a)
                    .collect();
                (hits.len() == 1).then(|| (hits[0].clone(), i.value.clone()))
            }
            Expr::Nested(inner) => self.column(inner),
            _ => None,
        }
    }
}

/// The subqueries of `sel`'s WHERE that Spark runs as semi or anti joins, written as joins at
/// the end of its FROM item (a SELECT with one FROM item; a comma join is made explicit first).
pub(super) fn explicit_form(sel: &Select, ctx: &mut Ctx) -> Result<Found> {
    let mut found = Found { explicit: None, left: Vec::new() };
    let Some(w) = &sel.selection else { return Ok(found) };
    let mut cs = Vec::new();
    conjuncts(w, &mut cs);
    for c in &cs {
        found.left.extend(nested_subquery_joins(c));
    }
    if !cs.iter().any(is_subquery_join) {
        return Ok(found);
    }
    if sel.from.len() != 1 || !sel.lateral_views.is_empty() {
        let why = || {
            LeftAlone::SubqueryNotJoined("its SELECT has several FROM items or LATERAL VIEW".into())
        };
        found.left.extend(
            cs.iter().filter(|c| is_subquery_join(c)).map(|c| (written(c), At::of(c), why())),
        );
        return Ok(found);
    }
    let outer = Outer::of(&sel.from[0], ctx);
    let (mut joins, mut added, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for c in cs {
        match as_join(&c, &outer, ctx)? {
            Some(Ok((join, how))) => {
                added.push((factor_alias(&join.relation).unwrap_or_default(), how, At::of(&c)));
                joins.push(join);
            }
            Some(Err(why)) => {
                found.left.push((written(&c), At::of(&c), why));
                rest.push(c);
            }
            None => rest.push(c),
        }
    }
    if !joins.is_empty() {
        let mut s = sel.clone();
        s.from[0].joins.extend(joins);
        s.selection = rest.into_iter().reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::And,
            right: Box::new(b),
        });
        found.explicit = Some(Explicit { select: Box::new(s), added });
    }
    Ok(found)
}

/// IN and EXISTS subqueries inside a conjunct (under OR, NOT, CASE...): Spark runs each as an
/// existence join, a shuffle like any other, which the rewrite does not take apart.
fn nested_subquery_joins(c: &Expr) -> Vec<(String, Option<At>, LeftAlone)> {
    if is_subquery_join(c) {
        return vec![];
    }
    let mut out = Vec::new();
    let _ = visit_expressions(c, |x: &Expr| {
        if matches!(x, Expr::InSubquery { negated: false, .. } | Expr::Exists { .. }) {
            out.push((written(x), At::of(x), LeftAlone::SubqueryNotJoined("it is not a conjunct of WHERE (under OR, NOT or another expression): Spark runs it as an existence join, which the rewrite does not take apart".into())));
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

fn is_subquery_join(e: &Expr) -> bool {
    matches!(e, Expr::InSubquery { .. } | Expr::Exists { .. })
}

/// A conjunct as the reports show it.
fn written(e: &Expr) -> String {
    render_expr(e).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The join a conjunct of WHERE is, when it is an IN or EXISTS subquery: the join and how it
/// was written, or why it stays in WHERE. None for any other conjunct.
fn as_join(
    c: &Expr,
    outer: &Outer,
    ctx: &mut Ctx,
) -> Result<Option<std::result::Result<(Join, Written), LeftAlone>>> {
    let alias = format!("__sq{}", ctx.next_id);
    let made = match c {
        Expr::InSubquery { negated: true, .. } => Err(LeftAlone::NullAwareAnti),
        Expr::InSubquery { expr, subquery, negated: false } => {
            in_join(expr, subquery, outer, &alias, ctx)?.map(|j| (j, Written::In))
        }
        Expr::Exists { subquery, negated } => {
            let how = if *negated { Written::NotExists } else { Written::Exists };
            exists_join(subquery, *negated, outer, &alias, ctx)?.map(|j| (j, how))
        }
        _ => return Ok(None),
    };
    if made.is_ok() {
        ctx.next_id += 1;
    }
    Ok(Some(made))
}

/// `x IN (SELECT k FROM ...)`: a left semi join on `x = alias.k`, when x is a column of the FROM
/// and the subquery traces to a table with every condition its own (not correlated).
fn in_join(
    x: &Expr,
    subquery: &Query,
    outer: &Outer,
    alias: &str,
    ctx: &Ctx,
) -> Result<std::result::Result<Join, LeftAlone>> {
    let not = |why: &str| Ok(Err(LeftAlone::SubqueryNotJoined(why.into())));
    let Some((oa, oc)) = outer.column(x) else {
        return not("its left side is not a column of the FROM");
    };
    let Some(k) = single_output(subquery) else {
        return not("the subquery does not select one named column");
    };
    let relation = derived(subquery, alias)?;
    match input_of(&relation, ctx, 0) {
        Err(why) => Ok(Err(LeftAlone::SubqueryNotJoined(format!("the subquery: {why}")))),
        Ok(inp) if inp.filtered => not("a condition of the subquery the tool cannot trace to its table (it may refer to the outer query)"),
        Ok(_) => semi_or_anti(relation, vec![(oa, oc, k)], alias, false).map(Ok),
    }
}

/// `EXISTS (SELECT ... FROM t WHERE t.k = x AND <conditions on t>)`: a left semi (anti, for NOT
/// EXISTS) join on the equalities with the outer query; the other conditions stay inside.
fn exists_join(
    subquery: &Query,
    negated: bool,
    outer: &Outer,
    alias: &str,
    ctx: &Ctx,
) -> Result<std::result::Result<Join, LeftAlone>> {
    let not = |why: &str| Ok(Err(LeftAlone::SubqueryNotJoined(why.into())));
    let SetExpr::Select(s) = subquery.body.as_ref() else {
        return not("the subquery is not a plain SELECT");
    };
    let plain = subquery.with.is_none()
        && subquery.limit_clause.is_none()
        && s.distinct.is_none()
        && s.having.is_none();
    let grouped =
        !matches!(&s.group_by, sqlparser::ast::GroupByExpr::Expressions(e, _) if e.is_empty());
    if !plain
        || grouped
        || s.from.len() != 1
        || !s.from[0].joins.is_empty()
        || !s.lateral_views.is_empty()
    {
        return not("the subquery joins, groups or limits");
    }
    let rel = &s.from[0].relation;
    let Some(inner_alias) = factor_alias(rel).filter(|a| !outer.has_alias(a)) else {
        return not("the subquery's table has no name, or the name of a table of the outer FROM");
    };
    let inner = match input_of(rel, ctx, 0) {
        Ok(i) => i,
        Err(why) => return Ok(Err(LeftAlone::SubqueryNotJoined(format!("the subquery: {why}")))),
    };
    let scope = Scope { outer, inner: &inner, inner_alias: &inner_alias };
    let (mut keys, mut own) = (Vec::new(), Vec::new());
    let mut cs = Vec::new();
    if let Some(w) = &s.selection {
        conjuncts(w, &mut cs);
    }
    for c in cs {
        match scope.kind(&c) {
            Kind::Own => own.push(c),
            Kind::Key(oa, oc, ic) => keys.push((oa, oc, ic)),
            Kind::Other => return not("a condition between the subquery and the outer query other than an equality of columns"),
        }
    }
    if keys.is_empty() {
        return not("no equality with the outer query: an uncorrelated EXISTS is not a join");
    }
    let mut body = format!("SELECT * FROM {}", render_factor(rel));
    if !own.is_empty() {
        body.push_str(&format!(
            " WHERE {}",
            own.iter().map(render_expr).collect::<Vec<_>>().join(" AND ")
        ));
    }
    let relation = derived(&parse_query(&body)?, alias)?;
    semi_or_anti(relation, keys, alias, negated).map(Ok)
}

/// The names a correlated subquery's conditions can refer to.
struct Scope<'a> {
    outer: &'a Outer,
    inner: &'a Input,
    inner_alias: &'a str,
}

/// What a condition of a correlated subquery is.
enum Kind {
    /// On the subquery's table alone.
    Own,
    /// `outer.col = inner.col`: (outer relation, its column, the inner column).
    Key(String, String, String),
    Other,
}

/// Which side a column reference is on.
enum Ref {
    Inner(String),
    Outer(String, String),
}

impl Scope<'_> {
    /// A column reference: the subquery's own columns first (SQL resolves names inside out).
    fn resolve(&self, e: &Expr) -> Option<Ref> {
        match e {
            Expr::CompoundIdentifier(p)
                if p.len() == 2 && p[0].value.eq_ignore_ascii_case(self.inner_alias) =>
            {
                self.inner.column(&p[1].value).map(Ref::Inner)
            }
            Expr::Nested(inner) => self.resolve(inner),
            Expr::Identifier(i) => self
                .inner
                .column(&i.value)
                .map(Ref::Inner)
                .or_else(|| self.outer.column(e).map(|(a, c)| Ref::Outer(a, c))),
            other => self.outer.column(other).map(|(a, c)| Ref::Outer(a, c)),
        }
    }

    fn kind(&self, c: &Expr) -> Kind {
        if let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = c {
            match (self.resolve(left), self.resolve(right)) {
                (Some(Ref::Outer(a, oc)), Some(Ref::Inner(ic)))
                | (Some(Ref::Inner(ic)), Some(Ref::Outer(a, oc))) => return Kind::Key(a, oc, ic),
                _ => {}
            }
        }
        let mut own = true;
        let _ = visit_expressions(c, |x: &Expr| {
            let column = matches!(x, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
            if column && !matches!(self.resolve(x), Some(Ref::Inner(_))) {
                own = false;
            }
            if matches!(x, Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }) {
                own = false;
            }
            ControlFlow::<()>::Continue(())
        });
        if own {
            Kind::Own
        } else {
            Kind::Other
        }
    }
}

/// The one column a subquery selects, by its output name.
fn single_output(q: &Query) -> Option<String> {
    let SetExpr::Select(s) = q.body.as_ref() else { return None };
    match s.projection.as_slice() {
        [SelectItem::UnnamedExpr(Expr::Identifier(i))] => Some(i.value.clone()),
        [SelectItem::UnnamedExpr(Expr::CompoundIdentifier(p))] => p.last().map(|i| i.value.clone()),
        [SelectItem::ExprWithAlias { alias, .. }] => Some(alias.value.clone()),
        _ => None,
    }
}

/// A FROM item as SQL, its literals as Spark reads them.
fn render_factor(f: &TableFactor) -> String {
    let mut f = f.clone();
    crate::sql::fix_literals(&mut f);
    f.to_string()
}

/// `(query) AS alias` as a FROM item.
fn derived(q: &Query, alias: &str) -> Result<TableFactor> {
    let wrapped =
        parse_query(&format!("SELECT * FROM ({}) AS {}", render_inline(q), ident(alias)))?;
    match *wrapped.body {
        SetExpr::Select(mut s) if s.from.len() == 1 => Ok(s.from.remove(0).relation),
        _ => Err(Error::Internal("a subquery as a FROM item".into())),
    }
}

/// `LEFT SEMI JOIN relation ON outer.col = alias.col AND ...` (LEFT ANTI when `anti`).
fn semi_or_anti(
    relation: TableFactor,
    keys: Vec<(String, String, String)>,
    alias: &str,
    anti: bool,
) -> Result<Join> {
    let col = |q: &str, c: &str| {
        Expr::CompoundIdentifier(vec![Ident::with_quote('`', q), Ident::with_quote('`', c)])
    };
    let on = keys
        .into_iter()
        .map(|(oa, oc, ic)| Expr::BinaryOp {
            left: Box::new(col(&oa, &oc)),
            op: BinaryOperator::Eq,
            right: Box::new(col(alias, &ic)),
        })
        .reduce(|a, b| Expr::BinaryOp {
            left: Box::new(a),
            op: BinaryOperator::And,
            right: Box::new(b),
        })
        .ok_or_else(|| Error::Internal("a subquery join without a key".into()))?;
    let constraint = JoinConstraint::On(on);
    Ok(Join {
        relation,
        global: false,
        join_operator: if anti {
            JoinOperator::LeftAnti(constraint)
        } else {
            JoinOperator::LeftSemi(constraint)
        },
    })
}
