//! An engine over tables held in this process as Arrow record batches: the counts the measure
//! steps ask for (a key's profile, its rows per shuffle partition, the keys of the rows that meet
//! a query's conditions), made group by group on the batch with the rules the other engines
//! follow (Spark's hash for partitions, NULLs grouped as Spark groups them, ties NULL-keyed
//! first). It is for a caller whose tables are already in memory: the rewrite and window tests,
//! which describe a query's tables in a few lines and write no file, and a library caller with
//! a `RecordBatch`.
//!
//! The tables it hands out are `Table::held`, so the measure steps treat them as they treat a
//! table Spark holds: there are no map tasks to count (AQE's splits are assumed even), no row
//! groups, and no sample of shuffle bytes; the sizes are the batch's in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, BooleanArray, RecordBatch};

use sqlparser::ast::Expr;

use super::engine::WeightedSum;
use super::filter::{all_true, check_on, Filtered, RowFilter};
use super::weights::Sums;
use super::{decode_key, each_group_key, encode_values, share, Engine};
use super::{ColumnProfile, KeyCount, KeySpec, PartitionScan, ProfileOptions};
use crate::error::{Error, Result};
use crate::hash::spark_partition;
use crate::stats::RunStats;
use crate::table::{ColumnSource, Held, Table};
use crate::value::{KeyType, Value};

/// The tables held, by the name each was given (and the filtered views made of them).
#[derive(Default)]
pub struct InMemory {
    batches: Mutex<HashMap<String, RecordBatch>>,
}

/// A key's groups: its encoded value (as `group_keys` encodes it) and its rows.
type Groups = HashMap<Vec<u8>, u64>;

impl InMemory {
    pub fn new() -> InMemory {
        InMemory::default()
    }

    /// Hold `batch` as the table `name`: the `Table` to give the measure steps of a run whose
    /// engine is this one.
    pub fn hold(&self, name: &str, batch: RecordBatch, stats: &Arc<RunStats>) -> Table {
        self.hold_as(name, name, batch, stats)
    }

