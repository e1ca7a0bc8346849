//! Spark's join strategy hints of one SELECT (`/*+ BROADCAST(t), MERGE(u) */`), as Spark's
//! `ResolveJoinStrategyHints` and `JoinSelection` read them: which join strategy a hint asks
//! for an input of the SELECT's joins, and so whether a join shuffles at all.
//!
//! A hint names relations of its own SELECT by alias, or by a table's name (or a suffix of its
//! qualified name) when the table has no alias; names are case-insensitive. Of the hints on a
//! join's two sides Spark takes, in this order: BROADCAST (on a side the join type can build a
//! hash table of), MERGE (on either side), SHUFFLE_HASH (on a side it can build),
//! SHUFFLE_REPLICATE_NL (an inner join); a hint it cannot apply is ignored, and the join is
//! then planned by size as if it had none. A hint without names applies to the SELECT's whole
//! result, not to its joins, and is not read here.

use sqlparser::ast::Select;

use super::input::Input;
use super::names::lc;
use crate::plan::{JoinType, Side};

/// A join strategy a hint asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Strategy {
    /// BROADCAST, BROADCASTJOIN, MAPJOIN.
    Broadcast,
    /// MERGE, SHUFFLE_MERGE, MERGEJOIN.
    Merge,
    /// SHUFFLE_HASH.
    ShuffleHash,
    /// SHUFFLE_REPLICATE_NL.
    ReplicateNl,
}

impl Strategy {
    fn of_name(name: &str) -> Option<Strategy> {
        Some(match name.to_ascii_uppercase().as_str() {
            "BROADCAST" | "BROADCASTJOIN" | "MAPJOIN" => Strategy::Broadcast,
            "MERGE" | "SHUFFLE_MERGE" | "MERGEJOIN" => Strategy::Merge,
            "SHUFFLE_HASH" => Strategy::ShuffleHash,
            "SHUFFLE_REPLICATE_NL" => Strategy::ReplicateNl,
            _ => return None,
        })
    }
}

/// One hint as written: its strategy and the relation names it gives (each split at dots,
/// lower case).
#[derive(Clone, Debug, PartialEq)]
struct Hint {
    strategy: Strategy,
    written: String,
    names: Vec<Vec<String>>,
}

/// The join strategy hints of a SELECT.
#[derive(Clone, Debug, Default)]
pub(super) struct Hints(Vec<Hint>);

/// What the hints on a join's two sides make of it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum HintedJoin {
    /// No hint applies: Spark plans it by size.
    None,
    /// A broadcast hash join of this side, asked for by this hint as written.
    Broadcast(Side, String),
    /// A cartesian product (SHUFFLE_REPLICATE_NL): no hash shuffle on the key.
    ReplicateNl(String),
    /// A shuffled join that Spark will not turn into a broadcast by size: the hint as written,
    /// its name (MERGE, SHUFFLE_HASH...) and the side it names.
    Shuffled { written: String, name: String, side: Side },
}

impl HintedJoin {
    /// The hint as written that keeps the join shuffled (MERGE, SHUFFLE_HASH), if one does.
    pub fn shuffle_hint(&self) -> Option<String> {
        match self {
            HintedJoin::Shuffled { written, .. } => Some(written.clone()),
            _ => None,
        }
    }

    /// The hint as written, where one applies.
    fn written(&self) -> Option<&str> {
        match self {
            HintedJoin::None => None,
            HintedJoin::Broadcast(_, w)
            | HintedJoin::ReplicateNl(w)
            | HintedJoin::Shuffled { written: w, .. } => Some(w),
        }
    }
}

impl Hints {
    /// The join strategy hints of `sel`; other hints (REPARTITION, COALESCE...) are not read.
    pub fn of(sel: &Select) -> Hints {
        Hints(
            sel.optimizer_hints
                .iter()
                .filter(|h| h.prefix.is_empty())
                .flat_map(|h| parse(&h.text))
                .collect(),
        )
    }

    /// What the hints make of a join of `how` between `l` and `r`.
    pub fn on_join(&self, how: JoinType, l: &Input, r: &Input) -> HintedJoin {
        let asked = |s: Strategy, side: Side| {
            let inp = if side == Side::Left { l } else { r };
            self.0.iter().find(|h| h.strategy == s && h.names.iter().any(|n| names_input(n, inp)))
        };
        let buildable = |side: Side| how.may_broadcast(side);
        for side in [Side::Right, Side::Left] {
            if let Some(h) = asked(Strategy::Broadcast, side).filter(|_| buildable(side)) {
                return HintedJoin::Broadcast(side, h.written.clone());
            }
        }
        for side in [Side::Left, Side::Right] {
            if let Some(h) = asked(Strategy::Merge, side) {
                return h.shuffled(side);
            }
        }
        for side in [Side::Right, Side::Left] {
            if let Some(h) = asked(Strategy::ShuffleHash, side)
                .filter(|_| buildable(side) || how == JoinType::Full)
            {
                return h.shuffled(side);
            }
        }
        for side in [Side::Left, Side::Right] {
            if let Some(h) = asked(Strategy::ReplicateNl, side).filter(|_| how == JoinType::Inner) {
                return HintedJoin::ReplicateNl(h.written.clone());
            }
        }
        HintedJoin::None
    }

