//! One input of a join, traced to its base table: a table given with `--table` (directly or
//! by alias), a CTE, or a subquery in FROM that selects columns of one table, or groups its rows
//! by some of them (`GROUP BY` columns, `SELECT DISTINCT`): such an input has one row per group,
//! and its counts are of its groups.

use std::collections::HashMap;

use sqlparser::ast::{Expr, Query, Select, SelectItem, SetExpr, TableFactor};

use super::names::{last_ident, lc};
use super::reason::{LeftAlone, Untraced};
use super::Ctx;
use crate::table::{ResolvedColumn, Table};

/// Output column (lower case) -> its base table (`--table` name) and column there.
pub(super) type BaseColumns = HashMap<String, (String, String)>;

/// One input of a join, traced to a base table where possible.
#[derive(Clone)]
pub(super) struct Input {
    /// The name the input goes by (its alias, or the table name).
    pub alias: String,
    /// SQL that can follow FROM, without the alias.
    pub source: String,
    /// Output columns, in order.
    pub columns: Vec<String>,
    /// Where each output column comes from.
    pub base: BaseColumns,
    /// A WHERE in between that the counts do not apply (see `conditions`).
    pub filtered: bool,
    /// The conditions of a WHERE in between, on the base table's columns (named bare): the
    /// counts apply them.
    pub conditions: Vec<Expr>,
    /// For the joins before a chained join, made one input: the aliases they answer to, each
    /// with its columns (lower case) -> the column of this input.
    pub quals: Vec<(String, HashMap<String, String>)>,
    /// Bare names that mean one column though several inputs have it (USING keys, merged).
    pub bare: HashMap<String, String>,
    /// Those joins as written.
    pub joined: Option<String>,
    /// The base table's columns this input groups its rows by (`GROUP BY` columns, or every
    /// column of a `SELECT DISTINCT`): it has one row per group of them.
    pub grouped: Option<Vec<String>>,
    /// A HAVING drops some of those groups, which the counts keep.
    pub having: bool,
    /// For the joins before a chained join: pairs of its columns equal (or both NULL) on
    /// every row, by the key equalities of the inner joins among them.
    pub equal: Vec<(String, String)>,
}

impl Input {
    /// An input with these columns and where each comes from; its name and SQL are set later.
    pub(super) fn of_columns(columns: Vec<String>, base: BaseColumns, filtered: bool) -> Input {
        Input {
            alias: String::new(),
            source: String::new(),
            columns,
            base,
            filtered,
            conditions: vec![],
            quals: vec![],
            bare: HashMap::new(),
            joined: None,
            grouped: None,
            having: false,
            equal: vec![],
        }
    }

    pub fn column(&self, name: &str) -> Option<String> {
        self.columns.iter().find(|c| c.eq_ignore_ascii_case(name)).cloned()
    }

    /// `qual.col` or a bare `col`, as a column of this input.
    pub fn resolve(&self, qual: Option<&str>, col: &str) -> Option<String> {
        if self.quals.is_empty() {
            return match qual {
                Some(q) if !q.eq_ignore_ascii_case(&self.alias) => None,
                _ => self.column(col),
            };
        }
        match qual {
            Some(q) => self
                .quals
                .iter()
                .find(|(a, _)| a.eq_ignore_ascii_case(q))
                .and_then(|(_, m)| m.get(&lc(col)).cloned()),
            None if self.bare.contains_key(&lc(col)) => self.bare.get(&lc(col)).cloned(),
            None => {
                let hits: Vec<&String> =
                    self.quals.iter().filter_map(|(_, m)| m.get(&lc(col))).collect();
                if hits.len() == 1 {
                    Some(hits[0].clone())
                } else {
                    None
                }
            }
        }
    }

    /// The member (of the joins before, made one input) whose column `col` is: 0 for a
    /// single input.
    pub fn member_of(&self, col: &str) -> Option<usize> {
        if self.quals.is_empty() {
            return self.column(col).map(|_| 0);
        }
        self.quals.iter().position(|(_, m)| m.values().any(|w| w.eq_ignore_ascii_case(col)))
    }

    /// The columns equal to `col` on every row (by `equal`, transitively), `col` first.
    pub fn equal_to(&self, col: &str) -> Vec<String> {
        let mut class = vec![col.to_string()];
        let mut i = 0;
        while i < class.len() {
            for (a, b) in &self.equal {
                for (x, y) in [(a, b), (b, a)] {
                    if x.eq_ignore_ascii_case(&class[i])
                        && !class.iter().any(|c| c.eq_ignore_ascii_case(y))
                    {
                        class.push(y.clone());
                    }
                }
            }
            i += 1;
        }
        class
    }

