//! One FROM item's joins, left to right: each equi-join whose inputs trace to tables is
//! planned (a later join's left input is the joins before it) and rewritten if it has
//! something to fix; every other join is recorded with the reason it stays.

use sqlparser::ast::{Expr, JoinConstraint, SelectItem, TableWithJoins};

use super::branch_rows::Reading;
use super::chain::Prefix;
use super::condition::{condition_in_scope, condition_of, join_type};
use super::estimate::Used;
use super::filters::JoinScope;
use super::hints::Hints;
use super::in_branches::{self, Earlier};
use super::input::{input_of, Input};
use super::join::{try_join, Outcome};
use super::names::join_text;
use super::reason::{LeftAlone, Untraced};
use super::scope::Remap;
use super::through::link_of;
use super::{At, Ctx, Unchanged};
use crate::error::Result;
use crate::plan::JoinType;
use crate::plan::TaskStats;

/// A FROM item with a join rewritten.
pub(super) struct FromDone {
    pub twj: TableWithJoins,
    pub remaps: Vec<Remap>,
    /// `*` of the FROM item; None when it cannot be listed.
    pub star: Option<Vec<SelectItem>>,
}

/// Whether a join of the chain after the first has USING or NATURAL.
pub(super) fn merges_later(twj: &TableWithJoins) -> bool {
    twj.joins.len() > 1 && twj.joins.iter().skip(1).any(|j| merges(&j.join_operator))
}

/// Whether a join has USING or NATURAL (its output merges the keys).
pub(super) fn merges(op: &sqlparser::ast::JoinOperator) -> bool {
    matches!(join_type(op), Ok((_, JoinConstraint::Using(_) | JoinConstraint::Natural)))
}

/// The FROM item with its joins rewritten; `None` when nothing changed.
pub(super) fn process_from(
    twj: &TableWithJoins,
    conjuncts: &[Expr],
    (used, hints): (&Used, &Hints),
    ctx: &mut Ctx,
) -> Result<Option<FromDone>> {
    if merges_later(twj) {
        for j in 0..twj.joins.len() {
            ctx.unchanged.push(Unchanged::new(
                join_text(twj, j),
                At::of(&twj.joins[j].relation),
                LeftAlone::UsingInChain,
            ));
        }
        return Ok(None);
    }
    let mut p = Prefix::start(twj, input_of(&twj.relation, ctx, 0).map_err(LeftAlone::LeftInput));
    let (first, first_change) = (ctx.unchanged.len(), ctx.changes.len());
    let scope_of =
        |j: usize| JoinScope { conjuncts, later_outer: later_outer(twj, j), used, hints };
    let mut earlier = Vec::new();
    for (j, join) in twj.joins.iter().enumerate() {
        let right = input_of(&join.relation, ctx, 0);
        let (members, links) = (p.next_member(), p.links.len());
        match join_next(&mut p, twj, j, &right, &scope_of(j), ctx)? {
            Step::LeftAlone { why, before, left } => {
                if let (Some(_), Some(l), Ok(r)) = (&before, left, &right) {
                    earlier.push(Earlier {
                        unchanged: ctx.unchanged.len(),
                        l: *l,
                        r: r.clone(),
                        j,
                        members,
                        links,
                    });
                }
                ctx.unchanged.push(Unchanged {
                    before,
                    ..Unchanged::new(join_text(twj, j), At::of(&join.relation), why)
                });
                p.append(join, right.ok());
            }
            // The joins of this chain left as written so far run in its branches: each is
            // counted again on the rows of each branch.
            Step::Rewritten { branches, readings } if branches > 1 => {
                in_branches::recount(&p, twj, &earlier, readings.as_deref(), scope_of, ctx);
                ctx.unchanged[first..].iter_mut().for_each(|u| u.in_branches = true);
                // The joins of this chain rewritten before it: their branches run in its own.
                let this = ctx.changes.len() - 1;
                ctx.changes[first_change..this].iter_mut().for_each(|c| c.in_branches = true);
            }
            Step::Rewritten { .. } => {}
        }
    }
    if !p.rewritten {
        return Ok(None);
    }
    let star = p.star_items()?;
    Ok(Some(FromDone { remaps: p.remaps(), twj: p.cur, star }))
}

