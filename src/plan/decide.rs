//! Deciding: a pure function from a measured join and the options to the plan. The stage
//! before, the hot keys, a strategy for each (see `strategy::choose`), the stage after, and
//! the SQL. Nothing here reads a file, so a test can state a join's counts and pin the plan.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::aqe::{self, AqeActions};
use super::measure::{Measured, SideMeasure};
use super::strategy::{self, broadcast_side, null_bypass, salt, KeyFacts};
use super::tasks::{JoinStage, TaskStats};
use super::verdict::{self, Verdict};
use super::{
    advice, cost, display_key, emit_sql, hot, AqeEffect, HotKey, HotSide, JoinSql, JoinType, Plan,
    PlanOptions, Side, SideReport, Strategy,
};
use crate::classify::{Class, Classifier};
use crate::error::Result;
use crate::format::{fmt_count, fmt_share, human};
use crate::hash::spark_partition;

pub fn decide(m: &Measured, classifier: &Classifier, opts: &PlanOptions) -> Result<Plan> {
    let how = opts.how;
    let stage = JoinStage::new(m, how);
    // Hot keys are found on the shuffle partitions, before AQE regroups them into tasks.
    let partition_tasks =
        stage.tasks(&m.left.scan.partition_rows, &m.right.scan.partition_rows, [false, false]);
    let partition_stats = TaskStats::of(&partition_tasks, m.partitions as usize);
    let found = hot::find(m, &stage, &partition_tasks, opts.hot_factor);
    let [left, right] =
        [side_report(&m.left, Side::Left, how), side_report(&m.right, Side::Right, how)];
    let notes = notes(&[(&m.left, &left, Side::Left), (&m.right, &right, Side::Right)], opts);
    let mut hot_keys = null_keys(m, &stage, &found, classifier, how);
    let mut warnings = Vec::new();
    hot_keys.extend(hot_values(
        m,
        &found.keys,
        classifier,
        opts,
        partition_stats.median_task_rows.max(1) as f64,
        &mut warnings,
    ));
    // A hint that asks for a shuffle (MERGE, SHUFFLE_HASH) rules out broadcasting a side whole.
    let whole = if opts.shuffle_hint.is_some() { 0 } else { opts.broadcast_threshold };
    let broadcast_side = broadcast_side::choose(how, &hot_keys, [&left, &right], whole);
    let run = Run::new(m, &stage, opts);
    let before = run.before(&partition_tasks);
    let after = if broadcast_side.is_some() { RunStage::default() } else { run.after(&hot_keys) };
    let next = hot_keys.is_empty().then(|| {
        advice::next_step(&partition_stats, &partition_tasks, m.partitions, opts.hot_factor)
    });
    let spark_broadcasts = spark_broadcasts(how, [&left, &right], opts.broadcast_threshold)
        .filter(|_| opts.shuffle_hint.is_none());
    let mut plan = Plan {
        how,
        shuffle_partitions: m.partitions,
        broadcast_threshold: opts.broadcast_threshold,
        hot_factor: opts.hot_factor,
        left,
        right,
        results_change: hot_keys.iter().any(|h| matches!(h.strategy, Strategy::Drop)),
        hot_keys,
        broadcast_side,
        spark_broadcasts,
        before: before.stats(),
        after: after.stats(),
        partition_median_rows: partition_stats.median_task_rows,
        before_tasks: partition_tasks.iter().map(|t| t.0).collect(),
        after_tasks: after.partition_tasks.iter().map(|t| t.0).collect(),
        aqe: before.aqe.clone().map(|b| AqeEffect { before: b, after: after.aqe.clone() }),
        cost: None,
        decision: Verdict::NothingToMove,
        notes,
        warnings,
        next,
        sql: String::new(),
        sample: opts.sample,
        settings: Vec::new(),
        cluster: match opts.cluster.known() {
            Some(_) => opts.cluster.clone(),
            None => crate::cluster::ClusterSize::assumed(run.slots),
        },
    };
    let js = join_sql(m, how);
    plan.sql = emit_sql(&js, &plan)?;
    if plan.acts() {
        judge(&mut plan, m, &run, [&before, &after], opts);
        if !plan.decision.rewrites() {
            plan.sql = emit_sql(&js, &plan.left_as_written())?;
        }
    }
    Ok(plan)
}

