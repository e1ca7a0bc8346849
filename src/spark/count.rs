//! The counts of a table the Spark engine reads, as the embedded engine returns them: a key's
//! profile (rows, NULL rows, distinct values, the most frequent values), the rows per shuffle
//! partition and of each candidate (Spark's `pmod(hash(key), N)`, so Spark's own partitions),
//! and a filtered input as a view of the rows that meet the query's conditions.

use std::sync::Arc;

use serde_json::{json, Value as Json};

use super::{sampled, wire, Session};
use sqlparser::ast::Expr;

use crate::count::engine::WeightedSum;
use crate::count::filter::{Filtered, RowFilter};
use crate::count::weights::Sums;
use crate::count::{
    share, ColumnProfile, Engine, KeyCount, KeySpec, PartitionScan, ProfileOptions, Sample,
};
use crate::error::{Error, Result};
use crate::table::{Held, Table};
use crate::value::{KeyType, Value};

/// The counting engine of `--engine spark`: the tables its session holds (`table::open`).
pub struct SparkEngine {
    session: Arc<Session>,
}

impl SparkEngine {
    pub fn new(session: Arc<Session>) -> SparkEngine {
        SparkEngine { session }
    }

    /// The view of a table the session holds.
    fn held<'a>(&self, table: &'a Table) -> Result<&'a Held> {
        table.held.as_ref().ok_or_else(|| {
            Error::Usage(format!(
                "{}: the Spark engine counts tables its session opened; this one is read here",
                table.display
            ))
        })
    }
}

impl Engine for SparkEngine {
    fn name(&self) -> &'static str {
        "spark"
    }

    /// Every key of `specs`, counted by Spark: exactly, or over a sample it draws (`sample`).
    fn profile(
        &self,
        table: &Table,
        specs: &[KeySpec],
        opts: &ProfileOptions,
    ) -> Result<Vec<ColumnProfile>> {
        let held = self.held(table)?;
        specs.iter().map(|spec| profile_one(&self.session, table, held, spec, opts)).collect()
    }

    fn scan(
        &self,
        table: &Table,
        spec: &KeySpec,
        partitions: u32,
        keys: &[Vec<Value>],
    ) -> Result<PartitionScan> {
        scan(&self.session, table, self.held(table)?, spec, partitions, keys)
    }

    /// Spark's own map tasks: the partitions of its scan of the table, each task's rows
    /// counted where Spark reads them (`spark_partition_id()`).
    fn scan_by_map_tasks(
        &self,
        table: &Table,
        spec: &KeySpec,
        partitions: u32,
        keys: &[Vec<Value>],
    ) -> Result<Option<(PartitionScan, Vec<PartitionScan>)>> {
        scan_by_map(&self.session, table, self.held(table)?, spec, partitions, keys).map(Some)
    }

    fn filtered_keys(
        &self,
        table: &Table,
        keys: &KeySpec,
        filter: &RowFilter,
        group_by: Option<&KeySpec>,
    ) -> Result<Filtered> {
        filtered(&self.session, table, self.held(table)?, keys, filter, group_by)
    }

    /// Spark evaluates the condition itself: it need only name the table's columns.
    fn can_filter(&self, cond: &Expr, table: &Table) -> std::result::Result<(), String> {
        let f = RowFilter { conditions: vec![cond.clone()] };
        f.columns().iter().try_for_each(|c| table.resolve(c).map(|_| ()).map_err(|e| e.to_string()))
    }

    fn weighted_sums(&self, table: &Table, _: &WeightedSum) -> Result<(Sums, u64)> {
        Err(Error::Usage(format!(
            "{}: the rows of the joins before are counted by the embedded engine only",
            table.display
        )))
    }
}

fn profile_one(
    session: &Session,
    table: &Table,
    st: &Held,
    spec: &KeySpec,
    opts: &ProfileOptions,
) -> Result<ColumnProfile> {
    let sample = opts.sample.map(|s| match s {
        Sample::Fraction(f) => json!({"fraction": f}),
        Sample::Rows(n) => json!({"rows": n}),
    });
    let req = json!({"op": "profile", "view": st.name, "keys": spec.names(), "top": opts.top,
                     "sample": sample, "seed": opts.seed});
    let a = session.request(&req, &format!("counting {} in {}", spec.name(), table.display))?;
    let rows = a["rows"].as_u64().unwrap_or(0);
    let types = spec.types();
    let mut counted = Vec::new();
    for t in a["top"].as_array().into_iter().flatten() {
        let count = t["rows"].as_u64().unwrap_or(0);
        counted.push(KeyCount {
            key: key(&t["key"], &types)?,
            count,
            sample_count: None,
            share: share(count, rows),
            share_error: None,
        });
    }
    let exact = ColumnProfile {
        spec: spec.clone(),
        rows,
        rows_read: rows,
        nulls: a["null_rows"].as_u64().unwrap_or(0),
        distinct: a["distinct"].as_u64().unwrap_or(0),
        distinct_exact: true,
        distinct_estimate: false,
        counts_exact: true,
        count_error: 0,
        top: counted,
        sample: None,
    };
    match a.get("sample").filter(|s| !s.is_null()) {
        Some(drawn) => Ok(sampled::profile(exact, drawn)),
        None => Ok(exact),
    }
}

