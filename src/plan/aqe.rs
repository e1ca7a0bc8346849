//! The join stage as adaptive query execution (AQE) runs it, from each map task's output per
//! reduce partition: Spark's `OptimizeSkewedJoin`, then `CoalesceShufflePartitions`, and the
//! runtime switch to a broadcast join (`docs/aqe.md` has the rules and where each comes from).
//!
//! 1. A partition of a side the join type may split is skewed when its bytes exceed both the
//!    skew threshold and the factor times that side's median partition. It is split into
//!    groups of whole map outputs of about a target size (the larger of the advisory size and
//!    the side's average unskewed partition): a partition written by 4 map tasks splits into
//!    at most 4. Each split is joined with the other side's whole partition (with every split
//!    of it, when both sides are split).
//! 2. The partitions between skewed ones are coalesced, both sides together, into tasks of
//!    about the target size: the advisory size, or the total over the cluster's cores when that
//!    is smaller (`parallelismFirst`), and never under the minimum partition size.
//! 3. A side the join may broadcast whose whole shuffle output is under AQE's broadcast
//!    threshold (and not mostly empty partitions) is broadcast at run time: the other side is
//!    then read map output by map output, one task each.
//!
//! Sizes are bytes as the shuffle writes them; here they are each side's rows times its bytes
//! per row, an estimate (Spark's are compressed serialized rows), so a decision that turns on
//! an absolute size (the skew threshold, the advisory size) is as good as that estimate. The
//! rows of every task are exact for the map outputs given.

use serde::Serialize;

use super::model::{JoinType, Side};
use super::tasks::Task;
use crate::settings::Aqe;

/// Spark's `ShufflePartitionsUtil.SMALL_PARTITION_FACTOR`: a split under a fifth of the target
/// is merged into its neighbour.
const SMALL_PARTITION_FACTOR: f64 = 0.2;
/// Spark's `MERGED_PARTITION_FACTOR`: two neighbouring splits that together stay under 1.2x the
/// target are merged.
const MERGED_PARTITION_FACTOR: f64 = 1.2;
/// Spark's `nonEmptyPartitionRatioForBroadcastJoin`: a side with fewer non-empty partitions
/// than this share is not broadcast at run time.
const NON_EMPTY_RATIO: f64 = 0.2;

/// One side of the join's shuffle: per map task, the rows it writes to each reduce partition
/// and their bytes as the shuffle writes them (compressed); and the bytes of a row as Spark
/// counts a stage's data size (uncompressed).
#[derive(Debug, Clone)]
pub struct ShuffleSide {
    pub maps: Vec<Vec<u64>>,
    pub bytes: Vec<Vec<f64>>,
    pub row_bytes: f64,
}

impl ShuffleSide {
    /// Rows per reduce partition, over every map task.
    pub fn partition_rows(&self, partitions: usize) -> Vec<u64> {
        let mut out = vec![0u64; partitions];
        for m in &self.maps {
            out.iter_mut().zip(m).for_each(|(o, r)| *o += r);
        }
        out
    }
    /// The bytes map task `m` writes to partition `p`.
    fn block(&self, m: usize, p: usize) -> u64 {
        self.bytes.get(m).and_then(|b| b.get(p)).copied().unwrap_or(0.0).round() as u64
    }
    /// Rows of partition `p` written by each map task.
    fn map_rows(&self, p: usize) -> Vec<u64> {
        self.maps.iter().map(|m| m.get(p).copied().unwrap_or(0)).collect()
    }
}

/// A skewed partition as AQE splits it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkewedPartition {
    pub partition: u32,
    pub side: Side,
    pub rows: u64,
    pub bytes: u64,
    /// The splits AQE makes of it: groups of whole map outputs.
    pub splits: u32,
    /// The map tasks that wrote rows to it: AQE cannot make more splits than these.
    pub map_outputs: u32,
    pub largest_split_rows: u64,
}

/// What AQE does to the join stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AqeActions {
    /// The shuffle partitions before AQE.
    pub partitions: u32,
    /// The tasks AQE runs for the join.
    pub tasks: u32,
    /// The size the coalesced tasks aim at, in bytes.
    pub coalesce_target_bytes: u64,
    /// The tasks the partitions that are not split were coalesced into (None: not coalesced).
    pub coalesced_into: Option<u32>,
    /// The bytes over which a partition is skewed, per side (left, right); None for a side the
    /// join type does not let AQE split.
    pub skew_threshold_bytes: [Option<u64>; 2],
    pub skewed: Vec<SkewedPartition>,
    /// The side AQE broadcasts at run time, once both shuffles have run.
    pub broadcast: Option<Side>,
}

