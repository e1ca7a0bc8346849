//! The decision for a window or aggregate stage: a pure function from the measured input, the
//! stage's shape and the options to a [`WindowPlan`]. Hot is the join planner's rule
//! (`plan/hot.rs`) on one input: a value whose rows exceed F x the median task, or that puts
//! twice the median into a partition over F x the median, found in rounds without the values
//! already taken out.

use serde_json::Value as Json;

use super::{HotGroup, Reduced, Shape, Verdict, WindowMeasured, WindowPlan};
use crate::classify::{Class, Classification, Classifier};
use crate::format::{fmt_count, fmt_share, human};
use crate::hash::{pmod, spark_partition, SPARK_SEED};
use crate::plan::{display_key, PlanOptions, TaskStats};
use crate::value::Value;

/// Rounds of the hot test.
const ROUNDS: usize = 16;

/// Decide what to do with the stage of `shape` over the measured input.
pub fn decide(
    m: &WindowMeasured,
    shape: Shape,
    classifier: &Classifier,
    opts: &PlanOptions,
) -> WindowPlan {
    let bpr = m.side.bytes_per_row();
    let before_tasks = rest_rows(m, &vec![false; m.candidates.len()], false);
    let before = stats(&before_tasks, bpr);
    let (keys, null) = find_hot(m, &before_tasks, opts.hot_factor);
    let hot = groups(m, &keys, null, classifier);
    let verdict = match shape {
        _ if hot.is_empty() => Verdict::NothingHot,
        Shape::WholePartition => Verdict::Rewrite,
        Shape::Ordered => Verdict::LeftAlone,
        Shape::TopN { .. } => Verdict::GroupLimit,
        Shape::Aggregate { .. } | Shape::DistinctAggregate { .. } => Verdict::PartialAggregation,
    };
    let after_tasks = if verdict == Verdict::Rewrite { rest_rows(m, &keys, null) } else { vec![] };
    let after = (verdict == Verdict::Rewrite).then(|| stats(&after_tasks, bpr));
    let records = m
        .reduced
        .as_ref()
        .map(|r| stats(&r.records, if matches!(shape, Shape::TopN { .. }) { bpr } else { 0.0 }));
    let mut why = explain(verdict, shape, &hot, &before, after.as_ref(), bpr, opts.hot_factor);
    if let (Some(r), Some(s)) = (&m.reduced, &records) {
        why.push_str(&records_note(r, s));
    }
    WindowPlan {
        shape,
        input: m.side.name.clone(),
        keys: m.side.keys.clone(),
        key_types: m.side.key_types.clone(),
        shuffle_partitions: m.partitions,
        rows: m.side.scan.rows,
        bytes_per_row: bpr,
        hot,
        verdict,
        why,
        before,
        after,
        records,
        map_tasks: m.reduced.as_ref().map(|r| r.map_tasks),
        cores: m.reduced.as_ref().and_then(|r| r.cores),
        records_orders: m.reduced.as_ref().and_then(|r| r.orders),
        list_bytes: None,
        conditions: m.side.filter.as_ref().map(|f| f.conditions.clone()).filter(|c| !c.is_empty()),
        before_tasks,
        after_tasks,
    }
}

/// Rows per shuffle partition without the values flagged in `keys` (and the NULL-keyed rows
/// when `null`). A window keeps NULL keys: they form one partition value of their own.
fn rest_rows(m: &WindowMeasured, keys: &[bool], null: bool) -> Vec<u64> {
    let sc = &m.side.scan;
    let mut rows = sc.without(&m.candidates, keys, m.partitions);
    if !null {
        rows.iter_mut().zip(&sc.null_partition_rows).for_each(|(r, n)| *r += n);
    }
    rows
}

fn stats(rows: &[u64], bpr: f64) -> TaskStats {
    let tasks: Vec<(u64, f64)> = rows.iter().map(|&r| (r, r as f64 * bpr)).collect();
    TaskStats::of(&tasks, tasks.len())
}

