//! Spark's size estimate for a join input as the query reads it, which decides whether Spark
//! broadcasts the input by itself (at most `spark.sql.autoBroadcastJoinThreshold`).
//!
//! Without table statistics, Spark's estimate for a file scan is the files' bytes; each
//! projection above it scales that by the size of a row it outputs over the size of a row it
//! reads, a row's size being 8 bytes plus each column type's default size (`defaultSize`: 4
//! for int, 8 for bigint or double, 20 for string, 100 for binary...), and a filter keeps it.
//! Column pruning puts a projection of the columns the query needs right above the scan, so
//! the ratios chain into: files' bytes x (8 + the needed columns' sizes) / (8 + every column's
//! size). A table whose files are over the threshold can thus be broadcast when the query reads
//! few of its columns.

use std::ops::ControlFlow;

use arrow_schema::DataType;
use sqlparser::ast::{
    visit_expressions, Expr, Select, SelectItem, SelectItemQualifiedWildcardKind,
};

use super::input::Input;
use super::names::lc;
use crate::table::Table;
use crate::value::KeyType;

/// The columns a SELECT reads: every column reference (qualified or bare) in it, its ORDER BY
/// included, and its `*` items.
#[derive(Default, Clone)]
pub(super) struct Used {
    /// A bare `*`: every column of every input.
    all: bool,
    /// `alias.*` (lower case).
    stars: Vec<String>,
    /// (qualifier, column), lower case.
    refs: Vec<(Option<String>, String)>,
}

impl Used {
    /// The columns `sel` reads, and `order_by`'s.
    pub fn of(sel: &Select, order_by: &[Expr]) -> Used {
        let mut u = Used::default();
        for item in &sel.projection {
            match item {
                SelectItem::Wildcard(_) => u.all = true,
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => match super::names::last_ident(n) {
                    Some(i) => u.stars.push(lc(&i.value)),
                    None => u.all = true,
                },
                SelectItem::QualifiedWildcard(..) => u.all = true,
                _ => {}
            }
        }
        let mut collect = |e: &Expr| {
            push_ref(e, &mut u.refs);
            ControlFlow::<()>::Continue(())
        };
        let _ = visit_expressions(sel, &mut collect);
        for e in order_by {
            let _ = visit_expressions(e, &mut collect);
        }
        u
    }

    /// What the SELECT reads above its joins once `conds` are taken out: conjuncts of its WHERE
    /// that Spark applies below a join. A column only they read is dropped after the filter, so
    /// it is not in the join's shuffle.
    pub fn without(&self, conds: &[&Expr]) -> Used {
        let mut u = self.clone();
        for c in conds {
            let mut gone = Vec::new();
            let _ = visit_expressions(*c, &mut |e: &Expr| {
                push_ref(e, &mut gone);
                ControlFlow::<()>::Continue(())
            });
            for r in gone {
                if let Some(i) = u.refs.iter().position(|x| *x == r) {
                    u.refs.remove(i);
                }
            }
        }
        u
    }

    /// The columns of `inp` the SELECT reads (its own names), or every one under a `*`.
    fn of_input(&self, inp: &Input) -> Vec<String> {
        if self.all || self.stars.contains(&lc(&inp.alias)) {
            return inp.columns.clone();
        }
        inp.columns
            .iter()
            .filter(|c| {
                self.refs.iter().any(|(q, name)| {
                    *name == lc(c)
                        && q.as_deref().is_none_or(|q| {
                            q == lc(&inp.alias) || inp.quals.iter().any(|(a, _)| lc(a) == q)
                        })
                })
            })
            .cloned()
            .collect()
    }
}

/// A column reference `e` is, as (qualifier, column) in lower case.
fn push_ref(e: &Expr, refs: &mut Vec<(Option<String>, String)>) {
    match e {
        Expr::Identifier(i) => refs.push((None, lc(&i.value))),
        Expr::CompoundIdentifier(p) if p.len() >= 2 => {
            refs.push((Some(lc(&p[p.len() - 2].value)), lc(&p[p.len() - 1].value)))
        }
        _ => {}
    }
}

/// Spark's estimate of `inp`'s bytes as the query reads it; None where it is not a scan of one
/// table's files under projections and filters (a grouping input, a computed column, a table
/// the Spark engine reads).
pub(super) fn spark_bytes(inp: &Input, used: &Used, table: &Table) -> Option<u64> {
    if inp.grouped.is_some() || table.is_held() || inp.joined.is_some() {
        return None;
    }
    let mut needed = 8u64;
    for c in used.of_input(inp) {
        let (_, base) = inp.base.get(&lc(&c))?;
        needed += column_size(table, base)?;
    }
    let all = 8 + all_columns_size(table)?;
    let bytes = files_bytes(table)?;
    Some(((bytes as u128 * needed as u128) / all as u128).max(1) as u64)
}

/// The base table's columns the query reads from `inp` (what Spark shuffles of it); None where
/// `inp` is not a scan of one table (the joins before it, a grouping input).
pub(super) fn used_base_columns(inp: &Input, used: &Used) -> Option<Vec<String>> {
    if inp.grouped.is_some() || inp.joined.is_some() {
        return None;
    }
    used.of_input(inp).iter().map(|c| inp.base.get(&lc(c)).map(|(_, base)| base.clone())).collect()
}