impl AqeActions {
    /// What AQE does, in one sentence with its numbers.
    pub fn summary(&self) -> String {
        use crate::format::{fmt_count, human};
        if let Some(b) = self.broadcast {
            return format!("AQE broadcasts the {} side at run time and reads the other side's map outputs in {} tasks", b.as_str(), self.tasks);
        }
        let mut parts: Vec<String> = self
            .skewed
            .iter()
            .map(|k| {
                let limit = if k.splits >= k.map_outputs {
                    format!("; it cannot go further, each split is whole map outputs of the {} that wrote it", k.map_outputs)
                } else {
                    String::new()
                };
                format!(
                    "AQE splits partition {} ({} side, {} rows, {}) into {} tasks of up to {} rows{limit}",
                    k.partition,
                    k.side.as_str(),
                    fmt_count(k.rows),
                    human(k.bytes),
                    k.splits,
                    fmt_count(k.largest_split_rows)
                )
            })
            .collect();
        if parts.is_empty() {
            let thr: Vec<String> =
                self.skew_threshold_bytes.iter().flatten().map(|t| human(*t)).collect();
            parts.push(match thr.len() {
                0 => "AQE splits no partition (skew splits are off, or this join type lets it split neither side)".to_string(),
                _ => format!("AQE splits no partition (none over its skew threshold of {})", thr.join(" / ")),
            });
        }
        match self.coalesced_into {
            Some(n) => parts.push(format!(
                "coalesces the rest into {n} tasks of about {}",
                human(self.coalesce_target_bytes)
            )),
            None => parts.push("coalesces nothing".into()),
        }
        format!("{}: {} tasks", parts.join("; "), self.tasks)
    }
}

/// The stage AQE runs: its tasks (rows, bytes) and what it did.
#[derive(Debug, Clone, Default)]
pub struct AqeStage {
    pub tasks: Vec<Task>,
    pub actions: AqeActions,
}

/// The join stage of `how` over these two shuffles under `aqe`, on a cluster of `cores`.
pub fn stage(
    left: &ShuffleSide,
    right: &ShuffleSide,
    partitions: u32,
    how: JoinType,
    aqe: &Aqe,
    cores: u32,
) -> AqeStage {
    let n = partitions.max(1) as usize;
    let sides = [left, right];
    let rows = [left.partition_rows(n), right.partition_rows(n)];
    let blocks = [0, 1].map(|s| reported_blocks(sides[s], n));
    let bytes: [Vec<u64>; 2] =
        [0, 1].map(|s| (0..n).map(|p| blocks[s].iter().map(|m| m[p]).sum()).collect());
    // Spark's data size counts each row's bytes, not the 4-byte length the shuffle writes.
    let data_size = [0, 1]
        .map(|s| (rows[s].iter().sum::<u64>() as f64 * (sides[s].row_bytes - 4.0).max(0.0)) as u64);
    if let Some(b) = runtime_broadcast(&bytes, data_size, how, aqe) {
        return broadcast_stage(sides[1 - b as usize], partitions, b, aqe, cores, &bytes);
    }
    let skew = Skew::of(&bytes, how, aqe);
    let mut units: Vec<Unit> = Vec::new();
    let mut skewed = Vec::new();
    for p in 0..n {
        let specs = [0, 1].map(|s| skew.splits(&blocks[s], s, p, &bytes[s]));
        for (s, spec) in specs.iter().enumerate() {
            if spec.len() > 1 {
                skewed.push(skewed_partition(sides[s], s, p, rows[s][p], bytes[s][p], spec));
            }
        }
        units.push(Unit { partition: p, specs });
    }
    let total: u64 = bytes.iter().flatten().sum();
    let target = coalesce_target(total, aqe, cores);
    let ranges =
        if aqe.coalesce { coalesced(&units, &bytes, target, aqe.min_partition_size) } else { None };
    let coalesced_into =
        ranges.as_ref().map(|r| r.iter().filter(|x| matches!(x, Spec::Range(..))).count() as u32);
    let specs = ranges.unwrap_or_else(|| uncoalesced(&units));
    let tasks: Vec<Task> = specs.iter().map(|sp| sp.task(sides, &rows)).collect();
    let actions = AqeActions {
        partitions,
        tasks: tasks.len() as u32,
        coalesce_target_bytes: target,
        coalesced_into,
        skew_threshold_bytes: skew.threshold,
        skewed,
        broadcast: None,
    };
    AqeStage { tasks, actions }
}

