//! The planner's values: the join type and sides, the options, one side as given, and the plan
//! (hot keys, each with its strategy, the stages before and after, the decision). Data only:
//! what each strategy does and says is in `strategy/`, so that the strategies, the SQL builder
//! and the measuring code can use these types without importing each other.

use serde::Serialize;
use serde_json::Value as Json;

use super::tasks::TaskStats;
use super::{aqe, cost, verdict};
use crate::classify::Class;
use crate::count::{KeySpec, Sample};
use crate::table::Table;
use crate::value::{KeyType, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
    /// A semi or anti join: it asks only whether the right side has the key.
    pub fn is_semi_or_anti(self) -> bool {
        matches!(self, JoinType::Semi | JoinType::Anti)
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
    /// Where the counting reports its progress.
    pub progress: crate::progress::ProgressRef,
    /// The ON clause has predicates beyond the key equalities (the `rewrite` command): the
    /// branches that find unmatched rows from distinct keys alone are then not safe.
    pub extra_predicates: bool,
    /// Those predicates all read one side, and the SQL has them for that side (`JoinSql::
    /// extra_on_side`): the unmatched rows' branches apply them, and are safe again.
    pub extras_one_side: bool,
    /// The cluster's parallelism (`spark.default.parallelism`, else its cores when known), for
    /// how Spark splits a small table's files into map tasks and the fewest tasks AQE coalesces
    /// a shuffle into; None: large enough that the splits are 128 MiB.
    pub cores: Option<u32>,
    /// The cluster the decision is made for: its cores, and where they were read.
    pub cluster: crate::cluster::ClusterSize,
    /// A hint of the query (as written) that has Spark shuffle this join (MERGE, SHUFFLE_HASH):
    /// no side is broadcast by its size.
    pub shuffle_hint: Option<String>,
    /// What adaptive query execution does with the join's shuffle (from `settings`).
    pub aqe: crate::settings::Aqe,
    /// The Spark settings assumed, with where each came from, for the reports.
    pub settings: crate::settings::SparkSettings,
    /// The share of the join's predicted time a rewrite must save to be made; None: rewrite
    /// whenever a hot key can be moved.
    pub min_gain: Option<f64>,
    /// How Spark cuts a table's files into map tasks (its `min_partitions` falls back to
    /// `cores`: use `file_splits`).
    pub files: crate::settings::FileSplits,
    /// Where the tables' counts are made: read here, or by the Spark session that holds them.
    pub engine: crate::count::EngineRef,
}

impl PlanOptions {
    /// How Spark cuts a table's files into map tasks on this cluster.
    pub fn file_splits(&self) -> crate::settings::FileSplits {
        let mut f = self.files;
        f.min_partitions = f.min_partitions.or(self.cores);
        f
    }
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
            progress: Default::default(),
            extra_predicates: false,
            extras_one_side: false,
            cores: None,
            cluster: crate::cluster::ClusterSize::assumed(200),
            shuffle_hint: None,
            aqe: crate::settings::Aqe::off(),
            settings: crate::settings::SparkSettings::without_aqe(),
            min_gain: None,
            files: Default::default(),
            engine: Default::default(),
        }
    }
}

/// One side of the join as given.
pub struct SideInput<'a> {
    pub table: &'a Table,
    pub keys: KeySpec,
    /// The name used in the emitted SQL.
    pub name: String,
    /// The conditions Spark applies to this side before the join: the counts are of the rows
    /// that meet them.
    pub filter: Option<crate::count::filter::RowFilter>,
    /// The columns this side groups its table's rows by (`GROUP BY`, `SELECT DISTINCT`): it
    /// has one row per group, and the counts are of its groups.
    pub group_by: Option<KeySpec>,
    /// For the joins before a chained join, made one input: how many rows of them each row of
    /// `table` makes; the counts are of those rows.
    pub through: Option<std::sync::Arc<crate::count::weights::RowWeights>>,
    /// The table's columns the query needs above the join, the ones Spark shuffles (None:
    /// every column, as `SELECT *`).
    pub shuffled: Option<Vec<String>>,
}

impl<'a> SideInput<'a> {
    /// `keys` of `table`, under `name`: every row, every column, no joins before.
    pub fn new(table: &'a Table, keys: KeySpec, name: String) -> SideInput<'a> {
        SideInput { table, keys, name, filter: None, group_by: None, through: None, shuffled: None }
    }
}

/// The side whose rows make a key hot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HotSide {
    Left,
    Right,
    /// Over the hot line on each side on its own.
    Both,
}

impl HotSide {
    pub fn as_str(self) -> &'static str {
        match self {
            HotSide::Left => "left",
            HotSide::Right => "right",
            HotSide::Both => "both",
        }
    }
    /// True for `Both` and for the side itself.
    pub fn is(self, side: Side) -> bool {
        matches!(
            (self, side),
            (HotSide::Both, _) | (HotSide::Left, Side::Left) | (HotSide::Right, Side::Right)
        )
    }
}

