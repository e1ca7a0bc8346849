//! The plan as Spark SQL: `SELECT * FROM left JOIN right ON ...` split into the branches of
//! the design note (rest, hot slices, salted pieces, anti joins for unmatched rows, NULL
//! bypass), joined by UNION ALL. Written as text from escaped identifiers and literals, then
//! parsed with sqlparser and printed from the AST, so that what comes out is one query that
//! parses, whatever the key values contain.

use super::{JoinType, Plan, Side, Strategy};
use crate::error::Result;
use crate::sql::{ident, literal, parse_query, render_query};
use crate::value::{KeyType, Value};

/// What the SQL needs to know about the join.
pub struct JoinSql {
    pub how: JoinType,
    /// Each input as SQL that can follow FROM: a table name or a parenthesized query.
    pub left_source: String,
    pub right_source: String,
    /// The names each input goes by in the join condition and the select list.
    pub left_alias: String,
    pub right_alias: String,
    /// The select list every branch produces (the join's output columns).
    pub select_list: String,
    /// Predicates of the ON clause beyond the key equalities, written with the aliases.
    pub extra_on: Option<String>,
    pub left_keys: Vec<String>,
    pub right_keys: Vec<String>,
    pub key_types: Vec<KeyType>,
    pub left_columns: Vec<String>,
    pub right_columns: Vec<String>,
    /// Columns Spark's hash() accepts (no maps), for the salt.
    pub left_hashable: Vec<String>,
    pub right_hashable: Vec<String>,
}

/// The name of the salt column added to both sides of a salted branch.
const SALT: &str = "__skewjoin_salt";

/// A table name as SQL: `db.table` is a qualified name; each part is quoted.
pub fn table_name(name: &str) -> String {
    name.split('.').map(ident).collect::<Vec<_>>().join(".")
}

impl JoinSql {
    /// The plain `SELECT * FROM left l JOIN right r ON ...` of two tables.
    pub fn tables(how: JoinType, left: (&str, &[String], &[String]), right: (&str, &[String], &[String]), key_types: Vec<KeyType>) -> JoinSql {
        let mut cols: Vec<String> = left.2.iter().map(|c| format!("l.{}", ident(c))).collect();
        if how.outputs_right() {
            cols.extend(right.2.iter().map(|c| format!("r.{}", ident(c))));
        }
        JoinSql {
            how,
            left_source: table_name(left.0),
            right_source: table_name(right.0),
            left_alias: "l".into(),
            right_alias: "r".into(),
            select_list: cols.join(", "),
            extra_on: None,
            left_keys: left.1.to_vec(),
            right_keys: right.1.to_vec(),
            key_types,
            left_columns: left.2.to_vec(),
            right_columns: right.2.to_vec(),
            left_hashable: left.2.to_vec(),
            right_hashable: right.2.to_vec(),
        }
    }
}

// Aliases of the helper subqueries: unlikely to clash with a user's.
const T: &str = "__sj_t";
const U: &str = "__sj_u";
const D: &str = "__sj_d";

struct Gen<'a> {
    js: &'a JoinSql,
}