/// The bytes each map task reports for each reduce partition: its rows' estimated bytes as
/// Spark's `MapStatus` rounds them (up to the next power of 1.1 for up to 2,000 partitions;
/// above that, every block under 100 MB reported as the map task's average one).
fn reported_blocks(side: &ShuffleSide, n: usize) -> Vec<Vec<u64>> {
    (0..side.maps.len())
        .map(|m| {
            let raw: Vec<u64> = (0..n).map(|p| side.block(m, p)).collect();
            if n <= HIGHLY_COMPRESSED_OVER {
                return raw.into_iter().map(log_rounded).collect();
            }
            let small: Vec<u64> =
                raw.iter().copied().filter(|b| *b > 0 && *b < ACCURATE_BLOCK).collect();
            let avg =
                if small.is_empty() { 0 } else { small.iter().sum::<u64>() / small.len() as u64 };
            raw.into_iter()
                .map(|b| {
                    if b == 0 {
                        0
                    } else if b >= ACCURATE_BLOCK {
                        log_rounded(b)
                    } else {
                        avg
                    }
                })
                .collect()
        })
        .collect()
}

/// `spark.shuffle.minNumPartitionsToHighlyCompress`: past this many partitions a map task
/// reports its small blocks as their average.
const HIGHLY_COMPRESSED_OVER: usize = 2000;
/// `spark.shuffle.accurateBlockThreshold`: blocks this big are reported as they are.
const ACCURATE_BLOCK: u64 = 100 << 20;

/// A block size as `CompressedMapStatus` stores it: one byte, the power of 1.1 at or above it.
fn log_rounded(size: u64) -> u64 {
    match size {
        0 => 0,
        1 => 1,
        _ => {
            let c = ((size as f64).ln() / 1.1f64.ln()).ceil().min(255.0);
            1.1f64.powf(c) as u64
        }
    }
}

/// One shuffle partition with each side's splits (map ranges `[from, to)`).
struct Unit {
    partition: usize,
    specs: [Vec<(usize, usize)>; 2],
}

impl Unit {
    fn is_split(&self) -> bool {
        self.specs.iter().any(|s| s.len() > 1)
    }
}

/// One task of the join: a range of whole partitions, or one partition's map ranges per side.
enum Spec {
    Range(usize, usize),
    Piece { partition: usize, left: (usize, usize), right: (usize, usize) },
}

impl Spec {
    fn task(&self, sides: [&ShuffleSide; 2], rows: &[Vec<u64>; 2]) -> Task {
        let whole = |s: &ShuffleSide, a: usize, b: usize| -> f64 {
            s.bytes.iter().map(|m| m[a..b].iter().sum::<f64>()).sum()
        };
        let part = |s: &ShuffleSide, p: usize, (a, b): (usize, usize)| -> (u64, f64) {
            (
                s.maps[a..b].iter().map(|m| m.get(p).copied().unwrap_or(0)).sum(),
                s.bytes[a..b].iter().map(|m| m.get(p).copied().unwrap_or(0.0)).sum(),
            )
        };
        match *self {
            Spec::Range(a, b) => (
                rows[0][a..b].iter().sum::<u64>() + rows[1][a..b].iter().sum::<u64>(),
                whole(sides[0], a, b) + whole(sides[1], a, b),
            ),
            Spec::Piece { partition, left, right } => {
                let (l, r) = (part(sides[0], partition, left), part(sides[1], partition, right));
                (l.0 + r.0, l.1 + r.1)
            }
        }
    }
}

/// Each partition its own task, each split partition the product of its sides' splits.
fn uncoalesced(units: &[Unit]) -> Vec<Spec> {
    let mut out = Vec::new();
    for u in units {
        if !u.is_split() {
            out.push(Spec::Range(u.partition, u.partition + 1));
            continue;
        }
        for l in &u.specs[0] {
            for r in &u.specs[1] {
                out.push(Spec::Piece { partition: u.partition, left: *l, right: *r });
            }
        }
    }
    out
}

