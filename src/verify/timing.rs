//! Both queries' times at the cluster's size: the tasks each measured here, replayed on the
//! cluster's cores (`crate::replay`), beside the time measured here.
//!
//! On this machine's few cores a stage takes its work over them, and a hot task shows only
//! when it holds more than their share of the stage. On the user's cluster the hot task is the
//! stage. The queries run here with the cluster's parallelism (`spark.default.parallelism`),
//! so their stages have the cluster's tasks; each task keeps the time it took here.

use serde::Serialize;

use super::RunStats;
use crate::cluster::ClusterSize;
use crate::format::fmt_ms;
use crate::replay::{self, QueryRun, StageRun, TaskRun};

/// One query's times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Times {
    /// Measured here: the median timed run.
    pub measured_ms: i64,
    /// The same run's tasks replayed on the cores it ran on here: the replay's own check
    /// against `measured_ms` (None: not run in local mode).
    pub replayed_here_ms: Option<i64>,
    /// Replayed on the cluster's cores.
    pub cluster_ms: i64,
    /// The same run's tasks replayed on 1 and 2 cores, here's and the cluster's: what a run
    /// with `local[1]` or `local[2]` is checked against.
    pub replayed: Vec<replay::Replayed>,
    /// Every task's time, summed.
    pub task_ms: i64,
}

impl Times {
    /// The time replayed on `cores` cores, if it was.
    pub fn at(&self, cores: u32) -> Option<i64> {
        self.replayed.iter().find(|r| r.cores == cores).map(|r| r.wall_ms)
    }
}

/// Both queries' times here and on the cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    /// The cluster the tasks are replayed on, and where its size came from.
    pub cluster: ClusterSize,
    /// The cores the queries ran on here (local[N]; None: on a cluster or a Connect server).
    pub here_cores: Option<u32>,
    pub before: Times,
    pub after: Times,
    /// How many times faster the rewrite is on the cluster, replayed (under 1: slower).
    pub cluster_speedup: f64,
    /// The same, as measured here.
    pub here_speedup: f64,
}

/// The run as the replay takes it, when its stages carry their times.
pub fn query_run(r: &RunStats) -> Option<QueryRun> {
    let (start_ms, end_ms) = (r.start_ms?, r.end_ms?);
    let stages = r
        .stages
        .iter()
        .map(|s| {
            let (submitted_ms, completed_ms) = (s.submitted_ms?, s.completed_ms?);
            Some(StageRun {
                id: s.stage_id,
                submitted_ms,
                last_finish_ms: s.last_finish_ms.unwrap_or(completed_ms),
                completed_ms,
                tasks: s
                    .task_durations_ms
                    .iter()
                    .enumerate()
                    .map(|(p, &d)| TaskRun { partition: p as i64, duration_ms: d })
                    .collect(),
            })
        })
        .collect::<Option<Vec<StageRun>>>()?;
    Some(QueryRun { start_ms, end_ms, stages })
}

fn times(r: &RunStats, cluster: u32, here: Option<u32>) -> Option<Times> {
    let q = query_run(r)?;
    let mut cores = vec![1, 2, cluster];
    cores.extend(here);
    cores.sort_unstable();
    cores.dedup();
    let replayed: Vec<replay::Replayed> = cores.iter().map(|&c| replay::replay(&q, c)).collect();
    let at = |c: u32| replayed.iter().find(|r| r.cores == c).map(|r| r.wall_ms);
    Some(Times {
        measured_ms: r.wall_ms,
        replayed_here_ms: here.and_then(at),
        cluster_ms: at(cluster).unwrap_or_default(),
        task_ms: q.task_ms(),
        replayed,
    })
}

impl Timing {
    /// Both runs replayed on `cluster`; None when a run's stages lack their times.
    pub fn of(
        before: &RunStats,
        after: &RunStats,
        cluster: &ClusterSize,
        here_cores: Option<u32>,
    ) -> Option<Timing> {
        let b = times(before, cluster.cores, here_cores)?;
        let a = times(after, cluster.cores, here_cores)?;
        let ratio = |x: i64, y: i64| x.max(1) as f64 / y.max(1) as f64;
        Some(Timing {
            cluster: cluster.clone(),
            here_cores,
            cluster_speedup: ratio(b.cluster_ms, a.cluster_ms),
            here_speedup: ratio(b.measured_ms, a.measured_ms),
            before: b,
            after: a,
        })
    }

