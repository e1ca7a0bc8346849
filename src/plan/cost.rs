//! What the user waits for: a cost model of the join as written and as rewritten, in seconds,
//! from the tasks each runs and the scans each makes. Pure: the rates are constants measured
//! against Spark's own task times (`docs/cost-model.md` gives the method and the figures), and
//! the inputs are the predicted tasks.
//!
//! A stage of tasks on `slots` cores takes at least its largest task and at least its total
//! work spread over the slots: `max(largest, total / slots)` (the greedy schedule Spark's task
//! scheduler makes is within one task of that). A join task costs a fixed start plus a rate per
//! record it reads; a scan a rate per row and per compressed byte it reads (decoding a wide
//! string column costs more than its row count says). The rewrite pays for what it adds: every UNION ALL branch reads its inputs again
//! (each scan a map stage of its own), and the rows joined to a broadcast slice or side are
//! joined where they are read.

use serde::Serialize;

use super::tasks::Task;

/// Seconds per unit of work, as measured on Spark in local mode (see `docs/cost-model.md`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rates {
    /// A task's start and finish, whatever it reads.
    pub task_s: f64,
    /// Per row a join task reads (sorting, merging, writing its output).
    pub join_row_s: f64,
    /// Per row a scan reads and writes to the shuffle.
    pub scan_row_s: f64,
    /// Per compressed byte of the columns a scan reads.
    pub scan_byte_s: f64,
    /// A stage's start (scheduling, its first wave of tasks).
    pub stage_s: f64,
}

/// The rates `bench/cost_fit.py` fitted to the skew benchmark's tasks on Spark 3.5 in local
/// mode on a 2-core machine (docs/cost-model.md).
pub const MEASURED: Rates = Rates {
    task_s: 0.125,
    join_row_s: 0.32e-6,
    scan_row_s: 0.0094e-6,
    scan_byte_s: 0.040e-6,
    stage_s: 0.2,
};

/// One stage's predicted time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StageTime {
    pub seconds: f64,
    pub largest_task_seconds: f64,
    pub tasks: u32,
}

/// The time of a stage of `tasks` on `slots` cores.
pub fn stage(tasks: &[Task], slots: u32, r: &Rates) -> StageTime {
    let each = |t: &Task| r.task_s + t.0 as f64 * r.join_row_s;
    let largest = tasks.iter().map(each).fold(0.0, f64::max);
    let total: f64 = tasks.iter().map(each).sum();
    StageTime {
        seconds: r.stage_s + largest.max(total / f64::from(slots.max(1))),
        largest_task_seconds: largest,
        tasks: tasks.len() as u32,
    }
}

/// What a scan reads: rows, the compressed bytes of the columns read, and its map tasks (a
/// scan runs at most that many at once, whatever the cores: a 64-file table is read by 64
/// tasks on a 200-core cluster; 0 when not known).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Scan {
    pub rows: u64,
    pub bytes: u64,
    pub tasks: u64,
}

/// Two scans at once (both sides' map stages): their tasks share the cores.
impl std::ops::Add for Scan {
    type Output = Scan;
    fn add(self, o: Scan) -> Scan {
        Scan {
            rows: self.rows.saturating_add(o.rows),
            bytes: self.bytes.saturating_add(o.bytes),
            tasks: self.tasks.saturating_add(o.tasks),
        }
    }
}

/// The same scan `n` times, one after another at its own tasks' width: a rewrite's branches
/// read their inputs in stages that, measured, hardly overlap (the benchmark's full outer
/// join at 200 cores: 289 s of tasks took 7.6 s, not 1.5 s).
impl std::ops::Mul<u64> for Scan {
    type Output = Scan;
    fn mul(self, n: u64) -> Scan {
        Scan {
            rows: self.rows.saturating_mul(n),
            bytes: self.bytes.saturating_mul(n),
            tasks: self.tasks,
        }
    }
}

/// The time of a scan into a shuffle (or a broadcast) on `slots` cores, or on its map tasks'
/// number where that is fewer.
pub fn scan(s: Scan, slots: u32, r: &Rates) -> f64 {
    let work = s.rows as f64 * r.scan_row_s + s.bytes as f64 * r.scan_byte_s;
    let at_once = match s.tasks {
        0 => u64::from(slots.max(1)),
        t => t.min(u64::from(slots.max(1))),
    };
    r.stage_s + work / at_once as f64
}

/// The join as written and as rewritten, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct JoinCost {
    /// Reading both inputs once and the join stage.
    pub before_seconds: f64,
    pub before_stage: StageTime,
    /// Reading the inputs once per branch that reads them, and the join stages.
    pub after_seconds: f64,
    pub after_stage: StageTime,
    /// The rows the rewrite reads again (the inputs of its extra branches).
    pub rows_read_again: u64,
    pub slots: u32,
}