/// Spark's `coalescePartitions`: the runs of partitions that are not split coalesced (both
/// sides' bytes together), the split ones kept as they are; None when that makes no fewer
/// tasks than there were.
fn coalesced(
    units: &[Unit],
    bytes: &[Vec<u64>; 2],
    target: u64,
    min_size: u64,
) -> Option<Vec<Spec>> {
    let before = uncoalesced(units);
    let size = |p: usize| bytes[0][p] + bytes[1][p];
    let any_split = units.iter().any(Unit::is_split);
    let mut out = Vec::new();
    let mut run_start: Option<usize> = None;
    let close = |from: Option<usize>, to: usize, out: &mut Vec<Spec>| {
        if let Some(a) = from {
            let sizes: Vec<u64> = (a..to).map(size).collect();
            out.extend(
                coalesce(&sizes, target, min_size, any_split)
                    .into_iter()
                    .map(|(x, y)| Spec::Range(a + x, a + y)),
            );
        }
    };
    for u in units {
        if u.is_split() {
            close(run_start.take(), u.partition, &mut out);
            out.extend(uncoalesced(std::slice::from_ref(u)));
        } else if run_start.is_none() {
            run_start = Some(u.partition);
        }
    }
    close(run_start, units.len(), &mut out);
    (out.len() < before.len()).then_some(out)
}

/// The size coalesced tasks aim at: the total over the cores when parallelism comes first
/// (else the total), at most the advisory size, at least the minimum partition size.
pub fn coalesce_target(total: u64, aqe: &Aqe, cores: u32) -> u64 {
    let min_tasks = if aqe.parallelism_first { cores.max(1) } else { 1 };
    total.div_ceil(u64::from(min_tasks)).min(aqe.advisory_size).max(aqe.min_partition_size)
}

/// Spark's loop over one run of partition sizes: `[from, to)` ranges, each closed before the
/// next partition would take it past `target`; a range under `min_size` is packed with the
/// range before (when that is smaller than the next partition) or with what follows. An
/// all-empty run makes one range, or none when `allow_empty` (a run between skewed ones).
pub fn coalesce(
    sizes: &[u64],
    target: u64,
    min_size: u64,
    allow_empty: bool,
) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let (mut coalesced, mut split, mut latest) = (0u64, 0usize, 0u64);
    for (i, &cur) in sizes.iter().enumerate() {
        if i > split && coalesced + cur > target {
            if coalesced < min_size {
                if latest > 0 && latest < cur {
                    if let Some(last) = out.last_mut() {
                        last.1 = i;
                    }
                    split = i;
                    latest += coalesced;
                    coalesced = cur;
                } else {
                    coalesced += cur;
                }
            } else {
                if coalesced > 0 {
                    out.push((split, i));
                }
                split = i;
                latest = coalesced;
                coalesced = cur;
            }
        } else {
            coalesced += cur;
        }
    }
    let end = sizes.len();
    if coalesced < min_size && latest > 0 {
        if let Some(last) = out.last_mut() {
            last.1 = end;
        }
    } else if coalesced > 0 || (!allow_empty && out.is_empty()) {
        out.push((split, end));
    }
    out
}

/// Which partitions are skewed, per side, and the size their splits aim at.
struct Skew {
    threshold: [Option<u64>; 2],
    target: [u64; 2],
}

impl Skew {
    /// Per side the join type lets AQE split: skewed over the larger of the threshold and the
    /// factor times the median partition; splits aim at the larger of the advisory size and
    /// the mean partition not skewed.
    fn of(bytes: &[Vec<u64>; 2], how: JoinType, aqe: &Aqe) -> Skew {
        let may = [can_split(how, Side::Left), can_split(how, Side::Right)];
        let mut threshold = [None, None];
        let mut target = [aqe.advisory_size; 2];
        for s in 0..2 {
            if !(aqe.skew_join && may[s]) {
                continue;
            }
            let t = aqe.skew_threshold.max((median(&bytes[s]) as f64 * aqe.skew_factor) as u64);
            let small: Vec<u64> = bytes[s].iter().copied().filter(|b| *b <= t).collect();
            if !small.is_empty() {
                target[s] = aqe.advisory_size.max(small.iter().sum::<u64>() / small.len() as u64);
            }
            threshold[s] = Some(t);
        }
        Skew { threshold, target }
    }

