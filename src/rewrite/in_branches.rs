//! The joins of a chain left as written before a rewritten join run once in each branch of its
//! UNION ALL that reads them, on that branch's rows: Spark pushes the branch's conditions on the
//! key down to the input that holds it, and infers them across the joins' equalities (a
//! condition on `a.x` also holds for `b.x` after `a.x = b.x`, on both sides of an inner join,
//! on the right of a left, semi or anti join). Each such join is counted again under each
//! reading of its rows (`branch_rows`); its tasks after the rewrite are the largest of these.
//! Where one reading cannot be counted, its tasks as written stay, as the bound they are.

use std::collections::HashSet;
use std::ops::ControlFlow;

use sqlparser::ast::{visit_expressions, visit_expressions_mut, Expr, Ident, TableWithJoins};

use super::branch_rows::Reading;
use super::chain::Prefix;
use super::filters::JoinScope;
use super::input::Input;
use super::join::tasks_in_branch;
use super::names::lc;
use super::through::SentCache;
use super::Ctx;
use crate::plan::{JoinType, TaskStats};

/// A join of the chain left as written after it was measured, with what counting it again
/// needs.
pub(super) struct Earlier {
    /// Its entry in `ctx.unchanged`.
    pub unchanged: usize,
    /// Its inputs as they were planned: the joins before it made one input, and its own.
    pub l: Input,
    pub r: Input,
    /// Which join of the FROM item it is.
    pub j: usize,
    /// How many inputs, and joins as the counts follow them, the chain had before it.
    pub members: usize,
    pub links: usize,
}

/// A column of an input of the chain: (its alias, the column), lower case.
type Col = (String, String);

/// Give each earlier join its tasks after the rewrite of a later join whose branches read the
/// joins before that join as `readings` (None: not followed); `scope_of(j)`: the scope the
/// `j`-th join was planned in, without the readings' conditions.
pub(super) fn recount<'s>(
    p: &Prefix,
    twj: &TableWithJoins,
    earlier: &[Earlier],
    readings: Option<&[Reading]>,
    scope_of: impl Fn(usize) -> JoinScope<'s>,
    ctx: &mut Ctx,
) {
    let equal = Equalities::of(p);
    for e in earlier {
        let u = &ctx.unchanged[e.unchanged];
        // Already in the branches of a rewritten join before this one: branches of branches,
        // which the counts do not follow.
        let again = !u.in_branches;
        let Some(written) = u.before.clone() else { continue };
        let after = match readings {
            Some(rs) if again => largest(
                rs.iter().map(|rd| under(e, rd, &written, &equal, &scope_of(e.j), twj, p, ctx)),
            ),
            _ => None,
        };
        ctx.unchanged[e.unchanged].after = after;
    }
}

fn largest(each: impl Iterator<Item = Option<TaskStats>>) -> Option<TaskStats> {
    let all: Vec<TaskStats> = each.collect::<Option<_>>()?;
    all.into_iter().max_by_key(|t| t.max_task_rows)
}

/// The tasks of join `e` on the rows of one reading.
#[allow(clippy::too_many_arguments)]
fn under(
    e: &Earlier,
    rd: &Reading,
    written: &TaskStats,
    equal: &Equalities,
    scope: &JoinScope,
    twj: &TableWithJoins,
    p: &Prefix,
    ctx: &Ctx,
) -> Option<TaskStats> {
    let mut targets: Vec<String> = if e.l.quals.is_empty() {
        vec![lc(&e.l.alias)]
    } else {
        e.l.quals.iter().map(|(a, _)| lc(a)).collect()
    };
    targets.push(lc(&e.r.alias));
    let mut extra: Vec<Expr> = Vec::new();
    for c in &rd.conditions {
        for t in &targets {
            if let Some(x) = equal.on_input(c, t) {
                if !extra.contains(&x) {
                    extra.push(x);
                }
            }
        }
    }
    if extra.is_empty() {
        // The reading filters inputs joined after this join only: it runs on all its rows.
        return Some(written.clone());
    }
    let conjuncts: Vec<Expr> =
        scope.conjuncts.iter().cloned().chain(extra.iter().cloned()).collect();
    let scope = JoinScope { conjuncts: &conjuncts, ..*scope };
    let cache = SentCache::default();
    let before = e.l.joined.is_some().then(|| p.before_at(e.members, e.links, &cache));
    tasks_in_branch(&e.l, &e.r, &twj.joins[e.j], &scope, before.as_ref(), &extra, ctx)
}

