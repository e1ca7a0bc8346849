//! A stage measured from its tasks: the quantiles of what they read, ran and spilled, their
//! totals, and the stage's share of the application's time. Shared by the checks, the locate
//! step and the report.

use serde::Serialize;

use super::model::Task;

/// Min, 25th, median, 75th percentile and max, as the Spark UI's stage summary shows them.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Quantiles {
    pub min: i64,
    pub p25: i64,
    pub median: i64,
    pub p75: i64,
    pub max: i64,
}

impl Quantiles {
    /// Spark's own pick: the value at index min(q * n, n - 1) of the sorted values.
    pub fn of(mut v: Vec<i64>) -> Quantiles {
        if v.is_empty() {
            return Quantiles::default();
        }
        v.sort_unstable();
        let n = v.len();
        let at = |q: f64| v[((q * n as f64) as usize).min(n - 1)];
        Quantiles { min: v[0], p25: at(0.25), median: at(0.5), p75: at(0.75), max: v[n - 1] }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TaskSummary {
    pub duration_ms: Quantiles,
    pub run_ms: Quantiles,
    pub shuffle_read_bytes: Quantiles,
    pub shuffle_read_records: Quantiles,
    pub input_bytes: Quantiles,
    pub memory_spill_bytes: Quantiles,
    pub disk_spill_bytes: Quantiles,
    pub gc_ms: Quantiles,
    pub scheduler_delay_ms: Quantiles,
}

impl TaskSummary {
    /// What the tasks read: shuffle bytes for a stage that reads a shuffle, else input bytes.
    pub(crate) fn reads(&self) -> &Quantiles {
        if self.shuffle_read_bytes.max > 0 {
            &self.shuffle_read_bytes
        } else {
            &self.input_bytes
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    pub shuffle_read_bytes: i64,
    pub shuffle_read_records: i64,
    pub shuffle_write_bytes: i64,
    pub input_bytes: i64,
    pub input_records: i64,
    pub output_bytes: i64,
    pub memory_spill_bytes: i64,
    pub disk_spill_bytes: i64,
    pub spilled_tasks: usize,
    pub gc_ms: i64,
    pub run_ms: i64,
    pub cpu_ms: i64,
    pub task_ms: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub stage_id: i64,
    pub attempt: i64,
    pub name: String,
    pub job_id: Option<i64>,
    pub duration_ms: i64,
    /// Of the application's wall clock.
    pub share: f64,
    /// Of the time any stage ran (the wall clock less the driver's time with no stage running):
    /// what decides whether the stage is worth a finding, since an application's start-up and
    /// its driver's own work are not its stages' to fix.
    pub active_share: f64,
    pub tasks: usize,
    pub failed_tasks: usize,
    /// Executor cores while it ran, and tasks / cores.
    pub slots: i64,
    pub waves: f64,
    pub task_summary: TaskSummary,
    pub totals: Totals,
}

pub(crate) fn ratio(a: i64, b: i64) -> f64 {
    a as f64 / (b.max(1)) as f64
}

pub(crate) fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

pub(crate) fn summarize(tasks: &[&Task]) -> TaskSummary {
    let q = |f: &dyn Fn(&Task) -> i64| Quantiles::of(tasks.iter().map(|t| f(t)).collect());
    TaskSummary {
        duration_ms: q(&|t| t.duration),
        run_ms: q(&|t| t.run),
        shuffle_read_bytes: q(&|t| t.shuffle_read_bytes),
        shuffle_read_records: q(&|t| t.shuffle_read_records),
        input_bytes: q(&|t| t.input_bytes),
        memory_spill_bytes: q(&|t| t.memory_spill),
        disk_spill_bytes: q(&|t| t.disk_spill),
        gc_ms: q(&|t| t.gc),
        scheduler_delay_ms: q(&|t| t.scheduler_delay),
    }
}

pub(crate) fn totals(tasks: &[&Task]) -> Totals {
    let mut t = Totals::default();
    for x in tasks {
        t.shuffle_read_bytes += x.shuffle_read_bytes;
        t.shuffle_read_records += x.shuffle_read_records;
        t.shuffle_write_bytes += x.shuffle_write_bytes;
        t.input_bytes += x.input_bytes;
        t.input_records += x.input_records;
        t.output_bytes += x.output_bytes + x.result_size;
        t.memory_spill_bytes += x.memory_spill;
        t.disk_spill_bytes += x.disk_spill;
        t.spilled_tasks += usize::from(x.memory_spill > 0 || x.disk_spill > 0);
        t.gc_ms += x.gc;
        t.run_ms += x.run;
        t.cpu_ms += x.cpu_ms;
        t.task_ms += x.duration;
    }
    t
}