/// The cost of the plan against the join as written, and the choice; a join left as written
/// keeps its tasks before as its tasks after.
fn judge(
    plan: &mut Plan,
    m: &Measured,
    run: &Run,
    [before, after]: [&RunStage; 2],
    opts: &PlanOptions,
) {
    let branches = plan.sql.matches("UNION ALL").count() as u64;
    let inputs = [m.left.scan_size(), m.right.scan_size()];
    let read_again = (inputs[0] + inputs[1]) * branches;
    let mut c =
        cost::join(inputs, &before.tasks, &after.tasks, read_again, run.slots, &cost::MEASURED);
    c.add_broadcast_join(broadcast_rows(plan, m), &cost::MEASURED);
    let aqe = match &before.aqe {
        Some(a) if a.broadcast.is_some() => {
            verdict::AqeDoes::Broadcasts(a.broadcast.map_or(0, |s| inputs[s as usize].rows))
        }
        Some(a) if splits_a_hot_partition(a, plan, m) => verdict::AqeDoes::Splits,
        _ => verdict::AqeDoes::Nothing,
    };
    plan.decision = verdict::choose(
        &c,
        opts.min_gain,
        aqe,
        [plan.before.max_task_rows, plan.after.max_task_rows],
    );
    plan.cost = Some(c);
    if !plan.decision.rewrites() {
        plan.after = plan.before.clone();
        plan.after_tasks = plan.before_tasks.clone();
        if let Some(a) = &mut plan.aqe {
            a.after = Some(a.before.clone());
        }
    }
}

/// AQE splits the partition of a hot key on a side whose map outputs were counted (where they
/// were assumed, as for the rows of earlier joins, Spark may have no shuffle there to split).
fn splits_a_hot_partition(a: &AqeActions, plan: &Plan, m: &Measured) -> bool {
    let counted = |side: Side| matches!(m.side(side).maps, super::measure::MapOutputs::Counted(_));
    a.skewed
        .iter()
        .any(|k| counted(k.side) && plan.hot_keys.iter().any(|h| h.spark_partition == k.partition))
}

/// The rows the rewrite joins in its broadcast branches: every row of the side streamed past a
/// whole broadcast side, else each moved hot key's rows (not in the after stage's tasks).
fn broadcast_rows(plan: &Plan, m: &Measured) -> u64 {
    if let Some(b) = plan.broadcast_side {
        return m.side(b.other()).scan.rows;
    }
    plan.hot_keys
        .iter()
        .filter(|h| {
            h.strategy.moves() && !matches!(h.strategy, Strategy::Salt { .. } | Strategy::Drop)
        })
        .map(|h| h.left_rows + h.right_rows)
        .sum()
}

/// How Spark runs the join stage under the settings: per shuffle partition (AQE off), or as AQE
/// regroups them, on `slots` cores.
struct Run<'a> {
    m: &'a Measured,
    stage: &'a JoinStage<'a>,
    opts: &'a PlanOptions,
    slots: u32,
    aqe: crate::settings::Aqe,
}

/// One predicted join stage: its tasks, and what AQE did (None with AQE off).
#[derive(Default)]
struct RunStage {
    tasks: Vec<super::tasks::Task>,
    /// The tasks per shuffle partition as AQE-off Spark runs them (the charts'), then the
    /// salted pieces.
    partition_tasks: Vec<super::tasks::Task>,
    /// Tasks of the main join (the rest are salted pieces' own shuffle).
    main: usize,
    aqe: Option<AqeActions>,
}

impl RunStage {
    fn stats(&self) -> TaskStats {
        if self.tasks.is_empty() {
            TaskStats::default()
        } else {
            TaskStats::of(&self.tasks, self.main)
        }
    }
}

