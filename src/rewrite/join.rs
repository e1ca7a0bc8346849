//! One join planned and, if the plan moves something, replaced by a derived table `__sjN`
//! that produces every column of both inputs: the steps of `try_join`.

use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::ast::{Expr, Join, Query, SetExpr, TableFactor};

use super::chain::Before;
use super::condition::{condition_in_scope, Condition};
use super::estimate;
use super::filters::{column_of, mentions, side_filters, JoinScope};
use super::hints::HintedJoin;
use super::input::Input;
use super::names::{lc, select_item};
use super::note::Note;
use super::reason::LeftAlone;
use super::through::rows_before;
use super::{Change, Ctx};
use crate::count::KeySpec;
use crate::error::{Error, Result};
use crate::plan::{self, emit_sql, JoinSql, JoinType, Plan, SideInput, TaskStats};
use crate::sql::{ident, parse_query};
use crate::table::Table;

/// A join rewritten: the derived table that replaces it and where each input column went.
pub(super) struct Joined {
    pub alias: String,
    pub relation: TableFactor,
    pub how: JoinType,
    /// Input column (lower case) -> its name in the derived table.
    pub left: HashMap<String, String>,
    pub right: HashMap<String, String>,
    /// USING keys, merged into one column each (named as the key).
    pub using: Vec<String>,
    /// The SELECTs of its UNION ALL (1: one join, no branches).
    pub branches: usize,
    /// Where its left input is the joins before it: the rows of those joins each branch
    /// reads (None where the SQL reads them in a way `branch_rows` does not follow).
    pub readings: Option<Vec<super::branch_rows::Reading>>,
}

/// What became of a join.
pub(super) enum Outcome {
    Rewritten(Box<Joined>),
    /// Why it stays, and its tasks as written where the join was measured.
    LeftAlone(LeftAlone, Option<TaskStats>),
}

/// Each side as the planner takes it: its base table and the key columns there.
struct Sides<'a> {
    left: SideInput<'a>,
    right: SideInput<'a>,
    /// The `--table` names of the sides' base tables.
    left_table: String,
    right_table: String,
}

/// The columns the derived table exposes: its select list, and where each input column went.
struct Exposed {
    select: Vec<String>,
    left: HashMap<String, String>,
    right: HashMap<String, String>,
    merged: Vec<String>,
    /// For a FULL JOIN USING: the derived table's select list over the UNION ALL of branches,
    /// which merges the keys there (see `exposed_columns`).
    above: Option<Vec<String>>,
}

