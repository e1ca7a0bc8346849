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
    pub left_name: String,
    pub right_name: String,
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

fn table(name: &str) -> String {
    // `db.table` is a qualified name; each part is quoted.
    name.split('.').map(ident).collect::<Vec<_>>().join(".")
}

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
        table(match side {
            Side::Left => &self.js.left_name,
            Side::Right => &self.js.right_name,
        })
    }
    fn eq(&self, alias: &str, side: Side, key: &[Value]) -> String {
        let parts: Vec<String> = self
            .keys(side)
            .iter()
            .zip(key)
            .zip(&self.js.key_types)
            .map(|((c, v), t)| format!("{alias}.{} = {}", ident(c), literal(v, *t)))
            .collect();
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
    fn on(&self, l: &str, r: &str) -> String {
        self.js
            .left_keys
            .iter()
            .zip(&self.js.right_keys)
            .map(|(a, b)| format!("{l}.{} = {r}.{}", ident(a), ident(b)))
            .collect::<Vec<_>>()
            .join(" AND ")
    }
    fn cols(&self, how: JoinType) -> String {
        let mut c: Vec<String> = self.js.left_columns.iter().map(|n| format!("l.{}", ident(n))).collect();
        if how.outputs_right() {
            c.extend(self.js.right_columns.iter().map(|n| format!("r.{}", ident(n))));
        }
        c.join(", ")
    }
    /// `(SELECT * FROM table t WHERE pred) alias`, or `table alias` without a predicate.
    fn filtered(&self, side: Side, pred: Option<String>, alias: &str) -> String {
        match pred {
            None => format!("{} {alias}", self.table(side)),
            Some(p) => format!("(SELECT * FROM {} t WHERE {p}) {alias}", self.table(side)),
        }
    }
    fn hint(aliases: &[&str]) -> String {
        if aliases.is_empty() {
            String::new()
        } else {
            format!("/*+ BROADCAST({}) */ ", aliases.join(", "))
        }
    }
    /// A join of two inputs with the plan's output columns.
    fn join(&self, how: JoinType, hint: &[&str], l: String, r: String, extra_on: &str) -> String {
        format!("SELECT {}{} FROM {l} {} {r} ON {}{extra_on}", Self::hint(hint), self.cols(how), how.sql(), self.on("l", "r"))
    }
    /// Rows of `side` (already chosen by `input`) padded with NULLs for the other side, with no
    /// shuffle: an outer join against an empty, broadcast other side.
    fn padded(&self, side: Side, input: String) -> String {
        let empty = |s: Side, alias: &str| format!("(SELECT * FROM {} t WHERE FALSE) {alias}", self.table(s));
        if !self.js.how.outputs_right() {
            // Semi and anti joins output the left columns only.
            let a = input;
            return format!("SELECT {} FROM {a}", self.cols(self.js.how));
        }
        match side {
            Side::Left => self.join(JoinType::Left, &["r"], input, empty(Side::Right, "r"), ""),
            Side::Right => self.join(JoinType::Right, &["l"], empty(Side::Left, "l"), input, ""),
        }
    }
    /// Rows of `side` whose key is in `set` and has no row on the other side.
    fn unmatched(&self, side: Side, set: &[&[Value]], alias: &str) -> String {
        let other = side.other();
        let dk: Vec<String> = self.keys(other).iter().map(|c| ident(c)).collect();
        let on: Vec<String> = self.keys(side).iter().zip(self.keys(other)).map(|(a, b)| format!("t.{} = d.{}", ident(a), ident(b))).collect();
        format!(
            "(SELECT /*+ BROADCAST(d) */ t.* FROM (SELECT * FROM {} u WHERE {}) t LEFT ANTI JOIN (SELECT DISTINCT {} FROM {} u WHERE {}) d ON {}) {alias}",
            self.table(side),
            self.in_set("u", side, set),
            dk.join(", "),
            self.table(other),
            self.in_set("u", other, set),
            on.join(" AND ")
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
    let mut branches: Vec<String> = Vec::new();
    let hot: Vec<&super::HotKey> = plan.hot_keys.iter().collect();
    let set_of = |f: &dyn Fn(&Strategy) -> bool| -> Vec<&[Value]> { hot.iter().filter(|h| f(&h.strategy)).map(|h| h.key.as_slice()).collect() };
    let moved = set_of(&|s| !matches!(s, Strategy::NullBypass));
    let dropped = set_of(&|s| matches!(s, Strategy::Drop));
    let bypass = |side: Side| hot.iter().any(|h| matches!(h.strategy, Strategy::NullBypass) && h.side == side.as_str());

    if let Some(b) = plan.broadcast_side {
        let pred = |side: Side, alias: &str| (!dropped.is_empty()).then(|| format!("{} OR NOT ({})", g.is_null(alias, side), g.in_set(alias, side, &dropped)));
        let hint = if b == Side::Left { "l" } else { "r" };
        branches.push(g.join(how, &[hint], g.filtered(Side::Left, pred(Side::Left, "t"), "l"), g.filtered(Side::Right, pred(Side::Right, "t"), "r"), ""));
    } else {
        // 1. The rest: every key that is not hot, through the ordinary shuffle join.
        let rest = |side: Side| -> Option<String> {
            match (moved.is_empty(), bypass(side)) {
                (true, false) => None,
                (true, true) => Some(g.not_null("t", side)),
                (false, true) => Some(format!("{} AND NOT ({})", g.not_null("t", side), g.in_set("t", side, &moved))),
                (false, false) => Some(format!("{} OR NOT ({})", g.is_null("t", side), g.in_set("t", side, &moved))),
            }
        };
        branches.push(g.join(how, &[], g.filtered(Side::Left, rest(Side::Left), "l"), g.filtered(Side::Right, rest(Side::Right), "r"), ""));

        // 2. Hot slices broadcast straight into the join type.
        for b in [Side::Right, Side::Left] {
            let set = set_of(&|s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: false, .. } if *broadcast == b));
            if !set.is_empty() {
                let hint = if b == Side::Left { "l" } else { "r" };
                let l = g.filtered(Side::Left, Some(g.in_set("t", Side::Left, &set)), "l");
                let r = g.filtered(Side::Right, Some(g.in_set("t", Side::Right, &set)), "r");
                branches.push(g.join(how, &[hint], l, r, ""));
            }
        }
        // 3. Semi and anti joins: the distinct right keys, broadcast.
        let keys_set = set_of(&|s| matches!(s, Strategy::BroadcastKeys));
        if !keys_set.is_empty() {
            let l = g.filtered(Side::Left, Some(g.in_set("t", Side::Left, &keys_set)), "l");
            let rk: Vec<String> = js.right_keys.iter().map(|c| ident(c)).collect();
            let r = format!("(SELECT DISTINCT {} FROM {} t WHERE {}) r", rk.join(", "), g.table(Side::Right), g.in_set("t", Side::Right, &keys_set));
            branches.push(g.join(how, &["r"], l, r, ""));
        }
        // 4. Decomposed: the inner join of the hot rows (broadcast or salted) ...
        for b in [Side::Right, Side::Left] {
            let set = set_of(&|s| matches!(s, Strategy::BroadcastSlice { broadcast, decomposed: true, .. } if *broadcast == b));
            if !set.is_empty() {
                let hint = if b == Side::Left { "l" } else { "r" };
                let l = g.filtered(Side::Left, Some(g.in_set("t", Side::Left, &set)), "l");
                let r = g.filtered(Side::Right, Some(g.in_set("t", Side::Right, &set)), "r");
                branches.push(g.join(JoinType::Inner, &[hint], l, r, ""));
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
            let hash_of = if hcols.is_empty() { "monotonically_increasing_id()".to_string() } else { hcols.iter().map(|c| format!("t.{}", ident(c))).collect::<Vec<_>>().join(", ") };
            let split_case: Vec<String> = salted
                .iter()
                .map(|(k, n, salts)| format!("WHEN {} THEN element_at({}, pmod(hash({hash_of}), {n}) + 1)", g.eq("t", split, k), arr(salts)))
                .collect();
            let rep_case: Vec<String> = salted.iter().map(|(k, _, salts)| format!("WHEN {} THEN {}", g.eq("t", split.other(), k), arr(salts))).collect();
            let split_t = format!(
                "(SELECT t.*, CASE {} END AS {SALT} FROM {} t WHERE {})",
                split_case.join(" "),
                g.table(split),
                g.in_set("t", split, &set)
            );
            let rep_t = format!(
                "(SELECT t.*, explode(CASE {} END) AS {SALT} FROM {} t WHERE {})",
                rep_case.join(" "),
                g.table(split.other()),
                g.in_set("t", split.other(), &set)
            );
            let (l, r) = if split == Side::Left { (split_t + " l", rep_t + " r") } else { (rep_t + " l", split_t + " r") };
            branches.push(g.join(JoinType::Inner, &[], l, r, &format!(" AND l.{SALT} = r.{SALT}")));
        }
        // ... plus the rows of a kept side that match nothing, padded with NULLs.
        let decomposed = set_of(&|s| matches!(s, Strategy::BroadcastSlice { decomposed: true, .. } | Strategy::Salt { decomposed: true, .. }));
        if !decomposed.is_empty() {
            for side in [Side::Left, Side::Right] {
                if how.preserves(side) {
                    let alias = if side == Side::Left { "l" } else { "r" };
                    branches.push(g.padded(side, g.unmatched(side, &decomposed, alias)));
                }
            }
        }
        // 5. NULL keys on a kept side: no join at all.
        for side in [Side::Left, Side::Right] {
            if bypass(side) {
                let alias = if side == Side::Left { "l" } else { "r" };
                let input = format!("(SELECT * FROM {} t WHERE {}) {alias}", g.table(side), g.is_null("t", side));
                branches.push(g.padded(side, input));
            }
        }
    }
    let text = branches.join("\nUNION ALL\n");
    let q = parse_query(&text).map_err(|e| crate::Error::Usage(format!("internal error: the generated SQL does not parse ({e}): {text}")))?;
    Ok(render_query(&q))
}