    /// The hints naming an input of this join that Spark cannot apply to it, as written.
    pub fn ignored(&self, how: JoinType, l: &Input, r: &Input) -> Vec<String> {
        let applied = self.on_join(how, l, r);
        self.0
            .iter()
            .filter(|h| h.names.iter().any(|n| names_input(n, l) || names_input(n, r)))
            .filter(|h| applied.written() != Some(h.written.as_str()))
            .map(|h| h.written.clone())
            .collect()
    }
}

impl Hint {
    fn shuffled(&self, side: Side) -> HintedJoin {
        let name = self.written.split('(').next().unwrap_or_default().trim().to_ascii_uppercase();
        HintedJoin::Shuffled { written: self.written.clone(), name, side }
    }
}

/// Whether a hint's name (split at dots) names `inp`: its alias, or a suffix of its table's
/// qualified name when the table has no alias. The joins before a chained join are no
/// relation of their own: a hint names one of their tables.
fn names_input(name: &[String], inp: &Input) -> bool {
    if inp.joined.is_some() || name.is_empty() {
        return false;
    }
    if name.len() == 1 {
        return name[0] == lc(&inp.alias);
    }
    let source: Vec<String> = inp.source.split('.').map(|p| lc(p.trim_matches('`'))).collect();
    source.last() == Some(&lc(&inp.alias)) && source.ends_with(name)
}

/// Take the relation names in `moved` (the aliases of inputs the rewrite moved into a derived
/// table, where a hint of this SELECT no longer finds them, and Spark would warn that it cannot)
/// out of the SELECT's join strategy hints; a hint left with no name goes, and so does a
/// comment left empty. Other hints stay as written.
pub(super) fn drop_moved(sel: &mut Select, moved: &[String]) {
    let moved: Vec<String> = moved.iter().map(|m| lc(m)).collect();
    for h in sel.optimizer_hints.iter_mut().filter(|h| h.prefix.is_empty()) {
        if let Some(text) = without(&h.text, &moved) {
            h.text = text;
        }
    }
    sel.optimizer_hints.retain(|h| !h.text.trim().is_empty());
}

/// A hint comment's text without the strategy hints' names in `moved`; None if none is there.
fn without(text: &str, moved: &[String]) -> Option<String> {
    let mut items = Vec::new();
    let mut changed = false;
    for (name, args) in items_of(text) {
        let Some(args) = args else {
            items.push(name.to_string());
            continue;
        };
        if Strategy::of_name(name).is_none() {
            items.push(format!("{name}({args})"));
            continue;
        }
        let kept: Vec<&str> = args
            .split(',')
            .map(str::trim)
            .filter(|a| !relation_name(a).last().is_some_and(|n| moved.contains(n)))
            .collect();
        changed |= kept.len() != args.split(',').count();
        if !kept.is_empty() {
            items.push(format!("{name}({})", kept.join(", ")));
        }
    }
    changed.then(|| format!(" {} ", items.join(", ")))
}

/// The items of one `/*+ ... */` comment: `NAME(arg, ...)` or `NAME`, separated by commas or
/// spaces; each name with the text between its parentheses.
fn items_of(text: &str) -> Vec<(&str, Option<&str>)> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let end =
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if end == 0 {
            rest = rest[rest.chars().next().map_or(1, char::len_utf8)..].trim_start();
            continue;
        }
        let name = &rest[..end];
        rest = rest[end..].trim_start();
        let mut args = None;
        if let Some(inner) = rest.strip_prefix('(') {
            let close = inner.find(')').unwrap_or(inner.len());
            args = Some(inner[..close].trim());
            rest = inner.get(close + 1..).unwrap_or("").trim_start();
        }
        out.push((name, args));
        rest = rest.trim_start_matches(',').trim_start();
    }
    out
}

/// The hints of one `/*+ ... */` comment: `NAME(arg, ...)` items separated by commas or spaces.
fn parse(text: &str) -> Vec<Hint> {
    items_of(text)
        .into_iter()
        .filter_map(|(name, args)| {
            let args = args?;
            let names: Vec<Vec<String>> =
                args.split(',').map(relation_name).filter(|n| !n.is_empty()).collect();
            let strategy = Strategy::of_name(name).filter(|_| !names.is_empty())?;
            Some(Hint { strategy, written: format!("{name}({args})"), names })
        })
        .collect()
}

