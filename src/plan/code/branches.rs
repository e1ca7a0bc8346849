//! The parts of a plan's split, as the code writes them: the same branches, in the same order,
//! as the SQL of `emit` (`strategy::BRANCH_ORDER`), read from the plan's hot keys and their
//! strategies. Each part is the rows of each side it joins (by key) and how it joins them.

use crate::plan::model::{HotKey, JoinType, Plan, Side, Strategy};
use crate::plan::strategy::null_bypass;
use crate::value::Value;

/// Which rows of one side a branch reads, by their key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Rows {
    All,
    /// None: the empty side a padding join pads against.
    Nothing,
    /// The key is one of these (never a NULL key).
    In(Vec<Vec<Value>>),
    NullKeys,
    /// The key is not one of these; `nulls`: NULL keys stay (else they are left out too).
    NotIn {
        set: Vec<Vec<Value>>,
        nulls: bool,
    },
}

/// One part of the split: its rows, as a join of the two inputs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Branch {
    /// The join (as written, or inner) of each side's rows, one side broadcast.
    Join { name: &'static str, how: JoinType, rows: [Rows; 2], broadcast: Option<Side> },
    /// A semi or anti join of the left side's rows for `set` against the right side's distinct
    /// keys, broadcast.
    DistinctKeys { set: Vec<Vec<Value>> },
    /// `split`'s rows for the keys, salted; the other side's, copied once per salt.
    Salted { split: Side, keys: Vec<SaltedKey> },
    /// `side`'s rows for `set` that have no match on the other side, padded with NULLs.
    Unmatched { side: Side, set: Vec<Vec<Value>> },
    /// `side`'s NULL-keyed rows, padded with NULLs: they match nothing.
    NullKeys { side: Side },
}

/// One salted key: its value, the pieces and the salt of each.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SaltedKey {
    pub key: Vec<Value>,
    pub n: u32,
    pub salts: Vec<i32>,
}

impl Branch {
    /// The variable the code gives the branch's rows.
    pub(super) fn name(&self) -> String {
        match self {
            Branch::Join { name, .. } => (*name).to_string(),
            Branch::DistinctKeys { .. } => "checked".into(),
            Branch::Salted { split, .. } => format!("salted_{}", split.as_str()),
            Branch::Unmatched { side, .. } => format!("unmatched_{}", side.as_str()),
            Branch::NullKeys { side } => format!("nulls_{}", side.as_str()),
        }
    }
}

/// The keys whose strategy `f` selects.
fn set_of(hot: &[HotKey], f: impl Fn(&Strategy) -> bool) -> Vec<Vec<Value>> {
    hot.iter().filter(|h| f(&h.strategy)).map(|h| h.key.clone()).collect()
}

/// The parts of the split, in the order of `strategy::BRANCH_ORDER` (one part: the whole-side
/// broadcast, or the join as written when nothing moves).
pub(crate) fn branches(plan: &Plan) -> Vec<Branch> {
    let (how, hot) = (plan.how, plan.hot_keys.as_slice());
    if let Some(b) = plan.broadcast_side {
        let dropped = set_of(hot, |s| matches!(s, Strategy::Drop));
        let rows =
            if dropped.is_empty() { Rows::All } else { Rows::NotIn { set: dropped, nulls: true } };
        return vec![Branch::Join {
            name: "joined",
            how,
            rows: [rows.clone(), rows],
            broadcast: Some(b),
        }];
    }
    let mut out = vec![rest(plan)];
    for b in [Side::Right, Side::Left] {
        let set = set_of(
            hot,
            |s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: false, .. } if *broadcast == b),
        );
        if !set.is_empty() {
            let name = if b == Side::Right { "slices_right" } else { "slices_left" };
            out.push(Branch::Join {
                name,
                how,
                rows: [Rows::In(set.clone()), Rows::In(set)],
                broadcast: Some(b),
            });
        }
    }
    let keys = set_of(hot, |s| matches!(s, Strategy::BroadcastKeys));
    if !keys.is_empty() {
        out.push(Branch::DistinctKeys { set: keys });
    }
    for b in [Side::Right, Side::Left] {
        let set = set_of(
            hot,
            |s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: true, .. } if *broadcast == b),
        );
        if !set.is_empty() {
            let name = if b == Side::Right { "inner_slices_right" } else { "inner_slices_left" };
            out.push(Branch::Join {
                name,
                how: JoinType::Inner,
                rows: [Rows::In(set.clone()), Rows::In(set)],
                broadcast: Some(b),
            });
        }
    }
    out.extend(salted(hot));
    let decomposed = set_of(hot, |s| {
        matches!(
            s,
            Strategy::BroadcastSlice { decomposed: true, .. }
                | Strategy::Salt { decomposed: true, .. }
        )
    });
    if !decomposed.is_empty() {
        out.extend(
            [Side::Left, Side::Right]
                .into_iter()
                .filter(|s| how.preserves(*s))
                .map(|side| Branch::Unmatched { side, set: decomposed.clone() }),
        );
    }
    out.extend(
        [Side::Left, Side::Right]
            .into_iter()
            .filter(|s| null_bypass::bypasses(hot, *s))
            .map(|side| Branch::NullKeys { side }),
    );
    out
}

/// Every key not moved, through the join as written; a side whose NULL keys bypass the join
/// brings only its non-NULL keys (as `strategy::rest`).
fn rest(plan: &Plan) -> Branch {
    let moved = set_of(&plan.hot_keys, Strategy::moves);
    let rows = |side: Side| {
        let bypass = null_bypass::bypasses(&plan.hot_keys, side);
        if moved.is_empty() && !bypass {
            Rows::All
        } else {
            Rows::NotIn { set: moved.clone(), nulls: !bypass }
        }
    };
    Branch::Join {
        name: "rest",
        how: plan.how,
        rows: [rows(Side::Left), rows(Side::Right)],
        broadcast: None,
    }
}

/// One branch per split side, with its salted keys (as `strategy::salt`).
fn salted(hot: &[HotKey]) -> Vec<Branch> {
    [Side::Left, Side::Right]
        .into_iter()
        .filter_map(|split| {
            let keys: Vec<SaltedKey> = hot
                .iter()
                .filter_map(|h| match &h.strategy {
                    Strategy::Salt { n, split: s, salts, .. } if *s == split => {
                        Some(SaltedKey { key: h.key.clone(), n: *n, salts: salts.clone() })
                    }
                    _ => None,
                })
                .collect();
            (!keys.is_empty()).then_some(Branch::Salted { split, keys })
        })
        .collect()
}
