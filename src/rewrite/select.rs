//! One SELECT: its FROM items' joins rewritten, then every expression of the SELECT
//! re-pointed at the derived tables, and `*` / `alias.*` listed as the same columns under
//! their original names, so WHERE, GROUP BY, HAVING, ORDER BY, windows and the output keep
//! their meaning.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Query, Select, SelectItem, SelectItemQualifiedWildcardKind, TableFactor, TableWithJoins,
    Visit, VisitMut, Visitor, VisitorMut,
};

use super::comma;
use super::condition::join_type;
use super::from::{merges, process_from};
use super::names::{factor_alias, join_text, last_ident, lc, parse_item, star_items};
use super::reason::LeftAlone;
use super::scope::{repoint_all, Remap};
use super::subquery;
use super::{process_query, At, Ctx, Unchanged};
use crate::error::Result;
use crate::plan::JoinType;
use crate::sql::ident;

/// A FROM item rewritten: its index, the new item, and the items of its `*` (None when they
/// cannot be listed).
type Done = (usize, TableWithJoins, Option<Vec<SelectItem>>);

/// Rewrite the joins of `sel`; returns the re-pointings, for an ORDER BY outside the SELECT.
pub(super) fn process_select(sel: &mut Select, ctx: &mut Ctx) -> Result<Vec<Remap>> {
    // Subqueries in FROM first: their joins are rewritten in their own scope; a ranking
    // inside one that this WHERE filters to a top N is limited by Spark before its shuffle.
    let limits = super::window::rank_limits(sel);
    let saved_limits = std::mem::replace(&mut ctx.rank_limits, limits);
    for twj in &mut sel.from {
        let factors =
            std::iter::once(&mut twj.relation).chain(twj.joins.iter_mut().map(|j| &mut j.relation));
        for f in factors {
            if let TableFactor::Derived { subquery, .. } = f {
                process_query(subquery, ctx)?;
            }
        }
    }
    ctx.rank_limits = saved_limits;
    // Subqueries in WHERE and the select list (IN, EXISTS, scalar): their joins in their own
    // scope, when they do not refer to this SELECT's FROM.
    let outer: Vec<String> = sel
        .from
        .iter()
        .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)))
        .filter_map(factor_alias)
        .collect();
    if let Some(w) = &mut sel.selection {
        process_expr_subqueries(w, &outer, ctx)?;
    }
    for item in &mut sel.projection {
        if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
            process_expr_subqueries(e, &outer, ctx)?;
        }
    }
    match comma::explicit_form(sel, ctx) {
        Ok(None) => with_subquery_joins(sel, ctx),
        Ok(Some(mut explicit)) => {
            let (changes, unchanged) = (ctx.changes.len(), ctx.unchanged.len());
            let remaps = with_subquery_joins(&mut explicit, ctx)?;
            // The joins of the comma join; a subquery of WHERE says how it was written itself.
            let of_subquery = |join: &str| join.ends_with("(subquery))");
            for c in ctx.changes[changes..].iter_mut().filter(|c| !of_subquery(&c.join)) {
                c.join.push_str(" (written as a comma join)");
            }
            let kept_in_where = |u: &Unchanged| {
                matches!(u.reason, LeftAlone::NullAwareAnti | LeftAlone::SubqueryNotJoined(_))
                    || of_subquery(&u.join)
            };
            for u in ctx.unchanged[unchanged..].iter_mut().filter(|u| !kept_in_where(u)) {
                u.join.push_str(" (written as a comma join)");
            }
            if !remaps.is_empty() {
                *sel = *explicit;
            }
            Ok(remaps)
        }
        // The comma join stays; each FROM item's own joins are still planned.
        Err(reason) => {
            let items: Vec<String> =
                sel.from.iter().map(|twj| join_text(twj, usize::MAX)).collect();
            let at = sel.from.get(1).and_then(|t| At::of(&t.relation));
            ctx.unchanged.push(Unchanged::new(items.join(", "), at, reason));
            with_subquery_joins(sel, ctx)
        }
    }
}