/// The hot candidates, and whether the NULL value is hot (a one-column key only: its NULL rows
/// are one partition value; a composite key's partly NULL rows are several).
fn find_hot(m: &WindowMeasured, before: &[u64], factor: f64) -> (Vec<bool>, bool) {
    let sc = &m.side.scan;
    let parts = m.partitions;
    let mut keys = vec![false; m.candidates.len()];
    let mut null = false;
    let mut now = before.to_vec();
    for _round in 0..ROUNDS {
        let med = stats(&now, 0.0).median_task_rows.max(1) as f64;
        let thr = factor * med;
        let hot_now = |rows: u64, part: usize| {
            rows > 0 && (rows as f64 > thr || (now[part] as f64 > thr && rows as f64 >= 2.0 * med))
        };
        let mut changed = false;
        if m.side.keys.len() == 1
            && !null
            && hot_now(sc.null_rows, pmod(SPARK_SEED, parts) as usize)
        {
            null = true;
            changed = true;
        }
        for (i, key) in m.candidates.iter().enumerate() {
            if !keys[i] && hot_now(sc.key_rows[i], spark_partition(key, parts) as usize) {
                keys[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
        now = rest_rows(m, &keys, null);
    }
    (keys, null)
}

/// The hot values as the report gives them, most rows first.
fn groups(m: &WindowMeasured, keys: &[bool], null: bool, classifier: &Classifier) -> Vec<HotGroup> {
    let s = &m.side;
    let total = s.scan.rows.max(1) as f64;
    let one = |key: Vec<Value>, rows: u64, c: Classification| HotGroup {
        value: if key.len() == 1 {
            key[0].to_json(s.key_types[0])
        } else {
            Json::Array(key.iter().zip(&s.key_types).map(|(v, t)| v.to_json(*t)).collect())
        },
        display: display_key(&key, &s.key_types),
        spark_partition: spark_partition(&key, m.partitions),
        key,
        rows,
        share: rows as f64 / total,
        class: c.class,
        reason: c.reason,
    };
    let mut out = Vec::new();
    if null {
        let c = Classification {
            class: Class::Null,
            reason: "NULL: one partition value of its own in a window or GROUP BY".into(),
        };
        out.push(one(vec![Value::Null], s.scan.null_rows, c));
    }
    for (i, _) in keys.iter().enumerate().filter(|x| *x.1) {
        let key = m.candidates[i].clone();
        let c = classifier.classify_key(&key, &s.key_types, &s.keys);
        out.push(one(key, s.scan.key_rows[i], c));
    }
    out.sort_by_key(|h| std::cmp::Reverse(h.rows));
    out
}

/// Why the verdict, with the numbers.
fn explain(
    v: Verdict,
    shape: Shape,
    hot: &[HotGroup],
    before: &TaskStats,
    after: Option<&TaskStats>,
    bpr: f64,
    factor: f64,
) -> String {
    let (rows, names) = (
        hot.iter().map(|h| h.rows).sum::<u64>(),
        hot.iter().map(|h| h.display.as_str()).collect::<Vec<_>>().join(", "),
    );
    let first = hot.first();
    let big = |h: &HotGroup| {
        format!("{} rows ({})", fmt_count(h.rows), human((h.rows as f64 * bpr) as u64))
    };
    match (v, first) {
        (Verdict::NothingHot, _) | (_, None) => format!(
            "largest task {} rows, {:.1}x the median {}: no value is over the {factor}x line",
            fmt_count(before.max_task_rows),
            before.ratio(),
            fmt_count(before.median_task_rows)
        ),
        (Verdict::Rewrite, Some(_)) => format!(
            "{names} ({} rows) get their aggregate computed by itself, which Spark aggregates per map task, then joined back to their rows where they lie; the other values keep the window: largest task {} -> {} rows",
            fmt_count(rows),
            fmt_count(before.max_task_rows),
            fmt_count(after.map_or(0, |a| a.max_task_rows))
        ),
        (Verdict::LeftAlone, Some(h)) => format!(
            "an ordered window needs the {} of {} in order in one task ({:.1}x the median task); no rewrite returns the same rows: filter the value out upstream if it is not wanted, or partition by a finer key if the query allows it",
            big(h),
            h.display,
            before.ratio()
        ),
        (Verdict::GroupLimit, Some(h)) => {
            let n = if let Shape::TopN { n } = shape { n } else { 0 };
            format!(
                "Spark 3.5+ keeps at most {n} rows of each value per map task before the shuffle (WindowGroupLimit): the {} of {} arrive as at most {n} per map task; Spark 3.4 and earlier shuffle all of them",
                big(h),
                h.display
            )
        }
        (Verdict::PartialAggregation, Some(h)) if matches!(shape, Shape::DistinctAggregate { groups: 2.., .. }) => format!(
            "Spark copies each row once per DISTINCT column{}, each copy with a group id, and aggregates each map task's copies by the key, the column and the id, shuffled by them, then by the key: the {} of {} arrive as one record per distinct value of each column per map task, spread over the partitions, then one per task of that first shuffle",
            if matches!(shape, Shape::DistinctAggregate { regular: true, .. }) { " (and once for the other aggregates)" } else { "" },
            big(h),
            h.display
        ),
        (Verdict::PartialAggregation, Some(h)) if matches!(shape, Shape::DistinctAggregate { .. }) => format!(
            "Spark aggregates each map task's rows by the key and the DISTINCT column first, shuffled by both, then by the key: the {} of {} arrive as one record per distinct value of the other column per map task, spread over the partitions, then one per task of that first shuffle",
            big(h),
            h.display
        ),
        (Verdict::PartialAggregation, Some(h)) => {
            let lists = matches!(shape, Shape::Aggregate { lists: true });
            let tail = if lists {
                format!("; but a list-building aggregate still carries the value's whole list, {} values, in those records, merged in one task", fmt_count(h.rows))
            } else {
                String::new()
            };
            format!(
                "Spark aggregates each map task's rows of a value into one record before the shuffle: the {} of {} ({} of the input) arrive as one record per map task{tail}",
                big(h),
                h.display,
                fmt_share(h.share)
            )
        }
    }
}

/// The records Spark sends after its map-side reduction, and the splits they assume.
fn records_note(r: &Reduced, s: &TaskStats) -> String {
    let splits = match r.cores {
        Some(c) => format!("split for {c} cores"),
        None => "split at 128 MiB; with fewer than the table's size / 128 MiB cores (see --cores), more tasks and more records".into(),
    };
    let which = r.stage.as_ref().map(|s| format!(" of {s}")).unwrap_or_default();
    format!(
        ". Over {} map tasks ({splits}), the largest task{which} reads {} records, the median {} ({:.1}x)",
        fmt_count(r.map_tasks),
        fmt_count(s.max_task_rows),
        fmt_count(s.median_task_rows),
        s.ratio()
    )
}