    /// The name the reports give this input.
    pub fn display(&self) -> String {
        if self.quals.is_empty() {
            self.alias.clone()
        } else {
            self.quals.iter().map(|(a, _)| a.as_str()).collect::<Vec<_>>().join("+")
        }
    }

    /// The base tables of its columns, sorted.
    pub fn base_tables(&self) -> Vec<&str> {
        let tables: std::collections::BTreeSet<&str> =
            self.base.values().map(|(t, _)| t.as_str()).collect();
        tables.into_iter().collect()
    }

    /// The base table of these key columns, and each key's base column.
    pub fn key_base(
        &self,
        keys: &[String],
        tables: &HashMap<String, Table>,
    ) -> Result<(String, Vec<ResolvedColumn>), LeftAlone> {
        let mut table: Option<String> = None;
        let mut cols = Vec::new();
        for k in keys {
            let Some((t, b)) = self.base.get(&lc(k)) else {
                return Err(LeftAlone::KeyExpression { key: k.clone(), input: self.alias.clone() });
            };
            match &table {
                Some(t0) if t0 != t => {
                    return Err(LeftAlone::KeysFromTwoTables {
                        input: self.alias.clone(),
                        first: t0.clone(),
                        second: t.clone(),
                    })
                }
                _ => table = Some(t.clone()),
            }
            cols.push(tables[t].resolve(b).map_err(|e| LeftAlone::KeyColumn(e.to_string()))?);
        }
        Ok((table.unwrap_or_default(), cols))
    }
}

/// Trace a FROM item to its base table.
pub(super) fn input_of(f: &TableFactor, ctx: &Ctx, depth: usize) -> Result<Input, Untraced> {
    if depth > 8 {
        return Err(Untraced::TooDeep);
    }
    match f {
        TableFactor::Table { alias: Some(a), .. } if !a.columns.is_empty() => {
            Err(Untraced::AliasWithColumns)
        }
        TableFactor::Table { sample: Some(_), .. }
        | TableFactor::Derived { sample: Some(_), .. } => Err(Untraced::Tablesample),
        TableFactor::Table { version: Some(_), .. } => Err(Untraced::Versioned),
        TableFactor::Table { partitions, .. } if !partitions.is_empty() => {
            Err(Untraced::ByPartition)
        }
        TableFactor::Table { name, alias, args: None, .. } => {
            let last = last_ident(name).ok_or(Untraced::UnreadableName)?;
            let alias =
                alias.as_ref().map(|a| a.name.value.clone()).unwrap_or_else(|| last.value.clone());
            if name.0.len() == 1 {
                if let Some(cte) = ctx.ctes.get(&lc(&last.value)) {
                    let mut inner = query_input(cte, ctx, depth + 1).map_err(|why| {
                        Untraced::InCte { name: last.value.clone(), why: Box::new(why) }
                    })?;
                    inner.alias = alias;
                    inner.source = name.to_string();
                    return Ok(inner);
                }
            }
            let key = lc(&name.to_string().replace('`', ""));
            let (tname, table) = ctx
                .tables
                .get_key_value(&key)
                .or_else(|| ctx.tables.get_key_value(&lc(&last.value)))
                .ok_or_else(|| Untraced::NotGiven(name.to_string()))?;
            let columns = table.column_names();
            let base = columns.iter().map(|c| (lc(c), (tname.clone(), c.clone()))).collect();
            Ok(Input { alias, source: name.to_string(), ..Input::of_columns(columns, base, false) })
        }
        TableFactor::Derived { lateral: false, subquery, alias: Some(alias), .. } => {
            if !alias.columns.is_empty() {
                return Err(Untraced::SubqueryColumnAliases);
            }
            let mut inner = query_input(subquery, ctx, depth + 1)?;
            inner.alias = alias.name.value.clone();
            inner.source = format!("({})", crate::sql::render_inline(subquery));
            Ok(inner)
        }
        TableFactor::Derived { alias: None, .. } => Err(Untraced::SubqueryWithoutAlias),
        other => Err(Untraced::NotATable(other.to_string().chars().take(60).collect())),
    }
}