impl JoinCost {
    /// The rewrite's broadcast joins: `rows` streamed past a broadcast slice or side, spread
    /// over the slots (a broadcast hash join reads them where the scan does, no shuffle).
    pub fn add_broadcast_join(&mut self, rows: u64, r: &Rates) {
        self.after_seconds += rows as f64 * r.join_row_s / f64::from(self.slots.max(1));
    }

    /// The rewrite's predicted time as a share of the join's: 0.5 is twice as fast.
    pub fn ratio(&self) -> f64 {
        self.after_seconds / self.before_seconds.max(1e-9)
    }
}

/// The join's cost before and after: the scan of each side, the tasks of each, and what the
/// rewrite's extra branches read again.
pub fn join(
    inputs: [Scan; 2],
    before: &[Task],
    after: &[Task],
    read_again: Scan,
    slots: u32,
    r: &Rates,
) -> JoinCost {
    // Both inputs' map stages share the slots.
    let scans = scan(inputs[0] + inputs[1], slots, r);
    let (b, a) = (stage(before, slots, r), stage(after, slots, r));
    let again = if read_again.rows > 0 { scan(read_again, slots, r) } else { 0.0 };
    JoinCost {
        before_seconds: scans + b.seconds,
        before_stage: b,
        after_seconds: scans + again + a.seconds,
        after_stage: a,
        rows_read_again: read_again.rows,
        slots,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Rates =
        Rates { task_s: 0.01, join_row_s: 1e-6, scan_row_s: 1e-7, scan_byte_s: 0.0, stage_s: 0.1 };

    fn rows(rows: u64) -> Scan {
        Scan { rows, ..Scan::default() }
    }

    #[test]
    fn a_stage_takes_its_largest_task_or_its_work_over_the_slots() {
        // One task of 10M rows dominates 2 slots: 0.1 + 0.01 + 10 s.
        let s = stage(&[(10_000_000, 0.0), (1_000, 0.0)], 2, &R);
        assert!((s.seconds - 10.11).abs() < 1e-6, "{}", s.seconds);
        // 100 even tasks over 2 slots: 50 waves of 0.011 s.
        let s = stage(&vec![(1_000, 0.0); 100], 2, &R);
        assert!((s.seconds - (0.1 + 0.55)).abs() < 1e-6, "{}", s.seconds);
    }

    #[test]
    fn a_rewrite_that_reads_its_inputs_again_for_a_small_task_costs_more() {
        let before = vec![(3_000, 0.0); 8];
        let after = vec![(2_000, 0.0); 8];
        let c = join([rows(1_000_000), rows(1_000)], &before, &after, rows(1_000_000), 2, &R);
        assert!(c.ratio() > 1.0, "{c:?}");
        // A hot task of 5M rows is worth reading 1M rows again.
        let mut before = vec![(3_000, 0.0); 8];
        before.push((5_000_000, 0.0));
        let c = join([rows(6_000_000), rows(1_000)], &before, &after, rows(6_000_000), 2, &R);
        assert!(c.ratio() < 0.5, "{c:?}");
    }

    #[test]
    fn a_wide_input_read_again_costs_more_than_a_narrow_one() {
        // The skew benchmark's full outer join at 64 cores: a NULL task of 5.3M records
        // against 67 even tasks, the rewrite reading 24M rows 5 times. Its strings (34
        // compressed bytes a row) make the reads cost more than the hot task; 5-byte rows
        // would not.
        let mut before = vec![(252_000, 0.0); 67];
        before.push((5_284_443, 0.0));
        let after = vec![(252_000, 0.0); 67];
        let wide = Scan { rows: 24_000_000, bytes: 24_000_000 * 34, tasks: 76 };
        let narrow = Scan { rows: 24_000_000, bytes: 24_000_000 * 5, tasks: 76 };
        let c = join([wide, Scan::default()], &before, &after, wide * 5, 64, &MEASURED);
        assert!(c.ratio() > 1.0, "{c:?}");
        let c = join([narrow, Scan::default()], &before, &after, narrow * 5, 64, &MEASURED);
        assert!(c.ratio() < 0.8, "{c:?}");
    }

    #[test]
    fn a_scan_runs_on_its_map_tasks_not_on_more_cores() {
        // The benchmark's full outer join on 200 cores: 76 map tasks read its inputs, so its
        // five re-reads run as on 76 cores, and the rewrite still costs more.
        let mut before = vec![(80_000, 0.0); 199];
        before.push((5_284_443, 0.0));
        let after = vec![(80_000, 0.0); 199];
        let wide = Scan { rows: 24_000_000, bytes: 24_000_000 * 34, tasks: 76 };
        let c = join([wide, Scan::default()], &before, &after, wide * 5, 200, &MEASURED);
        assert!(c.ratio() > 1.0, "{c:?}");
        let spread = Scan { tasks: 0, ..wide };
        let c = join([spread, Scan::default()], &before, &after, spread * 5, 200, &MEASURED);
        assert!(c.ratio() < 1.0, "{c:?}");
    }
}