impl std::fmt::Display for HotSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Side> for HotSide {
    fn from(s: Side) -> HotSide {
        match s {
            Side::Left => HotSide::Left,
            Side::Right => HotSide::Right,
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
    /// The side that makes it hot.
    pub side: HotSide,
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
    /// The key columns' types, for their literals in the fix as code (`code`).
    #[serde(skip)]
    pub key_kinds: Vec<KeyType>,
    /// The columns Spark's `hash()` accepts, which a salt in the fix as code hashes.
    #[serde(skip)]
    pub hashable: Vec<String>,
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
    /// The side Spark broadcasts by itself: one the join type may broadcast whose files are
    /// within the threshold (Spark's estimate for the input is at most that: columns it does not
    /// read only lower it, filters leave it). Then Spark runs no shuffle for this join.
    pub spark_broadcasts: Option<Side>,
    pub before: TaskStats,
    pub after: TaskStats,
    /// The median shuffle partition's rows (both sides), the yardstick of the hot test.
    pub partition_median_rows: u64,
    /// Rows per task before: one per shuffle partition (for the HTML report; not in the JSON).
    #[serde(skip)]
    pub before_tasks: Vec<u64>,
    /// Rows per task after: the shuffle partitions, then one per salted piece (none when a
    /// whole side is broadcast).
    #[serde(skip)]
    pub after_tasks: Vec<u64>,
    /// What AQE does to the join stage before and after (None: AQE off in the settings).
    pub aqe: Option<AqeEffect>,
    /// The predicted time of the join as written and as rewritten (None: nothing to move).
    pub cost: Option<cost::JoinCost>,
    /// Whether the join is rewritten, and why (`code` is stable).
    pub decision: verdict::Verdict,
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
    /// The Spark settings assumed (filled by the `plan` command; a rewrite lists them once).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<crate::settings::Setting>,
    /// The cluster the decision was made for: its cores, and where they were read.
    pub cluster: crate::cluster::ClusterSize,
}

/// What AQE does to the join stage, before the plan and after it.
#[derive(Debug, Clone, Serialize)]
pub struct AqeEffect {
    pub before: aqe::AqeActions,
    pub after: Option<aqe::AqeActions>,
}

impl Plan {
    /// The plan moves something out of the shuffle: a whole side broadcast, or a hot key with a
    /// strategy other than keeping it.
    pub fn acts(&self) -> bool {
        let moves = self.broadcast_side.is_some()
            || self.hot_keys.iter().any(|h| !matches!(h.strategy, Strategy::Keep { .. }));
        moves
            && !matches!(
                self.decision,
                verdict::Verdict::AqeSplitsIt { .. }
                    | verdict::Verdict::AqeBroadcastsIt { .. }
                    | verdict::Verdict::NotMaterial { .. }
                    | verdict::Verdict::CostsMore { .. }
            )
    }

    /// The plan with nothing moved: the join as written (for its SQL).
    pub fn left_as_written(&self) -> Plan {
        let mut p = self.clone();
        p.broadcast_side = None;
        p.hot_keys.clear();
        p
    }
    /// The report of one side.
    pub fn side(&self, side: Side) -> &SideReport {
        match side {
            Side::Left => &self.left,
            Side::Right => &self.right,
        }
    }

    /// The report's name of one side.
    pub fn side_name(&self, side: Side) -> &str {
        &self.side(side).name
    }
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
    /// plus anti joins for the unmatched rows of the kept side(s). An empty slice (the other
    /// side has no row for the value: a placeholder, say) bypasses the shuffle the same way.
    BroadcastSlice { broadcast: Side, slice_rows: u64, slice_bytes: u64, decomposed: bool },
    /// Semi and anti joins need only the distinct keys of the right side: broadcast those.
    BroadcastKeys,
    /// Split `split`'s rows `n` ways by a salt computed from other columns; replicate the other
    /// side's rows for the value over the `n` salts. Always an inner join (plus anti joins for
    /// the kept sides of an outer join), so a kept side is never replicated.
    Salt { n: u32, split: Side, salts: Vec<i32>, decomposed: bool },
    /// Left in the shuffle: no strategy is safe for this join (said why).
    Keep { reason: KeepReason },
}

/// Why a hot key stays in the shuffle.
#[derive(Debug, Clone, PartialEq)]
pub enum KeepReason {
    /// A semi or anti join with other ON predicates: they are evaluated on the right side's
    /// rows for the value, which are over the threshold.
    RightRowsNeeded { rows: u64, bytes: u64, threshold: u64 },
    /// An outer join with other ON predicates: the kept side's unmatched rows cannot be found
    /// from the other side's distinct keys, and its rows for the value are over the threshold.
    UnmatchedNeedRows { how: JoinType, threshold: u64 },
}

pub fn display_key(key: &[Value], types: &[KeyType]) -> String {
    let parts: Vec<String> = key.iter().zip(types).map(|(v, t)| v.display(*t)).collect();
    if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("({})", parts.join(", "))
    }
}
