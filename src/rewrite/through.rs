//! The rows that reach a chained join, counted through the joins before it: each join of the
//! chain so far is a link between the input it brings and the earlier input its keys are on;
//! together they make a tree, which `rows_before` roots at the input that holds the next
//! join's key. Each other input sends the input next to it, per value of the columns joining
//! them, the rows it brings (its rows that meet its conditions, each weighted by what the
//! inputs beyond it bring in turn); the key's table then has a weight per row (see
//! `crate::count::weights`), and its weighted rows are the join prefix's rows, exactly.
//!
//! A prefix it cannot follow exactly (a right or full join, a condition across inputs in ON,
//! a condition on the side a left join keeps NULLs for, an input that groups or filters in a
//! way the counts do not apply, join columns of different types) gives the reason, and the
//! join is counted on the key's base table as before, with a note saying so.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast::{Expr, Join, JoinConstraint};

use super::condition::{conjuncts, join_type, Condition};
use super::filters::{mentions, to_base, JoinScope};
use super::input::Input;
use super::names::lc;
use super::Ctx;
use crate::count::engine::WeightedSum;
use crate::count::filter::RowFilter;
use crate::count::weights::{Factor, FactorKind, RowWeights, Sums, WeightMemo};
use crate::count::Engine;
use crate::plan::{JoinType, Side};
use crate::table::Table;
use crate::value::KeyType;

/// One join of the chain, as the counts follow it: the input it brings (`child`) joined to
/// the earlier input (`parent`, a member of the prefix) on pairs of columns.
#[derive(Clone)]
pub(super) struct Link {
    pub parent: usize,
    /// The member index the child becomes (None for a semi or anti join, whose input's
    /// columns are not in its output).
    pub child_member: Option<usize>,
    pub child: Input,
    /// (parent's base column, child's base column) of each key equality.
    pub pairs: Vec<(String, String)>,
    pub how: JoinType,
    /// Conditions of ON on the child's columns alone, named as its table names them.
    pub child_on: Vec<Expr>,
}

/// What the counts of a chained join's left input apply.
pub(super) struct Through {
    pub weights: RowWeights,
    /// The conditions on the key's table.
    pub filter: Option<RowFilter>,
    /// The query's WHERE conjuncts applied to some input of the prefix.
    pub applied: Vec<Expr>,
}

/// The link a join makes between the prefix `l` (its members in `members`) and `r`, which
/// becomes member `next` if the join outputs it; or why the counts cannot follow it.
pub(super) fn link_of(
    join: &Join,
    cond: &Condition,
    l: &Input,
    r: &Input,
    next: usize,
) -> Result<Link, String> {
    let (_, constraint) = join_type(&join.join_operator).map_err(|e| e.to_string())?;
    // As Spark runs it (an outer join whose NULL-filled rows WHERE drops is an inner one).
    let how = cond.how;
    if matches!(how, JoinType::Right | JoinType::Full) {
        return Err(format!("a {} join before it", how.as_str()));
    }
    let mut parent = None;
    let mut pairs = Vec::new();
    for (lk, rk) in &cond.keys {
        let m = l.member_of(lk).ok_or_else(|| format!("{lk} is not a column of one input"))?;
        if parent.is_some_and(|p| p != m) {
            return Err("a join before it on columns of two earlier inputs".into());
        }
        parent = Some(m);
        let (_, lb) = l.base.get(&lc(lk)).ok_or_else(|| format!("{lk} is not a table's column"))?;
        let (_, rb) = r.base.get(&lc(rk)).ok_or_else(|| format!("{rk} is not a table's column"))?;
        pairs.push((lb.clone(), rb.clone()));
    }
    let child_on = match constraint {
        JoinConstraint::On(e) => child_conditions(e, l, r)?,
        _ => vec![],
    };
    let parent = parent.ok_or("a join before it without keys")?;
    Ok(Link {
        parent,
        child_member: how.outputs_right().then_some(next),
        child: r.clone(),
        pairs,
        how,
        child_on,
    })
}

/// The conjuncts of ON other than key equalities: each must be on the child's columns alone.
fn child_conditions(on: &Expr, l: &Input, r: &Input) -> Result<Vec<Expr>, String> {
    let rtable = single_table(r)?;
    let mut cs = Vec::new();
    conjuncts(on, &mut cs);
    let mut out = Vec::new();
    for c in cs {
        let (on_l, on_r) = (mentions(&c, l), mentions(&c, r));
        if on_l && on_r && is_equality(&c) {
            continue;
        }
        match (on_l, to_base(&c, r, &rtable)) {
            (false, Some(b)) => out.push(b),
            _ => {
                return Err(format!(
                    "the condition {} in ON of a join before it",
                    crate::sql::render_expr(&c)
                ))
            }
        }
    }
    Ok(out)
}

