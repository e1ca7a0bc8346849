//! The strategies for a hot key, one file each: when it applies and why (with the numbers),
//! the tasks it leaves behind, its SQL branches and its words in the reports. This file holds
//! the words of the `Strategy` value the plan carries (`model.rs`) and the order in which they
//! are tried.

pub(crate) mod broadcast_keys;
pub(crate) mod broadcast_side;
pub(crate) mod broadcast_slice;
pub(crate) mod drop_junk;
pub(crate) mod keep;
pub(crate) mod null_bypass;
pub(crate) mod salt;

use super::model::{JoinType, PlanOptions, Side, Strategy};
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
            Strategy::BroadcastSlice { broadcast, slice_rows, slice_bytes, .. } => broadcast_slice::fix(names, *broadcast, *slice_rows, *slice_bytes),
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

/// The strategy for one hot non-NULL key: the first of these that applies.
///
/// 1. `drop_junk`: only on `--drop-junk`, for a junk-class key; removed rows need nothing else.
/// 2. `broadcast_slice`: the cheapest fix. The other side's few rows for the value travel to
///    every task and the hot rows never shuffle; nothing is copied but the slice.
/// 3. `broadcast_keys`: a semi or anti join whose right-side slice is too big still needs only
///    to know that the value is there: its one distinct key is broadcast.
/// 4. `salt`: when no slice fits, the hot side is split and the other side copied per piece;
///    it costs the copies, so it comes after every broadcast.
/// 5. `keep`: nothing above is safe (predicates in ON beyond the keys): left in the shuffle.
pub(crate) fn choose(f: &KeyFacts, salting: &mut salt::Salting) -> Choice {
    drop_junk::choose(f)
        .or_else(|| broadcast_slice::choose(f))
        .or_else(|| broadcast_keys::choose(f))
        .or_else(|| salt::choose(f, salting))
        .unwrap_or_else(|| keep::choose(f))
}