impl<'a> Gen<'a> {
    fn keys(&self, side: Side) -> &[String] {
        match side {
            Side::Left => &self.js.left_keys,
            Side::Right => &self.js.right_keys,
        }
    }
    fn table(&self, side: Side) -> String {
        match side {
            Side::Left => self.js.left_source.clone(),
            Side::Right => self.js.right_source.clone(),
        }
    }
    fn alias(&self, side: Side) -> &str {
        match side {
            Side::Left => &self.js.left_alias,
            Side::Right => &self.js.right_alias,
        }
    }
    fn eq(&self, alias: &str, side: Side, key: &[Value]) -> String {
        let parts: Vec<String> =
            self.keys(side).iter().zip(key).zip(&self.js.key_types).map(|((c, v), t)| format!("{alias}.{} = {}", ident(c), literal(v, *t))).collect();
        if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("({})", parts.join(" AND "))
        }
    }
    /// The row's key is one of `set` (never true for a NULL key).
    fn in_set(&self, alias: &str, side: Side, set: &[&[Value]]) -> String {
        if self.keys(side).len() == 1 {
            let c = &self.keys(side)[0];
            let lits: Vec<String> = set.iter().map(|k| literal(&k[0], self.js.key_types[0])).collect();
            format!("{alias}.{} IN ({})", ident(c), lits.join(", "))
        } else {
            format!("({})", set.iter().map(|k| self.eq(alias, side, k)).collect::<Vec<_>>().join(" OR "))
        }
    }
    fn is_null(&self, alias: &str, side: Side) -> String {
        let p: Vec<String> = self.keys(side).iter().map(|c| format!("{alias}.{} IS NULL", ident(c))).collect();
        if p.len() == 1 {
            p[0].clone()
        } else {
            format!("({})", p.join(" OR "))
        }
    }
    fn not_null(&self, alias: &str, side: Side) -> String {
        self.keys(side).iter().map(|c| format!("{alias}.{} IS NOT NULL", ident(c))).collect::<Vec<_>>().join(" AND ")
    }
    fn on(&self) -> String {
        let (l, r) = (&self.js.left_alias, &self.js.right_alias);
        self.js.left_keys.iter().zip(&self.js.right_keys).map(|(a, b)| format!("{l}.{} = {r}.{}", ident(a), ident(b))).collect::<Vec<_>>().join(" AND ")
    }
    /// `(SELECT * FROM source __sj_t WHERE pred) alias`, or `source alias` without a predicate.
    fn filtered(&self, side: Side, pred: Option<String>) -> String {
        match pred {
            None => format!("{} {}", self.table(side), self.alias(side)),
            Some(p) => format!("(SELECT * FROM {} {T} WHERE {p}) {}", self.table(side), self.alias(side)),
        }
    }
    fn hint(aliases: &[&str]) -> String {
        if aliases.is_empty() {
            String::new()
        } else {
            format!("/*+ BROADCAST({}) */ ", aliases.join(", "))
        }
    }
    /// A join of two inputs with the join's output columns (and its extra ON predicates).
    fn join(&self, how: JoinType, hint: &[Side], l: String, r: String, extra_on: &str) -> String {
        let hint: Vec<&str> = hint.iter().map(|s| self.alias(*s)).collect();
        let extra = self.js.extra_on.as_ref().map(|e| format!(" AND ({e})")).unwrap_or_default();
        format!("SELECT {}{} FROM {l} {} {r} ON {}{extra}{extra_on}", Self::hint(&hint), self.js.select_list, how.sql(), self.on())
    }
    /// A padding join: no extra predicates (one side is empty).
    fn pad_join(&self, how: JoinType, hint: Side, l: String, r: String) -> String {
        format!("SELECT {}{} FROM {l} {} {r} ON {}", Self::hint(&[self.alias(hint)]), self.js.select_list, how.sql(), self.on())
    }
    /// Rows of `side` (already chosen by `input`) padded with NULLs for the other side, with no
    /// shuffle: an outer join against an empty, broadcast other side.
    fn padded(&self, side: Side, input: String) -> String {
        let empty = |s: Side| format!("(SELECT * FROM {} {T} WHERE FALSE) {}", self.table(s), self.alias(s));
        if !self.js.how.outputs_right() {
            // Semi and anti joins output the left columns only.
            return format!("SELECT {} FROM {input}", self.js.select_list);
        }
        match side {
            Side::Left => self.pad_join(JoinType::Left, Side::Right, input, empty(Side::Right)),
            Side::Right => self.pad_join(JoinType::Right, Side::Left, empty(Side::Left), input),
        }
    }
    /// Rows of `side` whose key is in `set` and has no row on the other side.
    fn unmatched(&self, side: Side, set: &[&[Value]]) -> String {
        let other = side.other();
        let dk: Vec<String> = self.keys(other).iter().map(|c| ident(c)).collect();
        let on: Vec<String> = self.keys(side).iter().zip(self.keys(other)).map(|(a, b)| format!("{T}.{} = {D}.{}", ident(a), ident(b))).collect();
        format!(
            "(SELECT /*+ BROADCAST({D}) */ {T}.* FROM (SELECT * FROM {} {U} WHERE {}) {T} LEFT ANTI JOIN (SELECT DISTINCT {} FROM {} {U} WHERE {}) {D} ON {}) {}",
            self.table(side),
            self.in_set(U, side, set),
            dk.join(", "),
            self.table(other),
            self.in_set(U, other, set),
            on.join(" AND "),
            self.alias(side)
        )
    }
}

