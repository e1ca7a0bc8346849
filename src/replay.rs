//! A query's time on N cores, replayed from the tasks one run of it measured (the method of
//! Qubole's Sparklens): each task keeps its measured duration, and the tasks are scheduled on
//! N cores in Spark's order.
//!
//! - A stage waits for the stages that had finished when it was submitted (what it waited for
//!   in the run: its parents, a broadcast's job, AQE's re-planning after a query stage), then
//!   for the same driver time it waited in the run (planning, a broadcast's collection) before
//!   it was submitted. The wait from its submission to its first task is not kept: on a busy
//!   machine that is the wait for a free core, which the replay makes itself.
//! - Stages that ran at once (both map sides of a join) share the cores: the one submitted
//!   first takes a free core first (Spark's FIFO scheduling), so the other gets what is left.
//! - Within a stage, tasks start in partition order, each on the first core that is free.
//! - The driver's time after the last stage (collecting the result) is kept as measured.
//!
//! On a cluster of N cores a stage therefore takes at least its largest task: the hot task is
//! the stage. On 2 cores the same stage takes its work over 2. Pure: no I/O, no clock.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::Serialize;

/// One task of a stage as it ran: its partition and how long it held its core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRun {
    pub partition: i64,
    pub duration_ms: i64,
}

/// One stage as it ran, its times in milliseconds of one clock (epoch or the log's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageRun {
    pub id: i64,
    pub submitted_ms: i64,
    /// When its last task finished.
    pub last_finish_ms: i64,
    pub completed_ms: i64,
    pub tasks: Vec<TaskRun>,
}

/// One run of a query: when it started and ended, and its stages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryRun {
    pub start_ms: i64,
    pub end_ms: i64,
    pub stages: Vec<StageRun>,
}

impl QueryRun {
    /// The run's wall time, as measured.
    pub fn wall_ms(&self) -> i64 {
        (self.end_ms - self.start_ms).max(0)
    }

    /// Every task's time summed.
    pub fn task_ms(&self) -> i64 {
        self.stages.iter().flat_map(|s| &s.tasks).map(|t| t.duration_ms).sum()
    }
}

/// The query's time replayed on some cores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Replayed {
    pub cores: u32,
    /// From the query's start to its end, replayed.
    pub wall_ms: i64,
    /// Of that, the time some core ran a task (the rest is the driver's, kept as measured).
    pub stages_ms: i64,
}

/// When each stage may start, and what it waits for: the stages that had completed when it
/// was submitted, and the driver time it then waited (measured).
struct Waits {
    after: Vec<usize>,
    /// From the latest of `after` (or the query's start) to its submission.
    driver_ms: i64,
    /// From the last task's finish to the stage's completion.
    tail_ms: i64,
}

fn waits(q: &QueryRun) -> Vec<Waits> {
    q.stages
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let after: Vec<usize> = q
                .stages
                .iter()
                .enumerate()
                .filter(|(j, a)| {
                    // Ordered by submission, so that two stages of no time at one instant
                    // cannot wait for each other.
                    *j != i
                        && a.completed_ms <= b.submitted_ms
                        && (a.submitted_ms, a.id) < (b.submitted_ms, b.id)
                })
                .map(|(j, _)| j)
                .collect();
            let since = after.iter().map(|&j| q.stages[j].completed_ms).max().unwrap_or(q.start_ms);
            Waits {
                after,
                driver_ms: (b.submitted_ms - since).max(0),
                tail_ms: (b.completed_ms - b.last_finish_ms).max(0),
            }
        })
        .collect()
}

