//! Keeping a hot key in the shuffle: the last resort, when every strategy that would move it
//! needs rows it cannot have. It happens only with predicates in ON beyond the key equalities
//! (`rewrite`), which make the unmatched rows of an outer join, or a semi/anti join's answer,
//! depend on the other side's whole rows, and those rows are over the broadcast threshold.
//! Its tasks stay as they were; it has no branch of its own (the key stays in the rest).

use serde::Serialize;

use super::{Choice, KeyFacts};
use crate::format::{human, rows_n};
use crate::plan::model::{KeepReason, Side, Strategy};

impl std::fmt::Display for KeepReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepReason::RightRowsNeeded { rows, bytes, threshold } => write!(
                f,
                "the ON clause has predicates beyond the keys, so the right side's rows are needed, and its {} for the value ({}) are over the {} threshold",
                rows_n(*rows),
                human(*bytes),
                human(*threshold)
            ),
            KeepReason::UnmatchedNeedRows { how, threshold } => write!(
                f,
                "a {} join with predicates beyond the keys: finding the unmatched rows of the kept side would need the other side's rows for the value, which are over the {} threshold",
                how.as_str(),
                human(*threshold)
            ),
        }
    }
}

/// In the JSON, the reason as the sentence the text says.
impl Serialize for KeepReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

pub(crate) fn fix(reason: &KeepReason) -> String {
    format!("none, left in the shuffle: {reason}")
}

pub(crate) fn comment(reason: &KeepReason) -> String {
    format!("stays in the shuffle: {reason}")
}

/// Always applies: it is what is left when nothing else does.
pub(crate) fn choose(f: &KeyFacts) -> Choice {
    let reason = if f.how().is_semi_or_anti() {
        KeepReason::RightRowsNeeded {
            rows: f.rows(Side::Right),
            bytes: f.bytes(Side::Right),
            threshold: f.threshold(),
        }
    } else {
        KeepReason::UnmatchedNeedRows { how: f.how(), threshold: f.threshold() }
    };
    (Strategy::Keep { reason }, "no safe strategy".to_string())
}