/// The hash columns of a salt: every column of the split side that is not a key (and that
/// Spark can hash: not a map).
fn salt_columns(js: &JoinSql, side: Side) -> Vec<String> {
    let (cols, keys) = match side {
        Side::Left => (&js.left_hashable, &js.left_keys),
        Side::Right => (&js.right_hashable, &js.right_keys),
    };
    cols.iter().filter(|c| !keys.iter().any(|k| k.eq_ignore_ascii_case(c))).cloned().collect()
}

pub fn emit_sql(js: &JoinSql, plan: &Plan) -> Result<String> {
    let g = Gen { js };
    let how = js.how;
    let (la, ra) = (js.left_alias.as_str(), js.right_alias.as_str());
    let mut branches: Vec<String> = Vec::new();
    let hot: Vec<&super::HotKey> = plan.hot_keys.iter().collect();
    let set_of = |f: &dyn Fn(&Strategy) -> bool| -> Vec<&[Value]> { hot.iter().filter(|h| f(&h.strategy)).map(|h| h.key.as_slice()).collect() };
    let moved = set_of(&|s| !matches!(s, Strategy::NullBypass | Strategy::Keep { .. }));
    let dropped = set_of(&|s| matches!(s, Strategy::Drop));
    let bypass = |side: Side| hot.iter().any(|h| matches!(h.strategy, Strategy::NullBypass) && h.side == side.as_str());

    if let Some(b) = plan.broadcast_side {
        let pred = |side: Side| (!dropped.is_empty()).then(|| format!("{} OR NOT ({})", g.is_null(T, side), g.in_set(T, side, &dropped)));
        branches.push(g.join(how, &[b], g.filtered(Side::Left, pred(Side::Left)), g.filtered(Side::Right, pred(Side::Right)), ""));
    } else {
        // 1. The rest: every key that is not hot, through the ordinary shuffle join.
        let rest = |side: Side| -> Option<String> {
            match (moved.is_empty(), bypass(side)) {
                (true, false) => None,
                (true, true) => Some(g.not_null(T, side)),
                (false, true) => Some(format!("{} AND NOT ({})", g.not_null(T, side), g.in_set(T, side, &moved))),
                (false, false) => Some(format!("{} OR NOT ({})", g.is_null(T, side), g.in_set(T, side, &moved))),
            }
        };
        branches.push(g.join(how, &[], g.filtered(Side::Left, rest(Side::Left)), g.filtered(Side::Right, rest(Side::Right)), ""));

        // 2. Hot slices broadcast straight into the join type.
        for b in [Side::Right, Side::Left] {
            let set = set_of(&|s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: false, .. } if *broadcast == b));
            if !set.is_empty() {
                let l = g.filtered(Side::Left, Some(g.in_set(T, Side::Left, &set)));
                let r = g.filtered(Side::Right, Some(g.in_set(T, Side::Right, &set)));
                branches.push(g.join(how, &[b], l, r, ""));
            }
        }
        // 3. Semi and anti joins: the distinct right keys, broadcast.
        let keys_set = set_of(&|s| matches!(s, Strategy::BroadcastKeys));
        if !keys_set.is_empty() {
            let l = g.filtered(Side::Left, Some(g.in_set(T, Side::Left, &keys_set)));
            let rk: Vec<String> = js.right_keys.iter().map(|c| ident(c)).collect();
            let r = format!("(SELECT DISTINCT {} FROM {} {T} WHERE {}) {ra}", rk.join(", "), g.table(Side::Right), g.in_set(T, Side::Right, &keys_set));
            branches.push(g.join(how, &[Side::Right], l, r, ""));
        }
        // 4. Decomposed: the inner join of the hot rows (broadcast or salted) ...
        for b in [Side::Right, Side::Left] {
            let set = set_of(&|s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: true, .. } if *broadcast == b));
            if !set.is_empty() {
                let l = g.filtered(Side::Left, Some(g.in_set(T, Side::Left, &set)));
                let r = g.filtered(Side::Right, Some(g.in_set(T, Side::Right, &set)));
                branches.push(g.join(JoinType::Inner, &[b], l, r, ""));
            }
        }
        for split in [Side::Left, Side::Right] {
            let salted: Vec<(&[Value], u32, &Vec<i32>)> = hot
                .iter()
                .filter_map(|h| match &h.strategy {
                    Strategy::Salt { n, split: s, salts, .. } if *s == split => Some((h.key.as_slice(), *n, salts)),
                    _ => None,
                })
                .collect();
            if salted.is_empty() {
                continue;
            }
            let set: Vec<&[Value]> = salted.iter().map(|s| s.0).collect();
            let arr = |salts: &[i32]| format!("array({})", salts.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "));
            let hcols = salt_columns(js, split);
            let hash_of = if hcols.is_empty() {
                "monotonically_increasing_id()".to_string()
            } else {
                hcols.iter().map(|c| format!("{T}.{}", ident(c))).collect::<Vec<_>>().join(", ")
            };
            let split_case: Vec<String> = salted
                .iter()
                .map(|(k, n, salts)| format!("WHEN {} THEN element_at({}, pmod(hash({hash_of}), {n}) + 1)", g.eq(T, split, k), arr(salts)))
                .collect();
            let rep_case: Vec<String> = salted.iter().map(|(k, _, salts)| format!("WHEN {} THEN {}", g.eq(T, split.other(), k), arr(salts))).collect();
            let split_t = format!(
                "(SELECT {T}.*, CASE {} END AS {SALT} FROM {} {T} WHERE {}) {}",
                split_case.join(" "),
                g.table(split),
                g.in_set(T, split, &set),
                g.alias(split)
            );
            let rep_t = format!(
                "(SELECT {T}.*, explode(CASE {} END) AS {SALT} FROM {} {T} WHERE {}) {}",
                rep_case.join(" "),
                g.table(split.other()),
                g.in_set(T, split.other(), &set),
                g.alias(split.other())
            );
            let (l, r) = if split == Side::Left { (split_t, rep_t) } else { (rep_t, split_t) };
            branches.push(g.join(JoinType::Inner, &[], l, r, &format!(" AND {la}.{SALT} = {ra}.{SALT}")));
        }
        // ... plus the rows of a kept side that match nothing, padded with NULLs.
        let decomposed = set_of(&|s| matches!(s, Strategy::BroadcastSlice { decomposed: true, .. } | Strategy::Salt { decomposed: true, .. }));
        if !decomposed.is_empty() {
            for side in [Side::Left, Side::Right] {
                if how.preserves(side) {
                    branches.push(g.padded(side, g.unmatched(side, &decomposed)));
                }
            }
        }
        // 5. NULL keys on a kept side: no join at all.
        for side in [Side::Left, Side::Right] {
            if bypass(side) {
                let input = format!("(SELECT * FROM {} {T} WHERE {}) {}", g.table(side), g.is_null(T, side), g.alias(side));
                branches.push(g.padded(side, input));
            }
        }
    }
    let text = branches.join("\nUNION ALL\n");
    let q = parse_query(&text).map_err(|e| crate::Error::Internal(format!("the generated SQL does not parse ({e}): {text}")))?;
    Ok(render_query(&q))
}
