//! The planner: two tables and a join key in; the hot keys, what they are, the strategy for
//! each, and the join stage Spark would run before and after, task by task.
//!
//! The algebra is `../shared/design/rewrite-algebra.md`: for a set V of non-NULL key values a
//! join splits exactly into the join of the rest, the join of the V rows, and the NULL-keyed
//! rows (which match nothing under `=`). Each branch gets its own physical strategy.

mod emit;
mod report;

pub use emit::{emit_sql, JoinSql};
pub use report::{json, text};

use serde::Serialize;
use serde_json::Value as Json;

use crate::classify::{Class, Classifier};
use crate::count::{self, KeySpec, PartitionScan, ProfileOptions, Sample, TableSize};
use crate::error::{Error, Result};
use crate::format::rows_n;
use crate::hash::{pmod, spark_partition, SPARK_SEED};
use crate::source::Table;
use crate::value::{KeyType, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum JoinType {
    Inner,
    Left,
    Right,
    Full,
    Semi,
    Anti,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Left,
    Right,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Left => "left",
            Side::Right => "right",
        }
    }
}

impl JoinType {
    /// Spark adds `IS NOT NULL` on this side's join keys before the shuffle.
    pub fn spark_drops_nulls(self, side: Side) -> bool {
        match self {
            JoinType::Inner | JoinType::Semi => true,
            JoinType::Left | JoinType::Anti => side == Side::Right,
            JoinType::Right => side == Side::Left,
            JoinType::Full => false,
        }
    }
    /// Rows of this side without a match still appear in the result.
    pub fn preserves(self, side: Side) -> bool {
        match self {
            JoinType::Inner | JoinType::Semi => false,
            JoinType::Left | JoinType::Anti => side == Side::Left,
            JoinType::Right => side == Side::Right,
            JoinType::Full => true,
        }
    }
    /// Spark may build a broadcast hash join on this side (and a salt may replicate it).
    pub fn may_broadcast(self, side: Side) -> bool {
        match self {
            JoinType::Inner => true,
            JoinType::Left | JoinType::Semi | JoinType::Anti => side == Side::Right,
            JoinType::Right => side == Side::Left,
            JoinType::Full => false,
        }
    }
    /// The result carries the right side's columns.
    pub fn outputs_right(self) -> bool {
        !matches!(self, JoinType::Semi | JoinType::Anti)
    }
    pub fn sql(self) -> &'static str {
        match self {
            JoinType::Inner => "JOIN",
            JoinType::Left => "LEFT JOIN",
            JoinType::Right => "RIGHT JOIN",
            JoinType::Full => "FULL JOIN",
            JoinType::Semi => "LEFT SEMI JOIN",
            JoinType::Anti => "LEFT ANTI JOIN",
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            JoinType::Inner => "inner",
            JoinType::Left => "left outer",
            JoinType::Right => "right outer",
            JoinType::Full => "full outer",
            JoinType::Semi => "left semi",
            JoinType::Anti => "left anti",
        }
    }
}

#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub how: JoinType,
    pub partitions: u32,
    pub broadcast_threshold: u64,
    pub target_task_size: u64,
    pub hot_factor: f64,
    pub sample: Option<Sample>,
    pub seed: u64,
    pub drop_junk: bool,
    /// Most frequent values per side considered as hot candidates.
    pub top: usize,
    pub memory: usize,
    pub progress: bool,
    /// The ON clause has predicates beyond the key equalities (the `rewrite` command): the
    /// branches that find unmatched rows from distinct keys alone are then not safe.
    pub extra_predicates: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            how: JoinType::Inner,
            partitions: 200,
            broadcast_threshold: 10 << 20,
            target_task_size: 128 << 20,
            hot_factor: 5.0,
            sample: None,
            seed: 42,
            drop_junk: false,
            top: 20,
            memory: 2 << 30,
            progress: false,
            extra_predicates: false,
        }
    }
}