/// Plan the join of `l` and `r` (written as `text`) and rewrite it if the plan moves a key or
/// broadcasts a side; the change is recorded in `ctx`.
pub(super) fn try_join(
    l: &Input,
    r: &Input,
    join: &Join,
    text: String,
    scope: &JoinScope,
    before: Option<&Before>,
    ctx: &mut Ctx,
) -> Result<Outcome> {
    let tables = ctx.tables;
    let (cond, as_spark) = match condition_in_scope(&join.join_operator, l, r, scope) {
        Ok(c) => c,
        Err(why) => return Ok(Outcome::LeftAlone(why, None)),
    };
    let as_spark = as_spark.map(|(written, by)| Note::OuterAsSpark { written, runs: cond.how, by });
    let hinted = scope.hints.on_join(cond.how, l, r);
    if let Some(why) = hinted_away(&hinted, l, r) {
        return Ok(Outcome::LeftAlone(why, None));
    }
    let mut sides = match trace_sides(l, r, &cond, tables) {
        Ok(s) => s,
        Err(why) => return Ok(Outcome::LeftAlone(why, None)),
    };
    let shuffle_hint = hinted.shuffle_hint();
    let threshold = ctx.opts.broadcast_threshold;
    if let (None, Ok(Some(why))) =
        (&shuffle_hint, spark_broadcasts(cond.how, threshold, (l, r), &sides, scope, None))
    {
        return Ok(Outcome::LeftAlone(why, None));
    }
    let Measured { plan: p, filters, chain_why } =
        match measure((l, r), &cond, &mut sides, scope, before, shuffle_hint.clone(), ctx)? {
            Ok(m) => m,
            Err(why) => return Ok(Outcome::LeftAlone(why, None)),
        };
    if let (None, Ok(Some(why))) =
        (&shuffle_hint, spark_broadcasts(cond.how, threshold, (l, r), &sides, scope, Some(&p)))
    {
        return Ok(Outcome::LeftAlone(why, None));
    }
    if let Some(why) = nothing_to_move(&p) {
        return Ok(Outcome::LeftAlone(why, Some(p.before.clone())));
    }
    let exposed = exposed_columns(l, r, &cond);
    let alias = format!("__sj{}", ctx.next_id);
    ctx.next_id += 1;
    let mut js = join_sql(l, r, &cond, &sides, &exposed.select, ctx);
    // The branches that shuffle keep the hint that asked for it, on the side it named.
    if let HintedJoin::Shuffled { name, side, .. } = &hinted {
        js.shuffle_hint = Some(format!(
            "{name}({})",
            if *side == plan::Side::Left { &js.left_alias } else { &js.right_alias }
        ));
    }
    let (relation, union) = derived_table(&js, &p, &alias, exposed.above.as_deref())?;
    let branches = count_set(&union.body);
    let moved = p.hot_keys.len().max(1);
    // Counted with its copies of the joins before, though those are written once as CTEs:
    // Spark inlines a CTE where it is read, so this is the size of the plan it optimises.
    let added = ctx.growth.added + format!("{relation:#}").len().saturating_sub(text.len());
    if added > ctx.growth.limit(moved) {
        ctx.next_id -= 1;
        return Ok(Outcome::LeftAlone(
            LeftAlone::SqlTooLarge { added, limit: ctx.growth.limit(moved), branches },
            Some(p.before.clone()),
        ));
    }
    let reads = super::reads::reads(&relation, &ctx.ctes);
    if let Some((table, n)) =
        super::reads::most_read(&reads).filter(|(_, n)| *n > super::reads::MAX_READS)
    {
        ctx.next_id -= 1;
        return Ok(Outcome::LeftAlone(
            LeftAlone::PlanTooLarge { table, reads: n, limit: super::reads::MAX_READS },
            Some(p.before.clone()),
        ));
    }
    ctx.growth.added = added;
    ctx.growth.hot_keys += moved;
    let readings = if l.joined.is_some() && branches > 1 {
        super::branch_rows::readings(&union, l, &cond.left_keys())
    } else {
        None
    };
    ctx.changes.push(Change {
        join: text,
        at: super::At::of(&join.relation),
        how: cond.how,
        keys: cond.key_text.clone(),
        alias: alias.clone(),
        hot_keys: p.hot_keys.clone(),
        broadcast_side: p.broadcast_side,
        before: p.before.clone(),
        after: p.after.clone(),
        notes: as_spark
            .into_iter()
            .chain(notes(
                &p,
                (l, r),
                &sides.left_table,
                branches,
                chain_why,
                filters.unapplied,
                scope.hints.ignored(cond.how, l, r),
            ))
            .collect(),
        warnings: p.warnings.clone(),
        results_change: p.results_change,
        in_branches: false,
        decision: p.decision.clone(),
        aqe: p.aqe.clone(),
        cost: p.cost,
        code: Some(Box::new(code_parts(p, l, r, &cond))),
    });
    Ok(Outcome::Rewritten(Box::new(Joined {
        alias,
        relation,
        how: cond.how,
        left: exposed.left,
        right: exposed.right,
        using: exposed.merged,
        branches,
        readings,
    })))
}

/// What the join's fix as DataFrame code needs: the plan with the keys as the inputs name them
/// (a subquery may rename its table's), over inputs named as the query names them.
fn code_parts(mut p: Plan, l: &Input, r: &Input, cond: &Condition) -> plan::code::CodeParts {
    p.left.keys = cond.left_keys();
    p.right.keys = cond.right_keys();
    // A salt hashes the input's own columns (a subquery may give fewer than its table's).
    for (side, input) in [(&mut p.left, l), (&mut p.right, r)] {
        let hashable = |c: &String| side.hashable.iter().any(|h| h.eq_ignore_ascii_case(c));
        side.hashable = input.columns.iter().filter(|c| hashable(c)).cloned().collect();
    }
    let unsupported = (!cond.extras.is_empty()).then(|| {
        "its ON clause has predicates beyond the key equalities: paste the SQL instead".to_string()
    });
    plan::code::CodeParts {
        plan: p,
        names: [l.display(), r.display()],
        using: cond.using,
        unsupported,
    }
}

/// A join's plan over the rows that reach it, the filters its counts applied, and why a
/// chained join's left input was counted on its key's table instead (None: through the joins
/// before it).
struct Measured {
    plan: Plan,
    filters: super::filters::SideFilters,
    chain_why: Option<String>,
}