    /// Side `s`'s map ranges for partition `p` (`blocks`: per map task, its reported bytes
    /// per partition): several when it is skewed and its map outputs make more than one split.
    fn splits(
        &self,
        blocks: &[Vec<u64>],
        s: usize,
        p: usize,
        bytes: &[u64],
    ) -> Vec<(usize, usize)> {
        let all = vec![(0, blocks.len())];
        match self.threshold[s] {
            Some(t) if bytes[p] > t => {
                let sizes: Vec<u64> = blocks.iter().map(|m| m[p]).collect();
                let starts = split_by_target(&sizes, self.target[s]);
                if starts.len() < 2 {
                    return all;
                }
                starts
                    .iter()
                    .enumerate()
                    .map(|(i, &a)| (a, starts.get(i + 1).copied().unwrap_or(sizes.len())))
                    .collect()
            }
            _ => all,
        }
    }
}

/// Spark's `splitSizeListByTargetSize`: the start index of each group of consecutive sizes,
/// each group closed before it passes `target`; a group under a fifth of the target (or two
/// that together stay under 1.2x) is merged into the one before.
pub fn split_by_target(sizes: &[u64], target: u64) -> Vec<usize> {
    let mut starts = vec![0usize];
    let (mut current, mut last): (u64, Option<u64>) = (0, None);
    let t = target as f64;
    let try_merge = |starts: &mut Vec<usize>, current: u64, last: &mut Option<u64>| match *last {
        Some(l)
            if ((current + l) as f64) < t * MERGED_PARTITION_FACTOR
                || (current as f64) < t * SMALL_PARTITION_FACTOR
                || (l as f64) < t * SMALL_PARTITION_FACTOR =>
        {
            starts.pop();
            *last = Some(l + current);
        }
        _ => *last = Some(current),
    };
    for (i, &s) in sizes.iter().enumerate() {
        if i > 0 && current + s > target {
            try_merge(&mut starts, current, &mut last);
            starts.push(i);
            current = s;
        } else {
            current += s;
        }
    }
    try_merge(&mut starts, current, &mut last);
    starts
}

/// The median of the partition sizes as Spark takes it (the mean of the middle two for an
/// even count), at least 1.
fn median(sizes: &[u64]) -> u64 {
    let mut s = sizes.to_vec();
    s.sort_unstable();
    let n = s.len();
    let m = match n {
        0 => 0,
        _ if n.is_multiple_of(2) => (s[n / 2] + s[n / 2 - 1]) / 2,
        _ => s[n / 2],
    };
    m.max(1)
}

/// AQE splits only a side whose rows may be copied against the other's: inner joins either
/// side, left outer, semi and anti the left, right outer the right, full outer neither.
pub fn can_split(how: JoinType, side: Side) -> bool {
    match how {
        JoinType::Inner => true,
        JoinType::Left | JoinType::Semi | JoinType::Anti => side == Side::Left,
        JoinType::Right => side == Side::Right,
        JoinType::Full => false,
    }
}

fn skewed_partition(
    side: &ShuffleSide,
    s: usize,
    p: usize,
    rows: u64,
    bytes: u64,
    spec: &[(usize, usize)],
) -> SkewedPartition {
    let map_rows = side.map_rows(p);
    let largest = spec.iter().map(|&(a, b)| map_rows[a..b].iter().sum::<u64>()).max().unwrap_or(0);
    SkewedPartition {
        partition: p as u32,
        side: if s == 0 { Side::Left } else { Side::Right },
        rows,
        bytes,
        splits: spec.len() as u32,
        map_outputs: map_rows.iter().filter(|r| **r > 0).count() as u32,
        largest_split_rows: largest,
    }
}

/// The side AQE broadcasts once the shuffles have run: one the join may broadcast whose rows
/// (`data_size`, uncompressed) are under AQE's threshold, unless fewer than a fifth of its
/// partitions hold rows; the smaller when both qualify.
fn runtime_broadcast(
    bytes: &[Vec<u64>; 2],
    data_size: [u64; 2],
    how: JoinType,
    aqe: &Aqe,
) -> Option<Side> {
    if aqe.broadcast_threshold == 0 {
        return None;
    }
    // On a tie Spark builds on the right.
    [Side::Right, Side::Left]
        .into_iter()
        .filter(|s| how.may_broadcast(*s) && data_size[*s as usize] <= aqe.broadcast_threshold)
        .filter(|s| {
            let b = &bytes[*s as usize];
            let non_empty = b.iter().filter(|x| **x > 0).count();
            non_empty == 0 || non_empty as f64 >= NON_EMPTY_RATIO * b.len() as f64
        })
        .min_by_key(|s| data_size[*s as usize])
}