/// One side of the join as given.
pub struct SideInput<'a> {
    pub table: &'a Table,
    pub keys: KeySpec,
    /// The name used in the emitted SQL.
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Strategy {
    /// NULL keys: the rows skip the join (kept with the other side NULL where the join keeps them).
    NullBypass,
    /// `--drop-junk`: the rows are removed before the join (results change).
    Drop,
    /// The other side's rows for the value are broadcast; the hot rows never enter a shuffle.
    /// `decomposed`: the join type may not broadcast that side, so the branch is an inner join
    /// plus anti joins for the unmatched rows of the kept side(s).
    BroadcastSlice { broadcast: Side, slice_rows: u64, slice_bytes: u64, decomposed: bool },
    /// Semi and anti joins need only the distinct keys of the right side: broadcast those.
    BroadcastKeys,
    /// Split `split`'s rows `n` ways by a salt computed from other columns; replicate the other
    /// side's rows for the value over the `n` salts. Always an inner join (plus anti joins for
    /// the kept sides of an outer join), so a kept side is never replicated.
    Salt { n: u32, split: Side, salts: Vec<i32>, decomposed: bool },
    /// Left in the shuffle: no strategy is safe for this join (said why).
    Keep { reason: String },
}

impl Strategy {
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::NullBypass => "null_bypass",
            Strategy::Drop => "drop",
            Strategy::BroadcastSlice { .. } => "broadcast_slice",
            Strategy::BroadcastKeys => "broadcast_keys",
            Strategy::Salt { .. } => "salt",
            Strategy::Keep { .. } => "keep",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct HotKey {
    /// Native JSON, as in `keys`; an array for a composite key.
    pub value: Json,
    #[serde(skip)]
    pub key: Vec<Value>,
    #[serde(skip)]
    pub display: String,
    /// The side that makes it hot ("left", "right" or "both").
    pub side: String,
    /// Rows of the side it is hot on.
    pub rows: u64,
    pub share: f64,
    pub left_rows: u64,
    pub right_rows: u64,
    pub class: Class,
    pub reason: String,
    /// Rows the other side has for this value today.
    pub other_side_rows: u64,
    /// Shuffle partition Spark sends the value to.
    pub spark_partition: u32,
    pub strategy: Strategy,
    /// Why this strategy, with the numbers.
    pub why: String,
}

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

impl TaskStats {
    fn of(tasks: &[(u64, f64)], median_of: usize) -> TaskStats {
        let mut rows: Vec<u64> = tasks.iter().map(|t| t.0).collect();
        let mut bytes: Vec<f64> = tasks.iter().map(|t| t.1).collect();
        let max_task_rows = rows.iter().copied().max().unwrap_or(0);
        let max_task_bytes = bytes.iter().copied().fold(0.0, f64::max).round() as u64;
        let shuffled_rows = rows.iter().sum();
        // The median of the main join stage (the first `median_of` tasks).
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
        TaskStats { tasks: tasks.len() as u32, max_task_rows, median_task_rows: m_rows, max_task_bytes, median_task_bytes: m_bytes, shuffled_rows }
    }
    pub fn ratio(&self) -> f64 {
        self.max_task_rows as f64 / self.median_task_rows.max(1) as f64
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SideReport {
    pub name: String,
    pub table: String,
    pub keys: Vec<String>,
    pub key_types: Vec<String>,
    pub rows: u64,
    pub null_key_rows: u64,
    pub disk_bytes: u64,
    pub memory_bytes: u64,
    pub bytes_per_row: f64,
    pub columns: Vec<String>,
    /// Spark drops this side's NULL keys before the shuffle for this join type.
    pub spark_drops_nulls: bool,
    pub preserved: bool,
    pub may_broadcast: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub how: JoinType,
    pub shuffle_partitions: u32,
    pub broadcast_threshold: u64,
    pub hot_factor: f64,
    pub left: SideReport,
    pub right: SideReport,
    pub hot_keys: Vec<HotKey>,
    /// A whole side small enough to broadcast for this join type: the simplest fix.
    pub broadcast_side: Option<Side>,
    pub before: TaskStats,
    pub after: TaskStats,
    /// Facts worth knowing that change nothing (NULLs Spark drops itself, auto-broadcast).
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    /// True when `--drop-junk` removed rows: the result differs from the original query's.
    pub results_change: bool,
    /// What to do next when nothing is hot.
    pub next: Option<String>,
    pub sql: String,
    #[serde(skip)]
    pub sample: Option<Sample>,
}

/// Spark hashes tinyint, smallint and int alike; every other type must match exactly, or
/// Spark casts one side and the hash (so the partition) changes.
fn same_hash_type(a: KeyType, b: KeyType) -> bool {
    let small = |t: KeyType| matches!(t, KeyType::TinyInt | KeyType::SmallInt | KeyType::Int);
    a == b || (small(a) && small(b))
}

fn bytes(rows: u64, per_row: f64) -> u64 {
    (rows as f64 * per_row).round() as u64
}

/// Salt values for one key: `n` ints whose (key, salt) pairs land in partitions not yet used.
fn choose_salts(key: &[Value], n: u32, partitions: u32, used: &mut std::collections::HashSet<u32>) -> Vec<i32> {
    let mut salts = Vec::with_capacity(n as usize);
    let mut s: i32 = 0;
    let mut k: Vec<Value> = key.to_vec();
    k.push(Value::Int(0));
    let slot = k.len() - 1;
    while salts.len() < n as usize {
        k[slot] = Value::Int(s);
        let p = spark_partition(&k, partitions);
        // Once every partition is taken (n close to the partition count), accept collisions.
        if !used.contains(&p) || used.len() >= partitions as usize || s > 100_000 {
            used.insert(p);
            salts.push(s);
        }
        s += 1;
    }
    salts
}

pub fn plan(left: &SideInput, right: &SideInput, classifier: &Classifier, opts: &PlanOptions) -> Result<Plan> {
    let how = opts.how;
    let parts = opts.partitions.max(1);
    if left.keys.columns.len() != right.keys.columns.len() || left.keys.columns.is_empty() {
        return Err(Error::Usage("give the same number of key columns on both sides".into()));
    }
    for (l, r) in left.keys.columns.iter().zip(&right.keys.columns) {
        if !same_hash_type(l.key_type, r.key_type) {
            return Err(Error::KeyTypes(format!(
                "join key types differ: {}.{} is {} but {}.{} is {}; Spark would cast one side and hash it differently: cast the key in the data first",
                left.name,
                l.name,
                l.key_type.spark_name(),
                right.name,
                r.name,
                r.key_type.spark_name()
            )));
        }
    }
    let types = left.keys.types();
    let names = left.keys.names();

    // 1. Candidates: the most frequent values of each side.
    let popts =
        ProfileOptions { top: opts.top.max(1), sample: opts.sample, seed: opts.seed, memory: opts.memory, progress: opts.progress, exact_distinct: false };
    let lp = count::profile(left.table, std::slice::from_ref(&left.keys), &popts)?.remove(0);
    let rp = count::profile(right.table, std::slice::from_ref(&right.keys), &popts)?.remove(0);
    let mut cands: Vec<Vec<Value>> = Vec::new();
    for kc in lp.top.iter().chain(rp.top.iter()) {
        if kc.key.iter().any(Value::is_null) || cands.contains(&kc.key) {
            continue;
        }
        if cands.len() < count::MAX_LOOKUP {
            cands.push(kc.key.clone());
        }
    }

    // 2. Exact rows per partition and per candidate, both sides.
    let ls = count::scan(left.table, &left.keys, parts, &cands)?;
    let rs = count::scan(right.table, &right.keys, parts, &cands)?;
    let lsize = TableSize::of(left.table);
    let rsize = TableSize::of(right.table);
    let (lbpr, rbpr) = (lsize.bytes_per_row(), rsize.bytes_per_row());
    let null_part = pmod(SPARK_SEED, parts) as usize;

    // 3. The join stage as Spark runs it: sort-merge join, AQE off.
    let l_nulls_in = if how.spark_drops_nulls(Side::Left) { 0 } else { ls.null_rows };
    let r_nulls_in = if how.spark_drops_nulls(Side::Right) { 0 } else { rs.null_rows };
    let zeros = vec![0u64; parts as usize];
    let l_nulls_in_parts = if l_nulls_in > 0 { &ls.null_partition_rows } else { &zeros };
    let r_nulls_in_parts = if r_nulls_in > 0 { &rs.null_partition_rows } else { &zeros };
    let stage = |lp: &[u64], rp: &[u64], ln: &[u64], rn: &[u64]| -> Vec<(u64, f64)> {
        (0..parts as usize)
            .map(|i| {
                let (l, r) = (lp[i] + ln[i], rp[i] + rn[i]);
                (l + r, l as f64 * lbpr + r as f64 * rbpr)
            })
            .collect()
    };
    let before_tasks = stage(&ls.partition_rows, &rs.partition_rows, l_nulls_in_parts, r_nulls_in_parts);
    let before = TaskStats::of(&before_tasks, parts as usize);
    let median = before.median_task_rows.max(1) as f64;
    let threshold = opts.hot_factor * median;
    // Hot: a value whose own rows exceed F x the median task, or one that puts at least twice
    // the median task into a partition that is skewed (over F x the median) with it. Taking
    // the hottest out lowers the median a little and can leave a partition just over the line:
    // repeat on the stage without them until nothing changes.
    let null_max = |sc: &PartitionScan| sc.null_partition_rows.iter().copied().enumerate().max_by_key(|x| x.1).unwrap_or((null_part, 0));
    let mut hot_cand = vec![false; cands.len()];
    let mut hot_null = [false; 2];
    {
        let mut tasks_now = before_tasks.clone();
        let mut med = median;
        for _round in 0..16 {
            let thr = opts.hot_factor * med;
            let hot_now = |rows: u64, part: usize| rows > 0 && (rows as f64 > thr || (tasks_now[part].0 as f64 > thr && rows as f64 >= 2.0 * med));
            let mut changed = false;
            for (i, (sc, inn)) in [(&ls, l_nulls_in), (&rs, r_nulls_in)].into_iter().enumerate() {
                let (np, nrows) = null_max(sc);
                if !hot_null[i] && inn > 0 && hot_now(nrows, np) {
                    hot_null[i] = true;
                    changed = true;
                }
            }
            for (i, key) in cands.iter().enumerate() {
                if !hot_cand[i] && hot_now(ls.key_rows[i] + rs.key_rows[i], spark_partition(key, parts) as usize) {
                    hot_cand[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
            let lrest = ls.without(&cands, &hot_cand, parts);
            let rrest = rs.without(&cands, &hot_cand, parts);
            tasks_now = stage(&lrest, &rrest, if hot_null[0] { &zeros } else { l_nulls_in_parts }, if hot_null[1] { &zeros } else { r_nulls_in_parts });
            med = TaskStats::of(&tasks_now, parts as usize).median_task_rows.max(1) as f64;
        }
    }
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    let side_report = |s: &SideInput, size: &TableSize, sc: &PartitionScan, side: Side| SideReport {
        name: s.name.clone(),
        table: s.table.display.clone(),
        keys: s.keys.names(),
        key_types: s.keys.types().iter().map(|t| t.spark_name()).collect(),
        rows: sc.rows,
        null_key_rows: sc.null_rows,
        disk_bytes: size.disk_bytes,
        memory_bytes: size.memory_bytes,
        bytes_per_row: size.bytes_per_row(),
        columns: s.table.column_names(),
        spark_drops_nulls: how.spark_drops_nulls(side),
        preserved: how.preserves(side),
        may_broadcast: how.may_broadcast(side),
    };
    let lrep = side_report(left, &lsize, &ls, Side::Left);
    let rrep = side_report(right, &rsize, &rs, Side::Right);

    for (side, sc, rep) in [(Side::Left, &ls, &lrep), (Side::Right, &rs, &rrep)] {
        if sc.null_rows > 0 && how.spark_drops_nulls(side) {
            notes.push(format!(
                "{} has {} NULL-keyed rows ({}); Spark drops them before the shuffle for a {} join, so they cost nothing",
                rep.name,
                crate::format::fmt_count(sc.null_rows),
                crate::format::fmt_share(sc.null_rows as f64 / sc.rows.max(1) as f64),
                how.as_str()
            ));
        }
        if how.may_broadcast(side) && rep.disk_bytes <= opts.broadcast_threshold {
            notes.push(format!(
                "{} is {} on disk, under the {} broadcast threshold: Spark broadcasts it by itself (no shuffle) unless spark.sql.autoBroadcastJoinThreshold is lower or -1; the tasks below assume a sort-merge join",
                rep.name,
                crate::format::human(rep.disk_bytes),
                crate::format::human(opts.broadcast_threshold)
            ));
        }
    }

    // 4. Hot keys and a strategy for each.
    let mut hot: Vec<HotKey> = Vec::new();
    let side_null = [(Side::Left, &ls, &lrep, l_nulls_in), (Side::Right, &rs, &rrep, r_nulls_in)];
    for (si, (side, sc, rep, inn)) in side_null.into_iter().enumerate() {
        // The partition with most NULL-keyed rows (all of them for a one-column key).
        let (np, nrows) = null_max(sc);
        if hot_null[si] {
            let c = classifier.classify_key(&vec![Value::Null; types.len()], &types, &names);
            hot.push(HotKey {
                value: Json::Null,
                key: vec![Value::Null; types.len()],
                display: "NULL".into(),
                side: side.as_str().into(),
                rows: sc.null_rows,
                share: sc.null_rows as f64 / sc.rows.max(1) as f64,
                left_rows: if side == Side::Left { sc.null_rows } else { 0 },
                right_rows: if side == Side::Right { sc.null_rows } else { 0 },
                class: c.class,
                reason: c.reason,
                other_side_rows: 0,
                spark_partition: np as u32,
                strategy: Strategy::NullBypass,
                why: format!(
                    "a NULL key never matches under =, yet Spark keeps {}'s {} NULL-keyed rows for a {} join and sends {} to partition {np}: they skip the join and come out with the {} side's columns NULL",
                    rep.name,
                    crate::format::fmt_count(inn),
                    how.as_str(),
                    if nrows == inn { "all of them".to_string() } else { format!("{} of them", crate::format::fmt_count(nrows)) },
                    side.other().as_str()
                ),
            });
        }
    }
    let mut used_parts = std::collections::HashSet::new();
    // Keys that will be salted (no slice fits): they share the partitions for their pieces.
    let n_salted = cands
        .iter()
        .enumerate()
        .filter(|(i, k)| {
            hot_cand[*i]
                && !(opts.drop_junk && classifier.classify_key(k, &types, &names).class == Class::Junk)
                && !matches!(how, JoinType::Semi | JoinType::Anti)
                && bytes(ls.key_rows[*i], lbpr) > opts.broadcast_threshold
                && bytes(rs.key_rows[*i], rbpr) > opts.broadcast_threshold
        })
        .count()
        .max(1) as u32;
    for (i, key) in cands.iter().enumerate() {
        let (lr, rr) = (ls.key_rows[i], rs.key_rows[i]);
        if !hot_cand[i] {
            continue;
        }
        let c = classifier.classify_key(key, &types, &names);
        let side = if lr as f64 > threshold && rr as f64 > threshold {
            "both"
        } else if lr >= rr {
            "left"
        } else {
            "right"
        };
        let (rows, of) = if lr >= rr { (lr, ls.rows) } else { (rr, rs.rows) };
        let other = if lr >= rr { rr } else { lr };
        let display = display_key(key, &types);
        let (lb, rb) = (bytes(lr, lbpr), bytes(rr, rbpr));
        let thr = opts.broadcast_threshold;
        let fmtc = crate::format::fmt_count;
        let human = crate::format::human;
        let (strategy, why) = if opts.drop_junk && c.class == Class::Junk {
            (Strategy::Drop, format!("--drop-junk: its {} left and {} right rows are removed before the join; the result changes", fmtc(lr), fmtc(rr)))
        } else if matches!(how, JoinType::Semi | JoinType::Anti) {
            if rb > thr && opts.extra_predicates {
                (
                    Strategy::Keep { reason: format!("the ON clause has predicates beyond the keys, so the right side's rows are needed, and its {} for the value ({}) are over the {} threshold", rows_n(rr), human(rb), human(thr)) },
                    "no safe strategy".to_string(),
                )
            } else if rb <= thr {
                (
                    Strategy::BroadcastSlice { broadcast: Side::Right, slice_rows: rr, slice_bytes: rb, decomposed: false },
                    format!(
                        "the right side's {} for it ({}) are under the {} threshold: broadcast them, the {} left never shuffle",
                        rows_n(rr),
                        human(rb),
                        human(thr),
                        rows_n(lr)
                    ),
                )
            } else {
                (
                    Strategy::BroadcastKeys,
                    format!(
                        "a {} join only needs to know whether the right side has the value: broadcast its distinct keys (1 row) instead of its {} ({})",
                        how.as_str(),
                        rows_n(rr),
                        human(rb)
                    ),
                )
            }
        } else {
            // The slice to broadcast: the smaller one that fits, preferring one the join type
            // may broadcast directly.
            let mut options: Vec<(Side, u64, u64)> = vec![(Side::Left, lr, lb), (Side::Right, rr, rb)];
            options.retain(|o| o.2 <= thr);
            options.sort_by_key(|o| (!how.may_broadcast(o.0), o.2));
            let needs_decomposition = |decomposed: bool| decomposed && opts.extra_predicates;
            let salt_decomposed = how != JoinType::Inner;
            if options.first().is_some_and(|o| needs_decomposition(!how.may_broadcast(o.0))) || (options.is_empty() && needs_decomposition(salt_decomposed)) {
                (
                    Strategy::Keep {
                        reason: format!(
                            "a {} join with predicates beyond the keys: finding the unmatched rows of the kept side would need the other side's rows for the value, which are over the {} threshold",
                            how.as_str(),
                            human(thr)
                        ),
                    },
                    "no safe strategy".to_string(),
                )
            } else if let Some(&(b, srows, sbytes)) = options.first() {
                let decomposed = !how.may_broadcast(b);
                let mut why = format!(
                    "{}'s {} for it ({}) fit under the {} broadcast threshold: they are broadcast and {}'s {} never shuffle",
                    if b == Side::Left { &lrep.name } else { &rrep.name },
                    rows_n(srows),
                    human(sbytes),
                    human(thr),
                    if b == Side::Left { &rrep.name } else { &lrep.name },
                    rows_n(if b == Side::Left { rr } else { lr }),
                );
                if srows == 0 {
                    why.push_str(" (no such rows today: the slice is empty and costs nothing, and the query stays right the day one appears)");
                }
                if decomposed {
                    why.push_str(&format!(
                        "; a {} join may not broadcast that side, so the branch is an inner join plus an anti join for the unmatched rows",
                        how.as_str()
                    ));
                }
                (Strategy::BroadcastSlice { broadcast: b, slice_rows: srows, slice_bytes: sbytes, decomposed }, why)
            } else {
                let split = if lr >= rr { Side::Left } else { Side::Right };
                let (srows, reprows) = if split == Side::Left { (lr, rr) } else { (rr, lr) };
                let sbpr = if split == Side::Left { lbpr } else { rbpr };
                // Pieces near the median task, and none over the target task size.
                // Every piece carries all the copied rows, so pieces smaller than those gain
                // little and cost a copy each; and the salted keys share the partitions.
                let by_median = (srows as f64 / median.max(reprows as f64).max(1.0)).ceil();
                let by_size = (srows as f64 * sbpr / opts.target_task_size.max(1) as f64).ceil();
                let n = (by_median.max(by_size) as u32).clamp(2, (parts / n_salted).max(2));
                let salts = choose_salts(key, n, parts, &mut used_parts);
                let decomposed = how != JoinType::Inner;
                let why = format!(
                    "both slices are over the {} threshold ({} left, {} right): {}'s {} rows are split {n} ways by a salt from their other columns and the other side's {} rows are copied {n} times ({} extra rows shuffled): its task goes from {} rows to {n} tasks of about {}{}",
                    human(thr),
                    human(lb),
                    human(rb),
                    split.as_str(),
                    fmtc(srows),
                    fmtc(reprows),
                    fmtc(reprows * (n as u64 - 1)),
                    fmtc(srows + reprows),
                    fmtc(srows.div_ceil(n as u64) + reprows),
                    if decomposed { format!("; as an inner join, plus an anti join that keeps the unmatched rows of the {} join's kept side", how.as_str()) } else { String::new() }
                );
                (Strategy::Salt { n, split, salts, decomposed }, why)
            }
        };
        if c.class == Class::Junk && !opts.drop_junk {
            warnings.push(format!(
                "{display} looks like junk ({}): {} rows ({}) are joined as demand; --drop-junk removes them and changes the result",
                c.reason,
                fmtc(rows),
                crate::format::fmt_share(rows as f64 / of.max(1) as f64)
            ));
        }
        hot.push(HotKey {
            value: if key.len() == 1 { key[0].to_json(types[0]) } else { Json::Array(key.iter().zip(&types).map(|(v, t)| v.to_json(*t)).collect()) },
            key: key.clone(),
            display,
            side: side.into(),
            rows,
            share: rows as f64 / of.max(1) as f64,
            left_rows: lr,
            right_rows: rr,
            class: c.class,
            reason: c.reason,
            other_side_rows: other,
            spark_partition: spark_partition(key, parts),
            strategy,
            why,
        });
    }

    // A whole side that may be broadcast and fits: no shuffle at all.
    let broadcast_side = if hot.is_empty() {
        None
    } else {
        [(Side::Right, &rrep), (Side::Left, &lrep)]
            .into_iter()
            .filter(|(s, r)| how.may_broadcast(*s) && r.memory_bytes <= opts.broadcast_threshold)
            .min_by_key(|(_, r)| r.memory_bytes)
            .map(|(s, _)| s)
    };

    // 5. The stage after the plan.
    let after = if let Some(_b) = broadcast_side {
        TaskStats::default()
    } else {
        let moved: Vec<bool> = cands.iter().map(|k| hot.iter().any(|h| &h.key == k && !matches!(h.strategy, Strategy::Keep { .. }))).collect();
        let lrest = ls.without(&cands, &moved, parts);
        let rrest = rs.without(&cands, &moved, parts);
        let bypass = |s: Side| hot.iter().any(|h| matches!(h.strategy, Strategy::NullBypass) && h.side == s.as_str());
        let ln = if bypass(Side::Left) { &zeros } else { l_nulls_in_parts };
        let rn = if bypass(Side::Right) { &zeros } else { r_nulls_in_parts };
        let mut tasks = stage(&lrest, &rrest, ln, rn);
        // The salted branch is its own shuffle: one task per salt.
        let mut salted: std::collections::BTreeMap<u32, (u64, f64)> = Default::default();
        for h in &hot {
            if let Strategy::Salt { n, split, salts, .. } = &h.strategy {
                let (srows, rrows, sb, rb) =
                    if *split == Side::Left { (h.left_rows, h.right_rows, lbpr, rbpr) } else { (h.right_rows, h.left_rows, rbpr, lbpr) };
                for (j, s) in salts.iter().enumerate() {
                    let mut k = h.key.clone();
                    k.push(Value::Int(*s));
                    let p = spark_partition(&k, parts);
                    // pmod(hash(other columns), n) spreads the split side evenly.
                    let piece = srows / *n as u64 + u64::from((j as u64) < srows % *n as u64);
                    let e = salted.entry(p).or_default();
                    e.0 += piece + rrows;
                    e.1 += piece as f64 * sb + rrows as f64 * rb;
                }
            }
        }
        tasks.extend(salted.into_values());
        TaskStats::of(&tasks, parts as usize)
    };

    let results_change = hot.iter().any(|h| matches!(h.strategy, Strategy::Drop));
    let next = if hot.is_empty() {
        let per_task = before.max_task_bytes;
        if before.median_task_bytes > 500 << 20 {
            let total: u64 = before_tasks.iter().map(|t| t.1 as u64).sum();
            let want = (total / (128 << 20)).max(parts as u64 + 1);
            Some(format!(
                "no hot key: the largest task is {:.1}x the median, but every task reads about {} (median); raise spark.sql.shuffle.partitions to {} for ~128 MB tasks",
                before.ratio(),
                crate::format::human(before.median_task_bytes),
                want
            ))
        } else if before.ratio() > opts.hot_factor {
            Some(format!(
                "no single hot key: the largest task ({} rows) is {:.1}x the median ({} rows), but no value in it has twice the median's rows: many mid-size keys share one partition; a different spark.sql.shuffle.partitions (say {}) spreads them",
                crate::format::fmt_count(before.max_task_rows),
                before.ratio(),
                crate::format::fmt_count(before.median_task_rows),
                parts + 1
            ))
        } else {
            Some(format!(
                "no hot key: the largest task ({} rows, {}) is {:.1}x the median ({} rows); if the stage is still slow, look at the event log (skewjoin diagnose) for spill, GC or a slow executor",
                crate::format::fmt_count(before.max_task_rows),
                crate::format::human(per_task),
                before.ratio(),
                crate::format::fmt_count(before.median_task_rows)
            ))
        }
    } else {
        None
    };

    let mut plan = Plan {
        how,
        shuffle_partitions: parts,
        broadcast_threshold: opts.broadcast_threshold,
        hot_factor: opts.hot_factor,
        left: lrep,
        right: rrep,
        hot_keys: hot,
        broadcast_side,
        before,
        after,
        notes,
        warnings,
        results_change,
        next,
        sql: String::new(),
        sample: opts.sample,
    };
    let mut js =
        JoinSql::tables(how, (&left.name, &left.keys.names(), &plan.left.columns), (&right.name, &right.keys.names(), &plan.right.columns), types.clone());
    js.left_hashable = hashable_columns(left.table);
    js.right_hashable = hashable_columns(right.table);
    plan.sql = emit_sql(&js, &plan)?;
    Ok(plan)
}

/// Columns Spark's `hash()` accepts: everything but maps (and structs or arrays holding one).
pub fn hashable_columns(t: &Table) -> Vec<String> {
    fn has_map(dt: &arrow_schema::DataType) -> bool {
        use arrow_schema::DataType::*;
        match dt {
            Map(_, _) => true,
            List(f) | LargeList(f) | FixedSizeList(f, _) | ListView(f) | LargeListView(f) => has_map(f.data_type()),
            Struct(fs) => fs.iter().any(|f| has_map(f.data_type())),
            Dictionary(_, v) => has_map(v),
            _ => false,
        }
    }
    let mut cols: Vec<String> = t.schema().fields().iter().filter(|f| !has_map(f.data_type())).map(|f| f.name().clone()).collect();
    cols.extend(t.partitions.iter().map(|p| p.name.clone()));
    cols
}

pub fn display_key(key: &[Value], types: &[KeyType]) -> String {
    let parts: Vec<String> = key.iter().zip(types).map(|(v, t)| v.display(*t)).collect();
    if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("({})", parts.join(", "))
    }
}
