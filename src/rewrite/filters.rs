//! The conditions Spark applies to a join's inputs before the join, as row filters on each
//! side's base table, so that the counts are of the rows that reach the join: a subquery's or
//! CTE's own WHERE, and the conjuncts of the query's WHERE on one input's columns where Spark
//! pushes them below this join (both sides of an inner join; the left of a left, semi or anti
//! join; the right of a right join; neither side of a full join, nor any side when a later join
//! of the chain is a right or full join, which can bring rows back as NULLs).
//!
//! What the counts cannot apply (a condition on two inputs, on the side an outer join keeps, a
//! type the filter does not compare as Spark does) is listed in the join's notes.

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions, visit_expressions_mut, Expr, Ident};

use super::input::Input;
use super::names::lc;
use crate::count::filter::RowFilter;
use crate::count::Engine;
use crate::plan::{JoinType, Side};
use crate::table::Table;

/// The filters the counts of one join apply, and the WHERE conditions on its inputs they do not.
#[derive(Default)]
pub(super) struct SideFilters {
    pub left: Option<RowFilter>,
    pub right: Option<RowFilter>,
    /// Each condition not applied, as written, with why.
    pub unapplied: Vec<String>,
    /// The query's WHERE conjuncts applied to a side, as written.
    pub applied: Vec<Expr>,
}

/// Where the join sits: the SELECT's WHERE (split at AND) and whether a later join of its chain
/// is a right or full join.
pub(super) struct JoinScope<'a> {
    pub conjuncts: &'a [Expr],
    pub later_outer: bool,
    /// The columns the SELECT reads, for Spark's size estimate of an input.
    pub used: &'a super::estimate::Used,
    /// The SELECT's join strategy hints.
    pub hints: &'a super::hints::Hints,
}

/// The filters of the join of `l` and `r` (`how`), whose key columns are in `ltable` and `rtable`.
/// `skip`: conjuncts the left input's counts apply through the joins before it. `on`: the
/// predicates of ON beyond the keys.
pub(super) fn side_filters(
    scope: &JoinScope,
    l: (&Input, &Table, &str),
    r: (&Input, &Table, &str),
    how: JoinType,
    skip: &[Expr],
    on: &[Expr],
    engine: &dyn Engine,
) -> SideFilters {
    let mut out = SideFilters::default();
    for (side, (inp, table, tname)) in [(Side::Left, l), (Side::Right, r)] {
        let pushed = !scope.later_outer && pushes_below(how, side);
        let other = if side == Side::Left { r.0 } else { l.0 };
        let mut conds =
            on_filters(on, (inp, table, tname), other, (how, side), engine, &mut out.unapplied);
        for c in &inp.conditions {
            match engine.can_filter(c, table) {
                Ok(()) => conds.push(c.clone()),
                Err(why) => out.unapplied.push(format!(
                    "{} (in {}): {why}",
                    crate::sql::render_expr(c),
                    inp.display()
                )),
            }
        }
        for c in scope.conjuncts {
            if !mentions(c, inp) || (side == Side::Left && skip.contains(c)) {
                continue;
            }
            let text = crate::sql::render_expr(c);
            match to_base(c, inp, tname) {
                Some(b) if pushed => match engine.can_filter(&b, table) {
                    Ok(()) => {
                        conds.push(b);
                        out.applied.push(c.clone());
                    }
                    Err(why) => out.unapplied.push(format!("{text}: {why}")),
                },
                Some(_) => out
                    .unapplied
                    .push(format!("{text}: Spark applies it after this {} join", how.as_str())),
                None => out
                    .unapplied
                    .push(format!("{text}: not a condition on {}'s table alone", inp.display())),
            }
        }
        let f = (!conds.is_empty()).then_some(RowFilter { conditions: conds });
        match side {
            Side::Left => out.left = f,
            Side::Right => out.right = f,
        }
    }
    out.unapplied.dedup();
    out
}

/// The predicates of ON on `inp`'s columns alone that Spark pushes into that side (its
/// PushPredicateThroughJoin: both sides of an inner or semi join, the side an outer or anti
/// join does not keep), on its base table; one the filter cannot compare as Spark does goes to
/// `unapplied`.
fn on_filters(
    on: &[Expr],
    (inp, table, tname): (&Input, &Table, &str),
    other: &Input,
    (how, side): (JoinType, Side),
    engine: &dyn Engine,
    unapplied: &mut Vec<String>,
) -> Vec<Expr> {
    let pushes = match how {
        JoinType::Inner | JoinType::Semi => true,
        JoinType::Left | JoinType::Anti => side == Side::Right,
        JoinType::Right => side == Side::Left,
        JoinType::Full => false,
    };
    if !pushes {
        return vec![];
    }
    let mut out = Vec::new();
    for c in on.iter().filter(|c| mentions(c, inp) && !mentions(c, other)) {
        match to_base(c, inp, tname).map(|b| engine.can_filter(&b, table).map(|()| b)) {
            Some(Ok(b)) => out.push(b),
            Some(Err(why)) => {
                unapplied.push(format!("{} (in ON): {why}", crate::sql::render_expr(c)))
            }
            None => unapplied.push(format!(
                "{} (in ON): not a condition on {}'s table alone",
                crate::sql::render_expr(c),
                inp.display()
            )),
        }
    }
    out
}

/// Whether Spark pushes a WHERE condition on `side` below a `how` join.
pub(super) fn pushes_below(how: JoinType, side: Side) -> bool {
    match how {
        JoinType::Inner => true,
        JoinType::Left | JoinType::Semi | JoinType::Anti => side == Side::Left,
        JoinType::Right => side == Side::Right,
        JoinType::Full => false,
    }
}