/// Count the join's inputs (the left through the joins `before` it where they can be followed)
/// and plan it; or why the join cannot be planned.
fn measure(
    (l, r): (&Input, &Input),
    cond: &Condition,
    sides: &mut Sides,
    scope: &JoinScope,
    before: Option<&Before>,
    shuffle_hint: Option<String>,
    ctx: &Ctx,
) -> Result<std::result::Result<Measured, LeftAlone>> {
    let mut through = before.map(|b| {
        rows_before((&b.members, b.links, b.cache), l, &cond.left_keys(), scope, cond.how, ctx)
    });
    loop {
        let counted = through.as_ref().and_then(|t| t.as_ref().ok());
        let skip = counted.map(|t| t.applied.as_slice()).unwrap_or_default();
        let filters = side_filters(
            scope,
            (l, sides.left.table, &sides.left_table),
            (r, sides.right.table, &sides.right_table),
            cond.how,
            skip,
            &cond.extras,
            &*ctx.opts.engine,
        );
        sides.left.filter = match counted {
            Some(t) => t.filter.clone(),
            None => filters.left.clone(),
        };
        sides.left.through = counted.map(|t| Arc::new(t.weights.clone()));
        sides.right.filter = filters.right.clone();
        let below: Vec<&Expr> =
            filters.applied.iter().chain(counted.iter().flat_map(|t| &t.applied)).collect();
        let shuffled = scope.used.without(&below);
        sides.left.shuffled = estimate::used_base_columns(l, &shuffled);
        sides.right.shuffled = estimate::used_base_columns(r, &shuffled);
        match plan_join(sides, cond, (l, r), shuffle_hint.clone(), ctx) {
            Ok(plan) => {
                let mut filters = filters;
                if let Some(t) = counted {
                    filters.applied.extend(t.applied.iter().cloned());
                }
                let chain_why = match through {
                    Some(Err(why)) => Some(why),
                    _ => None,
                };
                return Ok(Ok(Measured { plan, filters, chain_why }));
            }
            Err(Error::KeyTypes(m)) => return Ok(Err(LeftAlone::KeyTypes(m))),
            // The prefix's rows could not be written out: counted on the key's table instead.
            Err(e) if counted.is_some() => through = Some(Err(e.to_string())),
            Err(e) => return Err(e),
        }
    }
}

/// The tasks of a join left as written (`l` joined to `r` by `join`, after the joins `before`
/// it) where it runs on the rows a branch of a later rewritten join reads: `scope`'s conjuncts
/// hold that branch's conditions (`extra`). None where the counts cannot apply every one of
/// them, or cannot follow the joins before it: its tasks as written then bound these.
pub(super) fn tasks_in_branch(
    l: &Input,
    r: &Input,
    join: &Join,
    scope: &JoinScope,
    before: Option<&Before>,
    extra: &[sqlparser::ast::Expr],
    ctx: &Ctx,
) -> Option<TaskStats> {
    let (cond, _) = condition_in_scope(&join.join_operator, l, r, scope).ok()?;
    let hinted = scope.hints.on_join(cond.how, l, r);
    if hinted_away(&hinted, l, r).is_some() {
        return None;
    }
    let mut sides = trace_sides(l, r, &cond, ctx.tables).ok()?;
    let m =
        measure((l, r), &cond, &mut sides, scope, before, hinted.shuffle_hint(), ctx).ok()?.ok()?;
    let all_applied = extra.iter().all(|c| m.filters.applied.contains(c));
    (m.chain_why.is_none() && all_applied).then_some(m.plan.before)
}