/// The subqueries (IN, EXISTS, scalar) of an expression of this SELECT, each rewritten as a
/// query of its own; those nested in them are left to that query. One that names a relation of
/// the outer FROM (`outer`) is correlated: a rewritten join inside it could carry the outer
/// reference into a derived table, which Spark does not take, so it is left as written.
fn process_expr_subqueries(e: &mut Expr, outer: &[String], ctx: &mut Ctx) -> Result<()> {
    struct Visit<'c, 'a, 'o> {
        ctx: &'c mut Ctx<'a>,
        outer: &'o [String],
        depth: usize,
    }
    impl VisitorMut for Visit<'_, '_, '_> {
        type Break = crate::error::Error;
        fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<Self::Break> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<Self::Break> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, x: &mut Expr) -> ControlFlow<Self::Break> {
            let (Expr::Subquery(q)
            | Expr::InSubquery { subquery: q, .. }
            | Expr::Exists { subquery: q, .. }) = x
            else {
                return ControlFlow::Continue(());
            };
            if self.depth > 0 || correlated(q, self.outer) {
                return ControlFlow::Continue(());
            }
            match process_query(q, self.ctx) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            }
        }
    }
    match e.visit(&mut Visit { ctx, outer, depth: 0 }) {
        ControlFlow::Break(err) => Err(err),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Whether `q` names (as `name.col`) a relation of `outer` that none of its own FROM items
/// goes by.
fn correlated(q: &Query, outer: &[String]) -> bool {
    struct Names {
        own: Vec<String>,
        qualifiers: Vec<String>,
    }
    impl Visitor for Names {
        type Break = ();
        fn pre_visit_table_factor(&mut self, f: &TableFactor) -> ControlFlow<()> {
            self.own.extend(factor_alias(f).map(|a| lc(&a)));
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            if let Expr::CompoundIdentifier(p) = e {
                if p.len() >= 2 {
                    self.qualifiers.push(lc(&p[p.len() - 2].value));
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut n = Names { own: Vec::new(), qualifiers: Vec::new() };
    let _ = q.visit(&mut n);
    n.qualifiers.iter().any(|qual| !n.own.contains(qual) && outer.iter().any(|o| lc(o) == *qual))
}

/// The joins of `sel` rewritten with its IN / EXISTS subqueries written as joins, kept in that
/// form only when a join changed.
fn with_subquery_joins(sel: &mut Select, ctx: &mut Ctx) -> Result<Vec<Remap>> {
    let found = subquery::explicit_form(sel, ctx)?;
    ctx.unchanged
        .extend(found.left.into_iter().map(|(join, at, reason)| Unchanged::new(join, at, reason)));
    let Some(mut ex) = found.explicit else { return rewrite_joins(sel, ctx) };
    let (changes, unchanged) = (ctx.changes.len(), ctx.unchanged.len());
    let remaps = rewrite_joins(&mut ex.select, ctx)?;
    // A join made of a subquery is labelled so, and placed where the subquery is written.
    for (alias, how, at) in &ex.added {
        let mark = format!("{} ON", ident(alias));
        let label = |join: &mut String, place: &mut Option<At>| {
            if join.contains(&mark) {
                *join = format!("{join} {}", how.label());
                *place = *at;
            }
        };
        ctx.changes[changes..].iter_mut().for_each(|c| label(&mut c.join, &mut c.at));
        ctx.unchanged[unchanged..].iter_mut().for_each(|u| label(&mut u.join, &mut u.at));
    }
    if !remaps.is_empty() {
        *sel = *ex.select;
    }
    Ok(remaps)
}

/// Rewrite the joins of each FROM item of `sel` and re-point the SELECT at them.
fn rewrite_joins(sel: &mut Select, ctx: &mut Ctx) -> Result<Vec<Remap>> {
    let mut remaps: Vec<Remap> = Vec::new();
    let (saved, saved_unchanged) = (ctx.changes.len(), ctx.unchanged.len());
    let mut done: Vec<Done> = Vec::new();
    let mut conjuncts = Vec::new();
    if let Some(w) = &sel.selection {
        super::condition::conjuncts(w, &mut conjuncts);
    }
    let used = super::estimate::Used::of(sel, &ctx.order_by);
    let hints = super::hints::Hints::of(sel);
    for fi in 0..sel.from.len() {
        if sel.from[fi].joins.is_empty() {
            continue;
        }
        if let Some(d) = process_from(&sel.from[fi], &conjuncts, (&used, &hints), ctx)? {
            remaps.extend(d.remaps);
            done.push((fi, d.twj, d.star));
        }
    }
    if remaps.is_empty() {
        return Ok(remaps);
    }
    if star_unlisted(sel, &done) {
        // Nothing of this SELECT is rewritten: its joins run as written, once.
        ctx.unchanged[saved_unchanged..].iter_mut().for_each(|u| {
            u.in_branches = false;
            u.after = None;
        });
        for c in ctx.changes.split_off(saved) {
            let before = Some(c.before);
            ctx.unchanged.push(Unchanged {
                before,
                ..Unchanged::new(c.join, c.at, LeftAlone::StarUnlisted)
            });
        }
        return Ok(vec![]);
    }
    keep_output_names(sel, &remaps);
    super::hints::drop_moved(sel, &remaps.iter().map(|r| r.alias.clone()).collect::<Vec<_>>());
    // Re-point every expression of this SELECT, then put the new FROM items in place (their
    // derived tables are not re-pointed: inside them the original aliases are still valid).
    repoint_all(sel, &remaps);
    let mut stars: Vec<(usize, Vec<SelectItem>)> = Vec::new();
    for (fi, twj, star) in done {
        sel.from[fi] = twj;
        stars.push((fi, star.unwrap_or_default()));
    }
    expand_stars(sel, &remaps, &stars)?;
    Ok(remaps)
}

/// `*` must list the same columns after the rewrite: whether it covers a rewritten FROM item
/// whose `*` cannot be listed, or a USING/NATURAL join left as written.
fn star_unlisted(sel: &Select, done: &[Done]) -> bool {
    if !sel.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(_))) {
        return false;
    }
    done.iter().any(|d| d.2.is_none())
        || sel.from.iter().enumerate().any(|(fi, twj)| {
            !done.iter().any(|d| d.0 == fi) && twj.joins.iter().any(|j| merges(&j.join_operator))
        })
}

/// A bare `alias.col` in the select list keeps its output name (as written) once re-pointed.
fn keep_output_names(sel: &mut Select, remaps: &[Remap]) {
    for item in sel.projection.iter_mut() {
        if let SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) = item {
            if parts.len() == 2
                && remaps.iter().any(|r| {
                    r.alias.eq_ignore_ascii_case(&parts[0].value)
                        && r.columns.contains_key(&lc(&parts[1].value))
                })
            {
                let alias = parts[1].clone();
                *item = SelectItem::ExprWithAlias {
                    expr: Expr::CompoundIdentifier(parts.clone()),
                    alias,
                };
            }
        }
    }
}

/// `*` and `alias.*`: the same columns, under their original names.
fn expand_stars(
    sel: &mut Select,
    remaps: &[Remap],
    stars: &[(usize, Vec<SelectItem>)],
) -> Result<()> {
    let mut projection = Vec::new();
    for item in std::mem::take(&mut sel.projection) {
        match &item {
            SelectItem::Wildcard(_) => projection.extend(star_of_from(&sel.from, stars)?),
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _)
                if name.0.len() == 1 =>
            {
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
    Ok(())
}

/// `*` over the whole FROM: each rewritten item's listed columns, `alias.*` of the others
/// (not of the right input of a SEMI or ANTI join, which outputs none).
fn star_of_from(
    from: &[TableWithJoins],
    stars: &[(usize, Vec<SelectItem>)],
) -> Result<Vec<SelectItem>> {
    let mut out = Vec::new();
    for (fi, twj) in from.iter().enumerate() {
        if let Some((_, star)) = stars.iter().find(|s| s.0 == fi) {
            out.extend(star.iter().cloned());
            continue;
        }
        if let Some(a) = factor_alias(&twj.relation) {
            out.push(parse_item(&format!("{}.*", ident(&a)))?);
        }
        for j in &twj.joins {
            let outputs_right =
                !matches!(join_type(&j.join_operator), Ok((JoinType::Semi | JoinType::Anti, _)));
            if let (Some(a), true) = (factor_alias(&j.relation), outputs_right) {
                out.push(parse_item(&format!("{}.*", ident(&a)))?);
            }
        }
    }
    Ok(out)
}