/// The join as a broadcast hash join over `stream`'s shuffle output read where it was
/// written: as many tasks as the coalesced partitions would have been, each map output cut
/// into equal runs of partitions (or, with fewer tasks than map outputs, runs of map outputs).
fn broadcast_stage(
    stream: &ShuffleSide,
    partitions: u32,
    built: Side,
    aqe: &Aqe,
    cores: u32,
    bytes: &[Vec<u64>; 2],
) -> AqeStage {
    let n = partitions.max(1) as usize;
    // The stream side's read is coalesced on its own (a broadcast join parts the coalescing
    // groups), with the cores shared between the two sides' shuffles by their bytes.
    let s = 1 - built as usize;
    let sizes: Vec<u64> = bytes[s].clone();
    let (mine, all): (u64, u64) = (sizes.iter().sum(), bytes.iter().flatten().sum());
    let share = ((f64::from(cores) * mine as f64 / all.max(1) as f64).round() as u32).max(1);
    let target = coalesce_target(mine, aqe, share);
    let expected = if aqe.coalesce {
        coalesce(&sizes, target, aqe.min_partition_size, false).len()
    } else {
        n
    };
    let maps = stream.maps.len().max(1);
    let tasks: Vec<Task> = if expected >= maps {
        let per = expected / maps;
        (0..stream.maps.len())
            .flat_map(|m| {
                equal_runs(n, per).into_iter().map(move |(a, b)| {
                    (stream.maps[m][a..b].iter().sum(), stream.bytes[m][a..b].iter().sum())
                })
            })
            .collect()
    } else {
        equal_runs(maps, expected)
            .into_iter()
            .map(|(a, b)| {
                (
                    stream.maps[a..b].iter().flatten().sum(),
                    stream.bytes[a..b].iter().flatten().sum(),
                )
            })
            .collect()
    };
    AqeStage {
        actions: AqeActions {
            partitions,
            tasks: tasks.len() as u32,
            coalesce_target_bytes: target,
            broadcast: Some(built),
            ..Default::default()
        },
        tasks,
    }
}

