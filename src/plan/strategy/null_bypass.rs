//! The NULL bypass: a NULL key matches nothing under `=`, yet on a side that the join keeps
//! (an outer join's preserved side; Spark drops NULL keys itself elsewhere) all of them go to
//! one task, partition pmod(42, N) for a one-column key. They skip the join instead: selected
//! by `IS NULL` and padded with NULLs for the other side's columns, without a shuffle. It
//! leaves no task; the join of the rest reads only non-NULL keys of that side.

use serde_json::Value as Json;

use crate::classify::Classifier;
use crate::format::fmt_count;
use crate::plan::builder::{BranchSql, ROWS};
use crate::plan::measure::Measured;
use crate::plan::model::{HotKey, HotSide, JoinType, Side, Strategy};
use crate::value::Value;

pub(crate) const FIX: &str = "skip the join (NULL never matches)";
pub(crate) const COMMENT: &str = "skips the join (NULL never matches)";

/// The NULL keys of `side`, found hot, as a hot key that bypasses the join. `entering` is the
/// side's NULL-keyed rows that enter the shuffle, `partition` and `in_partition` the partition
/// with most of them and its rows.
pub(crate) fn hot_key(
    m: &Measured,
    side: Side,
    how: JoinType,
    classifier: &Classifier,
    entering: u64,
    (partition, in_partition): (usize, u64),
) -> HotKey {
    let s = if side == Side::Left { &m.left } else { &m.right };
    let nulls = vec![Value::Null; s.key_types.len()];
    let c = classifier.classify_key(&nulls, &s.key_types, &s.keys);
    let sc = &s.scan;
    let how_many = if in_partition == entering {
        "all of them".to_string()
    } else {
        format!("{} of them", fmt_count(in_partition))
    };
    let why = format!(
        "a NULL key never matches under =, yet Spark keeps {}'s {} NULL-keyed rows for a {} join and sends {how_many} to partition {partition}: they skip the join and come out with the {} side's columns NULL",
        s.name,
        fmt_count(entering),
        how.as_str(),
        side.other().as_str()
    );
    HotKey {
        value: Json::Null,
        key: nulls,
        display: "NULL".into(),
        side: side.into(),
        rows: sc.null_rows,
        share: sc.null_rows as f64 / sc.rows.max(1) as f64,
        left_rows: if side == Side::Left { sc.null_rows } else { 0 },
        right_rows: if side == Side::Right { sc.null_rows } else { 0 },
        class: c.class,
        reason: c.reason,
        other_side_rows: 0,
        spark_partition: partition as u32,
        strategy: Strategy::NullBypass,
        why,
    }
}

/// The NULL keys of `side` bypass the join in this plan.
pub(crate) fn bypasses<'a>(hot: impl IntoIterator<Item = &'a HotKey>, side: Side) -> bool {
    hot.into_iter()
        .any(|h| matches!(h.strategy, Strategy::NullBypass) && h.side == HotSide::from(side))
}

/// One branch per bypassing side: its NULL-keyed rows, padded with NULLs, no join.
pub(crate) fn branches(g: &BranchSql, hot: &[&HotKey]) -> Vec<String> {
    let mut out = Vec::new();
    for side in [Side::Left, Side::Right] {
        if bypasses(hot.iter().copied(), side) {
            let input = format!(
                "(SELECT * FROM {} {ROWS} WHERE {}) {}",
                g.table(side),
                g.is_null(ROWS, side),
                g.alias(side)
            );
            out.push(g.padded(side, input));
        }
    }
    out
}
