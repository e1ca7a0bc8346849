//! The rows of a rewritten chained join's left input (the joins before it) that each branch of
//! its UNION ALL reads, read from the emitted SQL itself: every place a branch reads that input,
//! with the WHERE it reads it under (`(SELECT ... FROM prefix __sj_t WHERE pred)`), and whether
//! the join that consumes it drops NULL keys (Spark infers `IS NOT NULL` on the keys of an inner
//! or semi join, of a left join's right side, of a right join's left side) - both pushed by
//! Spark down to the input of the earlier joins that holds the key. Each earlier join then runs
//! once per reading, on those rows: `from` re-counts it under each.
//!
//! The conditions are returned on the columns of the prefix's members (`alias.column` as the
//! query names them), so that they read as WHERE conjuncts of the query; `None` when some part
//! of a branch reads the prefix in a way this does not follow.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_expressions, visit_expressions_mut, Expr, Ident, Query, SetExpr, TableFactor,
    TableWithJoins,
};

use super::condition::join_type;
use super::input::Input;
use crate::plan::JoinType;

/// One reading of the prefix by a branch: the conditions on its rows (conjuncts over the
/// members' columns; none for every row).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Reading {
    pub conditions: Vec<Expr>,
}

/// Every reading of the prefix `l` (whose SQL is `l.source`) in the branches of `union`, each
/// once (two branches reading the same rows run the earlier joins on the same rows); `keys`:
/// the join's left keys, as `l` names them.
pub(super) fn readings(union: &Query, l: &Input, keys: &[String]) -> Option<Vec<Reading>> {
    let source = crate::sql::parse_query(&format!("SELECT * FROM {} AS __sj_x", l.source)).ok()?;
    let SetExpr::Select(s) = &*source.body else { return None };
    let TableFactor::Derived { subquery, .. } = &s.from.first()?.relation else { return None };
    let walk = Walk { source: subquery.to_string(), l, keys };
    let mut out: Vec<Reading> = Vec::new();
    walk.set(&union.body, &mut out)?;
    // A reading in a place the walk does not look (a subquery in a condition): not followed.
    if union.to_string().matches(&walk.source).count() != out.len() {
        return None;
    }
    let mut unique = Vec::new();
    for r in out {
        if !unique.contains(&r) {
            unique.push(r);
        }
    }
    Some(unique)
}

struct Walk<'a> {
    /// The prefix's subquery as text, to recognise it.
    source: String,
    l: &'a Input,
    keys: &'a [String],
}

impl Walk<'_> {
    fn set(&self, body: &SetExpr, out: &mut Vec<Reading>) -> Option<()> {
        match body {
            SetExpr::SetOperation { left, right, .. } => {
                self.set(left, out)?;
                self.set(right, out)
            }
            SetExpr::Select(s) => s.from.iter().try_for_each(|twj| self.item(twj, out)),
            SetExpr::Query(q) => self.set(&q.body, out),
            _ => Some(()),
        }
    }

    /// Each relation of a FROM item, with what its join does to NULL keys on its side.
    fn item(&self, twj: &TableWithJoins, out: &mut Vec<Reading>) -> Option<()> {
        let first = twj
            .joins
            .first()
            .map(|j| join_type(&j.join_operator).map(|x| x.0).ok())
            .unwrap_or(Some(JoinType::Full));
        self.relation(
            &twj.relation,
            first.is_some_and(|t| matches!(t, JoinType::Inner | JoinType::Semi | JoinType::Right)),
            out,
        )?;
        for j in &twj.joins {
            let how = join_type(&j.join_operator).ok()?.0;
            self.relation(
                &j.relation,
                matches!(how, JoinType::Inner | JoinType::Semi | JoinType::Left | JoinType::Anti),
                out,
            )?;
        }
        Some(())
    }

    fn relation(&self, rel: &TableFactor, drops_nulls: bool, out: &mut Vec<Reading>) -> Option<()> {
        let TableFactor::Derived { subquery, alias, .. } = rel else { return Some(()) };
        if self.is_source(subquery) {
            let alias = alias.as_ref()?.name.value.clone();
            out.push(self.reading(&alias, None, drops_nulls)?);
            return Some(());
        }
        if let SetExpr::Select(s) = &*subquery.body {
            if let [TableWithJoins {
                relation: TableFactor::Derived { subquery: inner, alias: Some(a), .. },
                joins,
            }] = s.from.as_slice()
            {
                if joins.is_empty() && self.is_source(inner) {
                    out.push(self.reading(&a.name.value, s.selection.as_ref(), drops_nulls)?);
                    return Some(());
                }
            }
        }
        self.set(&subquery.body, out)
    }

    fn is_source(&self, q: &Query) -> bool {
        q.to_string() == self.source
    }

    /// The reading of the prefix under `alias` with `pred`, as conditions on its members.
    fn reading(&self, alias: &str, pred: Option<&Expr>, drops_nulls: bool) -> Option<Reading> {
        let mut conditions = Vec::new();
        if let Some(p) = pred {
            conditions.push(self.on_members(p, alias)?);
        }
        if drops_nulls {
            for k in self.keys {
                let col = Expr::CompoundIdentifier(vec![Ident::new(alias), Ident::new(k.clone())]);
                conditions.push(self.on_members(&Expr::IsNotNull(Box::new(col)), alias)?);
            }
        }
        Some(Reading { conditions })
    }

    /// `e` (over the prefix read as `alias`) with each column named as its member names it.
    fn on_members(&self, e: &Expr, alias: &str) -> Option<Expr> {
        let mut e = e.clone();
        let mut ok = true;
        let _ = visit_expressions_mut(&mut e, |x: &mut Expr| {
            let col = match &*x {
                Expr::CompoundIdentifier(p)
                    if p.len() == 2 && p[0].value.eq_ignore_ascii_case(alias) =>
                {
                    Some(p[1].value.clone())
                }
                Expr::Identifier(i) => Some(i.value.clone()),
                Expr::CompoundIdentifier(_) => None,
                _ => return ControlFlow::<()>::Continue(()),
            };
            match col.and_then(|c| self.member_column(&c)) {
                Some((m, c)) => *x = Expr::CompoundIdentifier(vec![Ident::new(m), Ident::new(c)]),
                None => ok = false,
            }
            ControlFlow::<()>::Continue(())
        });
        (ok && !has_subquery(&e)).then_some(e)
    }

    /// The member alias and column of the prefix's column `col`.
    fn member_column(&self, col: &str) -> Option<(String, String)> {
        self.l.quals.iter().find_map(|(alias, m)| {
            m.iter()
                .find(|(_, w)| w.eq_ignore_ascii_case(col))
                .map(|(orig, _)| (alias.clone(), orig.clone()))
        })
    }
}

fn has_subquery(e: &Expr) -> bool {
    let mut hit = false;
    let _ = visit_expressions(e, |x: &Expr| {
        if matches!(x, Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }) {
            hit = true;
        }
        ControlFlow::<()>::Continue(())
    });
    hit
}