impl<'a> Run<'a> {
    fn new(m: &'a Measured, stage: &'a JoinStage<'a>, opts: &'a PlanOptions) -> Run<'a> {
        // The cluster's cores when read; else its parallelism; else a cluster that runs every
        // partition at once.
        let slots = opts.cluster.known().or(opts.cores).unwrap_or(m.partitions).max(1);
        // A hint that asks for a shuffle is kept when AQE plans again: no run-time broadcast.
        let aqe = if opts.shuffle_hint.is_some() {
            crate::settings::Aqe { broadcast_threshold: 0, ..opts.aqe }
        } else {
            opts.aqe
        };
        Run { m, stage, opts, slots, aqe }
    }

    /// The stage as written: AQE's tasks, or with AQE off the shuffle partitions' own
    /// (`partition_tasks`, already counted for the hot test).
    fn before(&self, partition_tasks: &[super::tasks::Task]) -> RunStage {
        let m = self.m;
        if self.opts.aqe.enabled {
            let s =
                self.stage.under_aqe(m, self.opts.how, &[], [false, false], &self.aqe, self.slots);
            return RunStage {
                main: s.tasks.len(),
                tasks: s.tasks,
                partition_tasks: Vec::new(),
                aqe: Some(s.actions),
            };
        }
        RunStage {
            main: m.partitions as usize,
            tasks: partition_tasks.to_vec(),
            partition_tasks: Vec::new(),
            aqe: None,
        }
    }

    /// The tasks after the plan: the rest without the moved keys and the bypassed NULLs, plus
    /// one task per salted piece (its own shuffle; under AQE, coalesced as AQE would).
    fn after(&self, hot: &[HotKey]) -> RunStage {
        let m = self.m;
        let moved: Vec<bool> = m
            .candidates
            .iter()
            .map(|k| hot.iter().any(|h| &h.key == k && h.strategy.moves()))
            .collect();
        let bypassed =
            [null_bypass::bypasses(hot, Side::Left), null_bypass::bypasses(hot, Side::Right)];
        let pieces = |rates: [f64; 2]| -> Vec<super::tasks::Task> {
            let mut salted = BTreeMap::new();
            for h in hot {
                salt::add_tasks(h, rates, m.partitions, &mut salted);
            }
            salted.into_values().collect()
        };
        let lrest = m.left.scan.without(&m.candidates, &moved, m.partitions);
        let rrest = m.right.scan.without(&m.candidates, &moved, m.partitions);
        let mut partition_tasks = self.stage.tasks(&lrest, &rrest, bypassed);
        partition_tasks.extend(pieces([self.stage.left_bpr, self.stage.right_bpr]));
        if self.opts.aqe.enabled {
            return self.after_aqe(
                &moved,
                bypassed,
                pieces([m.left.shuffle_rates().1, m.right.shuffle_rates().1]),
                partition_tasks,
            );
        }
        RunStage {
            tasks: partition_tasks.clone(),
            partition_tasks,
            main: m.partitions as usize,
            aqe: None,
        }
    }
}

impl Run<'_> {
    /// The stage after under AQE: the rest's join and the salted pieces' join are coalesced
    /// apart (two children of a UNION), the cores shared between them by their bytes.
    fn after_aqe(
        &self,
        moved: &[bool],
        bypassed: [bool; 2],
        pieces: Vec<super::tasks::Task>,
        partition_tasks: Vec<super::tasks::Task>,
    ) -> RunStage {
        let (m, aqe) = (self.m, &self.aqe);
        let first = self.stage.under_aqe(m, self.opts.how, moved, bypassed, aqe, self.slots);
        let rest_bytes: f64 = first.tasks.iter().map(|t| t.1).sum();
        let piece_bytes: f64 = pieces.iter().map(|t| t.1).sum();
        let share = |b: f64| {
            ((f64::from(self.slots) * b / (rest_bytes + piece_bytes).max(1.0)).round() as u32)
                .max(1)
        };
        let s = if pieces.is_empty() {
            first
        } else {
            self.stage.under_aqe(m, self.opts.how, moved, bypassed, aqe, share(rest_bytes))
        };
        let main = s.tasks.len();
        let mut tasks = s.tasks;
        tasks.extend(coalesced_pieces(&pieces, aqe, share(piece_bytes)));
        RunStage { tasks, partition_tasks, main, aqe: Some(s.actions) }
    }
}

/// The salted pieces' join as AQE coalesces its shuffle: pieces (in partition order) grouped
/// into tasks of about the coalescing target.
fn coalesced_pieces(
    pieces: &[super::tasks::Task],
    aqe: &crate::settings::Aqe,
    slots: u32,
) -> Vec<super::tasks::Task> {
    if !aqe.coalesce || pieces.is_empty() {
        return pieces.to_vec();
    }
    let sizes: Vec<u64> = pieces.iter().map(|t| t.1.round() as u64).collect();
    let target = aqe::coalesce_target(sizes.iter().sum(), aqe, slots);
    aqe::coalesce(&sizes, target, aqe.min_partition_size, false)
        .into_iter()
        .map(|(a, b)| pieces[a..b].iter().fold((0, 0.0), |x, y| (x.0 + y.0, x.1 + y.1)))
        .collect()
}

/// The side Spark broadcasts by itself, the smaller when both may be.
fn spark_broadcasts(how: JoinType, sides: [&SideReport; 2], threshold: u64) -> Option<Side> {
    [(Side::Left, sides[0]), (Side::Right, sides[1])]
        .into_iter()
        .filter(|(side, rep)| how.may_broadcast(*side) && rep.disk_bytes <= threshold)
        .min_by_key(|(_, rep)| rep.disk_bytes)
        .map(|(side, _)| side)
}