    /// Hold `batch` as `name`, shown in messages as `display`.
    fn hold_as(
        &self,
        name: &str,
        display: &str,
        batch: RecordBatch,
        stats: &Arc<RunStats>,
    ) -> Table {
        let bytes = batch.get_array_memory_size() as u64;
        let held = Held {
            name: name.to_string(),
            schema: batch.schema(),
            rows: batch.num_rows() as u64,
            disk_bytes: bytes,
            memory_bytes: bytes,
            files_here: Vec::new(),
        };
        self.lock().insert(name.to_string(), batch);
        Table::held(display, held, stats)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RecordBatch>> {
        // A panic while the map was held leaves it whole (inserts only): go on with it.
        self.batches.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The batch of a table this engine holds.
    fn batch(&self, table: &Table) -> Result<RecordBatch> {
        let held = table.held.as_ref().ok_or_else(|| {
            Error::Usage(format!(
                "{}: the in-memory engine counts the tables it holds; this one is read from files",
                table.display
            ))
        })?;
        self.lock().get(&held.name).cloned().ok_or_else(|| {
            Error::Usage(format!(
                "{}: the in-memory engine holds no table {}",
                table.display, held.name
            ))
        })
    }
}

/// The key's columns in the batch.
fn key_columns(batch: &RecordBatch, spec: &KeySpec, table: &Table) -> Result<Vec<ArrayRef>> {
    spec.columns
        .iter()
        .map(|c| match c.source {
            ColumnSource::Data { index } if index < batch.num_columns() => {
                Ok(batch.column(index).clone())
            }
            _ => Err(Error::Usage(format!("{}: no column {} in memory", table.display, c.name))),
        })
        .collect()
}

/// Every group of the key and its rows.
fn groups(columns: &[ArrayRef], types: &[KeyType]) -> Result<Groups> {
    let mut out = Groups::new();
    each_group_key(columns, types, |_, k| *out.entry(k.to_vec()).or_default() += 1)
        .map_err(Error::Usage)?;
    Ok(out)
}

fn has_null(key: &[Value]) -> bool {
    key.iter().any(|v| matches!(v, Value::Null))
}

/// One key's profile: exact counts of every group.
fn profile_one(
    batch: &RecordBatch,
    table: &Table,
    spec: &KeySpec,
    top: usize,
) -> Result<ColumnProfile> {
    let types = spec.types();
    let groups = groups(&key_columns(batch, spec, table)?, &types)?;
    let rows = batch.num_rows() as u64;
    let mut keys: Vec<(Vec<Value>, u64, Vec<u8>)> =
        groups.into_iter().map(|(k, n)| (decode_key(&k, &types), n, k)).collect();
    let nulls = keys.iter().filter(|k| has_null(&k.0)).map(|k| k.1).sum();
    // Distinct values as the other engines count them: a column's values but NULL; a composite
    // key's every combination.
    let distinct =
        if types.len() == 1 { keys.iter().filter(|k| !has_null(&k.0)).count() } else { keys.len() }
            as u64;
    // Most rows first; ties NULL-keyed first, then in the encoded values' order (fixed).
    keys.sort_by(|a, b| {
        b.1.cmp(&a.1).then(has_null(&b.0).cmp(&has_null(&a.0))).then(a.2.cmp(&b.2))
    });
    if top > 0 {
        keys.truncate(top);
    }
    let top = keys
        .into_iter()
        .map(|(key, count, _)| KeyCount {
            key,
            count,
            sample_count: None,
            share: share(count, rows),
            share_error: None,
        })
        .collect();
    Ok(ColumnProfile {
        spec: spec.clone(),
        rows,
        rows_read: rows,
        nulls,
        distinct,
        distinct_exact: true,
        distinct_estimate: false,
        counts_exact: true,
        count_error: 0,
        top,
        sample: None,
    })
}

impl Engine for InMemory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn profile(
        &self,
        table: &Table,
        specs: &[KeySpec],
        opts: &ProfileOptions,
    ) -> Result<Vec<ColumnProfile>> {
        if opts.sample.is_some() {
            return Err(Error::Usage(
                "--sample is for the embedded engine: the in-memory engine counts every row".into(),
            ));
        }
        let batch = self.batch(table)?;
        specs.iter().map(|s| profile_one(&batch, table, s, opts.top)).collect()
    }

    fn scan(
        &self,
        table: &Table,
        spec: &KeySpec,
        partitions: u32,
        keys: &[Vec<Value>],
    ) -> Result<PartitionScan> {
        super::scan::check_keys(spec, keys)?;
        let batch = self.batch(table)?;
        let types = spec.types();
        let groups = groups(&key_columns(&batch, spec, table)?, &types)?;
        let n = partitions.max(1);
        let (mut partition_rows, mut null_partition_rows) =
            (vec![0; n as usize], vec![0; n as usize]);
        for (k, rows) in &groups {
            let key = decode_key(k, &types);
            let into = if has_null(&key) { &mut null_partition_rows } else { &mut partition_rows };
            into[spark_partition(&key, n) as usize] += rows;
        }
        let key_rows = keys
            .iter()
            .map(|k| groups.get(&encode_values(k, &types)).copied().unwrap_or(0))
            .collect();
        let null_rows = null_partition_rows.iter().sum::<u64>();
        let rows = null_rows + partition_rows.iter().sum::<u64>();
        Ok(PartitionScan { rows, null_rows, null_partition_rows, partition_rows, key_rows })
    }

    fn filtered_keys(
        &self,
        table: &Table,
        keys: &KeySpec,
        filter: &RowFilter,
        group_by: Option<&KeySpec>,
    ) -> Result<Filtered> {
        let batch = self.batch(table)?;
        let in_table = |e: String| Error::Usage(format!("{}: {e}", table.display));
        let mut pass = all_true(&filter.conditions, &batch).map_err(in_table)?;
        if let Some(g) = group_by {
            pass = first_of_groups(&key_columns(&batch, g, table)?, &g.types(), &pass)?;
        }
        // Each column once: a key may name one column twice (keys equal by the joins before).
        let mut indices: Vec<usize> = Vec::new();
        for c in keys.columns.iter().chain(group_by.iter().flat_map(|g| g.columns.iter())) {
            match c.source {
                ColumnSource::Data { index } if !indices.contains(&index) => indices.push(index),
                _ => {}
            }
        }
        let kept = batch
            .project(&indices)
            .and_then(|b| arrow_select::filter::filter_record_batch(&b, &pass))
            .map_err(|e| in_table(e.to_string()))?;
        let (rows_in, rows_out) = (batch.num_rows() as u64, kept.num_rows() as u64);
        let name = format!(
            "{}__filtered{}",
            table.held.as_ref().map_or("", |h| &h.name),
            self.lock().len()
        );
        let t = self.hold_as(&name, &table.display, kept, &table.stats);
        let columns = keys.names().iter().map(|k| t.resolve(k)).collect::<Result<Vec<_>>>()?;
        Ok(Filtered::held(t, KeySpec { columns }, rows_in, rows_out))
    }

    fn can_filter(&self, cond: &Expr, table: &Table) -> std::result::Result<(), String> {
        check_on(cond, table.schema())
    }

    fn weighted_sums(&self, table: &Table, sum: &WeightedSum) -> Result<(Sums, u64)> {
        let batch = self.batch(table)?;
        let in_table = |e: String| Error::Usage(format!("{}: {e}", table.display));
        let pass = all_true(&sum.filter.conditions, &batch).map_err(in_table)?;
        let w = sum.weights.times(&batch, vec![1; batch.num_rows()]).map_err(in_table)?;
        let by =
            KeySpec { columns: sum.by.iter().map(|c| table.resolve(c)).collect::<Result<_>>()? };
        let by = key_columns(&batch, &by, table)?;
        let mut out = Sums::new(sum.types);
        let nulls = sum.nulls;
        out.add(&by, sum.types, |row, null| match pass.value(row) && (nulls || !null) {
            true => w[row],
            false => 0,
        })
        .map_err(in_table)?;
        Ok((out, batch.num_rows() as u64))
    }
}

/// Of the rows that `pass`, the first of each group.
fn first_of_groups(
    columns: &[ArrayRef],
    types: &[KeyType],
    pass: &BooleanArray,
) -> Result<BooleanArray> {
    let mut seen = std::collections::HashSet::new();
    let mut first = vec![false; pass.len()];
    each_group_key(columns, types, |row, k| {
        first[row] = pass.value(row) && seen.insert(k.to_vec())
    })
    .map_err(Error::Usage)?;
    Ok(BooleanArray::from(first))
}

#[cfg(test)]
mod tests {
    //! The in-memory engine against the embedded one, on the same rows: one batch, held here and
    //! written to a Parquet file there, every count compared.

