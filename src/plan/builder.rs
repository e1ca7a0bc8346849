//! The SQL builder the strategies write their branches with: what the SQL needs to know about
//! the join (`JoinSql`), and `BranchSql`, the text of the pieces every branch is made of (a
//! side's rows filtered by key, key sets, the join with its hint, NULL padding). Written as text
//! from escaped identifiers and literals; `emit` parses the whole. It imports no strategy.

use super::model::{HotKey, JoinType, Side, Strategy};
use crate::sql::{ident, literal};
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
    /// `extra_on` when it reads one side only, written for the unmatched rows' branches.
    pub extra_on_side: Option<ExtraOnSide>,
    pub left_keys: Vec<String>,
    pub right_keys: Vec<String>,
    pub key_types: Vec<KeyType>,
    pub left_columns: Vec<String>,
    pub right_columns: Vec<String>,
    /// Columns Spark's hash() accepts (no maps), for the salt.
    pub left_hashable: Vec<String>,
    pub right_hashable: Vec<String>,
    /// The query's hint that has Spark shuffle this join (`MERGE(t)`), for the branches that
    /// shuffle.
    pub shuffle_hint: Option<String>,
}

/// The name of the salt column added to both sides of a salted branch.
pub const SALT_COLUMN: &str = "__skewjoin_salt";

/// A table name as SQL: `db.table` is a qualified name; each part is quoted.
pub fn table_name(name: &str) -> String {
    name.split('.').map(ident).collect::<Vec<_>>().join(".")
}

impl JoinSql {
    /// The plain `SELECT * FROM left l JOIN right r ON ...` of two tables.
    pub fn tables(
        how: JoinType,
        left: (&str, &[String], &[String]),
        right: (&str, &[String], &[String]),
        key_types: Vec<KeyType>,
    ) -> JoinSql {
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
            extra_on_side: None,
            left_keys: left.1.to_vec(),
            right_keys: right.1.to_vec(),
            key_types,
            left_columns: left.2.to_vec(),
            right_columns: right.2.to_vec(),
            left_hashable: left.2.to_vec(),
            right_hashable: right.2.to_vec(),
            shuffle_hint: None,
        }
    }
}

/// The ON predicates beyond the keys, all on `side`'s columns, with those columns qualified by
/// `U` and by `T` (the names the unmatched rows' branches give that side's rows).
#[derive(Clone, Debug)]
pub struct ExtraOnSide {
    pub side: Side,
    pub on_u: String,
    pub on_t: String,
}

// Aliases of the helper subqueries: unlikely to clash with a user's.
/// A side's rows inside a branch's subquery (`SELECT * FROM table __sj_t WHERE ...`).
pub(crate) const ROWS: &str = "__sj_t";
/// A table's rows one level further in (the unmatched rows' branch reads both sides so).
pub(crate) const SOURCE_ROWS: &str = "__sj_u";
/// The other side's distinct keys, which the unmatched rows are anti-joined with.
pub(crate) const DISTINCT_KEYS: &str = "__sj_d";
/// Every alias of a helper subquery, reused at each level of nesting (verify's Polars renderer
/// makes them unique).
pub const HELPER_ALIASES: [&str; 3] = [ROWS, SOURCE_ROWS, DISTINCT_KEYS];

/// The SQL text of the pieces every branch is made of.
pub(crate) struct BranchSql<'a> {
    pub js: &'a JoinSql,
}

