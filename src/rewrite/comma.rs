//! Comma joins: `FROM a, b, c WHERE a.k = b.k AND b.j = c.j AND ...`, which Spark plans as
//! inner joins on those equalities, written as the explicit chain `a JOIN b ON a.k = b.k JOIN c
//! ON b.j = c.j` with the rest of WHERE kept, so that the chain code can plan each join.
//!
//! The explicit form returns the same rows: an inner join's ON and a WHERE conjunct filter the
//! same pairs. Each equality between columns of two FROM items moves to the ON of the later of
//! the two; every other conjunct stays in WHERE. Items are taken in the order written; when the
//! next one has no equality with those before it, the first later item that has one goes first,
//! unless the SELECT lists `*` (whose columns follow the FROM order).

use std::collections::HashSet;

use sqlparser::ast::{
    BinaryOperator, Expr, Join, JoinConstraint, JoinOperator, Select, SelectItem, TableWithJoins,
};

use super::condition::{conjuncts, join_with};
use super::input::input_of;
use super::names::{factor_alias, lc};
use super::reason::LeftAlone;
use super::Ctx;

/// One FROM item of a comma join: the names its relations answer to and their columns.
struct Item {
    aliases: Vec<String>,
    /// Lower-case column names of its relations; None when one of them cannot be traced.
    columns: Option<HashSet<String>>,
}

/// A WHERE conjunct, and the two FROM items it equates (when it is `col = col` across items).
struct Conjunct {
    expr: Expr,
    link: Option<(usize, usize)>,
}

/// The SELECT with its comma join written as explicit joins, or why it stays as written.
/// `Ok(None)`: not a comma join.
pub(super) fn explicit_form(sel: &Select, ctx: &Ctx) -> Result<Option<Box<Select>>, LeftAlone> {
    if sel.from.len() < 2 {
        return Ok(None);
    }
    if !sel.lateral_views.is_empty() {
        return Err(LeftAlone::CommaLateralView);
    }
    let items: Vec<Item> = sel.from.iter().map(|twj| item_of(twj, ctx)).collect();
    let mut cs = Vec::new();
    if let Some(w) = &sel.selection {
        conjuncts(w, &mut cs);
    }
    let cs: Vec<Conjunct> =
        cs.into_iter().map(|expr| Conjunct { link: link_of(&expr, &items), expr }).collect();
    let order = join_order(&items, &cs, sel)?;
    let mut twj = sel.from[order[0]].clone();
    let mut used = vec![false; cs.len()];
    for (n, &j) in order.iter().enumerate().skip(1) {
        let placed = &order[..n];
        if !sel.from[j].joins.is_empty() {
            return Err(LeftAlone::CommaItemWithJoins(
                factor_alias(&sel.from[j].relation).unwrap_or_default(),
            ));
        }
        let mut on = Vec::new();
        for (i, c) in cs.iter().enumerate() {
            if !used[i]
                && c.link.is_some_and(|(a, b)| {
                    (a == j && placed.contains(&b)) || (b == j && placed.contains(&a))
                })
            {
                used[i] = true;
                on.push(c.expr.clone());
            }
        }
        twj.joins.push(Join {
            relation: sel.from[j].relation.clone(),
            global: false,
            join_operator: JoinOperator::Join(JoinConstraint::On(join_with(
                on,
                BinaryOperator::And,
            ))),
        });
    }
    let rest: Vec<Expr> =
        cs.into_iter().zip(used).filter(|(_, u)| !u).map(|(c, _)| c.expr).collect();
    let mut out = sel.clone();
    out.from = vec![twj];
    out.selection = if rest.is_empty() { None } else { Some(join_with(rest, BinaryOperator::And)) };
    Ok(Some(Box::new(out)))
}

/// The names and columns of one FROM item's relations.
fn item_of(twj: &TableWithJoins, ctx: &Ctx) -> Item {
    let relations = std::iter::once(&twj.relation).chain(twj.joins.iter().map(|j| &j.relation));
    let mut item = Item { aliases: Vec::new(), columns: Some(HashSet::new()) };
    for r in relations {
        item.aliases.extend(factor_alias(r));
        match (input_of(r, ctx, 0), &mut item.columns) {
            (Ok(inp), Some(cols)) => cols.extend(inp.columns.iter().map(|c| lc(c))),
            _ => item.columns = None,
        }
    }
    item
}

/// The FROM item a column reference belongs to, when that is certain.
fn owner(e: &Expr, items: &[Item]) -> Option<usize> {
    let one = |hits: Vec<usize>| if hits.len() == 1 { Some(hits[0]) } else { None };
    match e {
        Expr::CompoundIdentifier(p) if p.len() == 2 => one(items
            .iter()
            .enumerate()
            .filter(|(_, it)| it.aliases.iter().any(|a| a.eq_ignore_ascii_case(&p[0].value)))
            .map(|(i, _)| i)
            .collect()),
        Expr::Identifier(id) if items.iter().all(|it| it.columns.is_some()) => one(items
            .iter()
            .enumerate()
            .filter(|(_, it)| it.columns.as_ref().is_some_and(|c| c.contains(&lc(&id.value))))
            .map(|(i, _)| i)
            .collect()),
        Expr::Nested(inner) => owner(inner, items),
        _ => None,
    }
}

/// `x = y` with x and y columns of two different FROM items.
fn link_of(e: &Expr, items: &[Item]) -> Option<(usize, usize)> {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::Eq, right } => {
            match (owner(left, items), owner(right, items)) {
                (Some(a), Some(b)) if a != b => Some((a, b)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The order the items are joined in: as written, except that an item with no equality to
/// those before it waits for the first later one that has one.
fn join_order(items: &[Item], cs: &[Conjunct], sel: &Select) -> Result<Vec<usize>, LeftAlone> {
    let mut order = vec![0];
    while order.len() < items.len() {
        let linked = |j: usize| {
            cs.iter().any(|c| {
                c.link.is_some_and(|(a, b)| {
                    (a == j && order.contains(&b)) || (b == j && order.contains(&a))
                })
            })
        };
        let Some(next) = (0..items.len()).find(|j| !order.contains(j) && linked(*j)) else {
            let lone = (0..items.len()).find(|j| !order.contains(j)).unwrap_or(0);
            return Err(LeftAlone::CommaNoEquality(
                items[lone].aliases.first().cloned().unwrap_or_default(),
            ));
        };
        order.push(next);
    }
    let reordered = order.windows(2).any(|w| w[0] > w[1]);
    if reordered && sel.projection.iter().any(|p| matches!(p, SelectItem::Wildcard(_))) {
        return Err(LeftAlone::CommaStarReordered);
    }
    Ok(order)
}