/// The rows of every shuffle partition and of each of `keys`, as Spark partitions them.
fn scan(
    session: &Session,
    table: &Table,
    st: &Held,
    spec: &KeySpec,
    partitions: u32,
    keys: &[Vec<Value>],
) -> Result<PartitionScan> {
    let candidates: Vec<Vec<Json>> =
        keys.iter().map(|k| k.iter().map(wire::candidate).collect()).collect();
    let req = json!({"op": "scan", "view": st.name, "keys": spec.names(), "partitions": partitions, "candidates": candidates});
    let a = session.request(&req, &format!("partitioning {} in {}", spec.name(), table.display))?;
    let list = |name: &str, len: usize| -> Result<Vec<u64>> {
        let v: Vec<u64> = a[name]
            .as_array()
            .map(|x| x.iter().map(|n| n.as_u64().unwrap_or(0)).collect())
            .unwrap_or_default();
        if v.len() == len {
            Ok(v)
        } else {
            Err(Error::Internal(format!("Spark engine: {name} has {} entries, not {len}", v.len())))
        }
    };
    let n = partitions.max(1) as usize;
    let (partition_rows, null_partition_rows, key_rows) = (
        list("partition_rows", n)?,
        list("null_partition_rows", n)?,
        list("key_rows", keys.len())?,
    );
    let null_rows: u64 = null_partition_rows.iter().sum();
    let rows = null_rows + partition_rows.iter().sum::<u64>();
    Ok(PartitionScan { rows, null_rows, null_partition_rows, partition_rows, key_rows })
}

/// The rows of every shuffle partition and of each of `keys`, in all and per map task of
/// Spark's scan of the table (as many as its partitions: an empty one is a task too).
fn scan_by_map(
    session: &Session,
    table: &Table,
    st: &Held,
    spec: &KeySpec,
    partitions: u32,
    keys: &[Vec<Value>],
) -> Result<(PartitionScan, Vec<PartitionScan>)> {
    let candidates: Vec<Vec<Json>> =
        keys.iter().map(|k| k.iter().map(wire::candidate).collect()).collect();
    let req = json!({"op": "scan_by_map", "view": st.name, "keys": spec.names(), "partitions": partitions, "candidates": candidates});
    let what = format!("partitioning {} in {} by map task", spec.name(), table.display);
    let a = session.request(&req, &what)?;
    let n = partitions.max(1) as usize;
    let maps = a["maps"].as_u64().unwrap_or(0) as usize;
    let empty = || PartitionScan {
        rows: 0,
        null_rows: 0,
        null_partition_rows: vec![0; n],
        partition_rows: vec![0; n],
        key_rows: vec![0; keys.len()],
    };
    let mut per_map: Vec<PartitionScan> = (0..maps).map(|_| empty()).collect();
    let bad = || Error::Internal(format!("Spark engine: {what}: an entry out of range"));
    let triples = |name: &str| -> Vec<Vec<u64>> {
        a[name]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t.as_array().into_iter().flatten().map(|x| x.as_u64().unwrap_or(0)).collect())
            .collect()
    };
    // [map, partition, 1 when the key is NULL, rows]
    for t in triples("rows") {
        let (m, p, null, c) = (t[0] as usize, t[1] as usize, t[2] == 1, t[3]);
        let s = per_map.get_mut(m).filter(|_| p < n).ok_or_else(bad)?;
        s.rows += c;
        if null {
            s.null_rows += c;
            s.null_partition_rows[p] += c;
        } else {
            s.partition_rows[p] += c;
        }
    }
    // [map, candidate, rows]
    for t in triples("key_rows") {
        let (m, i, c) = (t[0] as usize, t[1] as usize, t[2]);
        *per_map.get_mut(m).and_then(|s| s.key_rows.get_mut(i)).ok_or_else(bad)? += c;
    }
    let mut total = empty();
    for s in &per_map {
        total.rows += s.rows;
        total.null_rows += s.null_rows;
        for p in 0..n {
            total.partition_rows[p] += s.partition_rows[p];
            total.null_partition_rows[p] += s.null_partition_rows[p];
        }
        for (i, c) in s.key_rows.iter().enumerate() {
            total.key_rows[i] += c;
        }
    }
    Ok((total, per_map))
}