/// Whether `e`, a conjunct of WHERE, is never true when the columns of `inp` it reads are
/// NULL (a comparison, IN, BETWEEN, LIKE or IS NOT NULL on a column of `inp`; AND, OR and NOT of
/// such): Spark's null-intolerant predicates, by which its EliminateOuterJoin turns an outer
/// join whose NULL-filled rows the WHERE would drop into an inner one.
pub(super) fn rejects_nulls(e: &Expr, inp: &Input) -> bool {
    use sqlparser::ast::BinaryOperator as Op;
    match e {
        Expr::Nested(x) => rejects_nulls(x, inp),
        Expr::IsNotNull(x) => qualified_column(x, inp),
        Expr::BinaryOp { left, op: Op::And, right } => {
            rejects_nulls(left, inp) || rejects_nulls(right, inp)
        }
        Expr::BinaryOp { left, op: Op::Or, right } => {
            rejects_nulls(left, inp) && rejects_nulls(right, inp)
        }
        // NOT of a predicate that is NULL when the column is.
        Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::Not, expr } => null_when_null(expr, inp),
        other => null_when_null(other, inp),
    }
}

/// Whether `e` is NULL when the columns of `inp` it reads are: a comparison, IN, BETWEEN or
/// LIKE on one of them.
fn null_when_null(e: &Expr, inp: &Input) -> bool {
    use sqlparser::ast::BinaryOperator as Op;
    match e {
        Expr::Nested(x) => null_when_null(x, inp),
        Expr::BinaryOp {
            left,
            op: Op::Eq | Op::NotEq | Op::Lt | Op::LtEq | Op::Gt | Op::GtEq,
            right,
        } => qualified_column(left, inp) || qualified_column(right, inp),
        Expr::InList { expr, .. }
        | Expr::Between { expr, .. }
        | Expr::Like { expr, .. }
        | Expr::ILike { expr, .. } => qualified_column(expr, inp),
        _ => false,
    }
}

/// `alias.col` of `inp`. Qualified columns only: a bare USING key is the merged column,
/// NULL-filled on neither side.
fn qualified_column(x: &Expr, inp: &Input) -> bool {
    matches!(x, Expr::CompoundIdentifier(_)) && column_of(x, inp).is_some()
}

/// The join type Spark runs an outer join of `l` and `r` as, under the WHERE `scope`: a side
/// that a conjunct of WHERE on its columns drops when NULL-filled is not kept (its
/// EliminateOuterJoin, before it infers the keys' IS NOT NULL), unless a later right or full
/// join could bring NULLs back. With the condition that decides it. A join turned inner only
/// through a later one (a later inner join on its right side's column, or a WHERE on a later
/// input) is not: Spark converts it after inferring filters, so its left side's NULL keys
/// still shuffle, into one task, as a left join's do (Spark 3.5 and 4.x plans).
pub(super) fn spark_join_type(
    how: JoinType,
    scope: &JoinScope,
    l: &Input,
    r: &Input,
) -> (JoinType, Option<String>) {
    if scope.later_outer || !matches!(how, JoinType::Left | JoinType::Right | JoinType::Full) {
        return (how, None);
    }
    let rejecting = |inp: &Input| {
        scope
            .conjuncts
            .iter()
            .find(|c| rejects_nulls(c, inp))
            .map(|c| format!("WHERE {}", crate::sql::render_expr(c)))
    };
    let (on_l, on_r) = (rejecting(l), rejecting(r));
    match (how, on_l, on_r) {
        (JoinType::Left, _, Some(c)) | (JoinType::Right, Some(c), _) => (JoinType::Inner, Some(c)),
        (JoinType::Full, Some(c), Some(_)) => (JoinType::Inner, Some(c)),
        (JoinType::Full, Some(c), None) => (JoinType::Left, Some(c)),
        (JoinType::Full, None, Some(c)) => (JoinType::Right, Some(c)),
        (how, _, _) => (how, None),
    }
}

/// Whether `e` names a column of `inp`.
pub(super) fn mentions(e: &Expr, inp: &Input) -> bool {
    let mut hit = false;
    let _ = visit_expressions(e, |x: &Expr| {
        if column_of(x, inp).is_some() {
            hit = true;
        }
        ControlFlow::<()>::Continue(())
    });
    hit
}

/// `x` as a column of `inp`, when it is one.
pub(super) fn column_of(x: &Expr, inp: &Input) -> Option<String> {
    match x {
        Expr::Identifier(i) => inp.resolve(None, &i.value),
        Expr::CompoundIdentifier(p) if p.len() == 2 => inp.resolve(Some(&p[0].value), &p[1].value),
        _ => None,
    }
}

/// `e` with each column named as the base table `table` names it, if every column `e` reads
/// is a column of `inp` traced to that table and `e` holds no subquery.
pub(super) fn to_base(e: &Expr, inp: &Input, table: &str) -> Option<Expr> {
    let mut e = e.clone();
    let mut ok = true;
    let _ = visit_expressions_mut(&mut e, |x: &mut Expr| {
        match &*x {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                match column_of(x, inp).and_then(|c| inp.base.get(&lc(&c)).cloned()) {
                    Some((t, b)) if t == table => *x = Expr::Identifier(Ident::new(b)),
                    _ => ok = false,
                }
            }
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => ok = false,
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    ok.then_some(e)
}
