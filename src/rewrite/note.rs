//! The notes of a rewritten join: the planner's, as it wrote them, and the rewrite's own
//! caveats on the counts behind the plan. The text report and the JSON (`changes[].notes`)
//! both render a note with `Display`.

use std::fmt;

use serde::{Serialize, Serializer};

/// One note on a rewritten join.
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    /// A note of the planner.
    Plan(String),
    /// The left input is the joins before this one (`prefix`, as written): its counts are of
    /// the base `table`, so the task sizes are estimates; the joins run in each of `branches`.
    ChainEstimate { prefix: String, table: String, branches: usize, why: String },
    /// The left input is the joins before this one, counted through them; they run in each of
    /// `branches`.
    ChainCounted { branches: usize },
    /// Conditions of the query's WHERE on the join's inputs that the counts do not apply, each
    /// with why.
    NotApplied(Vec<String>),
    /// The input `input` is a subquery with a filter that the counts of `tables` do not apply.
    SubqueryFilter { input: String, tables: Vec<String> },
    /// The input (by its name) groups with a HAVING: it drops groups that the counts keep.
    Having(String),
    /// Hints of the query (as written) naming an input of this join that Spark cannot apply
    /// to a join of this type, and ignores.
    HintIgnored { hints: Vec<String>, how: crate::plan::JoinType },
    /// Spark runs the outer join as written (`written`) as `runs`: the WHERE conjunct `by` drops
    /// the rows it would fill with NULLs.
    OuterAsSpark { written: crate::plan::JoinType, runs: crate::plan::JoinType, by: String },
}

impl Note {
    /// Whether the note says the counts differ from the rows the join will see (the figures
    /// that `verify` measures may differ from the prediction).
    pub fn on_counts(&self) -> bool {
        !matches!(
            self,
            Note::Plan(_)
                | Note::ChainCounted { .. }
                | Note::HintIgnored { .. }
                | Note::OuterAsSpark { .. }
        )
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Note::Plan(text) => f.write_str(text),
            Note::ChainEstimate { prefix, table, branches, why } => write!(
                f,
                "the left input is the joins before this one ({prefix}); its key counts are those of the base table {table}, before those joins, which may drop or repeat rows, so the task sizes are estimates (the counts do not follow the joins: {why}); {}",
                branches_text(*branches)
            ),
            Note::ChainCounted { branches } => f.write_str(&branches_text(*branches)),
            Note::NotApplied(conds) => {
                write!(f, "the counts do not apply these conditions of the query's WHERE, so the real tasks may be smaller: {}", conds.join("; "))
            }
            Note::SubqueryFilter { input, tables } => {
                write!(f, "{input}: the counts are of the whole table {}; the subquery's filter was not applied to them", tables.join(", "))
            }
            Note::Having(input) => write!(f, "{input}: its HAVING drops groups that the counts keep, so the counts of its rows are an upper bound"),
            Note::HintIgnored { hints, how } => write!(
                f,
                "Spark does not follow the query's hint {} on this {} join: a hint naming a side the join type cannot build on, or one a stronger hint overrides (BROADCAST, then MERGE, then SHUFFLE_HASH)",
                hints.join(", "),
                how.as_str()
            ),
            Note::OuterAsSpark { written, runs, by } => write!(
                f,
                "Spark runs this {} join as {} {} join (its EliminateOuterJoin): {by} drops the rows it would fill with NULLs; planned and written as such",
                written.as_str(),
                if *runs == crate::plan::JoinType::Inner { "an" } else { "a" },
                runs.as_str()
            ),
        }
    }
}

/// What becomes of the joins before a rewritten one: each branch repeats them, and Spark pushes
/// the branch's condition on the key down to the input that holds it where the joins allow
/// (inner joins, the kept side of a left join), so each runs on its branch's rows (counted on
/// them with each join left as written: `in_branches`).
fn branches_text(branches: usize) -> String {
    format!(
        "the joins before this one run in each of the {branches} branches, on that branch's rows where Spark pushes the branch's condition on the key down to them (their tables are then read {branches} times; a join left as written there is counted again on each branch's rows, on its own line)"
    )
}

/// In JSON, a note is its text.
impl Serialize for Note {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
