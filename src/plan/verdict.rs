//! Whether a join is rewritten: only when the rewrite is predicted faster, by a margin, than the
//! join as Spark runs it under the user's settings (AQE included). Otherwise it is left as
//! written, with a typed reason and a stable code (the JSON's `decision.code`).
//!
//! The order of the tests says why a join is left: a rewrite predicted faster wins; else, when
//! AQE split the hot partitions itself, that is the reason (the rewrite adds little to it);
//! else a join whose largest task takes under a second is not worth a rewrite; else the
//! rewrite costs more than it saves.

use serde::Serialize;

use super::cost::JoinCost;
use crate::format::fmt_count;

/// A largest task shorter than this is not material: the rewrite's own stages cost as much.
pub const MATERIAL_SECONDS: f64 = 1.0;

/// The choice for one join, with its numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Verdict {
    /// The rewrite is predicted faster than the join by at least the margin (or the margin is
    /// off: `--min-gain off`).
    Rewrite { before_seconds: f64, after_seconds: f64, margin_off: bool },
    /// Nothing is hot, or nothing hot can be moved.
    NothingToMove,
    /// AQE broadcasts a side at run time, once the shuffles have run: no task holds a hot
    /// partition.
    AqeBroadcastsIt { side_rows: u64, before_seconds: f64, after_seconds: f64 },
    /// AQE splits the hot partitions itself: the rewrite is not faster by the margin.
    AqeSplitsIt {
        aqe_largest_task_rows: u64,
        rewrite_largest_task_rows: u64,
        before_seconds: f64,
        after_seconds: f64,
    },
    /// The largest task is short: the rewrite's extra stages cost as much as it saves.
    NotMaterial { largest_task_seconds: f64, before_seconds: f64, after_seconds: f64 },
    /// The rewrite's extra reads cost more than the task time it saves.
    CostsMore { before_seconds: f64, after_seconds: f64 },
}

impl Verdict {
    pub fn rewrites(&self) -> bool {
        matches!(self, Verdict::Rewrite { .. })
    }

    /// The stable code of the JSON.
    pub fn code(&self) -> &'static str {
        match self {
            Verdict::Rewrite { .. } => "rewrite",
            Verdict::NothingToMove => "nothing_to_move",
            Verdict::AqeBroadcastsIt { .. } => "aqe_broadcasts_it",
            Verdict::AqeSplitsIt { .. } => "aqe_splits_it",
            Verdict::NotMaterial { .. } => "not_material",
            Verdict::CostsMore { .. } => "costs_more",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Rewrite { before_seconds, after_seconds, margin_off: false } => {
                write!(f, "rewritten: predicted {after_seconds:.2} s against {before_seconds:.2} s as written")
            }
            Verdict::Rewrite { before_seconds, after_seconds, margin_off: true } => {
                write!(f, "rewritten whatever the cost (--min-gain off): predicted {after_seconds:.2} s against {before_seconds:.2} s as written")
            }
            Verdict::NothingToMove => f.write_str("nothing hot to move"),
            Verdict::AqeBroadcastsIt { side_rows, before_seconds, after_seconds } => write!(
                f,
                "left to AQE: it broadcasts a side of {} rows at run time, so no task holds a hot partition (predicted {before_seconds:.2} s as written against {after_seconds:.2} s rewritten)",
                fmt_count(*side_rows)
            ),
            Verdict::AqeSplitsIt { aqe_largest_task_rows, rewrite_largest_task_rows, before_seconds, after_seconds } => write!(
                f,
                "left to AQE: it splits the hot partitions itself (largest task {} rows; the rewrite's {}), predicted {before_seconds:.2} s as written against {after_seconds:.2} s rewritten",
                fmt_count(*aqe_largest_task_rows),
                fmt_count(*rewrite_largest_task_rows)
            ),
            Verdict::NotMaterial { largest_task_seconds, before_seconds, after_seconds } => write!(
                f,
                "left as written: the largest task is predicted at {largest_task_seconds:.2} s, not worth a rewrite (predicted {before_seconds:.2} s as written, {after_seconds:.2} s rewritten)"
            ),
            Verdict::CostsMore { before_seconds, after_seconds } => {
                write!(f, "left as written: the rewrite is predicted slower or not faster by the margin ({after_seconds:.2} s against {before_seconds:.2} s as written)")
            }
        }
    }
}

/// What AQE does to the join as written, as far as the choice goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AqeDoes {
    Nothing,
    /// It splits a hot partition.
    Splits,
    /// It broadcasts a side of this many rows at run time.
    Broadcasts(u64),
}

/// The choice for a join whose plan would move something: `cost` its times, `min_gain` the share
/// of the join's time the rewrite must save (None: rewrite whenever something moves), what AQE
/// does to the join as written, and the largest tasks before and after.
pub fn choose(cost: &JoinCost, min_gain: Option<f64>, aqe: AqeDoes, largest: [u64; 2]) -> Verdict {
    let (b, a) = (cost.before_seconds, cost.after_seconds);
    match min_gain {
        None => return Verdict::Rewrite { before_seconds: b, after_seconds: a, margin_off: true },
        Some(g) if a <= b * (1.0 - g) => {
            return Verdict::Rewrite { before_seconds: b, after_seconds: a, margin_off: false }
        }
        Some(_) => {}
    }
    if let AqeDoes::Broadcasts(side_rows) = aqe {
        Verdict::AqeBroadcastsIt { side_rows, before_seconds: b, after_seconds: a }
    } else if aqe == AqeDoes::Splits {
        Verdict::AqeSplitsIt {
            aqe_largest_task_rows: largest[0],
            rewrite_largest_task_rows: largest[1],
            before_seconds: b,
            after_seconds: a,
        }
    } else if cost.before_stage.largest_task_seconds < MATERIAL_SECONDS {
        Verdict::NotMaterial {
            largest_task_seconds: cost.before_stage.largest_task_seconds,
            before_seconds: b,
            after_seconds: a,
        }
    } else {
        Verdict::CostsMore { before_seconds: b, after_seconds: a }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::cost::{JoinCost, StageTime};

    fn cost(before: f64, after: f64, largest: f64) -> JoinCost {
        JoinCost {
            before_seconds: before,
            after_seconds: after,
            before_stage: StageTime { seconds: before, largest_task_seconds: largest, tasks: 8 },
            ..Default::default()
        }
    }

    #[test]
    fn a_rewrite_must_save_the_margin() {
        assert!(choose(&cost(10.0, 7.9, 9.0), Some(0.2), AqeDoes::Nothing, [1, 1]).rewrites());
        assert_eq!(
            choose(&cost(10.0, 8.5, 9.0), Some(0.2), AqeDoes::Nothing, [1, 1]).code(),
            "costs_more"
        );
        assert!(choose(&cost(10.0, 30.0, 9.0), None, AqeDoes::Nothing, [1, 1]).rewrites());
    }

    #[test]
    fn the_reason_names_aqe_then_a_small_task() {
        assert_eq!(
            choose(&cost(10.0, 9.0, 9.0), Some(0.2), AqeDoes::Splits, [100, 90]).code(),
            "aqe_splits_it"
        );
        assert_eq!(
            choose(&cost(1.0, 1.2, 0.3), Some(0.2), AqeDoes::Nothing, [100, 90]).code(),
            "not_material"
        );
        assert_eq!(
            choose(&cost(1.0, 1.2, 0.3), Some(0.2), AqeDoes::Broadcasts(100), [100, 90]).code(),
            "aqe_broadcasts_it"
        );
    }
}