fn side_report(s: &SideMeasure, side: Side, how: JoinType) -> SideReport {
    SideReport {
        name: s.name.clone(),
        table: s.table.clone(),
        keys: s.keys.clone(),
        key_types: s.key_types.iter().map(|t| t.spark_name()).collect(),
        rows: s.scan.rows,
        null_key_rows: s.scan.null_rows,
        disk_bytes: s.size.disk_bytes,
        memory_bytes: s.size.memory_bytes,
        bytes_per_row: s.bytes_per_row(),
        columns: s.columns.clone(),
        key_kinds: s.key_types.clone(),
        hashable: s.hashable.clone(),
        spark_drops_nulls: how.spark_drops_nulls(side),
        preserved: how.preserves(side),
        may_broadcast: how.may_broadcast(side),
    }
}

/// What a side's counts are of, when not of its whole table: the rows that meet the query's
/// conditions, or the groups an aggregating input makes of them.
fn counted_note(name: &str, f: &super::measure::SideFilter) -> String {
    let (out, of) = (fmt_count(f.rows_out), fmt_count(f.rows_in));
    if let Some(joins) = &f.joins {
        let kept = if f.conditions.is_empty() {
            String::new()
        } else {
            format!(" where {}", f.conditions)
        };
        let nulls = match f.outer_nulls {
            0 => String::new(),
            n => format!("; {} of them have a NULL key: rows a left join before matched to nothing on the key's side", fmt_count(n)),
        };
        return format!(
            "{name}: the counts are of the {out} rows that reach this join through the joins before it ({joins}), from {of} rows of the table that holds the key{kept}, computed from each table's counts{nulls}"
        );
    }
    match (&f.group_by, f.conditions.is_empty()) {
        (None, _) => {
            format!("{name}: the counts are of its {out} rows (of {of}) where {}, the query's conditions that Spark applies before the join", f.conditions)
        }
        (Some(g), true) => {
            format!("{name}: groups its table's {of} rows by {g}: the counts are of its {out} groups, one row each, as the aggregate outputs them")
        }
        (Some(g), false) => format!(
            "{name}: groups by {g} its table's rows where {} (of {of}): the counts are of its {out} groups, one row each, as the aggregate outputs them",
            f.conditions
        ),
    }
}

/// Facts that change nothing: NULL keys Spark drops itself, a side Spark broadcasts itself.
fn notes(sides: &[(&SideMeasure, &SideReport, Side)], opts: &PlanOptions) -> Vec<String> {
    let (how, thr) = (opts.how, opts.broadcast_threshold);
    let mut notes = Vec::new();
    for (s, rep, side) in sides {
        if let Some(f) = &s.filter {
            notes.push(counted_note(&rep.name, f));
        }
        let (nulls, rows) = (s.scan.null_rows, s.scan.rows);
        if nulls > 0 && how.spark_drops_nulls(*side) {
            notes.push(format!(
                "{} has {} NULL-keyed rows ({}); Spark drops them before the shuffle for {} {} join, so they cost nothing",
                rep.name,
                fmt_count(nulls),
                fmt_share(nulls as f64 / rows.max(1) as f64),
                if how.as_str().starts_with('i') { "an" } else { "a" },
                how.as_str()
            ));
        }
        if let (true, Some(hint)) =
            (how.may_broadcast(*side) && rep.disk_bytes <= thr, &opts.shuffle_hint)
        {
            notes.push(format!(
                "{} is {} on disk, under the {} broadcast threshold, but the query's hint {hint} has Spark shuffle it: the tasks below are of that shuffle",
                rep.name,
                human(rep.disk_bytes),
                human(thr)
            ));
        } else if how.may_broadcast(*side) && rep.disk_bytes <= thr {
            notes.push(format!(
                "{} is {} on disk, under the {} broadcast threshold: Spark broadcasts it by itself (no shuffle) unless spark.sql.autoBroadcastJoinThreshold is lower or -1; the tasks below assume a sort-merge join",
                rep.name,
                human(rep.disk_bytes),
                human(thr)
            ));
        }
    }
    notes
}

/// The NULL keys found hot, one per side: they bypass the join.
fn null_keys(
    m: &Measured,
    stage: &JoinStage,
    found: &hot::HotSet,
    classifier: &Classifier,
    how: JoinType,
) -> Vec<HotKey> {
    [Side::Left, Side::Right]
        .into_iter()
        .filter(|s| found.nulls[*s as usize])
        .map(|side| {
            null_bypass::hot_key(
                m,
                side,
                how,
                classifier,
                stage.null_rows_in(side, m),
                hot::null_max(m, side),
            )
        })
        .collect()
}