/// Which columns of the chain's inputs Spark knows equal, and in which direction a condition
/// on one carries to the other.
struct Equalities {
    /// (from, to): a condition on `from` holds for `to`.
    edges: Vec<(Col, Col)>,
}

impl Equalities {
    fn of(p: &Prefix) -> Equalities {
        let inputs: Vec<&Input> = p.inputs().collect();
        let mut edges = Vec::new();
        for link in p.links.iter().flatten() {
            let Some(parent) = inputs.get(link.parent) else { continue };
            for (pb, cb) in &link.pairs {
                let (Some(a), Some(b)) = (column_named(parent, pb), column_named(&link.child, cb))
                else {
                    continue;
                };
                let (a, b) = ((lc(&parent.alias), a), (lc(&link.child.alias), b));
                if link.how == JoinType::Inner {
                    edges.push((b.clone(), a.clone()));
                }
                if matches!(
                    link.how,
                    JoinType::Inner | JoinType::Left | JoinType::Semi | JoinType::Anti
                ) {
                    edges.push((a, b));
                }
            }
        }
        Equalities { edges }
    }

    /// Every column a condition on `c` carries to, `c` included.
    fn closure(&self, c: &Col) -> Vec<Col> {
        let mut out = vec![c.clone()];
        let mut i = 0;
        while i < out.len() {
            for (from, to) in &self.edges {
                if *from == out[i] && !out.contains(to) {
                    out.push(to.clone());
                }
            }
            i += 1;
        }
        out
    }

    /// Condition `c` (on `alias.column`s) carried to columns of input `target` alone, if each
    /// of its columns carries there.
    fn on_input(&self, c: &Expr, target: &str) -> Option<Expr> {
        let cols = columns(c);
        if cols.is_empty() {
            return None;
        }
        let mut map = Vec::new();
        for col in &cols {
            let to = self.closure(col).into_iter().find(|x| x.0 == target)?;
            map.push((col.clone(), to));
        }
        let mut out = c.clone();
        let _ = visit_expressions_mut(&mut out, |x: &mut Expr| {
            if let Some(col) = as_col(x) {
                if let Some((_, to)) = map.iter().find(|(from, _)| *from == col) {
                    *x = Expr::CompoundIdentifier(vec![Ident::new(&to.0), Ident::new(&to.1)]);
                }
            }
            ControlFlow::<()>::Continue(())
        });
        Some(out)
    }
}

/// The column of `inp` whose base column is `base`.
fn column_named(inp: &Input, base: &str) -> Option<String> {
    inp.columns
        .iter()
        .find(|c| inp.base.get(&lc(c)).is_some_and(|(_, b)| b.eq_ignore_ascii_case(base)))
        .map(|c| lc(c))
}

fn as_col(x: &Expr) -> Option<Col> {
    match x {
        Expr::CompoundIdentifier(p) if p.len() == 2 => Some((lc(&p[0].value), lc(&p[1].value))),
        _ => None,
    }
}

/// The `alias.column`s an expression reads, each once.
fn columns(e: &Expr) -> Vec<Col> {
    let mut out: HashSet<Col> = HashSet::new();
    let _ = visit_expressions(e, |x: &Expr| {
        if let Some(c) = as_col(x) {
            out.insert(c);
        }
        ControlFlow::<()>::Continue(())
    });
    let mut v: Vec<Col> = out.into_iter().collect();
    v.sort();
    v
}