    use super::*;
    use crate::count::weights::RowWeights;
    use crate::count::Embedded;
    use arrow_array::{Float64Array, Int64Array, StringArray};

    /// k: strings with NULLs, a hot value and an empty one; g: small ints with a NULL; v:
    /// doubles with NaN, -0.0 and 0.0 (one group each way Spark groups them).
    fn batch() -> RecordBatch {
        let n = 3_000;
        let k = StringArray::from_iter((0..n).map(|i| match i % 10 {
            0 => None,
            1..=4 => Some("hot".to_string()),
            5 => Some(String::new()),
            _ => Some(format!("k{}", i % 97)),
        }));
        let g = Int64Array::from_iter((0..n).map(|i| (i % 13 != 0).then_some(i % 7)));
        let v = Float64Array::from_iter_values((0..n).map(|i| match i % 5 {
            0 => f64::NAN,
            1 => -0.0,
            2 => 0.0,
            _ => (i % 11) as f64,
        }));
        RecordBatch::try_from_iter(vec![
            ("k", Arc::new(k) as ArrayRef),
            ("g", Arc::new(g) as ArrayRef),
            ("v", Arc::new(v) as ArrayRef),
        ])
        .unwrap()
    }

    /// The batch as a Parquet file (small row groups: several units to count) and held here.
    fn both(dir: &std::path::Path) -> (Table, Table, InMemory) {
        let path = dir.join("t.parquet");
        let b = batch();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(700));
        crate::write_test_parquet(&path, &b, Some(props.build()));
        let stats = RunStats::new();
        let on_disk = Table::open_in(&[path.display().to_string()], None, &stats).unwrap();
        let engine = InMemory::new();
        let held = engine.hold("t", b, &stats);
        (on_disk, held, engine)
    }

    fn spec(t: &Table, cols: &[&str]) -> KeySpec {
        KeySpec { columns: cols.iter().map(|c| t.resolve(c).unwrap()).collect() }
    }

    fn cond(s: &str) -> Expr {
        match &crate::sql::parse(&format!("SELECT 1 WHERE {s}")).unwrap()[0] {
            sqlparser::ast::Statement::Query(q) => match q.body.as_ref() {
                sqlparser::ast::SetExpr::Select(sel) => sel.selection.clone().unwrap(),
                _ => unreachable!(),
            },
            _ => unreachable!(),
        }
    }

    /// What a profile says, comparable across engines.
    fn counts(p: &ColumnProfile) -> (u64, u64, u64, Vec<(String, u64)>) {
        let top = p.top.iter().map(|k| (format!("{:?}", k.key), k.count)).collect();
        (p.rows, p.nulls, p.distinct, top)
    }

