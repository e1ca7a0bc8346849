//! Broadcasting the other side's slice: the rows one side has for a hot value are few enough
//! to broadcast (under the threshold), so they are, and the other side's hot rows join them
//! where they are read, never shuffled. An empty slice (the other side has no row for the
//! value, as for a placeholder) costs nothing and keeps the query right the day one appears.
//! Where the join type may not broadcast that side, the branch is decomposed (see
//! `decompose`). It leaves no task in the shuffle.

use super::{Choice, KeyFacts, KeyStrategy, Strategy};
use crate::format::{fmt_count, human, rows_n};
use crate::plan::builder::{BranchSql, ROWS};
use crate::plan::decompose;
use crate::plan::model::{HotKey, JoinType, Side};

pub(crate) fn fix(names: [&str; 2], broadcast: Side, rows: u64, bytes: u64) -> String {
    format!(
        "broadcast {}'s slice: {} row{}, {}",
        names[broadcast as usize],
        fmt_count(rows),
        if rows == 1 { "" } else { "s" },
        human(bytes)
    )
}

pub(crate) fn comment(rows: u64) -> String {
    format!("joins a broadcast slice of {}", rows_n(rows))
}

/// The other side's rows for the key, when they fit under the threshold.
pub(crate) struct BroadcastSlice;

impl KeyStrategy for BroadcastSlice {
    fn choose(&self, f: &KeyFacts, _: &mut super::salt::Salting) -> Option<Choice> {
        choose(f)
    }
}

fn choose(f: &KeyFacts) -> Option<Choice> {
    if f.how().is_semi_or_anti() {
        return semi_or_anti(f);
    }
    let side = best_slice(f)?;
    let decomposed = decompose::slice_is_decomposed(f.how(), side);
    if !decompose::is_safe(decomposed, f.opts) {
        return None;
    }
    Some(slice(f, side, decomposed))
}

/// A semi or anti join broadcasts the right side, whose rows it only tests against.
fn semi_or_anti(f: &KeyFacts) -> Option<Choice> {
    let (rr, rb) = (f.rows(Side::Right), f.bytes(Side::Right));
    (rb <= f.threshold()).then(|| {
        let why = format!(
            "the right side's {} for it ({}) are under the {} threshold: broadcast them, the {} left never shuffle",
            rows_n(rr),
            human(rb),
            human(f.threshold()),
            rows_n(f.rows(Side::Left))
        );
        (Strategy::BroadcastSlice { broadcast: Side::Right, slice_rows: rr, slice_bytes: rb, decomposed: false }, why)
    })
}

/// The slice to broadcast: of those under the threshold, one the join type may broadcast
/// directly first, then the smaller (the left on a tie).
fn best_slice(f: &KeyFacts) -> Option<Side> {
    let how = f.how();
    let mut options: Vec<Side> =
        [Side::Left, Side::Right].into_iter().filter(|s| f.bytes(*s) <= f.threshold()).collect();
    options.sort_by_key(|s| (!how.may_broadcast(*s), f.bytes(*s)));
    options.first().copied()
}

fn slice(f: &KeyFacts, b: Side, decomposed: bool) -> Choice {
    let (srows, sbytes) = (f.rows(b), f.bytes(b));
    let mut why = format!(
        "{}'s {} for it ({}) fit under the {} broadcast threshold: they are broadcast and {}'s {} never shuffle",
        f.name(b),
        rows_n(srows),
        human(sbytes),
        human(f.threshold()),
        f.name(b.other()),
        rows_n(f.rows(b.other())),
    );
    if srows == 0 {
        why.push_str(" (no such rows today: the slice is empty and costs nothing, and the query stays right the day one appears)");
    }
    if decomposed {
        why.push_str(&format!(
            "; a {} join may not broadcast that side, so the branch is an inner join plus an anti join for the unmatched rows",
            f.how().as_str()
        ));
    }
    (
        Strategy::BroadcastSlice {
            broadcast: b,
            slice_rows: srows,
            slice_bytes: sbytes,
            decomposed,
        },
        why,
    )
}

/// The branches of the slices the join type broadcasts itself: one per broadcast side, the
/// hot rows of both sides for those keys joined with the slice's side hinted.
pub(crate) fn direct_branches(g: &BranchSql, hot: &[&HotKey]) -> Vec<String> {
    branches(g, hot, false, g.js.how)
}

/// The inner-join part of decomposed slices (their unmatched rows come from `decompose`).
pub(crate) fn decomposed_branches(g: &BranchSql, hot: &[&HotKey]) -> Vec<String> {
    branches(g, hot, true, JoinType::Inner)
}

fn branches(g: &BranchSql, hot: &[&HotKey], decomposed: bool, how: JoinType) -> Vec<String> {
    let mut out = Vec::new();
    for b in [Side::Right, Side::Left] {
        let set = g.set_of(hot, |s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: d, .. } if *broadcast == b && *d == decomposed));
        if !set.is_empty() {
            let l = g.filtered(Side::Left, Some(g.in_set(ROWS, Side::Left, &set)));
            let r = g.filtered(Side::Right, Some(g.in_set(ROWS, Side::Right, &set)));
            out.push(g.join(how, &[b], l, r, ""));
        }
    }
    out
}

/// Some slice of the key is under the threshold (so salting it would be a waste).
pub(crate) fn fits(f: &KeyFacts) -> bool {
    best_slice(f).is_some()
}