/// The query's time on `cores` cores, from the tasks it measured.
pub fn replay(q: &QueryRun, cores: u32) -> Replayed {
    let n = q.stages.len();
    let w = waits(q);
    // The stages in Spark's order (FIFO: submitted first, then by id), each one's tasks in
    // partition order.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (q.stages[i].submitted_ms, q.stages[i].id));
    let tasks: Vec<Vec<i64>> = q
        .stages
        .iter()
        .map(|s| {
            let mut t = s.tasks.clone();
            t.sort_by_key(|t| t.partition);
            t.iter().map(|t| t.duration_ms.max(0)).collect()
        })
        .collect();
    let mut next = vec![0usize; n];
    let mut end: Vec<Option<i64>> = vec![None; n];
    let mut last = vec![i64::MIN; n];
    let mut free: BinaryHeap<Reverse<i64>> = (0..cores.max(1)).map(|_| Reverse(0)).collect();
    let mut busy = Busy::default();
    loop {
        settle(&w, &tasks, &next, &last, &mut end);
        // Never empty: each task popped is pushed back with its finish.
        let Some(&Reverse(core)) = free.peek() else { break };
        let Some(i) = pick(&order, &w, &tasks, &next, &end, core) else { break };
        free.pop();
        let start = core.max(ready(i, &w, &end));
        let finish = start + tasks[i][next[i]];
        busy.add(start, finish);
        next[i] += 1;
        last[i] = last[i].max(finish);
        free.push(Reverse(finish));
    }
    settle(&w, &tasks, &next, &last, &mut end);
    let measured_last = q.stages.iter().map(|s| s.completed_ms).max().unwrap_or(q.start_ms);
    let driver_tail = (q.end_ms - measured_last.max(q.start_ms)).max(0);
    let stages_end = end.iter().flatten().copied().max().unwrap_or(0);
    Replayed { cores: cores.max(1), wall_ms: stages_end + driver_tail, stages_ms: busy.total() }
}

/// When stage `i` may launch its first task, once every stage it waits for has an end (times
/// from the query's start).
fn ready(i: usize, w: &[Waits], end: &[Option<i64>]) -> i64 {
    let after = w[i].after.iter().map(|&j| end[j].unwrap_or(i64::MAX)).max().unwrap_or(0);
    after.saturating_add(w[i].driver_ms)
}

/// Give an end to each stage whose tasks are all placed and whose waits have ends.
fn settle(w: &[Waits], tasks: &[Vec<i64>], next: &[usize], last: &[i64], end: &mut [Option<i64>]) {
    loop {
        let mut changed = false;
        for i in 0..end.len() {
            if end[i].is_some() || next[i] < tasks[i].len() {
                continue;
            }
            if w[i].after.iter().any(|&j| end[j].is_none()) {
                continue;
            }
            let r = ready(i, w, end);
            end[i] = Some(r.max(last[i]) + w[i].tail_ms);
            changed = true;
        }
        if !changed {
            break;
        }
    }
}

/// The stage whose next task the core free at `core` runs: of the stages with a task left
/// whose waits have ends, the first in FIFO order that is ready by then, else the one ready
/// soonest (the core idles until it is).
fn pick(
    order: &[usize],
    w: &[Waits],
    tasks: &[Vec<i64>],
    next: &[usize],
    end: &[Option<i64>],
    core: i64,
) -> Option<usize> {
    let open = order
        .iter()
        .copied()
        .filter(|&i| next[i] < tasks[i].len() && w[i].after.iter().all(|&j| end[j].is_some()));
    let open: Vec<usize> = open.collect();
    open.iter()
        .copied()
        .find(|&i| ready(i, w, end) <= core)
        .or_else(|| open.iter().copied().min_by_key(|&i| ready(i, w, end)))
}

/// The time at least one core ran a task: the union of the tasks' intervals.
#[derive(Default)]
struct Busy {
    spans: Vec<(i64, i64)>,
}

impl Busy {
    fn add(&mut self, a: i64, b: i64) {
        self.spans.push((a, b));
    }

