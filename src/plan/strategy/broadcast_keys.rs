//! Broadcasting the distinct keys (semi and anti joins): such a join asks only whether the
//! right side has the value, so when the right side's rows for a hot value are too many to
//! broadcast, its one distinct key is broadcast instead and the left side's hot rows never
//! shuffle. Not with other ON predicates: they need the right side's rows. It leaves no task.

use super::salt::Salting;
use super::{Choice, KeyFacts, KeyStrategy, Strategy};
use crate::format::{human, rows_n};
use crate::plan::builder::{BranchSql, ROWS};
use crate::plan::model::{HotKey, Side};
use crate::sql::ident;

pub(crate) const FIX: &str = "broadcast the right side's distinct keys";
pub(crate) const COMMENT: &str = "is checked against the broadcast distinct keys";

/// A semi or anti join's right side, its distinct key only.
pub(crate) struct BroadcastKeys;

impl KeyStrategy for BroadcastKeys {
    fn choose(&self, f: &KeyFacts, _: &mut Salting) -> Option<Choice> {
        choose(f)
    }
}

fn choose(f: &KeyFacts) -> Option<Choice> {
    if !f.how().is_semi_or_anti() || f.opts.extra_predicates {
        return None;
    }
    let why = format!(
        "a {} join only needs to know whether the right side has the value: broadcast its distinct keys (1 row) instead of its {} ({})",
        f.how().as_str(),
        rows_n(f.rows(Side::Right)),
        human(f.bytes(Side::Right))
    );
    Some((Strategy::BroadcastKeys, why))
}

/// The branch: the left side's rows for these keys against the right side's distinct keys,
/// broadcast.
pub(crate) fn branches(g: &BranchSql, hot: &[&HotKey]) -> Vec<String> {
    let set = g.set_of(hot, |s| matches!(s, Strategy::BroadcastKeys));
    if set.is_empty() {
        return vec![];
    }
    let l = g.filtered(Side::Left, Some(g.in_set(ROWS, Side::Left, &set)));
    let rk: Vec<String> = g.js.right_keys.iter().map(|c| ident(c)).collect();
    let r = format!(
        "(SELECT DISTINCT {} FROM {} {ROWS} WHERE {}) {}",
        rk.join(", "),
        g.table(Side::Right),
        g.in_set(ROWS, Side::Right, &set),
        g.js.right_alias
    );
    vec![g.join(g.js.how, &[Side::Right], l, r, "")]
}
