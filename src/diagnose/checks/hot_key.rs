//! A hot key: one task of a stage that reads a shuffle reads 5x the median or more (and at
//! least 1 MB or 10,000 records). The finding names the join from the SQL plan, the skewjoin
//! commands to run next, and why AQE did not split the task.

use std::collections::HashMap;

use super::{Cause, Earlier, StageCtx};
use crate::diagnose::finding::{Check, Finding, Kind};
use crate::diagnose::measures::{pct, ratio};
use crate::diagnose::model::Task;
use crate::diagnose::plan::{self, JoinInfo};
use crate::format::{fmt_count, fmt_ms, human_i64};

/// How far a stage's largest shuffle reader stands out from the median task.
struct Skew<'a> {
    /// The task that read the most shuffle bytes (then records).
    heavy: &'a Task,
    /// Largest over median: shuffle bytes, shuffle records, duration.
    bytes: f64,
    records: f64,
    duration: f64,
}

impl Skew<'_> {
    /// One task reads 5x the median or more, and enough to matter.
    fn is_hot(&self) -> bool {
        self.bytes.max(self.records) >= 5.0
            && (self.heavy.shuffle_read_bytes >= 1 << 20
                || self.heavy.shuffle_read_records >= 10_000)
    }
}

/// The largest shuffle reader against the median task.
pub(crate) struct HotKey;

impl Cause for HotKey {
    fn check(&self, c: &StageCtx, _: &Earlier) -> Option<(Check, Option<Finding>)> {
        Some(hot_key(c))
    }
}

fn hot_key(c: &StageCtx) -> (Check, Option<Finding>) {
    let s = &c.report.task_summary;
    let tasks = c.ok_tasks();
    if tasks.len() < 2 || (s.shuffle_read_bytes.max == 0 && s.shuffle_read_records.max == 0) {
        return (
            c.check(
                Kind::HotKey,
                false,
                format!(
                    "stage {} reads no shuffle ({} tasks): no join or aggregate key to skew on",
                    c.report.stage_id,
                    tasks.len()
                ),
            ),
            None,
        );
    }
    let Some(heavy) = tasks.iter().max_by_key(|t| (t.shuffle_read_bytes, t.shuffle_read_records))
    else {
        return (c.check(Kind::HotKey, false, "no task".into()), None);
    };
    let skew = Skew {
        heavy,
        bytes: ratio(s.shuffle_read_bytes.max, s.shuffle_read_bytes.median),
        records: ratio(s.shuffle_read_records.max, s.shuffle_read_records.median),
        duration: ratio(s.duration_ms.max, s.duration_ms.median),
    };
    let numbers = hot_key_numbers(c, &skew);
    if !skew.is_hot() {
        return (c.check(Kind::HotKey, false, numbers), None);
    }
    let f = hot_key_finding(c, &skew, numbers.clone());
    (c.check(Kind::HotKey, true, numbers), Some(f))
}

fn hot_key_numbers(c: &StageCtx, skew: &Skew) -> String {
    let s = &c.report.task_summary;
    let heavy = skew.heavy;
    format!(
        "stage {}: the largest task (partition {}) read {} / {} records against a median of {} / {} ({:.1}x the bytes, {:.1}x the records, {} of the stage's shuffle) and ran {} against a median of {} ({:.1}x)",
        c.report.stage_id,
        heavy.index,
        human_i64(heavy.shuffle_read_bytes),
        fmt_count(heavy.shuffle_read_records.max(0) as u64),
        human_i64(s.shuffle_read_bytes.median),
        fmt_count(s.shuffle_read_records.median.max(0) as u64),
        skew.bytes,
        skew.records,
        pct(ratio(heavy.shuffle_read_bytes, c.report.totals.shuffle_read_bytes)),
        fmt_ms(heavy.duration),
        fmt_ms(s.duration_ms.median),
        skew.duration
    )
}