fn is_equality(e: &Expr) -> bool {
    matches!(e, Expr::BinaryOp { op: sqlparser::ast::BinaryOperator::Eq, .. })
}

/// The one base table of an input.
fn single_table(inp: &Input) -> Result<String, String> {
    match inp.base_tables().as_slice() {
        [t] => Ok(t.to_string()),
        _ => Err(format!("{} is not one table's columns", inp.display())),
    }
}

/// The prefix's rows as weights on the rows of the member that holds the join's left keys.
pub(super) fn rows_before(
    (members, links, cache): (&[Input], &[Result<Link, String>], &SentCache),
    l: &Input,
    keys: &[String],
    scope: &JoinScope,
    how: JoinType,
    ctx: &Ctx,
) -> Result<Through, String> {
    let links: Vec<&Link> =
        links.iter().map(|l| l.as_ref().map_err(Clone::clone)).collect::<Result<_, _>>()?;
    let roots: Vec<Option<usize>> = keys.iter().map(|k| l.member_of(k)).collect();
    let root = match roots.first() {
        Some(&Some(r)) if roots.iter().all(|x| *x == Some(r)) => r,
        _ => return Err("its keys are not the columns of one input".into()),
    };
    let pushed = !scope.later_outer && crate::rewrite::filters::pushes_below(how, Side::Left);
    let joins = l.joined.clone().unwrap_or_default();
    rows_at((members, &links, cache), root, pushed, scope, ctx, joins)
}

/// The rows of a whole chain of joins (`links` between `members`) as weights on the rows of
/// member `root`, with the query's WHERE applied to every input (Spark filters before what
/// runs over the joins' rows: a window, a GROUP BY); `joins`: the chain as written.
pub(super) fn rows_of_chain(
    (members, links, cache): (&[Input], &[Result<Link, String>], &SentCache),
    root: usize,
    scope: &JoinScope,
    ctx: &Ctx,
    joins: String,
) -> Result<Through, String> {
    let links: Vec<&Link> =
        links.iter().map(|l| l.as_ref().map_err(Clone::clone)).collect::<Result<_, _>>()?;
    rows_at((members, &links, cache), root, true, scope, ctx, joins)
}

fn rows_at(
    (members, links, cache): (&[Input], &[&Link], &SentCache),
    root: usize,
    pushed: bool,
    scope: &JoinScope,
    ctx: &Ctx,
    joins: String,
) -> Result<Through, String> {
    let tree = Tree {
        members,
        links,
        scope,
        pushed,
        tables: ctx.tables,
        engine: &*ctx.opts.engine,
        memory: ctx.opts.memory,
        cache,
        weights: &ctx.weights,
    };
    let mut applied = Vec::new();
    let (filter, _) = tree.filter_of(&members[root], &mut applied)?;
    let factors = tree.factors(root, None, &mut applied)?;
    let null_rows = tree.unmatched_rows(root, &mut applied)?;
    let weights = RowWeights { factors, joins, memo: Some(ctx.weights.clone()), null_rows };
    Ok(Through { weights, filter: (!filter.conditions.is_empty()).then_some(filter), applied })
}

/// The chain so far, walked from one member.
struct Tree<'a> {
    members: &'a [Input],
    links: &'a [&'a Link],
    scope: &'a JoinScope<'a>,
    /// The query's WHERE conjuncts are applied below the join being planned.
    pushed: bool,
    tables: &'a HashMap<String, Table>,
    /// What counts the tables' rows.
    engine: &'a dyn Engine,
    memory: usize,
    cache: &'a SentCache,
    weights: &'a Arc<WeightMemo>,
}

/// What one input sent across one link of a chain, with the WHERE conjuncts it applied, kept
/// for the later joins of the chain (which would read the same tables for it again).
pub(super) type SentCache = RefCell<HashMap<SentKey, (Arc<Sums>, Vec<Expr>)>>;

/// The link, which of its ends sends, the links beyond that end, and whether the WHERE applies.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct SentKey {
    via: usize,
    from_child: bool,
    beyond: Vec<usize>,
    pushed: bool,
}

