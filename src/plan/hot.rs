//! Which keys are hot. A value is hot when its own rows exceed F x the median task, or when it
//! puts at least twice the median task into a partition that is skewed (over F x the median)
//! with it. Taking the hottest out lowers the median a little and can leave a partition just
//! over the line, so the test is repeated on the stage without them until nothing changes.

use crate::hash::{pmod, spark_partition, SPARK_SEED};

use super::measure::Measured;
use super::model::Side;
use super::tasks::{JoinStage, Task, TaskStats};

/// The hot values found: one flag per candidate, one per side for its NULL keys.
pub(crate) struct HotSet {
    pub keys: Vec<bool>,
    pub nulls: [bool; 2],
}

/// The partition with most NULL-keyed rows of a side (all of them for a one-column key).
pub(crate) fn null_max(m: &Measured, side: Side) -> (usize, u64) {
    let sc = if side == Side::Left { &m.left.scan } else { &m.right.scan };
    let null_part = pmod(SPARK_SEED, m.partitions) as usize;
    sc.null_partition_rows.iter().copied().enumerate().max_by_key(|x| x.1).unwrap_or((null_part, 0))
}

/// Rounds of the hot test (each takes the keys found so far out of the stage).
const ROUNDS: usize = 16;

pub(crate) fn find(m: &Measured, stage: &JoinStage, before: &[Task], hot_factor: f64) -> HotSet {
    let parts = m.partitions;
    let mut hot = HotSet { keys: vec![false; m.candidates.len()], nulls: [false; 2] };
    let mut tasks_now = before.to_vec();
    let mut med = TaskStats::of(before, parts as usize).median_task_rows.max(1) as f64;
    for _round in 0..ROUNDS {
        let thr = hot_factor * med;
        let hot_now = |rows: u64, part: usize| {
            rows > 0
                && (rows as f64 > thr
                    || (tasks_now[part].0 as f64 > thr && rows as f64 >= 2.0 * med))
        };
        let mut changed = false;
        for (i, side) in [Side::Left, Side::Right].into_iter().enumerate() {
            let (np, nrows) = null_max(m, side);
            if !hot.nulls[i] && stage.null_rows_in(side, m) > 0 && hot_now(nrows, np) {
                hot.nulls[i] = true;
                changed = true;
            }
        }
        for (i, key) in m.candidates.iter().enumerate() {
            if !hot.keys[i]
                && hot_now(
                    m.left.scan.key_rows[i] + m.right.scan.key_rows[i],
                    spark_partition(key, parts) as usize,
                )
            {
                hot.keys[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
        let lrest = m.left.scan.without(&m.candidates, &hot.keys, parts);
        let rrest = m.right.scan.without(&m.candidates, &hot.keys, parts);
        tasks_now = stage.tasks(&lrest, &rrest, hot.nulls);
        med = TaskStats::of(&tasks_now, parts as usize).median_task_rows.max(1) as f64;
    }
    hot
}