fn hot_key_finding(c: &StageCtx, skew: &Skew, numbers: String) -> Finding {
    let join = c.sql_plan().and_then(|p| plan::join_of_stage(p, &c.stage.accums));
    let (fix, next) = hot_key_fix(join.as_ref(), c.shuffle_partitions);
    let aqe_note = aqe_note(&c.app.properties, join.as_ref(), skew.heavy);
    Finding {
        kind: Kind::HotKey,
        stage_id: Some(c.report.stage_id),
        evidence: format!("{numbers}; {aqe_note}"),
        fix,
        cost: "the rewrite's extra branches scan the inputs again and broadcast a few hot rows; more executors or memory would not help: one key's rows still meet in one task".into(),
        verify: format!(
            "re-run on the same input: stage {}'s largest task within 2x of the median (now {:.1}x by duration, {:.1}x by shuffle read); skewjoin verify runs both queries and compares the rows",
            c.report.stage_id,
            skew.duration,
            skew.bytes.max(skew.records)
        ),
        join,
        next_commands: next,
    }
}

/// The hot-key fix, and the skewjoin commands that measure the keys and plan the rewrite: for
/// the join the plan names, or with placeholders when the log names none.
fn hot_key_fix(join: Option<&JoinInfo>, partitions: i64) -> (String, Vec<String>) {
    let mut next = Vec::new();
    let mut fix = String::from("take the hot key(s) out of the shuffle: NULL keys skip the join, other hot values meet a broadcast slice of the other side, or salt a value hot on both sides");
    if let Some(j) = join {
        let lk: Vec<String> = j.left_keys.iter().map(|k| plan::attr_name(k)).collect();
        let rk: Vec<String> = j.right_keys.iter().map(|k| plan::attr_name(k)).collect();
        let l = j.left_table.clone().unwrap_or_else(|| "LEFT_TABLE".into());
        let r = j.right_table.clone().unwrap_or_else(|| "RIGHT_TABLE".into());
        let on: Vec<String> = lk
            .iter()
            .zip(&rk)
            .map(|(a, b)| if a == b { format!("--on {a}") } else { format!("--on {a}={b}") })
            .collect();
        next.push(format!(
            "skewjoin keys {} --column {} --shuffle-partitions {partitions}",
            shell(&l),
            lk.join(",")
        ));
        next.push(format!(
            "skewjoin plan --left {} --right {} {} --how {} --shuffle-partitions {partitions}",
            shell(&l),
            shell(&r),
            on.join(" "),
            j.how()
        ));
        fix = format!(
            "the stage runs the {} {} join on {} = {}: {fix}; measure the hot keys and get the rewrite with the commands below",
            j.operator,
            j.join_type,
            lk.join(", "),
            rk.join(", ")
        );
    }
    if join.is_none() {
        fix.push_str("; the log does not name the join this stage runs (no SQL plan for it), so find it in the SQL tab of the Spark UI and put its tables and key in the commands below");
        next.push(format!(
            "skewjoin keys LEFT_TABLE --column KEY --shuffle-partitions {partitions}"
        ));
        next.push(format!(
            "skewjoin plan --left LEFT_TABLE --right RIGHT_TABLE --on KEY --how inner|left|right|full|semi|anti --shuffle-partitions {partitions}"
        ));
    }
    (fix, next)
}

/// Why Spark's adaptive execution did not split the hot task.
fn aqe_note(props: &HashMap<String, String>, join: Option<&JoinInfo>, heavy: &Task) -> String {
    let aqe = props.get("spark.sql.adaptive.enabled").map(|v| v == "true").unwrap_or(true);
    let full = join.is_some_and(|j| j.join_type == "FullOuter");
    if !aqe {
        "AQE is off in this run (spark.sql.adaptive.enabled=false), so nothing split the task"
            .to_string()
    } else if full {
        "AQE's skew-join split never applies to a full outer join".to_string()
    } else if heavy.shuffle_read_bytes < 256 << 20 {
        format!(
            "AQE would not split it: it reads {} (< 256 MB, spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes)",
            human_i64(heavy.shuffle_read_bytes)
        )
    } else {
        "AQE's skew-join split did not apply here (not a sort-merge join it can split, or a side it may not split for this join type), and when it does it only acts after the map side has run".to_string()
    }
}

fn shell(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-=:,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
