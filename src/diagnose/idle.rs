//! Stretches of the wall clock with no task running, told apart by where they fall:
//!
//! - inside a SQL query or a job (from its start to its end) is Spark's own time before its
//!   tasks run: planning (a long lineage or plan, listing files, reading footers), building a
//!   broadcast, waiting for executors: `planning_gap`;
//! - outside every query and job is the driver's time: start-up (executors starting), the
//!   user's own code between jobs (Python or pandas on collected rows, sleeps, calls to other
//!   systems) or an interactive session waiting for a person: `driver_time`. Its fix is not in
//!   Spark, and more executors never help it.
//!
//! Each is flagged when its longest stretch is material: `MIN_GAP_MS` and `MIN_GAP_SHARE` of the
//! wall clock (docs/commands.md gives the thresholds and why).

use super::finding::{Check, Finding, Kind};
use super::measures::{pct, ratio};
use super::model::App;
use crate::format::fmt_ms;

/// A stretch shorter than this is not worth a user's attention, whatever its share.
pub(super) const MIN_GAP_MS: i64 = 30_000;
/// Nor one that is a small part of the run.
pub(super) const MIN_GAP_SHARE: f64 = 0.20;

/// Time intervals `[start, end)`, in ms.
type Spans = Vec<(i64, i64)>;

/// The idle stretches of `app` inside its queries and jobs, and outside them.
struct Idle {
    start: i64,
    app_ms: i64,
    inside: Spans,
    outside: Spans,
}

impl Idle {
    fn of(app: &App) -> Option<Idle> {
        let (start, end) = app.span()?;
        let tasks = union(
            app.stages
                .values()
                .flat_map(|s| s.tasks.iter().map(|t| (t.launch, t.finish)))
                .collect(),
        );
        let idle = complement(&tasks, start, end);
        let busy = union(queries_and_jobs(app, end));
        let inside = intersect(&idle, &busy);
        let outside = intersect(&idle, &complement(&busy, start, end));
        Some(Idle { start, app_ms: (end - start).max(1), inside, outside })
    }

    /// The numbers of one kind of stretch, and whether its longest one is material.
    fn numbers(&self, spans: &Spans, what: &str) -> (String, bool, i64) {
        let total: i64 = spans.iter().map(|(a, b)| b - a).sum();
        let longest =
            spans.iter().copied().max_by_key(|(a, b)| b - a).unwrap_or((self.start, self.start));
        let long_ms = longest.1 - longest.0;
        let numbers = format!(
            "{what} no task ran for {} of the {} wall clock ({}); the longest stretch {} from {} after the start",
            fmt_ms(total),
            fmt_ms(self.app_ms),
            pct(ratio(total, self.app_ms)),
            fmt_ms(long_ms),
            fmt_ms(longest.0 - self.start)
        );
        (numbers, long_ms >= MIN_GAP_MS && ratio(long_ms, self.app_ms) >= MIN_GAP_SHARE, long_ms)
    }
}

/// Each SQL query's and job's interval (one still running at the end of the log runs to `end`).
fn queries_and_jobs(app: &App, end: i64) -> Spans {
    let sql = app.sql.values().filter_map(|q| q.start.map(|s| (s, q.end.unwrap_or(end))));
    let jobs =
        app.jobs.values().filter_map(|j| j.submitted.map(|s| (s, j.completed.unwrap_or(end))));
    sql.chain(jobs).filter(|(a, b)| b > a).collect()
}

/// The union of intervals, sorted and disjoint.
fn union(mut iv: Spans) -> Spans {
    iv.sort_unstable();
    let mut out: Spans = Vec::new();
    for (a, b) in iv {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// `[start, end)` less the sorted, disjoint intervals `iv`.
fn complement(iv: &Spans, start: i64, end: i64) -> Spans {
    let mut out = Vec::new();
    let mut cur = start;
    for &(a, b) in iv {
        if a > cur {
            out.push((cur, a.min(end)));
        }
        cur = cur.max(b);
    }
    if end > cur {
        out.push((cur, end));
    }
    out.into_iter().filter(|(a, b)| b > a).collect()
}

/// The parts common to two sorted, disjoint interval lists.
fn intersect(x: &Spans, y: &Spans) -> Spans {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        let (a, b) = (x[i].0.max(y[j].0), x[i].1.min(y[j].1));
        if b > a {
            out.push((a, b));
        }
        if x[i].1 < y[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Both checks: no task running inside a query or job (planning), and outside all of them (the
/// driver's own time).
pub(super) fn checks(app: &App) -> Vec<(Check, Option<Finding>)> {
    let Some(idle) = Idle::of(app) else {
        let none = |kind| {
            (
                Check {
                    kind,
                    stage_id: None,
                    confirmed: false,
                    numbers: "no times in the log".into(),
                },
                None,
            )
        };
        return vec![none(Kind::PlanningGap), none(Kind::DriverTime)];
    };
    vec![planning_gap(&idle), driver_time(&idle)]
}

fn planning_gap(idle: &Idle) -> (Check, Option<Finding>) {
    let (numbers, yes, long_ms) = idle.numbers(&idle.inside, "inside a SQL query or job,");
    let f = yes.then(|| Finding::new(
        Kind::PlanningGap,
        None,
        numbers.clone(),
        "Spark was planning or waiting before the tasks of a query or job could start (a long lineage or plan, listing many files, building a broadcast, waiting for executors): checkpoint or write out intermediate results to cut the lineage, read fewer, larger files, and check that executors were there; more executors will not shorten planning".into(),
        "a checkpoint writes the intermediate data once".into(),
        format!("re-run: no stretch of {} or more inside a query with no task running", fmt_ms(long_ms / 4)),
    ));
    (Check { kind: Kind::PlanningGap, stage_id: None, confirmed: yes, numbers }, f)
}

fn driver_time(idle: &Idle) -> (Check, Option<Finding>) {
    let (numbers, yes, long_ms) = idle.numbers(&idle.outside, "outside every SQL query and job,");
    let f = yes.then(|| Finding::new(
        Kind::DriverTime,
        None,
        numbers.clone(),
        "no job was running: the time is the driver's own (executors starting, Python or pandas work on collected rows, calls to other systems, or an interactive session waiting for a person); it is not Spark's work, and more executors will not help: move the driver's work into Spark, or leave the idle time out when timing the job".into(),
        "a code change on the driver, if any".into(),
        format!("re-run: the time outside jobs under {}", fmt_ms(long_ms / 4)),
    ));
    (Check { kind: Kind::DriverTime, stage_id: None, confirmed: yes, numbers }, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_arithmetic() {
        assert_eq!(union(vec![(5, 7), (0, 2), (1, 3), (7, 9)]), vec![(0, 3), (5, 9)]);
        assert_eq!(complement(&vec![(2, 3), (5, 9)], 0, 10), vec![(0, 2), (3, 5), (9, 10)]);
        assert_eq!(complement(&vec![], 0, 10), vec![(0, 10)]);
        assert_eq!(
            intersect(&vec![(0, 2), (3, 5), (9, 10)], &vec![(1, 4), (8, 20)]),
            vec![(1, 2), (3, 4), (9, 10)]
        );
    }
}