/// Whether a join after the `j`-th of the FROM item is a right or full join.
fn later_outer(twj: &TableWithJoins, j: usize) -> bool {
    twj.joins[j + 1..]
        .iter()
        .any(|x| matches!(join_type(&x.join_operator), Ok((JoinType::Right | JoinType::Full, _))))
}

/// What became of one join of the chain.
enum Step {
    /// Rewritten into the prefix: its UNION ALL's branches, and the rows of the joins before
    /// it that they read.
    Rewritten { branches: usize, readings: Option<Vec<Reading>> },
    /// Left as written (the caller appends it to the prefix): why, its tasks where measured,
    /// and its left input as planned.
    LeftAlone { why: LeftAlone, before: Option<TaskStats>, left: Option<Box<Input>> },
}

impl Step {
    fn alone(why: LeftAlone) -> Result<Step> {
        Ok(Step::LeftAlone { why, before: None, left: None })
    }
}

/// Plan the `j`-th join on the joins before it (`p`) and `right`: rewritten into `p` (its
/// branches), or the reason it stays as written.
fn join_next(
    p: &mut Prefix,
    twj: &TableWithJoins,
    j: usize,
    right: &std::result::Result<Input, Untraced>,
    scope: &JoinScope,
    ctx: &mut Ctx,
) -> Result<Step> {
    let r = match (&p.broken, right) {
        (Some(why), _) if j == 0 => return Step::alone(why.clone()),
        (Some(why), _) => return Step::alone(LeftAlone::ChainUntraced(Box::new(why.clone()))),
        (None, Err(why)) => return Step::alone(LeftAlone::RightInput(why.clone())),
        (None, Ok(r)) => r,
    };
    let join = &twj.joins[j];
    let right_out = join_type(&join.join_operator).map(|x| x.0.outputs_right()).unwrap_or(true);
    let mut l = p.as_input(r, right_out, ctx);
    if l.joined.is_some() {
        let mut before =
            TableWithJoins { relation: twj.relation.clone(), joins: twj.joins[..j].to_vec() };
        crate::sql::fix_literals(&mut before);
        l.joined = Some(before.to_string().split_whitespace().collect::<Vec<_>>().join(" "));
    }
    let cond = condition_in_scope(&join.join_operator, &l, r, scope).map(|(c, _)| c);
    let link = cond
        .as_ref()
        .map_err(|e| e.to_string())
        .and_then(|c| link_of(join, c, &l, r, p.next_member()));
    if let Ok(c) = &cond {
        p.note_equal(c, &l);
    }
    let before = l.joined.is_some().then(|| p.before());
    let outcome = try_join(&l, r, join, join_text(twj, j), scope, before.as_ref(), ctx)?;
    p.links.push(link);
    match outcome {
        Outcome::Rewritten(mut joined) => {
            let (branches, readings) = (joined.branches, joined.readings.take());
            p.absorb(&l, r, *joined);
            Ok(Step::Rewritten { branches, readings })
        }
        Outcome::LeftAlone(why, before) => {
            Ok(Step::LeftAlone { why, before, left: Some(Box::new(l)) })
        }
    }
}

/// Every join of a FROM item, left as written, as the counts follow them: for what runs over
/// the joins' rows (a window). Why one join cannot be followed is kept in its link.
pub(super) fn chain_as_written(
    twj: &TableWithJoins,
    ctx: &Ctx,
) -> std::result::Result<Prefix, String> {
    let mut p = Prefix::start(twj, input_of(&twj.relation, ctx, 0).map_err(LeftAlone::LeftInput));
    for join in &twj.joins {
        if let Some(why) = &p.broken {
            return Err(why.to_string());
        }
        let r = input_of(&join.relation, ctx, 0).map_err(|e| e.to_string())?;
        let right_out = join_type(&join.join_operator).map(|x| x.0.outputs_right()).unwrap_or(true);
        let l = p.as_input_named(&r, right_out, "__sjp".into());
        let cond = condition_of(&join.join_operator, &l, &r);
        let link = cond
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|c| link_of(join, c, &l, &r, p.next_member()));
        if let Ok(c) = &cond {
            p.note_equal(c, &l);
        }
        p.links.push(link);
        p.append(join, Some(r));
    }
    Ok(p)
}