/// Each side's keys traced to their base table (and the columns a grouped side groups by).
fn trace_sides<'a>(
    l: &Input,
    r: &Input,
    cond: &Condition,
    tables: &'a HashMap<String, Table>,
) -> std::result::Result<Sides<'a>, LeftAlone> {
    let (left_table, left) = l.key_base(&cond.left_keys(), tables)?;
    let (right_table, right) = r.key_base(&cond.right_keys(), tables)?;
    for (i, [lc, rc]) in cond.casts.iter().enumerate() {
        for (cast, col) in [(lc, &left[i]), (rc, &right[i])] {
            if let Some(t) =
                cast.as_ref().filter(|t| !super::condition::cast_hashes_alike(col.key_type, t))
            {
                return Err(LeftAlone::KeyTypes(format!(
                    "key {} ({}) is cast to {t} in ON: Spark hashes the cast value, not the column's; cast the key in the data first",
                    col.name,
                    col.key_type.spark_name()
                )));
            }
        }
    }
    let side = |inp: &Input, t: &str, columns| -> std::result::Result<SideInput<'a>, LeftAlone> {
        let table = &tables[t];
        let group_by = match &inp.grouped {
            Some(g) => Some(KeySpec {
                columns: g
                    .iter()
                    .map(|c| table.resolve(c))
                    .collect::<Result<Vec<_>>>()
                    .map_err(|e| LeftAlone::KeyColumn(e.to_string()))?,
            }),
            None => None,
        };
        Ok(SideInput {
            group_by,
            ..SideInput::new(table, KeySpec { columns }, inp.display().to_string())
        })
    };
    Ok(Sides {
        left: side(l, &left_table, left)?,
        right: side(r, &right_table, right)?,
        left_table,
        right_table,
    })
}

/// A join that a hint of the query keeps from shuffling on its key: why it is left alone.
fn hinted_away(hinted: &HintedJoin, l: &Input, r: &Input) -> Option<LeftAlone> {
    match hinted {
        HintedJoin::Broadcast(side, hint) => {
            let input = if *side == plan::Side::Left { l.display() } else { r.display() };
            Some(LeftAlone::HintBroadcasts { input, hint: hint.clone() })
        }
        HintedJoin::ReplicateNl(hint) => Some(LeftAlone::HintReplicateNl(hint.clone())),
        HintedJoin::Shuffled { .. } | HintedJoin::None => None,
    }
}

fn plan_join(
    sides: &Sides,
    cond: &Condition,
    (l, r): (&Input, &Input),
    shuffle_hint: Option<String>,
    ctx: &Ctx,
) -> Result<Plan> {
    let mut opts = ctx.opts.clone();
    opts.how = cond.how;
    opts.shuffle_hint = shuffle_hint;
    opts.extra_predicates = !cond.extras.is_empty();
    opts.extras_one_side = extras_on_one_side(cond, l, r).is_some();
    plan::plan(&sides.left, &sides.right, ctx.classifier, &opts)
}

/// Spark broadcasts a side by itself: no shuffle, nothing to fix. Its estimate of an input is
/// the files' bytes scaled to the columns the query reads (`estimate`), else the bytes the
/// plan measured; the left input of a chained join is the joins before it, which Spark
/// estimates far larger. Without a plan (`p`), `Err(())` where a side's estimate needs one:
/// the answer is then the same as with the plan, only sooner (no key is counted).
fn spark_broadcasts(
    how: JoinType,
    threshold: u64,
    (l, r): (&Input, &Input),
    sides: &Sides,
    scope: &JoinScope,
    p: Option<&Plan>,
) -> std::result::Result<Option<LeftAlone>, ()> {
    let mut candidates = Vec::new();
    for side in [plan::Side::Left, plan::Side::Right] {
        let (inp, s) = if side == plan::Side::Left { (l, &sides.left) } else { (r, &sides.right) };
        if inp.joined.is_some() || !how.may_broadcast(side) {
            continue;
        }
        let (bytes, pruned) = match (estimate::spark_bytes(inp, scope.used, s.table), p) {
            (Some(b), _) => (b, true),
            (None, Some(p)) => (p.side(side).disk_bytes, false),
            (None, None) => return Err(()),
        };
        candidates.push((side, bytes, pruned, s.name.clone()));
    }
    let best = candidates.into_iter().filter(|c| c.1 <= threshold).min_by_key(|c| c.1);
    Ok(best.map(|(_, bytes, pruned, input)| LeftAlone::SparkBroadcasts {
        input,
        bytes,
        pruned,
        threshold,
    }))
}

/// Why a plan that moves no key and broadcasts no side leaves the join alone.
fn nothing_to_move(p: &Plan) -> Option<LeftAlone> {
    if p.acts() {
        return None;
    }
    if !matches!(
        p.decision,
        plan::verdict::Verdict::NothingToMove | plan::verdict::Verdict::Rewrite { .. }
    ) {
        return Some(LeftAlone::NotFaster(p.decision.clone()));
    }
    Some(match (&p.next, p.hot_keys.is_empty()) {
        (Some(n), _) => LeftAlone::NothingHot(n.clone()),
        (None, false) => LeftAlone::NoneMovable(
            p.hot_keys.iter().map(|h| (h.display.clone(), h.why.clone())).collect(),
        ),
        (None, true) => LeftAlone::NoHotKey,
    })
}

