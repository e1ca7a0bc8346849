//! The slow stage as the log measured it against the planner's prediction of it: the largest
//! task as written (predicted, and the gap to the log's), and after the rewrite.

use serde::Serialize;

use crate::diagnose::plan::{attr_name, JoinInfo};
use crate::diagnose::Diagnosis;
use crate::plan::TaskStats;
use crate::rewrite::{Change, Rewritten};

/// The stage as the log measured it and as the planner predicts it.
#[derive(Debug, Clone, Serialize)]
pub struct StageCheck {
    pub stage_id: i64,
    /// The largest task's shuffle-read records, as the log measured them.
    pub measured_max_task_records: i64,
    pub measured_median_task_records: i64,
    /// The planner's stage as written and rewritten (rows per task).
    pub predicted_before: Option<TaskStats>,
    pub predicted_after: Option<TaskStats>,
    /// predicted / measured - 1 for the largest task as written.
    pub before_gap: Option<f64>,
    /// Whether the join is rewritten (else `predicted_after` is the stage as written).
    pub rewritten: bool,
    /// What a gap over 5% may mean (the tables changed since the run, the query is not the
    /// job's); empty when the prediction is within 5% of the log.
    pub notes: Vec<String>,
}

impl StageCheck {
    /// The stage `stage_id` of `d` against the rewrite's first join.
    pub fn new(d: &Diagnosis, stage_id: i64, r: &Rewritten) -> StageCheck {
        let summary = d
            .stages
            .iter()
            .find(|s| s.stage_id == stage_id)
            .map(|s| &s.task_summary.shuffle_read_records);
        let measured = summary.map_or(0, |q| q.max);
        let join =
            d.findings.iter().find(|f| f.stage_id == Some(stage_id)).and_then(|f| f.join.as_ref());
        let (before, after, rewritten) = stage_join(r, join);
        let before_gap = before
            .as_ref()
            .filter(|_| measured > 0)
            .map(|b| b.max_task_rows as f64 / measured as f64 - 1.0);
        let notes = match before_gap {
            Some(g) if g.abs() > 0.05 => vec![format!(
                "the largest task as written is predicted {:+.1}% off what the log measured: the tables may have changed since the run, or the query is not all the job did (a rebuilt query has none of its filters); the predicted tasks after are as far off",
                g * 100.0
            )],
            None => vec!["the log measured no shuffle read in this stage: the prediction cannot be checked against it".to_string()],
            _ => vec![],
        };
        StageCheck {
            stage_id,
            measured_max_task_records: measured,
            measured_median_task_records: summary.map_or(0, |q| q.median),
            predicted_before: before,
            predicted_after: after,
            before_gap,
            rewritten,
            notes,
        }
    }
}

/// The stage's join in the rewrite (the first join whose keys are the stage join's columns;
/// the first join when none is): its tasks before and after, and whether it was rewritten.
fn stage_join(
    r: &Rewritten,
    join: Option<&JoinInfo>,
) -> (Option<TaskStats>, Option<TaskStats>, bool) {
    let is_it = |text: &str| join.is_some_and(|j| names_keys(text, j));
    let change = r.changes.iter().find(|c| is_it(&c.keys.join(" ")));
    let unchanged = r.unchanged_joins.iter().find(|u| is_it(&u.join));
    match (change, unchanged, r.changes.first(), r.unchanged_joins.first()) {
        (Some(c), ..) => (Some(c.before.clone()), Some(c.after.clone()), true),
        (None, Some(u), ..) => (u.before.clone(), u.before.clone(), false),
        (None, None, Some(c), _) => (Some(c.before.clone()), Some(c.after.clone()), true),
        (None, None, None, Some(u)) => (u.before.clone(), u.before.clone(), false),
        _ => (None, None, false),
    }
}

/// Whether the join text names every key column of `join` (as a whole word).
fn names_keys(text: &str, join: &JoinInfo) -> bool {
    let text = text.to_ascii_lowercase();
    let word = |w: &str| {
        text.match_indices(w).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + w.len()..].chars().next();
            let edge = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
            edge(before) && edge(after)
        })
    };
    join.left_keys.iter().chain(&join.right_keys).all(|k| word(&attr_name(k).to_ascii_lowercase()))
}

/// The rewrite's change of the stage's join (as `StageCheck` finds it), if it was rewritten.
pub fn stage_change<'a>(d: &Diagnosis, stage_id: i64, r: &'a Rewritten) -> Option<&'a Change> {
    let join =
        d.findings.iter().find(|f| f.stage_id == Some(stage_id)).and_then(|f| f.join.as_ref());
    r.changes
        .iter()
        .find(|c| join.is_some_and(|j| names_keys(&c.keys.join(" "), j)))
        .or(r.changes.first())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prediction_off_the_log_says_what_that_may_mean() {
        let d = empty_diagnosis(7, 1000);
        let r = rewritten_with_before(1200);
        let st = StageCheck::new(&d, 7, &r);
        assert_eq!(st.before_gap.map(|g| (g * 1000.0).round()), Some(200.0));
        assert!(
            st.notes[0].starts_with("the largest task as written is predicted +20.0% off"),
            "{:?}",
            st.notes
        );
        let close = StageCheck::new(&d, 7, &rewritten_with_before(1030));
        assert!(close.notes.is_empty());
    }

    fn empty_diagnosis(stage_id: i64, max_records: i64) -> Diagnosis {
        let q = crate::diagnose::Quantiles { max: max_records, ..Default::default() };
        let summary =
            crate::diagnose::TaskSummary { shuffle_read_records: q, ..Default::default() };
        Diagnosis {
            app: crate::diagnose::AppSummary {
                name: String::new(),
                id: String::new(),
                spark_version: None,
                duration_ms: 0,
                jobs: 0,
                stages: 1,
                tasks: 0,
                slots: 0,
                shuffle_partitions: None,
                codec: String::new(),
                files: 1,
            },
            locate: String::new(),
            stages: vec![crate::diagnose::StageReport {
                stage_id,
                attempt: 0,
                name: String::new(),
                job_id: None,
                duration_ms: 0,
                share: 0.0,
                active_share: 0.0,
                tasks: 0,
                failed_tasks: 0,
                slots: 0,
                waves: 0.0,
                task_summary: summary,
                totals: Default::default(),
            }],
            checks: vec![],
            findings: vec![],
            memory: None,
            baseline: None,
            warnings: vec![],
            picture: Default::default(),
        }
    }

    fn rewritten_with_before(rows: u64) -> Rewritten {
        let stats = TaskStats {
            tasks: 1,
            max_task_rows: rows,
            median_task_rows: rows,
            max_task_bytes: 0,
            median_task_bytes: 0,
            shuffled_rows: rows,
        };
        Rewritten {
            sql: String::new(),
            joins: vec![],
            changes: vec![],
            unchanged_joins: vec![crate::rewrite::Unchanged {
                before: Some(stats),
                ..crate::rewrite::Unchanged::new(
                    String::new(),
                    None,
                    crate::rewrite::LeftAlone::CrossJoin,
                )
            }],
            windows: vec![],
            settings: vec![],
            cluster: crate::cluster::ClusterSize::assumed(200),
        }
    }
}