/// `0..n` cut into `k` runs whose lengths differ by at most one, the longer first (Spark's
/// `equallyDivide`).
fn equal_runs(n: usize, k: usize) -> Vec<(usize, usize)> {
    let k = k.clamp(1, n.max(1));
    let (base, extra) = (n / k, n % k);
    let mut out = Vec::with_capacity(k);
    let mut start = 0;
    for i in 0..k {
        let len = base + usize::from(i < extra);
        out.push((start, start + len));
        start += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aqe() -> Aqe {
        Aqe {
            enabled: true,
            coalesce: true,
            parallelism_first: false,
            min_partition_size: 1,
            advisory_size: 1000,
            skew_join: true,
            skew_factor: 5.0,
            skew_threshold: 2000,
            broadcast_threshold: 0,
        }
    }

    /// `maps` map tasks over 8 partitions, 10 rows each everywhere, and `hot` more rows of
    /// partition 3 from each map task.
    fn side(maps: usize, hot: u64) -> ShuffleSide {
        let mut m = vec![vec![10u64; 8]; maps];
        m.iter_mut().for_each(|x| x[3] += hot);
        let bytes = m.iter().map(|x| x.iter().map(|r| *r as f64).collect()).collect();
        // 5 bytes a row with its 4-byte length: a data size of 1 byte a row.
        ShuffleSide { maps: m, bytes, row_bytes: 5.0 }
    }

    #[test]
    fn a_hot_partition_splits_into_at_most_its_map_outputs() {
        let (l, r) = (side(4, 1000), side(2, 0));
        let s = stage(&l, &r, 8, JoinType::Inner, &aqe(), 2);
        let sk = &s.actions.skewed;
        assert_eq!(sk.len(), 1);
        assert_eq!(
            (sk[0].partition, sk[0].side, sk[0].splits, sk[0].map_outputs),
            (3, Side::Left, 4, 4)
        );
        // Each split: one map's 1,010 rows and the right side's whole partition (20 rows).
        assert_eq!(s.tasks.iter().map(|t| t.0).max(), Some(1030));
    }

    #[test]
    fn a_full_outer_join_is_never_split_and_a_left_join_only_on_the_left() {
        let (l, r) = (side(4, 1000), side(4, 1000));
        assert!(stage(&l, &r, 8, JoinType::Full, &aqe(), 2).actions.skewed.is_empty());
        let s = stage(&l, &r, 8, JoinType::Left, &aqe(), 2);
        assert_eq!(s.actions.skewed.iter().map(|k| k.side).collect::<Vec<_>>(), vec![Side::Left]);
        assert_eq!(s.actions.skew_threshold_bytes[1], None);
        // Both sides split in an inner join: every left split meets every right split.
        let s = stage(&l, &r, 8, JoinType::Inner, &aqe(), 2);
        assert_eq!(s.actions.skewed.len(), 2);
        assert_eq!(s.tasks.iter().filter(|t| t.0 == 2020).count(), 16);
    }

    #[test]
    fn under_the_threshold_nothing_splits_and_small_partitions_coalesce() {
        let (l, r) = (side(4, 400), side(1, 0));
        let s = stage(&l, &r, 8, JoinType::Inner, &aqe(), 2);
        assert!(s.actions.skewed.is_empty());
        // Partitions of 50 rows, partition 3 of 1,650; target 1,000 bytes (rows, up to 10% more
        // as Spark reports them): [0..3) 150, [3] 1,650, [4..8) 200.
        assert_eq!(s.tasks.iter().map(|t| t.0).collect::<Vec<_>>(), vec![150, 1650, 200]);
        assert_eq!(s.actions.coalesced_into, Some(3));
    }

    #[test]
    fn parallelism_first_aims_at_the_total_over_the_cores_but_not_under_the_minimum() {
        let a = Aqe { parallelism_first: true, advisory_size: 1 << 30, ..aqe() };
        assert_eq!(coalesce_target(1000, &a, 4), 250);
        let b = Aqe { min_partition_size: 300, ..a };
        assert_eq!(coalesce_target(1000, &b, 4), 300);
        let c = Aqe { parallelism_first: false, ..aqe() };
        assert_eq!(coalesce_target(5000, &c, 4), 1000);
    }

    #[test]
    fn coalescing_packs_a_small_run_with_the_smaller_neighbour() {
        // Spark's own example: [64, 0.5, 64] with a minimum of 1 packs the 0.5 with a neighbour.
        assert_eq!(coalesce(&[64, 1, 64], 64, 2, false), vec![(0, 1), (1, 3)]);
        assert_eq!(coalesce(&[10, 10, 10, 10], 25, 1, false), vec![(0, 2), (2, 4)]);
        assert_eq!(coalesce(&[0, 0, 0], 25, 1, false), vec![(0, 3)]);
        assert_eq!(coalesce(&[0, 0, 0], 25, 1, true), vec![]);
        // A small tail goes into the range before it.
        assert_eq!(coalesce(&[20, 20, 1], 20, 5, false), vec![(0, 1), (1, 3)]);
    }

    #[test]
    fn block_sizes_are_rounded_up_to_a_power_of_1_1() {
        assert_eq!(log_rounded(0), 0);
        assert_eq!(log_rounded(1), 1);
        let r = log_rounded(1000);
        assert!((1000..1100).contains(&r), "{r}");
    }

    #[test]
    fn splits_merge_a_small_tail_into_the_group_before() {
        assert_eq!(split_by_target(&[100, 100, 100, 10], 100), vec![0, 1, 2]);
        assert_eq!(split_by_target(&[100; 4], 100), vec![0, 1, 2, 3]);
        assert_eq!(split_by_target(&[30; 4], 100), vec![0, 3]);
        assert_eq!(split_by_target(&[30; 3], 100), vec![0]);
    }

    #[test]
    fn a_small_side_is_broadcast_at_run_time_and_the_other_read_by_map_output() {
        let a = Aqe { broadcast_threshold: 500, ..aqe() };
        let (l, r) = (side(4, 1000), side(1, 0));
        let s = stage(&l, &r, 8, JoinType::Inner, &a, 2);
        assert_eq!(s.actions.broadcast, Some(Side::Right));
        // The 8 partitions would coalesce into 3 tasks, fewer than the 4 map outputs: runs of
        // 2, 1 and 1 map outputs.
        assert_eq!(s.tasks.iter().map(|t| t.0).collect::<Vec<_>>(), vec![2160, 1080, 1080]);
    }
}