/// Every column of both inputs (of the left only for SEMI and ANTI), under a name unique in
/// the derived table: a name both sides have, or a merged USING key's, is `alias__name`.
fn exposed_columns(l: &Input, r: &Input, cond: &Condition) -> Exposed {
    let how = cond.how;
    let dup = |c: &str, other: &Input| other.column(c).is_some();
    let mut x = Exposed {
        select: Vec::new(),
        left: HashMap::new(),
        right: HashMap::new(),
        merged: Vec::new(),
        above: None,
    };
    let using_keys: Vec<String> =
        if cond.using { cond.keys.iter().map(|k| lc(&k.0)).collect() } else { vec![] };
    // A FULL JOIN USING key is merged above the branches, from the sides' own keys: in a
    // branch where one side is absent (its kept rows padded with NULLs) Spark folds
    // `coalesce(l.k, NULL)` to `l.k`, its alias to the same name is then dropped by
    // RemoveRedundantAliases, and Spark 4.x fails the UNION ALL when the query selects `l.k` as
    // well (PLAN_VALIDATION_FAILED_RULE_IN_BATCH, on views of VALUES). No branch merges it.
    let merge_above = cond.using && how == JoinType::Full;
    if cond.using {
        let mut above = Vec::new();
        for (a, b) in &cond.keys {
            let merged = match how {
                JoinType::Right => select_item(&r.alias, b, a),
                JoinType::Full => {
                    let (la, rb) = (
                        ident(&format!("{}__{}", l.alias, a)),
                        ident(&format!("{}__{}", r.alias, b)),
                    );
                    above.push(format!("coalesce({la}, {rb}) AS {}", ident(a)));
                    String::new()
                }
                _ => select_item(&l.alias, a, a),
            };
            if !merge_above {
                x.select.push(merged);
            }
            x.merged.push(a.clone());
        }
        x.above = merge_above.then_some(above);
    }
    for c in &l.columns {
        let exposed = if (how.outputs_right() && dup(c, r)) || using_keys.contains(&lc(c)) {
            format!("{}__{}", l.alias, c)
        } else {
            c.clone()
        };
        x.select.push(select_item(&l.alias, c, &exposed));
        x.left.insert(lc(c), exposed);
    }
    if how.outputs_right() {
        for c in &r.columns {
            let exposed = if dup(c, l) || using_keys.contains(&lc(c)) {
                format!("{}__{}", r.alias, c)
            } else {
                c.clone()
            };
            x.select.push(select_item(&r.alias, c, &exposed));
            x.right.insert(lc(c), exposed);
        }
    }
    if let Some(above) = &mut x.above {
        let names = l
            .columns
            .iter()
            .map(|c| &x.left[&lc(c)])
            .chain(r.columns.iter().map(|c| &x.right[&lc(c)]));
        above.extend(names.map(|n| ident(n)));
    }
    x
}

/// The columns of an input that salting may hash (their base column is hashable).
fn hashable(inp: &Input, ctx: &Ctx) -> Vec<String> {
    let is_hashable = |(t, b): &(String, String)| {
        ctx.tables
            .get(t)
            .is_some_and(|t| plan::hashable_columns(t).iter().any(|h| h.eq_ignore_ascii_case(b)))
    };
    inp.columns.iter().filter(|c| inp.base.get(&lc(c)).is_some_and(is_hashable)).cloned().collect()
}

/// What the planner's SQL needs to know of the join and its inputs.
fn join_sql(
    l: &Input,
    r: &Input,
    cond: &Condition,
    sides: &Sides,
    select: &[String],
    ctx: &Ctx,
) -> JoinSql {
    JoinSql {
        how: cond.how,
        left_source: l.source.clone(),
        right_source: r.source.clone(),
        left_alias: ident(&l.alias),
        right_alias: ident(&r.alias),
        select_list: select.join(", "),
        extra_on: if cond.extras.is_empty() {
            None
        } else {
            Some(cond.extras.iter().map(crate::sql::render_expr).collect::<Vec<_>>().join(" AND "))
        },
        extra_on_side: extras_on_one_side(cond, l, r),
        left_keys: cond.left_keys(),
        right_keys: cond.right_keys(),
        key_types: sides.left.keys.types(),
        left_columns: l.columns.clone(),
        right_columns: r.columns.clone(),
        left_hashable: hashable(l, ctx),
        right_hashable: hashable(r, ctx),
        shuffle_hint: None,
    }
}

