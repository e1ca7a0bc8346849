//! A join's type and condition read against its two inputs: which equalities are keys (a
//! column of each side), and which predicates of ON are the others.

use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions_mut, BinaryOperator, Expr, Ident, JoinConstraint, JoinOperator, ObjectName};

use super::input::Input;
use super::names::last_ident;
use super::reason::LeftAlone;
use crate::plan::{JoinType, Side};

/// A join's condition against its inputs.
pub(super) struct Condition {
    pub how: JoinType,
    /// (left column, right column) of each key equality.
    pub keys: Vec<(String, String)>,
    /// Each key equality as written, for the report.
    pub key_text: Vec<String>,
    /// The other predicates of ON, named as the branches name the inputs.
    pub extras: Vec<Expr>,
    /// USING: each key is one merged column in the output.
    pub using: bool,
}

impl Condition {
    pub fn left_keys(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.0.clone()).collect()
    }

    pub fn right_keys(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.1.clone()).collect()
    }
}

/// The join type and constraint of a join operator the rewrite handles.
pub(super) fn join_type(op: &JoinOperator) -> Result<(JoinType, &JoinConstraint), LeftAlone> {
    Ok(match op {
        JoinOperator::Join(c) | JoinOperator::Inner(c) => (JoinType::Inner, c),
        JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinType::Left, c),
        JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinType::Right, c),
        JoinOperator::FullOuter(c) => (JoinType::Full, c),
        JoinOperator::Semi(c) | JoinOperator::LeftSemi(c) => (JoinType::Semi, c),
        JoinOperator::Anti(c) | JoinOperator::LeftAnti(c) => (JoinType::Anti, c),
        JoinOperator::CrossJoin(_) => return Err(LeftAlone::CrossJoin),
        other => return Err(LeftAlone::UnsupportedOperator(format!("{other:?}"))),
    })
}

/// The condition of a join of `l` and `r`, or why it has no keys to plan on.
pub(super) fn condition_of(op: &JoinOperator, l: &Input, r: &Input) -> Result<Condition, LeftAlone> {
    let (how, constraint) = join_type(op)?;
    if l.alias.eq_ignore_ascii_case(&r.alias) || l.quals.iter().any(|(a, _)| a.eq_ignore_ascii_case(&r.alias)) {
        return Err(LeftAlone::SameName);
    }
    let mut c = Condition { how, keys: Vec::new(), key_text: Vec::new(), extras: Vec::new(), using: false };
    match constraint {
        JoinConstraint::On(e) => on_keys(e, l, r, &mut c),
        JoinConstraint::Using(cols) => using_keys(cols, l, r, &mut c)?,
        JoinConstraint::Natural => return Err(LeftAlone::Natural),
        JoinConstraint::None => return Err(LeftAlone::NoCondition),
    }
    if c.keys.is_empty() {
        return Err(LeftAlone::NonEqui);
    }
    Ok(c)
}

/// ON: each conjunct that equates a column of each side is a key; the rest are extras.
fn on_keys(e: &Expr, l: &Input, r: &Input, c: &mut Condition) {
    let mut cs = Vec::new();
    conjuncts(e, &mut cs);
    for mut x in cs {
        if let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = &x {
            match (side_of(left, l, r), side_of(right, l, r)) {
                (Some((Side::Left, a)), Some((Side::Right, b))) | (Some((Side::Right, b)), Some((Side::Left, a))) => {
                    c.keys.push((a, b));
                    c.key_text.push(format!("{} = {}", crate::sql::render_expr(left), crate::sql::render_expr(right)));
                    continue;
                }
                _ => {}
            }
        }
        to_branch_names(&mut x, l, r);
        c.extras.push(x);
    }
}

/// USING: every column must be on both sides.
fn using_keys(cols: &[ObjectName], l: &Input, r: &Input, c: &mut Condition) -> Result<(), LeftAlone> {
    for col in cols {
        let name = last_ident(col).map(|i| i.value.clone()).unwrap_or_default();
        match (l.column(&name), r.column(&name)) {
            (Some(a), Some(b)) => {
                c.key_text.push(format!("{}.{a} = {}.{b}", l.alias, r.alias));
                c.keys.push((a, b));
            }
            _ => return Err(LeftAlone::UsingNotOnBothSides(name)),
        }
    }
    c.using = true;
    Ok(())
}

/// Split `a AND b AND c`, in any nesting of parentheses: `(a = b)`, `((a = b) AND (c = d))`.
pub(super) fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        // `(a AND b)`, `((a = b))`: the parentheses group nothing a conjunct needs.
        Expr::Nested(inner) if matches!(inner.as_ref(), Expr::BinaryOp { op: BinaryOperator::And | BinaryOperator::Eq, .. } | Expr::Nested(_)) => {
            conjuncts(inner, out)
        }
        // `(a OR b)` keeps its parentheses: it is printed again inside an AND.
        other => out.push(other.clone()),
    }
}

/// Which input a column reference belongs to, and its name there.
fn side_of(e: &Expr, l: &Input, r: &Input) -> Option<(Side, String)> {
    match e {
        Expr::CompoundIdentifier(p) if p.len() == 2 => {
            if p[0].value.eq_ignore_ascii_case(&r.alias) {
                r.column(&p[1].value).map(|c| (Side::Right, c))
            } else {
                l.resolve(Some(&p[0].value), &p[1].value).map(|c| (Side::Left, c))
            }
        }
        Expr::Identifier(i) => match (l.resolve(None, &i.value), r.column(&i.value)) {
            (Some(c), None) => Some((Side::Left, c)),
            (None, Some(c)) => Some((Side::Right, c)),
            _ => None,
        },
        Expr::Nested(inner) => side_of(inner, l, r),
        _ => None,
    }
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