    fn total(&mut self) -> i64 {
        self.spans.sort_unstable();
        let (mut sum, mut reach) = (0, i64::MIN);
        for &(a, b) in &self.spans {
            let from = a.max(reach);
            if b > from {
                sum += b - from;
            }
            reach = reach.max(b);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stage submitted at `at` whose tasks (durations) ran from `at` and completed at `done`.
    fn stage(id: i64, at: i64, done: i64, durations: &[i64]) -> StageRun {
        StageRun {
            id,
            submitted_ms: at,
            last_finish_ms: done,
            completed_ms: done,
            tasks: durations
                .iter()
                .enumerate()
                .map(|(p, &d)| TaskRun { partition: p as i64, duration_ms: d })
                .collect(),
        }
    }

    #[test]
    fn one_core_runs_every_task_in_turn_and_many_cores_wait_for_the_largest() {
        let q = QueryRun {
            start_ms: 0,
            end_ms: 1_000,
            stages: vec![stage(0, 0, 1_000, &[700, 100, 100, 100])],
        };
        assert_eq!(replay(&q, 1).wall_ms, 1_000);
        // Two cores: 700 on one, 100 x 3 on the other.
        assert_eq!(replay(&q, 2).wall_ms, 700);
        assert_eq!(replay(&q, 64).wall_ms, 700);
        assert_eq!(replay(&q, 64).stages_ms, 700);
    }

    #[test]
    fn tasks_go_in_partition_order_to_the_first_free_core() {
        // Partitions 0..4 of 400, 100, 100, 100, 400 on 2 cores: 0 -> core a (0-400); 1, 2, 3
        // -> core b (0-100, 100-200, 200-300); 4 -> core b (300-700).
        let q = QueryRun {
            start_ms: 0,
            end_ms: 0,
            stages: vec![stage(0, 0, 0, &[400, 100, 100, 100, 400])],
        };
        assert_eq!(replay(&q, 2).wall_ms, 700);
    }

    #[test]
    fn a_stage_waits_for_what_had_finished_and_keeps_the_drivers_gaps() {
        // Two map stages at once (0-1,000 each on its own core, 2 tasks of 500), then the join
        // stage, submitted 200 ms after they completed (AQE's re-planning), of one 3,000 ms
        // task; the result collected 100 ms after.
        let q = QueryRun {
            start_ms: 0,
            end_ms: 4_300,
            stages: vec![
                stage(1, 0, 1_000, &[500, 500]),
                stage(2, 0, 1_000, &[500, 500]),
                stage(3, 1_200, 4_200, &[3_000]),
            ],
        };
        // On 2 cores as measured: the map stages share the cores (FIFO: stage 1's tasks first).
        assert_eq!(replay(&q, 2).wall_ms, 4_300);
        // On 4 cores the map side halves; the join's task is the stage.
        assert_eq!(replay(&q, 4).wall_ms, 500 + 200 + 3_000 + 100);
        // On 1 core: 2,000 of maps, then the join.
        assert_eq!(replay(&q, 1).wall_ms, 2_000 + 200 + 3_000 + 100);
    }

    #[test]
    fn the_stage_submitted_first_takes_the_free_cores_first() {
        // Stage 1 (4 tasks of 100) submitted before stage 2 (1 task of 1,000); on one core
        // stage 2 starts only after stage 1's tasks.
        let q = QueryRun {
            start_ms: 0,
            end_ms: 1_400,
            stages: vec![stage(2, 5, 1_400, &[1_000]), stage(1, 0, 400, &[100, 100, 100, 100])],
        };
        // On 1 core, 400 + 1,000.
        assert_eq!(replay(&q, 1).wall_ms, 1_400);
        // On 2 cores stage 1 holds both until its 4 tasks are done: 200 + 1,000.
        assert_eq!(replay(&q, 2).wall_ms, 1_200);
        // On 8 cores stage 2 starts at 5, as it was submitted.
        assert_eq!(replay(&q, 8).wall_ms, 1_005);
    }

    #[test]
    fn a_query_with_no_tasks_takes_its_drivers_time() {
        let q = QueryRun { start_ms: 10, end_ms: 60, stages: vec![] };
        assert_eq!(replay(&q, 8).wall_ms, 50);
    }
}
