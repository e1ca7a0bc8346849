//! The strategies for a hot key, one file each: when it applies and why (with the numbers),
//! the tasks it leaves behind, its SQL branches and its words in the reports. This file holds
//! the words of the `Strategy` value the plan carries (`model.rs`) and the plan's order, in one
//! place:
//!
//! 1. NULL keys (`null_bypass`): a NULL matches nothing under `=`, so a hot NULL key needs no
//!    choice: its rows skip the join (or Spark drops them itself, and nothing is planned).
//! 2. Each hot non-NULL key: the first strategy of `KEY_ORDER` that applies, else `keep`.
//! 3. Then, when anything is hot, the whole-side broadcast (`broadcast_side`) replaces every
//!    per-key branch if a side the join type may broadcast fits under the threshold: one join,
//!    nothing shuffled. It comes last because it needs to know that something is hot.
//! 4. The SQL: the branches of `BRANCH_ORDER`, joined by UNION ALL.

pub(crate) mod broadcast_keys;
pub(crate) mod broadcast_side;
pub(crate) mod broadcast_slice;
pub(crate) mod drop_junk;
pub(crate) mod keep;
pub(crate) mod null_bypass;
mod rest;
pub(crate) mod salt;

use super::builder::BranchSql;
use super::decompose;
use super::model::{HotKey, JoinType, PlanOptions, Side, Strategy};
use crate::classify::Class;
use crate::value::Value;

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

    /// The key's rows leave the shuffle join of the rest (they take a branch of their own).
    pub fn moves(&self) -> bool {
        !matches!(self, Strategy::NullBypass | Strategy::Keep { .. })
    }

    /// The fix as the plan's text report says it; `names` are the left and right side's.
    pub fn fix(&self, names: [&str; 2]) -> String {
        match self {
            Strategy::NullBypass => null_bypass::FIX.into(),
            Strategy::Drop => drop_junk::FIX.into(),
            Strategy::BroadcastSlice { broadcast, slice_rows, slice_bytes, .. } => {
                broadcast_slice::fix(names, *broadcast, *slice_rows, *slice_bytes)
            }
            Strategy::BroadcastKeys => broadcast_keys::FIX.into(),
            Strategy::Salt { n, split, salts, .. } => salt::fix(names, *n, *split, salts),
            Strategy::Keep { reason } => keep::fix(reason),
        }
    }

    /// What happens to the key's rows, as the rewritten SQL's header comment says it.
    pub fn comment(&self) -> String {
        match self {
            Strategy::NullBypass => null_bypass::COMMENT.into(),
            Strategy::Drop => drop_junk::COMMENT.into(),
            Strategy::BroadcastSlice { slice_rows, .. } => broadcast_slice::comment(*slice_rows),
            Strategy::BroadcastKeys => broadcast_keys::COMMENT.into(),
            Strategy::Salt { n, .. } => salt::comment(*n),
            Strategy::Keep { reason } => keep::comment(reason),
        }
    }
}

/// What the choice of a strategy for one hot non-NULL key looks at.
pub(crate) struct KeyFacts<'a> {
    pub key: &'a [Value],
    pub class: Class,
    pub opts: &'a PlanOptions,
    /// Rows and bytes of each side (left, right) for the key.
    pub rows: [u64; 2],
    pub bytes: [u64; 2],
    /// Bytes per row of each side.
    pub bytes_per_row: [f64; 2],
    /// The sides' names in the reports.
    pub names: [&'a str; 2],
    /// The median task of the join stage before the plan (at least 1 row).
    pub median: f64,
    pub partitions: u32,
}

impl KeyFacts<'_> {
    pub fn how(&self) -> JoinType {
        self.opts.how
    }
    pub fn rows(&self, side: Side) -> u64 {
        self.rows[side as usize]
    }
    pub fn bytes(&self, side: Side) -> u64 {
        self.bytes[side as usize]
    }
    pub fn name(&self, side: Side) -> &str {
        self.names[side as usize]
    }
    pub fn threshold(&self) -> u64 {
        self.opts.broadcast_threshold
    }
}

/// A strategy and why it was chosen, with the numbers.
pub(crate) type Choice = (Strategy, String);

/// One strategy for a hot non-NULL key, as `KEY_ORDER` tries it.
pub(crate) trait KeyStrategy: Sync {
    /// Its choice for the key, with why (the numbers); None when it does not apply, and the
    /// next one is tried.
    fn choose(&self, f: &KeyFacts, salting: &mut salt::Salting) -> Option<Choice>;
}

/// The strategies for a hot non-NULL key, in the order they are tried:
///
/// 1. `drop_junk`: only on `--drop-junk`, for a junk-class key; removed rows need nothing else.
/// 2. `broadcast_slice`: the cheapest fix. The other side's few rows for the value travel to
///    every task and the hot rows never shuffle; nothing is copied but the slice.
/// 3. `broadcast_keys`: a semi or anti join whose right-side slice is too big still needs only
///    to know that the value is there: its one distinct key is broadcast.
/// 4. `salt`: when no slice fits, the hot side is split and the other side copied per piece;
///    it costs the copies, so it comes after every broadcast.
///
/// When none applies, `keep`: nothing above is safe (predicates in ON beyond the keys), and
/// the key is left in the shuffle.
const KEY_ORDER: [&dyn KeyStrategy; 4] = [
    &drop_junk::DropJunk,
    &broadcast_slice::BroadcastSlice,
    &broadcast_keys::BroadcastKeys,
    &salt::Salt,
];

/// The strategy for one hot non-NULL key: the first of `KEY_ORDER` that applies, else `keep`.
pub(crate) fn choose(f: &KeyFacts, salting: &mut salt::Salting) -> Choice {
    KEY_ORDER.iter().find_map(|s| s.choose(f, salting)).unwrap_or_else(|| keep::choose(f))
}

/// The branches of one part of the split, for the hot keys it covers (none: no branch).
pub(crate) type Branches = fn(&BranchSql, &[&HotKey]) -> Vec<String>;

/// The SQL's branches in the order UNION ALL joins them. Any order gives the same rows; this
/// one is fixed so that a rewrite reads the same each run, and it reads in the order of the
/// design note: the join as written first, without the moved keys (`rest`), then the moved
/// keys' joins (slices the join type broadcasts itself, semi/anti distinct keys, decomposed
/// slices' inner joins, salted pieces), then the rows those joins cannot give (the kept sides'
/// unmatched rows of decomposed keys), then the NULL keys that skip the join.
pub(crate) const BRANCH_ORDER: [Branches; 7] = [
    rest::branches,
    broadcast_slice::direct_branches,
    broadcast_keys::branches,
    broadcast_slice::decomposed_branches,
    salt::branches,
    decompose::branches,
    null_bypass::branches,
];