impl Tree<'_> {
    /// The factors of member `m`'s rows: one per link at `m` except the one it is reached by.
    fn factors(
        &self,
        m: usize,
        from: Option<usize>,
        applied: &mut Vec<Expr>,
    ) -> Result<Vec<Factor>, String> {
        let mut out = Vec::new();
        for (i, link) in self.links.iter().enumerate() {
            if Some(i) == from {
                continue;
            }
            if link.parent == m {
                // A left join keeps a row unmatched only where nothing after it drops its side.
                if link.how == JoinType::Left
                    && self
                        .beyond(link.child_member, i)
                        .iter()
                        .any(|&b| self.links[b].how != JoinType::Left)
                {
                    return Err(format!(
                        "a join on the side a {} join before it keeps NULLs for",
                        link.how.as_str()
                    ));
                }
                let kind = match link.how {
                    JoinType::Inner => FactorKind::Inner,
                    JoinType::Left => FactorKind::KeepUnmatched,
                    JoinType::Semi => FactorKind::Semi,
                    _ => FactorKind::Anti,
                };
                let mine: Vec<String> = link.pairs.iter().map(|p| p.0.clone()).collect();
                let theirs: Vec<String> = link.pairs.iter().map(|p| p.1.clone()).collect();
                let matches = self.sent(&link.child, link.child_member, i, &theirs, applied)?;
                out.push(self.factor(
                    &self.members[m],
                    mine,
                    &link.child,
                    &theirs,
                    matches,
                    kind,
                )?);
            } else if link.child_member == Some(m) {
                // The matched rows of a left join whose right side holds the root's rows are
                // those of an inner join; `unmatched_rows` counts the others.
                let left_at_root =
                    link.how == JoinType::Left && from.is_none() && self.only_link(m) == Some(i);
                if link.how != JoinType::Inner && !left_at_root {
                    return Err(format!(
                        "its key is on the side a {} join before it keeps NULLs for",
                        link.how.as_str()
                    ));
                }
                let mine: Vec<String> = link.pairs.iter().map(|p| p.1.clone()).collect();
                let theirs: Vec<String> = link.pairs.iter().map(|p| p.0.clone()).collect();
                let parent = &self.members[link.parent];
                let matches = self.sent(parent, Some(link.parent), i, &theirs, applied)?;
                out.push(self.factor(
                    &self.members[m],
                    mine,
                    parent,
                    &theirs,
                    matches,
                    FactorKind::Inner,
                )?);
            }
        }
        Ok(out)
    }

    /// The one link at member `m`, when it has one.
    fn only_link(&self, m: usize) -> Option<usize> {
        let mut at = self
            .links
            .iter()
            .enumerate()
            .filter(|(_, l)| l.parent == m || l.child_member == Some(m))
            .map(|(i, _)| i);
        match (at.next(), at.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        }
    }

    /// The rows of the chain with the root's columns NULL: where the root is the right side of
    /// a left join (its one link), the rows of the other side that no root row matches, each
    /// weighted by the joins beyond it (0 otherwise).
    fn unmatched_rows(&self, root: usize, applied: &mut Vec<Expr>) -> Result<u64, String> {
        let Some(i) = self.only_link(root).filter(|&i| {
            self.links[i].child_member == Some(root) && self.links[i].how == JoinType::Left
        }) else {
            return Ok(0);
        };
        let link = self.links[i];
        let mine: Vec<String> = link.pairs.iter().map(|p| p.1.clone()).collect();
        let theirs: Vec<String> = link.pairs.iter().map(|p| p.0.clone()).collect();
        let parent = &self.members[link.parent];
        let root_rows = self.sent(&self.members[root], Some(root), i, &mine, applied)?;
        let mut factors = self.factors(link.parent, Some(i), applied)?;
        factors.push(self.factor(
            parent,
            theirs.clone(),
            &self.members[root],
            &mine,
            root_rows,
            FactorKind::Anti,
        )?);
        let (filter, table) = self.filter_of(parent, applied)?;
        let types = self.types(table, &theirs)?;
        let weights =
            RowWeights { factors, memo: Some(self.weights.clone()), ..Default::default() };
        let sum = WeightedSum {
            by: &theirs,
            types: &types,
            filter: &filter,
            weights: &weights,
            nulls: true,
        };
        let (sums, _) = self.engine.weighted_sums(table, &sum).map_err(|e| e.to_string())?;
        Ok(sums.into_matches().values().sum())
    }

    /// The rows input `inp` (member `m`, reached by link `via`) brings, per value of `by`.
    fn sent(
        &self,
        inp: &Input,
        m: Option<usize>,
        via: usize,
        by: &[String],
        applied: &mut Vec<Expr>,
    ) -> Result<Arc<Sums>, String> {
        // What an input sends depends on the links beyond it: the same links, the same rows.
        let key = SentKey {
            via,
            from_child: self.links[via].child.alias == inp.alias,
            beyond: self.beyond(m, via),
            pushed: self.pushed,
        };
        if let Some((matches, conds)) = self.cache.borrow().get(&key) {
            applied.extend(conds.iter().cloned());
            return Ok(matches.clone());
        }
        let mut mine = Vec::new();
        let matches = self.sum_sent(inp, m, via, by, &mut mine)?;
        applied.extend(mine.iter().cloned());
        self.cache.borrow_mut().insert(key, (matches.clone(), mine));
        Ok(matches)
    }

    /// The links reachable from member `m` without crossing link `via` (none for a semi or
    /// anti join's input).
    fn beyond(&self, m: Option<usize>, via: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut todo: Vec<usize> = m.into_iter().collect();
        while let Some(x) = todo.pop() {
            for (i, l) in self.links.iter().enumerate() {
                if i == via || out.contains(&i) {
                    continue;
                }
                if l.parent == x {
                    out.push(i);
                    todo.extend(l.child_member);
                } else if l.child_member == Some(x) {
                    out.push(i);
                    todo.push(l.parent);
                }
            }
        }
        out.sort_unstable();
        out
    }

    fn sum_sent(
        &self,
        inp: &Input,
        m: Option<usize>,
        via: usize,
        by: &[String],
        applied: &mut Vec<Expr>,
    ) -> Result<Arc<Sums>, String> {
        let (filter, table) = self.filter_of(inp, applied)?;
        let weights = match m {
            Some(m) => RowWeights {
                factors: self.factors(m, Some(via), applied)?,
                memo: Some(self.weights.clone()),
                ..Default::default()
            },
            None => RowWeights::default(),
        };
        let types = self.types(table, by)?;
        let sum =
            WeightedSum { by, types: &types, filter: &filter, weights: &weights, nulls: false };
        let (matches, _) = self.engine.weighted_sums(table, &sum).map_err(|e| e.to_string())?;
        // Each value held costs about as much as one the counter holds.
        if matches.len().saturating_mul(64) > self.memory {
            return Err(format!("{} has more join values than --memory holds", inp.display()));
        }
        Ok(Arc::new(matches))
    }

    /// A factor on `inp`'s columns `mine` from `matches` keyed by `other`'s columns `theirs`.
    fn factor(
        &self,
        inp: &Input,
        mine: Vec<String>,
        other: &Input,
        theirs: &[String],
        matches: Arc<Sums>,
        kind: FactorKind,
    ) -> Result<Factor, String> {
        let table = &self.tables[&single_table(inp)?];
        let types = self.types(table, &mine)?;
        let other_types = self.types(&self.tables[&single_table(other)?], theirs)?;
        if types.iter().zip(&other_types).any(|(a, b)| !encodes_alike(*a, *b)) {
            return Err(format!(
                "join columns of different types between {} and {}",
                inp.display(),
                other.display()
            ));
        }
        Ok(Factor { columns: mine, types, matches, kind })
    }

    fn types(&self, table: &Table, cols: &[String]) -> Result<Vec<KeyType>, String> {
        cols.iter()
            .map(|c| table.resolve(c).map(|r| r.key_type).map_err(|e| e.to_string()))
            .collect()
    }

    /// The conditions on `inp`'s rows before the joins (its own WHERE, ON conditions on it
    /// alone, the query's WHERE conjuncts on it alone where Spark pushes them), and its table.
    fn filter_of(
        &self,
        inp: &Input,
        applied: &mut Vec<Expr>,
    ) -> Result<(RowFilter, &Table), String> {
        if inp.filtered || inp.having || inp.grouped.is_some() {
            return Err(format!(
                "{} filters or groups its rows in a way the counts do not follow",
                inp.display()
            ));
        }
        let tname = single_table(inp)?;
        let table = self.tables.get(&tname).ok_or_else(|| format!("{tname} is not given"))?;
        let mut conds: Vec<Expr> = inp.conditions.clone();
        for l in self.links.iter().filter(|l| l.child.alias == inp.alias) {
            conds.extend(l.child_on.iter().cloned());
        }
        let nullable =
            self.links.iter().any(|l| l.how == JoinType::Left && l.child.alias == inp.alias);
        // A semi or anti join's input is not in the SELECT's scope: the WHERE never names it.
        let hidden = self.links.iter().any(|l| {
            matches!(l.how, JoinType::Semi | JoinType::Anti) && l.child.alias == inp.alias
        });
        for c in self.scope.conjuncts.iter().filter(|_| !hidden) {
            let Some(b) = to_base(c, inp, &tname) else { continue };
            if !self.pushed {
                continue;
            }
            if nullable {
                return Err(format!(
                    "the condition {} on the side of a left join that keeps NULLs",
                    crate::sql::render_expr(c)
                ));
            }
            conds.push(b);
            applied.push(c.clone());
        }
        for c in &conds {
            self.engine.can_filter(c, table).map_err(|why| {
                format!("{} (in {}): {why}", crate::sql::render_expr(c), inp.display())
            })?;
        }
        Ok((RowFilter { conditions: conds }, table))
    }
}

/// Key types whose values `group_keys` encodes alike where Spark joins them.
fn encodes_alike(a: KeyType, b: KeyType) -> bool {
    let int = |t: KeyType| {
        matches!(t, KeyType::TinyInt | KeyType::SmallInt | KeyType::Int | KeyType::BigInt)
    };
    a == b || (int(a) && int(b))
}