/// The ON predicates beyond the keys, when every column they read is one input's (and they
/// hold no subquery): that side, and them with its columns qualified by the names the
/// planner's unmatched-rows branches give its rows.
fn extras_on_one_side(cond: &Condition, l: &Input, r: &Input) -> Option<plan::ExtraOnSide> {
    if cond.extras.is_empty() {
        return None;
    }
    let side = match (
        cond.extras.iter().any(|e| mentions(e, l)),
        cond.extras.iter().any(|e| mentions(e, r)),
    ) {
        (true, false) => plan::Side::Left,
        (false, true) => plan::Side::Right,
        _ => return None,
    };
    let inp = if side == plan::Side::Left { l } else { r };
    let qualified = |q: &str| -> Option<String> {
        let mut out = Vec::new();
        for e in &cond.extras {
            let mut e = e.clone();
            let mut ok = true;
            let _ =
                sqlparser::ast::visit_expressions_mut(&mut e, |x: &mut sqlparser::ast::Expr| {
                    use sqlparser::ast::Expr;
                    match &*x {
                        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                            match column_of(x, inp) {
                                Some(c) => {
                                    *x = Expr::CompoundIdentifier(vec![
                                        sqlparser::ast::Ident::new(q),
                                        sqlparser::ast::Ident::with_quote('`', c),
                                    ])
                                }
                                None => ok = false,
                            }
                        }
                        Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                            ok = false
                        }
                        _ => {}
                    }
                    std::ops::ControlFlow::<()>::Continue(())
                });
            ok.then_some(())?;
            out.push(crate::sql::render_expr(&e));
        }
        Some(out.join(" AND "))
    };
    Some(plan::ExtraOnSide {
        side,
        on_u: qualified(plan::HELPER_U)?,
        on_t: qualified(plan::HELPER_T)?,
    })
}

/// The planner's SQL as the derived table `alias`, and its UNION ALL of branches; `above`: a
/// select list over the branches (a FULL JOIN USING's merged keys).
fn derived_table(
    js: &JoinSql,
    p: &Plan,
    alias: &str,
    above: Option<&[String]>,
) -> Result<(TableFactor, Query)> {
    let union = emit_sql(js, p)?;
    let branches = parse_query(&union)?;
    let union = match above {
        Some(list) => {
            format!("SELECT {} FROM ({union}) AS {}", list.join(", "), ident(&format!("{alias}_u")))
        }
        None => union,
    };
    let derived = parse_query(&format!("SELECT * FROM ({union}) AS {}", ident(alias)))?;
    let SetExpr::Select(mut s) = *derived.body else {
        return Err(Error::Internal("derived table".into()));
    };
    Ok((s.from.remove(0).relation, branches))
}

fn count_set(body: &SetExpr) -> usize {
    match body {
        SetExpr::SetOperation { left, right, .. } => count_set(left) + count_set(right),
        _ => 1,
    }
}

/// The planner's notes, then the rewrite's own on what the counts do not see.
/// `chain_why`: why a chained join's left input is counted on its key's table, not through
/// the joins before it.
fn notes(
    p: &Plan,
    (l, r): (&Input, &Input),
    left_table: &str,
    branches: usize,
    chain_why: Option<String>,
    unapplied: Vec<String>,
    ignored: Vec<String>,
) -> Vec<Note> {
    let mut notes: Vec<Note> = p.notes.iter().cloned().map(Note::Plan).collect();
    if !ignored.is_empty() {
        notes.push(Note::HintIgnored { hints: ignored, how: p.how });
    }
    let counted_through = l.joined.is_some() && chain_why.is_none();
    if let Some(prefix) = &l.joined {
        notes.push(match chain_why {
            Some(why) => Note::ChainEstimate {
                prefix: prefix.clone(),
                table: left_table.to_string(),
                branches,
                why,
            },
            None => Note::ChainCounted { branches },
        });
    }
    if !unapplied.is_empty() {
        notes.push(Note::NotApplied(unapplied));
    }
    for inp in [l, r] {
        if inp.filtered && !(counted_through && std::ptr::eq(inp, l)) {
            notes.push(Note::SubqueryFilter {
                input: inp.display(),
                tables: inp.base_tables().into_iter().map(String::from).collect(),
            });
        }
        if inp.having {
            notes.push(Note::Having(inp.display()));
        }
    }
    notes
}