fn bytes(rows: u64, per_row: f64) -> u64 {
    (rows as f64 * per_row).round() as u64
}

/// The hot candidates, each with its strategy; a junk key joined as demand gets a warning.
/// Salted keys share the partitions, so the keys are chosen for twice: first to count those
/// that salt, then with that count.
fn hot_values(
    m: &Measured,
    hot: &[bool],
    classifier: &Classifier,
    opts: &PlanOptions,
    median: f64,
    warnings: &mut Vec<String>,
) -> Vec<HotKey> {
    let bpr = [m.left.bytes_per_row(), m.right.bytes_per_row()];
    let (types, names) = (&m.left.key_types, &m.left.keys);
    let rows_of = |i: usize| [m.left.scan.key_rows[i], m.right.scan.key_rows[i]];
    let keys: Vec<(usize, crate::classify::Classification)> = (0..m.candidates.len())
        .filter(|i| hot[*i])
        .map(|i| (i, classifier.classify_key(&m.candidates[i], types, names)))
        .collect();
    let facts = |i: usize, class: Class| {
        let rows = rows_of(i);
        KeyFacts {
            key: &m.candidates[i],
            class,
            opts,
            rows,
            bytes: [bytes(rows[0], bpr[0]), bytes(rows[1], bpr[1])],
            bytes_per_row: bpr,
            names: [&m.left.name, &m.right.name],
            median,
            partitions: m.partitions,
        }
    };
    let salted = keys
        .iter()
        .filter(|(i, c)| {
            matches!(
                strategy::choose(&facts(*i, c.class), &mut salt::Salting::new(1)).0,
                Strategy::Salt { .. }
            )
        })
        .count();
    let mut salting = salt::Salting::new(salted as u32);
    let mut out = Vec::new();
    for (i, c) in keys {
        let (strategy, why) = strategy::choose(&facts(i, c.class), &mut salting);
        let h =
            hot_key(m, &m.candidates[i], rows_of(i), opts.hot_factor * median, c, strategy, why);
        if h.class == Class::Junk && !opts.drop_junk {
            warnings.push(junk_warning(&h, m));
        }
        out.push(h);
    }
    out
}

fn hot_key(
    m: &Measured,
    key: &[crate::value::Value],
    [lr, rr]: [u64; 2],
    threshold: f64,
    c: crate::classify::Classification,
    strategy: Strategy,
    why: String,
) -> HotKey {
    let types = &m.left.key_types;
    let side = if lr as f64 > threshold && rr as f64 > threshold {
        HotSide::Both
    } else if lr >= rr {
        HotSide::Left
    } else {
        HotSide::Right
    };
    let (rows, of, other) =
        if lr >= rr { (lr, m.left.scan.rows, rr) } else { (rr, m.right.scan.rows, lr) };
    HotKey {
        value: if key.len() == 1 {
            key[0].to_json(types[0])
        } else {
            Json::Array(key.iter().zip(types).map(|(v, t)| v.to_json(*t)).collect())
        },
        key: key.to_vec(),
        display: display_key(key, types),
        side,
        rows,
        share: rows as f64 / of.max(1) as f64,
        left_rows: lr,
        right_rows: rr,
        class: c.class,
        reason: c.reason,
        other_side_rows: other,
        spark_partition: spark_partition(key, m.partitions),
        strategy,
        why,
    }
}

fn junk_warning(h: &HotKey, m: &Measured) -> String {
    let of = if h.left_rows >= h.right_rows { m.left.scan.rows } else { m.right.scan.rows };
    format!(
        "{} looks like junk ({}): {} rows ({}) are joined as demand; --drop-junk removes them and changes the result",
        h.display,
        h.reason,
        fmt_count(h.rows),
        fmt_share(h.rows as f64 / of.max(1) as f64)
    )
}

/// The join as SQL over the two tables by name.
fn join_sql(m: &Measured, how: JoinType) -> JoinSql {
    let (l, r) = (&m.left, &m.right);
    let mut js = JoinSql::tables(
        how,
        (&l.name, &l.keys, &l.columns),
        (&r.name, &r.keys, &r.columns),
        l.key_types.clone(),
    );
    js.left_hashable = l.hashable.clone();
    js.right_hashable = r.hashable.clone();
    js
}
