//! Dropping junk, on request only (`--drop-junk`): a key classed as junk (a test, QA or bot
//! account) has its rows removed before the join, on both sides. The result changes, and the
//! plan says so. It leaves no task: its rows are in no branch. Its SQL is the absence of those
//! rows: the rest branch excludes every moved key, and no branch of its own brings them back.

use super::salt::Salting;
use super::{Choice, KeyFacts, KeyStrategy, Strategy};
use crate::classify::Class;
use crate::format::fmt_count;
use crate::plan::builder::{BranchSql, ROWS};
use crate::plan::model::{HotKey, Side};

pub(crate) const FIX: &str = "drop its rows (--drop-junk)";
pub(crate) const COMMENT: &str = "is dropped (--drop-junk: the result changes)";

/// Applies to a junk-class key when the user asked for junk to be dropped.
pub(crate) fn applies(drop_junk: bool, class: Class) -> bool {
    drop_junk && class == Class::Junk
}

/// `--drop-junk` on a junk-class key.
pub(crate) struct DropJunk;

impl KeyStrategy for DropJunk {
    fn choose(&self, f: &KeyFacts, _: &mut Salting) -> Option<Choice> {
        choose(f)
    }
}

fn choose(f: &KeyFacts) -> Option<Choice> {
    applies(f.opts.drop_junk, f.class).then(|| {
        let why =
            format!("--drop-junk: its {} left and {} right rows are removed before the join; the result changes", fmt_count(f.rows[0]), fmt_count(f.rows[1]));
        (Strategy::Drop, why)
    })
}

/// The rows of `side` without the dropped keys (NULL keys stay), where a branch reads the
/// side whole; `None` when nothing is dropped.
pub(crate) fn filter(g: &BranchSql, hot: &[&HotKey], side: Side) -> Option<String> {
    let dropped = g.set_of(hot, |s| matches!(s, Strategy::Drop));
    (!dropped.is_empty())
        .then(|| format!("{} OR NOT ({})", g.is_null(ROWS, side), g.in_set(ROWS, side, &dropped)))
}
