//! The join stage as Spark runs it: with AQE off, one task per shuffle partition, each reading
//! both sides' rows of that partition; with AQE on, what `aqe::stage` makes of each side's map
//! outputs. And the statistics the reports give.

use serde::Serialize;

use super::aqe::{self, AqeStage, ShuffleSide};
use super::measure::{MapOutputs, Measured, SideMeasure};
use super::model::{JoinType, Side};
use crate::hash::spark_partition;

#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskStats {
    /// Tasks that read shuffle data.
    pub tasks: u32,
    pub max_task_rows: u64,
    pub median_task_rows: u64,
    pub max_task_bytes: u64,
    pub median_task_bytes: u64,
    /// Rows that go through a shuffle, both sides.
    pub shuffled_rows: u64,
}

/// One task: the rows it reads and their bytes.
pub(crate) type Task = (u64, f64);

impl TaskStats {
    /// The statistics of `tasks`; the median is of the main join stage, the first `median_of`.
    pub(crate) fn of(tasks: &[Task], median_of: usize) -> TaskStats {
        let mut rows: Vec<u64> = tasks.iter().map(|t| t.0).collect();
        let mut bytes: Vec<f64> = tasks.iter().map(|t| t.1).collect();
        let max_task_rows = rows.iter().copied().max().unwrap_or(0);
        let max_task_bytes = bytes.iter().copied().fold(0.0, f64::max).round() as u64;
        let shuffled_rows = rows.iter().sum();
        let n = median_of.min(rows.len());
        let (m_rows, m_bytes) = if n == 0 {
            (0, 0)
        } else {
            let r = &mut rows[..n];
            r.sort_unstable();
            let b = &mut bytes[..n];
            b.sort_by(|a, b| a.total_cmp(b));
            (r[n / 2], b[n / 2].round() as u64)
        };
        TaskStats {
            tasks: tasks.len() as u32,
            max_task_rows,
            median_task_rows: m_rows,
            max_task_bytes,
            median_task_bytes: m_bytes,
            shuffled_rows,
        }
    }
    /// `largest task R rows (B), median r rows (b), N.Nx`, as the reports print a stage.
    pub fn line(&self) -> String {
        use crate::format::{fmt_count, human};
        format!(
            "largest task {} rows ({}), median {} rows ({}), {:.1}x",
            fmt_count(self.max_task_rows),
            human(self.max_task_bytes),
            fmt_count(self.median_task_rows),
            human(self.median_task_bytes),
            self.ratio()
        )
    }

    pub fn ratio(&self) -> f64 {
        self.max_task_rows as f64 / self.median_task_rows.max(1) as f64
    }
}

/// The shuffle join of a measured pair: which rows enter which task.
pub(crate) struct JoinStage<'a> {
    pub parts: u32,
    pub left_bpr: f64,
    pub right_bpr: f64,
    /// NULL-keyed rows per partition that enter the shuffle: none where Spark drops them.
    left_nulls: &'a [u64],
    right_nulls: &'a [u64],
    zeros: Vec<u64>,
}