    /// The rewrite is slower on the cluster by more than the noise measured here, scaled to
    /// the cluster's times (or, with no noise measured, a quarter of the original's time).
    pub fn slower_on_cluster(&self, noise_ms: Option<i64>) -> bool {
        let b = self.before.cluster_ms as f64;
        let allowed = match noise_ms {
            Some(n) => n as f64 / self.before.measured_ms.max(1) as f64 * b,
            None => 0.25 * b,
        };
        self.after.cluster_ms as f64 - b > allowed
    }

    /// The cluster is this machine: its replay says nothing the measurement does not.
    pub fn cluster_is_here(&self) -> bool {
        self.here_cores == Some(self.cluster.cores)
    }

    /// `here (2 cores): 41 s -> 44 s; at 64 cores (...), from these tasks: 19.8 s -> 3.1 s`,
    /// and when the two disagree, which way each goes.
    pub fn line(&self) -> String {
        let here = match self.here_cores {
            Some(c) => format!("here ({c} core{})", if c == 1 { "" } else { "s" }),
            None => "here".into(),
        };
        let mut o = format!(
            "{here}: {} -> {}; at {}, from these tasks: {} -> {}",
            fmt_ms(self.before.measured_ms),
            fmt_ms(self.after.measured_ms),
            self.cluster.describe(),
            fmt_ms(self.before.cluster_ms),
            fmt_ms(self.after.cluster_ms),
        );
        let way = |x: f64| {
            if x >= 1.0 {
                format!("{x:.1}x faster")
            } else {
                format!("{:.1}x slower", 1.0 / x)
            }
        };
        let cores = self.cluster.cores;
        if self.here_speedup < 1.0 && self.cluster_speedup > 1.0 {
            o.push_str(&format!(
                " ({} on these {} cores, {} at {cores} cores: there the hot task is the stage)",
                way(self.here_speedup),
                self.here_cores.map_or("few".into(), |c| c.to_string()),
                way(self.cluster_speedup),
            ));
        } else {
            o.push_str(&format!(" ({} at {cores} cores)", way(self.cluster_speedup)));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::StageStats;

    /// A run of one stage of `durations`, as 2 cores ran it, then 100 ms of the driver's.
    fn run(durations: &[i64]) -> RunStats {
        let stage = |completed: i64| StageStats {
            stage_id: 1,
            submitted_ms: Some(1_000),
            last_finish_ms: Some(completed),
            completed_ms: Some(completed),
            task_durations_ms: durations.to_vec(),
            ..StageStats::default()
        };
        let mut r = RunStats {
            start_ms: Some(1_000),
            end_ms: Some(1_000),
            stages: vec![stage(1_000)],
            ..RunStats::default()
        };
        let span = replay::replay(&query_run(&r).unwrap(), 2).wall_ms;
        r.stages = vec![stage(1_000 + span)];
        r.end_ms = Some(1_100 + span);
        r.wall_ms = span + 100;
        r
    }

    #[test]
    fn a_hot_task_is_the_stage_on_the_cluster_though_not_here() {
        // Before: one task of 4 s and 64 of 0.1 s: 5.2 s on 2 cores (40 small ones beside
        // the large one, then 24 over both).
        let mut before = vec![4_000];
        before.extend([100; 64]);
        // After: a 1.5 s task and 140 of 0.1 s: more work, 7.8 s on 2 cores.
        let mut after = vec![1_500];
        after.extend([100; 140]);
        let cluster = ClusterSize::flag(64, None);
        let t = Timing::of(&run(&before), &run(&after), &cluster, Some(2)).unwrap();
        assert_eq!((t.before.measured_ms, t.before.replayed_here_ms), (5_300, Some(5_300)));
        assert_eq!(t.before.cluster_ms, 4_100);
        assert_eq!(t.after.cluster_ms, 1_600);
        assert_eq!(t.before.at(1), Some(4_000 + 6_400 + 100));
        assert!(t.here_speedup < 1.0 && t.cluster_speedup > 2.5);
        assert!(!t.slower_on_cluster(Some(300)));
        assert!(t.line().contains("there the hot task is the stage"));
    }

    #[test]
    fn a_run_without_stage_times_is_not_replayed() {
        let mut r = run(&[500]);
        r.stages[0].submitted_ms = None;
        assert!(Timing::of(&r, &r, &ClusterSize::flag(8, None), None).is_none());
    }
}