/// A hint's argument as a relation name: quotes and backquotes off, split at dots, lower case.
fn relation_name(arg: &str) -> Vec<String> {
    let a = arg.trim().trim_matches(|c| c == '\'' || c == '"');
    if a.is_empty() {
        return vec![];
    }
    a.split('.').map(|p| lc(p.trim().trim_matches('`'))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(q: &str) -> Hints {
        let q = crate::sql::parse_query(q).unwrap();
        match &*q.body {
            sqlparser::ast::SetExpr::Select(s) => Hints::of(s),
            _ => unreachable!(),
        }
    }

    fn input(alias: &str, source: &str) -> Input {
        Input {
            alias: alias.into(),
            source: source.into(),
            ..Input::of_columns(vec![], Default::default(), false)
        }
    }

    #[test]
    fn hints_are_read_as_spark_reads_them() {
        let h = hints(
            "SELECT /*+ MAPJOIN(r), merge(`x`) SHUFFLE_HASH('db.t') REPARTITION(3) */ 1 FROM a",
        );
        let names: Vec<(Strategy, Vec<Vec<String>>)> =
            h.0.iter().map(|h| (h.strategy, h.names.clone())).collect();
        assert_eq!(
            names,
            vec![
                (Strategy::Broadcast, vec![vec!["r".to_string()]]),
                (Strategy::Merge, vec![vec!["x".to_string()]]),
                (Strategy::ShuffleHash, vec![vec!["db".to_string(), "t".to_string()]]),
            ]
        );
    }

    #[test]
    fn a_broadcast_hint_applies_only_to_a_side_the_join_can_build() {
        let h = hints("SELECT /*+ BROADCAST(e) */ 1 FROM a");
        let (e, t) = (input("e", "events"), input("t", "titles"));
        assert_eq!(h.on_join(JoinType::Left, &e, &t), HintedJoin::None);
        assert_eq!(h.ignored(JoinType::Left, &e, &t), vec!["BROADCAST(e)".to_string()]);
        assert_eq!(
            h.on_join(JoinType::Inner, &e, &t),
            HintedJoin::Broadcast(Side::Left, "BROADCAST(e)".into())
        );
        assert!(h.ignored(JoinType::Inner, &e, &t).is_empty());
    }

    #[test]
    fn broadcast_wins_over_merge_and_merge_over_shuffle_hash() {
        let (e, t) = (input("e", "events"), input("t", "titles"));
        let h = hints("SELECT /*+ SHUFFLE_HASH(t), MERGE(e), BROADCAST(t) */ 1 FROM a");
        assert_eq!(
            h.on_join(JoinType::Left, &e, &t),
            HintedJoin::Broadcast(Side::Right, "BROADCAST(t)".into())
        );
        let h = hints("SELECT /*+ SHUFFLE_HASH(t), MERGE(e) */ 1 FROM a");
        assert_eq!(
            h.on_join(JoinType::Left, &e, &t),
            HintedJoin::Shuffled {
                written: "MERGE(e)".into(),
                name: "MERGE".into(),
                side: Side::Left
            }
        );
        assert_eq!(h.ignored(JoinType::Left, &e, &t), vec!["SHUFFLE_HASH(t)".to_string()]);
    }

    #[test]
    fn names_of_moved_inputs_leave_the_hints() {
        let q = crate::sql::parse_query(
            "SELECT /*+ BROADCAST(t, d), MERGE(e) REPARTITION(3) */ 1 FROM a",
        )
        .unwrap();
        let sqlparser::ast::SetExpr::Select(mut s) = *q.body else { unreachable!() };
        drop_moved(&mut s, &["E".to_string(), "t".to_string()]);
        assert_eq!(s.optimizer_hints[0].text, " BROADCAST(d), REPARTITION(3) ");
        drop_moved(&mut s, &["d".to_string()]);
        assert_eq!(s.optimizer_hints[0].text, " REPARTITION(3) ");
        let q = crate::sql::parse_query("SELECT /*+ MERGE(db.e) */ 1 FROM a").unwrap();
        let sqlparser::ast::SetExpr::Select(mut s) = *q.body else { unreachable!() };
        drop_moved(&mut s, &["e".to_string()]);
        assert!(s.optimizer_hints.is_empty());
        assert_eq!(s.to_string(), "SELECT 1 FROM a");
    }

    #[test]
    fn a_table_is_named_by_its_alias_or_unaliased_by_its_name() {
        let h = hints("SELECT /*+ BROADCAST(prod.titles) */ 1 FROM a");
        let e = input("e", "events");
        assert_eq!(
            h.on_join(JoinType::Inner, &e, &input("titles", "prod.titles")),
            HintedJoin::Broadcast(Side::Right, "BROADCAST(prod.titles)".into())
        );
        assert_eq!(h.on_join(JoinType::Inner, &e, &input("t", "prod.titles")), HintedJoin::None);
        let h = hints("SELECT /*+ BROADCAST(TITLES) */ 1 FROM a");
        assert_eq!(
            h.on_join(JoinType::Inner, &e, &input("titles", "prod.titles")),
            HintedJoin::Broadcast(Side::Right, "BROADCAST(TITLES)".into())
        );
    }
}