/// The bytes of the table's files, as Spark's file index sums them.
fn files_bytes(table: &Table) -> Option<u64> {
    let mut total = 0u64;
    for f in &table.files {
        total += match &f.location {
            crate::table::blob::Location::Local(p) => std::fs::metadata(p).ok()?.len(),
            crate::table::blob::Location::Remote(o) => o.size,
        };
    }
    Some(total)
}

/// The default size Spark gives one column of `table`.
fn column_size(table: &Table, name: &str) -> Option<u64> {
    if let Some(p) = table.partitions.iter().find(|p| p.name.eq_ignore_ascii_case(name)) {
        return Some(key_type_size(p.key_type));
    }
    let schema = table.schema();
    let f = schema.fields().iter().find(|f| f.name().eq_ignore_ascii_case(name))?;
    Some(default_size(f.data_type()))
}

fn all_columns_size(table: &Table) -> Option<u64> {
    let data: u64 = table.schema().fields().iter().map(|f| default_size(f.data_type())).sum();
    Some(data + table.partitions.iter().map(|p| key_type_size(p.key_type)).sum::<u64>())
}

fn key_type_size(t: KeyType) -> u64 {
    match t {
        KeyType::Void | KeyType::Boolean | KeyType::TinyInt => 1,
        KeyType::SmallInt => 2,
        KeyType::Int | KeyType::Float | KeyType::Date => 4,
        KeyType::BigInt | KeyType::Double | KeyType::Timestamp { .. } => 8,
        KeyType::String => 20,
        KeyType::Binary => 100,
        KeyType::Decimal { precision, .. } => decimal_size(precision),
    }
}

fn decimal_size(precision: u8) -> u64 {
    if precision <= 18 {
        8
    } else {
        16
    }
}

/// Spark's `DataType.defaultSize` for the type Spark reads an Arrow type as.
fn default_size(dt: &DataType) -> u64 {
    use DataType::*;
    match dt {
        Null | Boolean | Int8 | UInt8 => 1,
        Int16 | UInt16 => 2,
        Int32 | UInt32 | Float16 | Float32 | Date32 => 4,
        Int64 | UInt64 | Float64 | Date64 | Timestamp(..) | Time32(_) | Time64(_) | Duration(_) => {
            8
        }
        Utf8 | LargeUtf8 | Utf8View => 20,
        Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => 100,
        Decimal32(p, _) | Decimal64(p, _) | Decimal128(p, _) | Decimal256(p, _) => decimal_size(*p),
        List(f) | LargeList(f) | FixedSizeList(f, _) | ListView(f) | LargeListView(f) => {
            default_size(f.data_type())
        }
        Struct(fs) => fs.iter().map(|f| default_size(f.data_type())).sum(),
        Map(f, _) => default_size(f.data_type()),
        Dictionary(_, v) => default_size(v),
        _ => 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::Field;
    use std::sync::Arc;

    fn select(sql: &str) -> Select {
        let q = crate::sql::parse_query(sql).unwrap();
        match *q.body {
            sqlparser::ast::SetExpr::Select(s) => *s,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_column_only_a_condition_below_the_join_reads_is_not_shuffled() {
        let sel = select(
            "SELECT t.genre, sum(e.hours) FROM events e JOIN titles t ON e.k = t.k \
             WHERE e.day >= 1 AND e.hours > 0 GROUP BY t.genre",
        );
        let used = Used::of(&sel, &[]);
        let mut conds = Vec::new();
        super::super::condition::conjuncts(sel.selection.as_ref().unwrap(), &mut conds);
        let e = |c: &[&str]| {
            c.iter().map(|n| (Some("e".to_string()), n.to_string())).collect::<Vec<_>>()
        };
        let read = |u: &Used| {
            let mut v: Vec<_> =
                u.refs.iter().filter(|r| r.0.as_deref() == Some("e")).cloned().collect();
            v.sort();
            v
        };
        let all = read(&used);
        assert_eq!(all, e(&["day", "hours", "hours", "k"]));
        // Both conditions applied below the join: `day` goes, `hours` stays (the SELECT sums it).
        let below: Vec<&Expr> = conds.iter().collect();
        assert_eq!(read(&used.without(&below)), e(&["hours", "k"]));
        // None applied there (a later outer join, say): both stay.
        assert_eq!(read(&used.without(&[])), all);
    }

    #[test]
    fn default_sizes_are_sparks() {
        assert_eq!(default_size(&DataType::Int32), 4);
        assert_eq!(default_size(&DataType::Utf8), 20);
        assert_eq!(default_size(&DataType::Decimal128(7, 2)), 8);
        assert_eq!(default_size(&DataType::Decimal128(38, 2)), 16);
        // A map's entries are a struct of key and value: Spark's map size is their sum.
        let entries = Field::new(
            "entries",
            DataType::Struct(
                vec![
                    Field::new("k", DataType::Utf8, false),
                    Field::new("v", DataType::Int64, true),
                ]
                .into(),
            ),
            false,
        );
        assert_eq!(default_size(&DataType::Map(Arc::new(entries), false)), 28);
        assert_eq!(
            default_size(&DataType::List(Arc::new(Field::new("e", DataType::Float64, true)))),
            8
        );
    }
}