/// The key columns of the rows that meet `filter` (one row per group with `group_by`), as a
/// new view: (that table, its keys, rows of the table, rows or groups kept). Spark evaluates
/// the conditions, so every condition the query has on the table applies.
fn filtered(
    session: &Session,
    table: &Table,
    st: &Held,
    keys: &KeySpec,
    filter: &RowFilter,
    group_by: Option<&KeySpec>,
) -> Result<Filtered> {
    let req = json!({
        "op": "filter",
        "of": st.name,
        "where": spark_where(filter, &st.schema),
        "keys": keys.names(),
        "group_by": group_by.map(|g| g.names()),
    });
    let a = session.request(&req, &format!("filtering {}", table.display))?;
    let view = a["view"]
        .as_str()
        .ok_or_else(|| Error::Internal("Spark engine: no view".into()))?
        .to_string();
    let rows_out = a["rows"].as_u64().unwrap_or(0);
    let fields: Vec<arrow_schema::Field> = keys
        .columns
        .iter()
        .map(|c| st.schema.field_with_name(&c.name).cloned())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::Internal(e.to_string()))?;
    let sub = Held {
        name: view,
        schema: Arc::new(arrow_schema::Schema::new(fields)),
        rows: rows_out,
        disk_bytes: 0,
        memory_bytes: 0,
        files_here: Vec::new(),
    };
    let t = Table::held(&table.display, sub, &table.stats);
    let columns = keys.names().iter().map(|k| t.resolve(k)).collect::<Result<Vec<_>>>()?;
    Ok(Filtered::held(t, KeySpec { columns }, st.rows, rows_out))
}

/// The conditions as Spark SQL: each in parentheses (an OR among them keeps its meaning under
/// the AND that joins them), the table's columns in backquotes (a name with a space or a dash
/// stays one name).
fn spark_where(filter: &RowFilter, schema: &arrow_schema::Schema) -> String {
    use sqlparser::ast::{visit_expressions_mut, Expr};
    let is_column = |n: &str| schema.fields().iter().any(|f| f.name().eq_ignore_ascii_case(n));
    let quoted = |c: &Expr| {
        let mut c = c.clone();
        let _ = visit_expressions_mut(&mut c, |e: &mut Expr| {
            if let Expr::Identifier(i) = e {
                if i.quote_style.is_none() && is_column(&i.value) {
                    i.quote_style = Some('`');
                }
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        format!("({})", crate::sql::render_expr(&c))
    };
    filter.conditions.iter().map(quoted).collect::<Vec<_>>().join(" AND ")
}

fn key(j: &Json, types: &[KeyType]) -> Result<Vec<Value>> {
    let parts =
        j.as_array().ok_or_else(|| Error::Internal("Spark engine: a key is not a list".into()))?;
    parts
        .iter()
        .zip(types)
        .map(|(p, t)| {
            wire::value(p, *t).ok_or_else(|| {
                Error::Internal(format!("Spark engine: cannot read {p} as {}", t.spark_name()))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_meaning_in_spark_sql() {
        let schema = arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("s", arrow_schema::DataType::Utf8, true),
            arrow_schema::Field::new("event type", arrow_schema::DataType::Utf8, true),
            arrow_schema::Field::new("amt", arrow_schema::DataType::Int64, true),
        ]);
        let parse = |s: &str| crate::sql::parse(&format!("SELECT 1 WHERE {s}")).unwrap();
        let cond = |s: &str| match &parse(s)[0] {
            sqlparser::ast::Statement::Query(q) => match q.body.as_ref() {
                sqlparser::ast::SetExpr::Select(sel) => sel.selection.clone().unwrap(),
                _ => unreachable!(),
            },
            _ => unreachable!(),
        };
        let f = RowFilter {
            conditions: vec![
                cond("s = 'A' OR s = 'B'"),
                cond("amt > 100"),
                cond("`event type` = 'x'"),
            ],
        };
        assert_eq!(
            spark_where(&f, &schema),
            "(`s` = 'A' OR `s` = 'B') AND (`amt` > 100) AND (`event type` = 'x')"
        );
    }
}