impl<'a> BranchSql<'a> {
    /// The keys of the hot keys whose strategy `f` selects.
    pub fn set_of<'h>(
        &self,
        hot: &[&'h HotKey],
        f: impl Fn(&Strategy) -> bool,
    ) -> Vec<&'h [Value]> {
        hot.iter().filter(|h| f(&h.strategy)).map(|h| h.key.as_slice()).collect()
    }
    pub fn keys(&self, side: Side) -> &[String] {
        match side {
            Side::Left => &self.js.left_keys,
            Side::Right => &self.js.right_keys,
        }
    }
    pub fn table(&self, side: Side) -> String {
        match side {
            Side::Left => self.js.left_source.clone(),
            Side::Right => self.js.right_source.clone(),
        }
    }
    pub fn alias(&self, side: Side) -> &str {
        match side {
            Side::Left => &self.js.left_alias,
            Side::Right => &self.js.right_alias,
        }
    }
    pub fn eq(&self, alias: &str, side: Side, key: &[Value]) -> String {
        let parts: Vec<String> = self
            .keys(side)
            .iter()
            .zip(key)
            .zip(&self.js.key_types)
            .map(|((c, v), t)| equals(&format!("{alias}.{}", ident(c)), v, *t))
            .collect();
        if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("({})", parts.join(" AND "))
        }
    }
    /// The row's key is one of `set` (never true for a NULL key).
    pub fn in_set(&self, alias: &str, side: Side, set: &[&[Value]]) -> String {
        if self.keys(side).len() == 1 {
            let c = format!("{alias}.{}", ident(&self.keys(side)[0]));
            let lits: Vec<String> = set
                .iter()
                .filter(|k| !k[0].is_nan())
                .map(|k| literal(&k[0], self.js.key_types[0]))
                .collect();
            let in_list = (!lits.is_empty()).then(|| format!("{c} IN ({})", lits.join(", ")));
            let nan = set.iter().any(|k| k[0].is_nan()).then(|| format!("isnan({c})"));
            match (in_list, nan) {
                (Some(i), Some(n)) => format!("({i} OR {n})"),
                (Some(x), None) | (None, Some(x)) => x,
                (None, None) => "FALSE".into(),
            }
        } else {
            format!(
                "({})",
                set.iter().map(|k| self.eq(alias, side, k)).collect::<Vec<_>>().join(" OR ")
            )
        }
    }
    pub fn is_null(&self, alias: &str, side: Side) -> String {
        let p: Vec<String> =
            self.keys(side).iter().map(|c| format!("{alias}.{} IS NULL", ident(c))).collect();
        if p.len() == 1 {
            p[0].clone()
        } else {
            format!("({})", p.join(" OR "))
        }
    }
    pub fn not_null(&self, alias: &str, side: Side) -> String {
        self.keys(side)
            .iter()
            .map(|c| format!("{alias}.{} IS NOT NULL", ident(c)))
            .collect::<Vec<_>>()
            .join(" AND ")
    }
    pub fn on(&self) -> String {
        let (l, r) = (&self.js.left_alias, &self.js.right_alias);
        self.js
            .left_keys
            .iter()
            .zip(&self.js.right_keys)
            .map(|(a, b)| format!("{l}.{} = {r}.{}", ident(a), ident(b)))
            .collect::<Vec<_>>()
            .join(" AND ")
    }
    /// `(SELECT * FROM source __sj_t WHERE pred) alias`, or `source alias` without a predicate.
    pub fn filtered(&self, side: Side, pred: Option<String>) -> String {
        match pred {
            None => format!("{} {}", self.table(side), self.alias(side)),
            Some(p) => format!(
                "(SELECT * FROM {} {ROWS} WHERE {p}) {}",
                self.table(side),
                self.alias(side)
            ),
        }
    }
    pub fn hint(aliases: &[&str]) -> String {
        if aliases.is_empty() {
            String::new()
        } else {
            format!("/*+ BROADCAST({}) */ ", aliases.join(", "))
        }
    }
    /// A join of two inputs with the join's output columns (and its extra ON predicates).
    pub fn join(
        &self,
        how: JoinType,
        hint: &[Side],
        l: String,
        r: String,
        extra_on: &str,
    ) -> String {
        let hint: Vec<&str> = hint.iter().map(|s| self.alias(*s)).collect();
        let hint = match (&self.js.shuffle_hint, hint.is_empty()) {
            (Some(shuffle), true) => format!("/*+ {shuffle} */ "),
            _ => Self::hint(&hint),
        };
        let extra = self.js.extra_on.as_ref().map(|e| format!(" AND ({e})")).unwrap_or_default();
        format!(
            "SELECT {hint}{} FROM {l} {} {r} ON {}{extra}{extra_on}",
            self.js.select_list,
            how.sql(),
            self.on()
        )
    }
    /// A padding join: no extra predicates (one side is empty).
    pub fn pad_join(&self, how: JoinType, hint: Side, l: String, r: String) -> String {
        format!(
            "SELECT {}{} FROM {l} {} {r} ON {}",
            Self::hint(&[self.alias(hint)]),
            self.js.select_list,
            how.sql(),
            self.on()
        )
    }
    /// Rows of `side` (already chosen by `input`) padded with NULLs for the other side, with no
    /// shuffle: an outer join against an empty, broadcast other side.
    pub fn padded(&self, side: Side, input: String) -> String {
        let empty = |s: Side| {
            format!("(SELECT * FROM {} {ROWS} WHERE FALSE) {}", self.table(s), self.alias(s))
        };
        if !self.js.how.outputs_right() {
            // Semi and anti joins output the left columns only.
            return format!("SELECT {} FROM {input}", self.js.select_list);
        }
        match side {
            Side::Left => self.pad_join(JoinType::Left, Side::Right, input, empty(Side::Right)),
            Side::Right => self.pad_join(JoinType::Right, Side::Left, empty(Side::Left), input),
        }
    }
}

/// `col = v`, or `isnan(col)` for a NaN: Spark pushes `col = NaN` down to Parquet, and the
/// statistics some writers (pyarrow) keep leave NaN out, so the row groups that hold it are
/// skipped and its rows lost.
pub fn equals(col: &str, v: &Value, t: crate::value::KeyType) -> String {
    if v.is_nan() {
        format!("isnan({col})")
    } else {
        format!("{col} = {}", literal(v, t))
    }
}