/// The columns of a simple query over one table: `SELECT cols FROM t [WHERE ...]`, or one that
/// groups by columns of the table (`GROUP BY` with aggregates named, `SELECT DISTINCT`).
fn query_input(q: &Query, ctx: &Ctx, depth: usize) -> Result<Input, Untraced> {
    let SetExpr::Select(s) = q.body.as_ref() else { return Err(Untraced::NotPlainSelect) };
    if q.with.is_some()
        || q.limit_clause.is_some()
        || s.from.len() != 1
        || !s.from[0].joins.is_empty()
        || !s.lateral_views.is_empty()
    {
        return Err(Untraced::NotRowsOfOneTable);
    }
    // Joins of the subquery that this rewrite already made a derived table `__sjN`: its rows
    // are those joins', as written.
    if matches!(&s.from[0].relation, TableFactor::Derived { alias: Some(a), .. } if a.name.value.starts_with("__sj"))
    {
        return Err(Untraced::NotRowsOfOneTable);
    }
    let inner = input_of(&s.from[0].relation, ctx, depth)?;
    let (columns, base) = selected_columns(s, &inner)?;
    let mut out = Input::of_columns(columns, base, inner.filtered);
    // HAVING drops groups the counts keep: they are then an upper bound.
    out.having = inner.having || s.having.is_some();
    out.grouped = match grouping(s, &inner, &out)? {
        Some(g) if inner.grouped.is_some() => {
            return Err(Untraced::Aggregates(format!(
                "it groups by {} an input that groups",
                g.join(", ")
            )))
        }
        Some(g) => Some(g),
        None => inner.grouped.clone(),
    };
    out.conditions = inner.conditions.clone();
    // The subquery's WHERE, on its table's columns; a condition that does not trace stays
    // unapplied (`filtered`).
    if let Some(w) = &s.selection {
        let table = inner.base_tables().first().map(|t| t.to_string()).unwrap_or_default();
        let mut cs = Vec::new();
        super::condition::conjuncts(w, &mut cs);
        for c in cs {
            match super::filters::to_base(&c, &inner, &table) {
                Some(b) => out.conditions.push(b),
                None => out.filtered = true,
            }
        }
    }
    Ok(out)
}

/// The base columns `s` groups its input's rows by: its `GROUP BY` columns, or every output
/// column of a `SELECT DISTINCT`; None when it does not group. A grouping it cannot trace to
/// columns of the table is refused.
fn grouping(s: &Select, inner: &Input, out: &Input) -> Result<Option<Vec<String>>, Untraced> {
    use sqlparser::ast::{Distinct, GroupByExpr};
    let exprs = match &s.group_by {
        GroupByExpr::Expressions(e, mods) if mods.is_empty() => e,
        GroupByExpr::Expressions(..) => {
            return Err(Untraced::Aggregates("ROLLUP, CUBE or GROUPING SETS".into()))
        }
        GroupByExpr::All(_) => return Err(Untraced::Aggregates("GROUP BY ALL".into())),
    };
    match (&s.distinct, exprs.is_empty()) {
        (None, true) => Ok(None),
        (Some(Distinct::Distinct), true) => {
            let cols = out.columns.iter().map(|c| {
                out.base.get(&lc(c)).map(|(_, b)| b.clone()).ok_or_else(|| {
                    Untraced::Aggregates(format!("DISTINCT over {c}, not a column of the table"))
                })
            });
            cols.collect::<Result<Vec<_>, _>>().map(Some)
        }
        (None, false) => {
            let base = |e: &Expr| {
                super::filters::column_of(e, inner)
                    .and_then(|c| inner.base.get(&lc(&c)).map(|(_, b)| b.clone()))
            };
            exprs
                .iter()
                .map(|e| {
                    base(e).ok_or_else(|| {
                        Untraced::Aggregates(format!("it groups by {e}, not a column of the table"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        }
        _ => Err(Untraced::Aggregates("DISTINCT ON, or DISTINCT with GROUP BY".into())),
    }
}

/// The select list of `s` over its one input: the output columns, and the base column of
/// each one that is a column of the input (renamed or not).
fn selected_columns(s: &Select, inner: &Input) -> Result<(Vec<String>, BaseColumns), Untraced> {
    let mut columns = Vec::new();
    let mut map = HashMap::new();
    let base = &inner.base;
    for item in &s.projection {
        match item {
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                for c in &inner.columns {
                    columns.push(c.clone());
                    if let Some(b) = base.get(&lc(c)) {
                        map.insert(lc(c), b.clone());
                    }
                }
            }
            SelectItem::UnnamedExpr(e) => {
                let name = match e {
                    Expr::Identifier(i) => i.value.clone(),
                    Expr::CompoundIdentifier(p) => {
                        p.last().map(|i| i.value.clone()).unwrap_or_default()
                    }
                    _ => return Err(Untraced::UnnamedExpression),
                };
                if let Some(b) = base.get(&lc(&name)) {
                    map.insert(lc(&name), b.clone());
                }
                columns.push(name);
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let src = match expr {
                    Expr::Identifier(i) => Some(i.value.clone()),
                    Expr::CompoundIdentifier(p) if p.len() == 2 => {
                        p.last().map(|i| i.value.clone())
                    }
                    _ => None,
                };
                // A renamed column still traces; an expression does not (it cannot be a key).
                if let Some(b) = src.and_then(|n| base.get(&lc(&n)).cloned()) {
                    map.insert(lc(&alias.value), b);
                }
                columns.push(alias.value.clone());
            }
            _ => return Err(Untraced::UnreadableItem),
        }
    }
    Ok((columns, map))
}