impl<'a> JoinStage<'a> {
    pub fn new(m: &'a Measured, how: JoinType) -> JoinStage<'a> {
        let zeros = vec![0u64; m.partitions as usize];
        let nulls_in = |side: Side, sc: &'a crate::count::PartitionScan| -> Option<&'a [u64]> {
            (!how.spark_drops_nulls(side) && sc.null_rows > 0)
                .then_some(sc.null_partition_rows.as_slice())
        };
        JoinStage {
            parts: m.partitions,
            left_bpr: m.left.bytes_per_row(),
            right_bpr: m.right.bytes_per_row(),
            left_nulls: nulls_in(Side::Left, &m.left.scan).unwrap_or(&[]),
            right_nulls: nulls_in(Side::Right, &m.right.scan).unwrap_or(&[]),
            zeros,
        }
    }

    /// Rows of `side` that enter the shuffle with a NULL key (0 where Spark drops them).
    pub fn null_rows_in(&self, side: Side, m: &Measured) -> u64 {
        let nulls = if side == Side::Left { self.left_nulls } else { self.right_nulls };
        if nulls.is_empty() {
            0
        } else if side == Side::Left {
            m.left.scan.null_rows
        } else {
            m.right.scan.null_rows
        }
    }

    /// The tasks for these rows per partition, plus each side's NULL-keyed rows unless
    /// `bypassed` says that side's NULLs skip the join.
    pub fn tasks(&self, left: &[u64], right: &[u64], bypassed: [bool; 2]) -> Vec<Task> {
        let nulls =
            |n: &'a [u64], skip: bool| if skip || n.is_empty() { self.zeros.as_slice() } else { n };
        let (ln, rn) = (nulls(self.left_nulls, bypassed[0]), nulls(self.right_nulls, bypassed[1]));
        (0..self.parts as usize)
            .map(|i| {
                let (l, r) = (left[i] + ln[i], right[i] + rn[i]);
                (l + r, l as f64 * self.left_bpr + r as f64 * self.right_bpr)
            })
            .collect()
    }
}

impl JoinStage<'_> {
    /// The stage under AQE: each side's map outputs without the `moved` candidates, its NULL
    /// keys where they enter the shuffle unless `bypassed`.
    pub fn under_aqe(
        &self,
        m: &Measured,
        how: JoinType,
        moved: &[bool],
        bypassed: [bool; 2],
        aqe: &crate::settings::Aqe,
        cores: u32,
    ) -> AqeStage {
        let side = |s: Side| {
            let (sm, nulls_enter) = match s {
                Side::Left => (&m.left, !self.left_nulls.is_empty() && !bypassed[0]),
                Side::Right => (&m.right, !self.right_nulls.is_empty() && !bypassed[1]),
            };
            shuffle_side(sm, &m.candidates, moved, nulls_enter, self.parts)
        };
        aqe::stage(&side(Side::Left), &side(Side::Right), self.parts, how, aqe, cores)
    }
}

/// A side's shuffle: per map task, its rows per partition (its keys without the `moved`
/// candidates, and its NULL keys when they enter the shuffle) and their bytes, the candidates'
/// rows at the rate of a hot value's rows. Map outputs not counted are taken as spread evenly.
fn shuffle_side(
    sm: &SideMeasure,
    candidates: &[Vec<crate::value::Value>],
    moved: &[bool],
    nulls: bool,
    parts: u32,
) -> ShuffleSide {
    let (rate, hot_rate, row_bytes) = sm.shuffle_rates();
    // The values the sample found frequent (1% of the rows or more) compress as a hot value's.
    let frequent: Vec<bool> =
        sm.scan.key_rows.iter().map(|r| r * 100 >= sm.scan.rows.max(1)).collect();
    let of = |sc: &crate::count::PartitionScan| -> (Vec<u64>, Vec<f64>) {
        let mut rows = sc.partition_rows.clone();
        let mut hot = vec![0u64; rows.len()];
        for (i, k) in candidates.iter().enumerate() {
            let p = spark_partition(k, parts) as usize;
            if moved.get(i).copied().unwrap_or(false) {
                rows[p] = rows[p].saturating_sub(sc.key_rows[i]);
            } else if frequent[i] {
                hot[p] += sc.key_rows[i];
            }
        }
        if nulls {
            rows.iter_mut().zip(&sc.null_partition_rows).for_each(|(a, b)| *a += b);
            hot.iter_mut().zip(&sc.null_partition_rows).for_each(|(a, b)| *a += b);
        }
        let bytes = rows
            .iter()
            .zip(&hot)
            .map(|(r, h)| (r.saturating_sub(*h)) as f64 * rate + (*h).min(*r) as f64 * hot_rate)
            .collect();
        (rows, bytes)
    };
    let (maps, bytes): (Vec<Vec<u64>>, Vec<Vec<f64>>) = match &sm.maps {
        MapOutputs::Counted(maps) => maps.iter().map(of).unzip(),
        MapOutputs::Assumed(k) => {
            let ((total, tb), k) = (of(&sm.scan), u64::from((*k).max(1)));
            (0..k)
                .map(|j| {
                    (
                        total.iter().map(|r| r / k + u64::from(j < r % k)).collect(),
                        tb.iter().map(|b| b / k as f64).collect(),
                    )
                })
                .unzip()
        }
    };
    ShuffleSide { maps, bytes, row_bytes }
}