    #[test]
    fn profiles_and_scans_agree_with_the_embedded_engine() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, held, mem) = both(dir.path());
        let opts = ProfileOptions { top: 8, exact_distinct: true, ..Default::default() };
        for cols in [&["k"][..], &["g"], &["v"], &["k", "g"], &["g", "v"]] {
            let (a, b) = (spec(&disk, cols), spec(&held, cols));
            let pa = Embedded.profile(&disk, std::slice::from_ref(&a), &opts).unwrap();
            let pb = mem.profile(&held, std::slice::from_ref(&b), &opts).unwrap();
            // Ties may list in another order: compare the counts, then the keys as sets.
            let (ca, cb) = (counts(&pa[0]), counts(&pb[0]));
            assert_eq!((ca.0, ca.1, ca.2), (cb.0, cb.1, cb.2), "{cols:?}");
            let (mut ta, mut tb) = (ca.3.clone(), cb.3.clone());
            let least = ta.last().map_or(0, |t| t.1);
            ta.retain(|t| t.1 > least);
            tb.retain(|t| t.1 > least);
            ta.sort();
            tb.sort();
            assert_eq!(ta, tb, "{cols:?}");
            let cands: Vec<Vec<Value>> =
                pb[0].top.iter().map(|k| k.key.clone()).filter(|k| !has_null(k)).collect();
            for parts in [1, 7, 200] {
                let sa = Embedded.scan(&disk, &a, parts, &cands).unwrap();
                let sb = mem.scan(&held, &b, parts, &cands).unwrap();
                assert_eq!(
                    (sa.rows, sa.null_rows, &sa.partition_rows, &sa.null_partition_rows),
                    (sb.rows, sb.null_rows, &sb.partition_rows, &sb.null_partition_rows),
                    "{cols:?} over {parts}"
                );
                assert_eq!(sa.key_rows, sb.key_rows, "{cols:?} over {parts}");
            }
        }
    }

    #[test]
    fn filters_and_weighted_sums_agree_with_the_embedded_engine() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, held, mem) = both(dir.path());
        let filter = RowFilter { conditions: vec![cond("g > 2 OR k = 'hot'"), cond("v <> 3.0")] };
        for group in [None, Some(&["g"][..])] {
            let (ka, kb) = (spec(&disk, &["k"]), spec(&held, &["k"]));
            let (ga, gb) = (group.map(|g| spec(&disk, g)), group.map(|g| spec(&held, g)));
            let fa = Embedded.filtered_keys(&disk, &ka, &filter, ga.as_ref()).unwrap();
            let fb = mem.filtered_keys(&held, &kb, &filter, gb.as_ref()).unwrap();
            assert_eq!((fa.rows_in, fa.rows_out), (fb.rows_in, fb.rows_out), "{group:?}");
            let opts = ProfileOptions { top: 0, ..Default::default() };
            let pa = Embedded.profile(&fa.table, std::slice::from_ref(&fa.keys), &opts).unwrap();
            let pb = mem.profile(&fb.table, std::slice::from_ref(&fb.keys), &opts).unwrap();
            let sorted = |p: &ColumnProfile| {
                let mut c = counts(p).3;
                c.sort();
                c
            };
            assert_eq!(sorted(&pa[0]), sorted(&pb[0]), "{group:?}");
        }
        for nulls in [false, true] {
            let (by, types) =
                (["k".to_string(), "g".to_string()], [KeyType::String, KeyType::BigInt]);
            let weights = RowWeights::default();
            let sum =
                WeightedSum { by: &by, types: &types, filter: &filter, weights: &weights, nulls };
            let (a, ra) = Embedded.weighted_sums(&disk, &sum).unwrap();
            let (b, rb) = mem.weighted_sums(&held, &sum).unwrap();
            let sorted = |s: Sums| {
                let mut m: Vec<(Vec<u8>, u64)> = s.into_matches().into_iter().collect();
                m.sort_unstable();
                m
            };
            assert_eq!((ra, sorted(a)), (rb, sorted(b)), "nulls: {nulls}");
        }
    }

    #[test]
    fn a_condition_neither_engine_evaluates_is_refused_by_both() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, held, mem) = both(dir.path());
        for (c, ok) in [("g + 1 > 2", false), ("nope = 1", false), ("k LIKE 'h%'", true)] {
            let (a, b) = (Embedded.can_filter(&cond(c), &disk), mem.can_filter(&cond(c), &held));
            assert_eq!((a.is_ok(), b.is_ok()), (ok, ok), "{c}: {a:?} {b:?}");
        }
    }

    #[test]
    fn a_table_it_does_not_hold_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, _, mem) = both(dir.path());
        let k = spec(&disk, &["k"]);
        let err = mem.scan(&disk, &k, 4, &[]).err().unwrap().to_string();
        assert!(err.starts_with(&disk.display), "{err}");
    }
}
