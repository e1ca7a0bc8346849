//! Row filters: a query's conditions on one table (comparisons with literals, IN lists,
//! BETWEEN, IS [NOT] NULL, LIKE, AND, OR, NOT), evaluated on the table's rows with Arrow's
//! kernels, so that a join's counts are of the rows that reach it, as Spark pushes those
//! conditions below the join.
//!
//! A condition names the table's columns bare. Literals take the column's type the way Spark
//! compares them; a comparison Spark would make in another type (a float column against a
//! decimal literal, a string column against a number, a timestamp) is refused, and the caller
//! counts without it and says so. SQL's three-valued logic is kept: a row passes only where the
//! condition is TRUE. Doubles compare as Arrow orders them, which is Spark's order for NaN (equal
//! to itself, above every number) but puts -0.0 below 0.0, where Spark has them equal.
//!
//! `filtered_keys` writes the key columns of the passing rows to a temporary Parquet table, one
//! file per file of the table, which the counting engine then reads like any other. For an input
//! that groups (`GROUP BY`, `DISTINCT`) it writes one row per group, the first of each, so that
//! a key is counted once per group as Spark's aggregate outputs it.
//! `sum_rows` sums a table's passing rows per value of some columns, each
//! row weighted by the joins it takes part in (`crate::count::weights`): the rows a join brings per
//! join value, and the key counts of the rows that reach a chained join.

use std::fs::File;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Datum, RecordBatch, Scalar, StringArray,
};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, Schema};
use parquet::arrow::ArrowWriter;
use sqlparser::ast::{BinaryOperator, Expr, UnaryOperator, Value as SqlValue};

use crate::count::engine::WeightedSum;
use crate::count::weights::{Packed, RowWeights, Sums};
use crate::count::KeySpec;
use crate::error::{Error, Result};
use crate::table::{ColumnSource, DataFile, Table};
use crate::value::KeyType;

/// Conditions on one table's columns (named bare), all of which a row must meet.
#[derive(Clone, Debug, Default)]
pub struct RowFilter {
    pub conditions: Vec<Expr>,
}

impl RowFilter {
    /// The conditions as SQL, joined by AND.
    pub fn text(&self) -> String {
        self.conditions.iter().map(crate::sql::render_expr).collect::<Vec<_>>().join(" AND ")
    }

    /// The columns the conditions read (lower case, each once).
    pub fn columns(&self) -> Vec<String> {
        let mut cols: Vec<String> = Vec::new();
        for c in &self.conditions {
            let _ = sqlparser::ast::visit_expressions(c, |e: &Expr| {
                if let Expr::Identifier(i) = e {
                    let n = i.value.to_ascii_lowercase();
                    if !cols.contains(&n) {
                        cols.push(n);
                    }
                }
                std::ops::ControlFlow::<()>::Continue(())
            });
        }
        cols
    }
}

/// Whether `cond` can be evaluated on `table`'s files: every column it names is a data column
/// (not a Hive partition) of a type the comparison takes, every operator supported.
pub(crate) fn check(cond: &Expr, table: &Table) -> std::result::Result<(), String> {
    let file = table.files.first().ok_or("the table has no files")?;
    check_on(cond, file.meta.schema())
}

/// Whether `cond` can be evaluated on rows of `schema`: the columns it names are found there
/// (case ignored) and an empty batch of them evaluates.
pub(crate) fn check_on(cond: &Expr, schema: &Schema) -> std::result::Result<(), String> {
    let f = RowFilter { conditions: vec![cond.clone()] };
    let mut fields = Vec::new();
    for c in f.columns() {
        let i = column_index(schema, &c)
            .map_err(|_| format!("{c} is not a data column of the table"))?;
        fields.push(schema.field(i).clone());
    }
    let empty = RecordBatch::new_empty(Arc::new(Schema::new(fields)));
    eval(cond, &empty).map(|_| ())
}

/// The table's key columns for the rows that pass `filter` (one row per group when grouped),
/// as a temporary Parquet table (it lives as long as the returned value).
pub struct Filtered {
    pub table: Table,
    pub keys: KeySpec,
    /// Rows read.
    pub rows_in: u64,
    /// Rows written: the passing rows, or their groups.
    pub rows_out: u64,
    /// The folder of the written keys (none when an engine holds them).
    _dir: Option<tempfile::TempDir>,
}

impl Filtered {
    /// The passing rows' keys as a table an engine holds.
    pub fn held(table: Table, keys: KeySpec, rows_in: u64, rows_out: u64) -> Filtered {
        Filtered { table, keys, rows_in, rows_out, _dir: None }
    }
}

/// The groups an input makes of its table's passing rows (`GROUP BY` columns, or every column
/// of a `SELECT DISTINCT`), and the groups seen so far, across files.
struct Groups {
    names: Vec<String>,
    types: Vec<crate::value::KeyType>,
    seen: hashbrown::HashSet<Vec<u8>>,
}

/// Read the key and condition columns of every file, keep the passing rows' keys; with
/// `group_by`, one row per group of those columns.
pub fn filtered_keys(
    table: &Table,
    keys: &KeySpec,
    filter: &RowFilter,
    group_by: Option<&KeySpec>,
) -> Result<Filtered> {
    table.files_here()?;
    let dir = tempfile::Builder::new()
        .prefix("skewjoin-filtered-")
        .tempdir()
        .map_err(|e| Error::Io { path: std::env::temp_dir(), source: e })?;
    // Each column once: a key may name one column twice (keys equal by the joins before).
    let mut out_names: Vec<String> = Vec::new();
    let all = keys.columns.iter().chain(group_by.iter().flat_map(|g| g.columns.iter()));
    if all.clone().any(|c| matches!(c.source, ColumnSource::Partition { .. })) {
        return Err(Error::Usage(format!(
            "{}: a key or grouping column is a partition column; the filter is not applied",
            table.display
        )));
    }
    for c in all {
        if !out_names.iter().any(|n| n.eq_ignore_ascii_case(&c.name)) {
            out_names.push(c.name.clone());
        }
    }
    let mut groups = group_by.map(|g| Groups {
        names: g.names(),
        types: g.types(),
        seen: hashbrown::HashSet::new(),
    });
    let (mut rows_in, mut rows_out) = (0u64, 0u64);
    let mut paths = Vec::new();
    for (n, file) in table.files.iter().enumerate() {
        let out = dir.path().join(format!("part-{n:05}.parquet"));
        let (i, o) = filter_file(file, &out_names, filter, groups.as_mut(), &out)?;
        rows_in += i;
        rows_out += o;
        paths.push(out.to_string_lossy().into_owned());
    }
    let filtered = Table::open(&paths)?;
    let columns = keys.names().iter().map(|k| filtered.resolve(k)).collect::<Result<Vec<_>>>()?;
    Ok(Filtered { table: filtered, keys: KeySpec { columns }, rows_in, rows_out, _dir: Some(dir) })
}

/// One file's passing rows (the first of each new group, when grouped), the `keys` columns
/// only, written to `out`: (rows read, rows kept). What the file holds that cannot be read or
/// filtered is the file's fault (`bad_file`); the temporary file that cannot be written, this
/// machine's.
fn filter_file(
    file: &DataFile,
    keys: &[String],
    filter: &RowFilter,
    mut groups: Option<&mut Groups>,
    out: &std::path::Path,
) -> Result<(u64, u64)> {
    let bad = |e: String| Error::bad_file(&file.path, e);
    let unwritable = |e: parquet::errors::ParquetError| {
        Error::System(format!("{}: cannot write a temporary file: {e}", out.display()))
    };
    let fields =
        wanted_fields(file, keys.iter().map(|k| k.to_ascii_lowercase()), filter).map_err(bad)?;
    // The key columns' places in the batches, and the output's schema (its file is written
    // even when no row passes, so the table always has one).
    let schema = file.meta.schema().project(&fields).map_err(|e| bad(e.to_string()))?;
    let key_idx: Vec<usize> = keys
        .iter()
        .map(|k| column_index(&schema, k))
        .collect::<std::result::Result<_, _>>()
        .map_err(bad)?;
    let key_schema = Arc::new(schema.project(&key_idx).map_err(|e| bad(e.to_string()))?);
    let created =
        File::create(out).map_err(|e| Error::Io { path: out.to_path_buf(), source: e })?;
    let mut writer = ArrowWriter::try_new(created, key_schema, None).map_err(unwritable)?;
    let (mut rows_in, mut rows_out) = (0u64, 0u64);
    for g in 0..file.meta.metadata().num_row_groups() {
        for batch in crate::table::columns::row_group(file, &file.meta, g, &fields)? {
            let batch = batch?;
            let mut pass = all_true(&filter.conditions, &batch).map_err(bad)?;
            if let Some(g) = groups.as_deref_mut() {
                pass = first_of_groups(g, &batch, &pass).map_err(bad)?;
            }
            let keys_only = batch.project(&key_idx).map_err(|e| bad(e.to_string()))?;
            let kept = arrow_select::filter::filter_record_batch(&keys_only, &pass)
                .map_err(|e| bad(e.to_string()))?;
            rows_in += batch.num_rows() as u64;
            rows_out += kept.num_rows() as u64;
            writer.write(&kept).map_err(unwritable)?;
        }
    }
    writer.close().map_err(unwritable)?;
    Ok((rows_in, rows_out))
}

/// The fields of `file` holding `columns` and the filter's columns (case ignored).
fn wanted_fields(
    file: &DataFile,
    columns: impl Iterator<Item = String>,
    filter: &RowFilter,
) -> std::result::Result<Vec<usize>, String> {
    let mut wanted: Vec<usize> = Vec::new();
    for c in columns.chain(filter.columns()) {
        let i = field_ci(file, &c).ok_or_else(|| format!("no column {c}"))?;
        if !wanted.contains(&i) {
            wanted.push(i);
        }
    }
    wanted.sort_unstable();
    Ok(wanted)
}

/// The rows of `table`'s files that pass the filter, weighted, summed per value of the `by`
/// columns (`Engine::weighted_sums` of the embedded engine): the sums, and the rows read.
pub(crate) fn sum_rows(table: &Table, sum: &WeightedSum) -> Result<(Sums, u64)> {
    table.files_here()?;
    let WeightedSum { by, types, filter, weights, nulls } = *sum;
    let mut out = Sums::new(types);
    let mut rows = 0;
    for file in &table.files {
        let (sums, read) = sum_file(file, by, types, filter, weights, nulls)
            .map_err(|e| Error::bad_file(&file.path, e))?;
        out.merge(sums);
        rows += read;
    }
    Ok((out, rows))
}

/// One file's rows summed, its row groups in parallel: the sums, and the rows read.
fn sum_file(
    file: &DataFile,
    by: &[String],
    types: &[KeyType],
    filter: &RowFilter,
    weights: &RowWeights,
    nulls: bool,
) -> std::result::Result<(Sums, u64), String> {
    use rayon::prelude::*;
    // The weights kept from the count before, where they are of some of these factors: only
    // the others are looked up (and their columns read).
    let memo = weights.memo.as_deref().filter(|_| !weights.factors.is_empty());
    let (prior, rest) = match memo.and_then(|m| m.prior(&file.path, &weights.factors)) {
        Some((w, rest)) => (Some(w), RowWeights { factors: rest, ..Default::default() }),
        None => (None, RowWeights { factors: weights.factors.clone(), ..Default::default() }),
    };
    // This file's weights are kept while they fit the room left (a byte a row at the least).
    let room = memo.map_or(0, |m| m.room(&file.path));
    let group = GroupSum {
        file,
        by,
        types,
        filter,
        rest: &rest,
        prior: prior.as_deref(),
        nulls,
        room,
        packed: Default::default(),
    };
    let groups = file.meta.metadata().row_groups();
    let starts: Vec<usize> = groups
        .iter()
        .scan(0usize, |at, g| Some(std::mem::replace(at, *at + g.num_rows().max(0) as usize)))
        .collect();
    let empty = || Summed { sums: Sums::new(types), rows: 0, pieces: Vec::new() };
    let all = (0..groups.len())
        .into_par_iter()
        .map(|g| group.sum(g, starts[g]))
        .try_reduce(empty, |a, b| Ok(a.merge(b)))?;
    if let Some(m) =
        memo.filter(|_| room > 0 && group.packed.load(std::sync::atomic::Ordering::Relaxed) <= room)
    {
        let mut pieces = all.pieces;
        pieces.sort_by_key(|p| p.0);
        let mut kept = Packed::default();
        pieces.iter().for_each(|(_, p)| kept.extend(&p.get(0..p.len()).unwrap_or_default()));
        m.keep(&file.path, &weights.factors, kept);
    }
    Ok((all.sums, all.rows))
}

/// What the row groups of a file summed so far: the sums, the rows read, and the rows'
/// weights to keep, per row group.
struct Summed {
    sums: Sums,
    rows: u64,
    pieces: Vec<(usize, Packed)>,
}

impl Summed {
    fn merge(mut self, other: Summed) -> Summed {
        self.sums.merge(other.sums);
        self.rows += other.rows;
        self.pieces.extend(other.pieces);
        self
    }
}

/// Summing one row group of a file: its rows that pass `filter`, per value of `by`, each
/// weighted by its `prior` weight (kept from the count before) times the `rest` factors.
struct GroupSum<'a> {
    file: &'a DataFile,
    by: &'a [String],
    types: &'a [KeyType],
    filter: &'a RowFilter,
    rest: &'a RowWeights,
    prior: Option<&'a Packed>,
    nulls: bool,
    /// Bytes the file's weights may take to be kept (0: not kept).
    room: usize,
    /// Bytes of the weights packed so far, over all row groups.
    packed: std::sync::atomic::AtomicUsize,
}

impl GroupSum<'_> {
    /// Row group `g`, whose first row is row `start` of the file.
    fn sum(&self, g: usize, start: usize) -> std::result::Result<Summed, String> {
        let columns = self.by.iter().map(|c| c.to_ascii_lowercase()).chain(self.rest.columns());
        let fields = wanted_fields(self.file, columns, self.filter)?;
        let schema = self.file.meta.schema().project(&fields).map_err(|e| e.to_string())?;
        let by_idx: Vec<usize> = self
            .by
            .iter()
            .map(|c| column_index(&schema, c))
            .collect::<std::result::Result<_, _>>()?;
        let mut out = Summed { sums: Sums::new(self.types), rows: 0, pieces: Vec::new() };
        let mut piece = (self.room > 0).then(Packed::default);
        for batch in crate::table::columns::row_group(self.file, &self.file.meta, g, &fields)
            .map_err(|e| e.to_string())?
        {
            let batch = batch.map_err(|e| e.to_string())?;
            let n = batch.num_rows();
            let at = start + out.rows as usize;
            let first = match self.prior {
                Some(p) => {
                    p.get(at..at + n).ok_or("the file has more rows than when it was weighted")?
                }
                None => vec![1; n],
            };
            out.rows += n as u64;
            let pass = all_true(&self.filter.conditions, &batch)?;
            let w = self.rest.times(&batch, first)?;
            if let Some(p) = piece.as_mut() {
                let before = p.bytes();
                p.extend(&w);
                let total =
                    self.packed.fetch_add(p.bytes() - before, std::sync::atomic::Ordering::Relaxed)
                        + p.bytes()
                        - before;
                if total > self.room {
                    piece = None;
                }
            }
            let cols: Vec<ArrayRef> = by_idx.iter().map(|&i| batch.column(i).clone()).collect();
            let nulls = self.nulls;
            out.sums.add(&cols, self.types, |row, null| {
                if pass.value(row) && (nulls || !null) {
                    w[row]
                } else {
                    0
                }
            })?;
        }
        out.pieces.extend(piece.map(|p| (g, p)));
        Ok(out)
    }
}

/// Of the rows that `pass`, those whose group has not been seen before (each group's first).
fn first_of_groups(
    g: &mut Groups,
    batch: &RecordBatch,
    pass: &BooleanArray,
) -> std::result::Result<BooleanArray, String> {
    let schema = batch.schema();
    let cols: Vec<ArrayRef> = g
        .names
        .iter()
        .map(|n| column_index(&schema, n).map(|i| batch.column(i).clone()))
        .collect::<std::result::Result<_, _>>()?;
    let keys = crate::count::group_keys(&cols, &g.types)?;
    let first: Vec<bool> =
        keys.into_iter().zip(pass.values().iter()).map(|(k, p)| p && g.seen.insert(k)).collect();
    Ok(BooleanArray::from(first))
}

/// Rows where every condition is TRUE (NULL counts as not passing).
pub(crate) fn all_true(
    conds: &[Expr],
    batch: &RecordBatch,
) -> std::result::Result<BooleanArray, String> {
    let mut acc = BooleanArray::from(vec![true; batch.num_rows()]);
    for c in conds {
        acc = kleene_and(&acc, &eval(c, batch)?);
    }
    let passes: BooleanBuffer = match acc.nulls() {
        Some(n) => acc.values() & n.inner(),
        None => acc.values().clone(),
    };
    Ok(BooleanArray::new(passes, None))
}

/// A top-level field of the file by name, case ignored as Spark ignores it.
pub(crate) fn field_ci(file: &DataFile, name: &str) -> Option<usize> {
    file.meta.schema().fields().iter().position(|f| f.name().eq_ignore_ascii_case(name))
}

fn column_index(schema: &Schema, name: &str) -> std::result::Result<usize, String> {
    schema
        .fields()
        .iter()
        .position(|f| f.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("no column {name}"))
}

/// One side of a comparison: a column of the batch, or a literal.
enum Operand {
    Column(ArrayRef),
    Literal(Lit),
}

/// A literal as written, typed when it meets a column.
#[derive(Clone, Debug)]
enum Lit {
    Null,
    Number(String),
    Str(String),
    Bool(bool),
    Date(String),
}

/// The condition's truth for each row of `batch` (NULL where SQL says unknown).
fn eval(e: &Expr, batch: &RecordBatch) -> std::result::Result<BooleanArray, String> {
    use BinaryOperator::*;
    match e {
        Expr::Nested(inner) => eval(inner, batch),
        Expr::BinaryOp { left, op: And, right } => {
            Ok(kleene_and(&eval(left, batch)?, &eval(right, batch)?))
        }
        Expr::BinaryOp { left, op: Or, right } => {
            Ok(kleene_or(&eval(left, batch)?, &eval(right, batch)?))
        }
        Expr::UnaryOp { op: UnaryOperator::Not, expr } => Ok(not(&eval(expr, batch)?)),
        Expr::BinaryOp { left, op, right } if matches!(op, Eq | NotEq | Lt | LtEq | Gt | GtEq) => {
            compare(op, operand(left, batch)?, operand(right, batch)?, batch.num_rows())
        }
        Expr::IsNull(x) | Expr::IsNotNull(x) => {
            let Operand::Column(a) = operand(x, batch)? else {
                return Err("IS NULL of a literal".into());
            };
            let valid = a
                .logical_nulls()
                .map(|n| n.inner().clone())
                .unwrap_or_else(|| BooleanBuffer::new_set(a.len()));
            Ok(BooleanArray::new(if matches!(e, Expr::IsNull(_)) { !&valid } else { valid }, None))
        }
        Expr::InList { expr, list, negated } => {
            let mut acc = BooleanArray::from(vec![false; batch.num_rows()]);
            for item in list {
                acc = kleene_or(
                    &acc,
                    &compare(&Eq, operand(expr, batch)?, operand(item, batch)?, batch.num_rows())?,
                );
            }
            Ok(if *negated { not(&acc) } else { acc })
        }
        Expr::Between { expr, negated, low, high } => {
            let ge = compare(&GtEq, operand(expr, batch)?, operand(low, batch)?, batch.num_rows())?;
            let le =
                compare(&LtEq, operand(expr, batch)?, operand(high, batch)?, batch.num_rows())?;
            let both = kleene_and(&ge, &le);
            Ok(if *negated { not(&both) } else { both })
        }
        Expr::Like { negated, any: false, expr, pattern, escape_char: None }
        | Expr::ILike { negated, any: false, expr, pattern, escape_char: None } => {
            let (Operand::Column(a), Operand::Literal(Lit::Str(p))) =
                (operand(expr, batch)?, operand(pattern, batch)?)
            else {
                return Err("LIKE of something other than a column and a string".into());
            };
            let a = as_utf8(&a)?;
            let pat = Scalar::new(StringArray::from(vec![p]));
            let r = if matches!(e, Expr::Like { .. }) {
                arrow_string::like::like(&a, &pat)
            } else {
                arrow_string::like::ilike(&a, &pat)
            };
            let r = r.map_err(|e| e.to_string())?;
            Ok(if *negated { not(&r) } else { r })
        }
        other => Err(format!("{other} is not a condition the counts can apply")),
    }
}

/// A column (dictionaries unpacked) or a literal.
fn operand(e: &Expr, batch: &RecordBatch) -> std::result::Result<Operand, String> {
    Ok(match e {
        Expr::Nested(inner) => return operand(inner, batch),
        Expr::Identifier(i) => {
            Operand::Column(plain(batch.column(column_index(&batch.schema(), &i.value)?))?)
        }
        Expr::Value(v) => Operand::Literal(match &v.value {
            SqlValue::Null => Lit::Null,
            SqlValue::Number(n, _) => Lit::Number(n.clone()),
            SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => {
                Lit::Str(s.clone())
            }
            SqlValue::Boolean(b) => Lit::Bool(*b),
            other => return Err(format!("literal {other}")),
        }),
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => match operand(expr, batch)? {
            Operand::Literal(Lit::Number(n)) => Operand::Literal(Lit::Number(format!("-{n}"))),
            _ => return Err("a negated expression".into()),
        },
        Expr::TypedString(ts) if matches!(ts.data_type, sqlparser::ast::DataType::Date) => {
            match &ts.value.value {
                SqlValue::SingleQuotedString(s) => Operand::Literal(Lit::Date(s.clone())),
                other => return Err(format!("DATE {other}")),
            }
        }
        other => return Err(format!("{other} is not a column or a literal")),
    })
}

/// A dictionary column as its values.
fn plain(a: &ArrayRef) -> std::result::Result<ArrayRef, String> {
    match a.data_type() {
        DataType::Dictionary(_, _) => {
            let d = a.as_any_dictionary();
            arrow_select::take::take(d.values().as_ref(), d.keys(), None).map_err(|e| e.to_string())
        }
        _ => Ok(a.clone()),
    }
}

fn as_utf8(a: &ArrayRef) -> std::result::Result<ArrayRef, String> {
    match a.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(a.clone()),
        other => Err(format!("LIKE on a {other} column")),
    }
}

/// `a op b` for each row.
fn compare(
    op: &BinaryOperator,
    a: Operand,
    b: Operand,
    rows: usize,
) -> std::result::Result<BooleanArray, String> {
    use arrow_ord::cmp;
    let (col, other, flipped): (ArrayRef, Box<dyn Datum>, bool) = match (a, b) {
        (Operand::Column(x), Operand::Column(y)) if x.data_type() == y.data_type() => {
            (x, Box::new(y), false)
        }
        (Operand::Column(x), Operand::Column(y)) => {
            return Err(format!(
                "a {} column compared with a {} column",
                x.data_type(),
                y.data_type()
            ))
        }
        (Operand::Column(x), Operand::Literal(Lit::Null))
        | (Operand::Literal(Lit::Null), Operand::Column(x)) => {
            return Ok(BooleanArray::from(new_null_array(&DataType::Boolean, x.len()).to_data()));
        }
        (Operand::Column(x), Operand::Literal(l)) => {
            let lit = literal(&l, x.data_type())?;
            (x, Box::new(Scalar::new(lit)), false)
        }
        (Operand::Literal(l), Operand::Column(x)) => {
            let lit = literal(&l, x.data_type())?;
            (x, Box::new(Scalar::new(lit)), true)
        }
        (Operand::Literal(_), Operand::Literal(_)) => {
            return Err(format!("a comparison of two literals ({rows} rows)"))
        }
    };
    let op = if flipped { flip(op) } else { op.clone() };
    let r = match op {
        BinaryOperator::Eq => cmp::eq(&col, other.as_ref()),
        BinaryOperator::NotEq => cmp::neq(&col, other.as_ref()),
        BinaryOperator::Lt => cmp::lt(&col, other.as_ref()),
        BinaryOperator::LtEq => cmp::lt_eq(&col, other.as_ref()),
        BinaryOperator::Gt => cmp::gt(&col, other.as_ref()),
        _ => cmp::gt_eq(&col, other.as_ref()),
    };
    r.map_err(|e| e.to_string())
}

/// `lit op col` as `col op' lit`.
fn flip(op: &BinaryOperator) -> BinaryOperator {
    match op {
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        other => other.clone(),
    }
}

/// A one-value array of the column's type holding the literal, where Spark compares the two in
/// the column's type without loss; otherwise why not.
fn literal(l: &Lit, dt: &DataType) -> std::result::Result<ArrayRef, String> {
    use arrow_array::*;
    let int = |n: &str| {
        n.parse::<i64>()
            .map_err(|_| format!("{n} against an integer column (Spark compares them as decimals)"))
    };
    let a: ArrayRef = match (l, dt) {
        (Lit::Number(n), DataType::Int8) => {
            Arc::new(Int8Array::from(vec![i8::try_from(int(n)?).map_err(|e| e.to_string())?]))
        }
        (Lit::Number(n), DataType::Int16) => {
            Arc::new(Int16Array::from(vec![i16::try_from(int(n)?).map_err(|e| e.to_string())?]))
        }
        (Lit::Number(n), DataType::Int32) => {
            Arc::new(Int32Array::from(vec![i32::try_from(int(n)?).map_err(|e| e.to_string())?]))
        }
        (Lit::Number(n), DataType::Int64) => Arc::new(Int64Array::from(vec![int(n)?])),
        (Lit::Number(n), DataType::Float64) => {
            Arc::new(Float64Array::from(vec![n.parse::<f64>().map_err(|e| e.to_string())?]))
        }
        (Lit::Number(n), DataType::Decimal128(p, s)) => Arc::new(
            Decimal128Array::from(vec![decimal(n, *s)?])
                .with_precision_and_scale(*p, *s)
                .map_err(|e| e.to_string())?,
        ),
        (Lit::Str(s), DataType::Utf8) => Arc::new(StringArray::from(vec![s.clone()])),
        (Lit::Str(s), DataType::LargeUtf8) => Arc::new(LargeStringArray::from(vec![s.clone()])),
        (Lit::Str(s), DataType::Utf8View) => Arc::new(StringViewArray::from(vec![s.clone()])),
        (Lit::Str(s) | Lit::Date(s), DataType::Date32) => {
            Arc::new(Date32Array::from(vec![days(s)?]))
        }
        (Lit::Bool(b), DataType::Boolean) => Arc::new(BooleanArray::from(vec![*b])),
        (l, dt) => return Err(format!("{l:?} against a {dt} column")),
    };
    Ok(a)
}

/// A decimal literal as an unscaled value at `scale`, if it has no more digits than that.
fn decimal(n: &str, scale: i8) -> std::result::Result<i128, String> {
    let (neg, digits) = n.strip_prefix('-').map(|d| (true, d)).unwrap_or((false, n));
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let frac = frac.trim_end_matches('0');
    if scale < 0
        || frac.len() > scale as usize
        || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit())
    {
        return Err(format!("{n} at scale {scale}"));
    }
    let text = format!("{int}{frac:0<width$}", width = scale as usize);
    let v: i128 = text.parse().map_err(|_| format!("{n} at scale {scale}"))?;
    Ok(if neg { -v } else { v })
}

/// 'YYYY-MM-DD' as days since 1970-01-01.
fn days(s: &str) -> std::result::Result<i32, String> {
    let d = chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d")
        .map_err(|_| format!("'{s}' is not a date"))?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    i32::try_from((d - epoch).num_days()).map_err(|e| e.to_string())
}

/// The validity of a boolean array as a buffer (all set when it has no NULLs).
fn valid(a: &BooleanArray) -> BooleanBuffer {
    a.nulls().map(|n| n.inner().clone()).unwrap_or_else(|| BooleanBuffer::new_set(a.len()))
}

/// SQL's AND: FALSE if either is FALSE, NULL if either is NULL otherwise.
fn kleene_and(a: &BooleanArray, b: &BooleanArray) -> BooleanArray {
    kleene(a, b, false)
}

/// SQL's OR: TRUE if either is TRUE, NULL if either is NULL otherwise.
fn kleene_or(a: &BooleanArray, b: &BooleanArray) -> BooleanArray {
    kleene(a, b, true)
}

/// AND (`dominant` FALSE) or OR (`dominant` TRUE) in three-valued logic: the dominant value on
/// either side decides; otherwise the result is known only where both sides are.
fn kleene(a: &BooleanArray, b: &BooleanArray, dominant: bool) -> BooleanArray {
    let (va, vb) = (valid(a), valid(b));
    let is_dominant = |x: &BooleanArray, v: &BooleanBuffer| {
        if dominant {
            v & x.values()
        } else {
            v & &!x.values()
        }
    };
    let decided = &is_dominant(a, &va) | &is_dominant(b, &vb);
    let known = &(&va & &vb) | &decided;
    let values = if dominant { decided } else { !&decided };
    BooleanArray::new(values, Some(known.into()))
}

/// SQL's NOT: NULL stays NULL.
fn not(a: &BooleanArray) -> BooleanArray {
    BooleanArray::new(!a.values(), a.nulls().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Date32Array, Decimal128Array, Float64Array, Int64Array};

    fn batch() -> RecordBatch {
        let k: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(4)]));
        let s: ArrayRef =
            Arc::new(StringArray::from(vec![Some("apple"), Some("a%b"), Some("pear"), None]));
        let f: ArrayRef = Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5, f64::NAN]));
        let d: ArrayRef = Arc::new(Date32Array::from(vec![20000, 20010, 20020, 20030]));
        let m: ArrayRef = Arc::new(
            Decimal128Array::from(vec![1250, -50, 0, 99]).with_precision_and_scale(10, 2).unwrap(),
        );
        RecordBatch::try_from_iter([("k", k), ("s", s), ("f", f), ("d", d), ("m", m)]).unwrap()
    }

    fn rows(cond: &str) -> std::result::Result<Vec<bool>, String> {
        let q = crate::sql::parse_query(&format!("SELECT 1 WHERE {cond}")).unwrap();
        let sqlparser::ast::SetExpr::Select(s) = *q.body else { panic!() };
        let m = all_true(&[s.selection.unwrap()], &batch())?;
        Ok((0..m.len()).map(|i| m.value(i)).collect())
    }

    #[test]
    fn three_valued_logic() {
        assert_eq!(rows("k > 1").unwrap(), [false, true, false, true]);
        assert_eq!(rows("NOT (k > 1)").unwrap(), [true, false, false, false]);
        assert_eq!(rows("k > 1 OR s = 'apple'").unwrap(), [true, true, false, true]);
        assert_eq!(rows("k IS NULL OR s IS NULL").unwrap(), [false, false, true, true]);
        // NOT IN with a NULL in the list is never TRUE.
        assert_eq!(rows("k NOT IN (1, NULL)").unwrap(), [false, false, false, false]);
        assert_eq!(rows("k NOT IN (1, 9)").unwrap(), [false, true, false, true]);
        assert_eq!(
            rows("k BETWEEN 2 AND 4 AND NOT s LIKE 'p%'").unwrap(),
            [false, true, false, false]
        );
        assert_eq!(rows("s LIKE 'a\\\\%b'").unwrap(), [false, true, false, false]);
        assert_eq!(rows("5 > k").unwrap(), [true, true, false, true]);
    }

    #[test]
    fn weights_kept_between_counts_give_the_counts_computed_afresh() {
        use crate::count::weights::{Factor, FactorKind, Sums, WeightMemo};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let n = 1000i64;
        let col = |f: &dyn Fn(i64) -> Option<i64>| -> ArrayRef {
            Arc::new(Int64Array::from((0..n).map(f).collect::<Vec<_>>()))
        };
        let b = RecordBatch::try_from_iter([
            ("k", col(&|i| Some(i % 7))),
            ("a", col(&|i| if i % 11 == 0 { None } else { Some(i % 5) })),
            ("b", col(&|i| Some(i % 3))),
        ])
        .unwrap();
        // Row groups of 97 rows: each summed on its own, its kept weights at its place.
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(97))
            .build();
        crate::write_test_parquet(&path, &b, Some(props));
        let table = Table::open(&[path.to_string_lossy().into_owned()]).unwrap();
        assert_eq!(table.files[0].meta.metadata().num_row_groups(), 11);
        // a's values 0..4 match 0..4 rows; b's 0 and 2 match 3 rows, 1 none.
        let sums = |pairs: &[(i64, u64)]| {
            let keys: ArrayRef =
                Arc::new(Int64Array::from(pairs.iter().map(|p| p.0).collect::<Vec<_>>()));
            let mut s = Sums::new(&[KeyType::BigInt]);
            s.add(&[keys], &[KeyType::BigInt], |row, _| pairs[row].1).unwrap();
            Arc::new(s)
        };
        let fa = Factor {
            columns: vec!["a".into()],
            types: vec![KeyType::BigInt],
            matches: sums(&[(1, 1), (2, 2), (3, 3), (4, 4)]),
            kind: FactorKind::KeepUnmatched,
        };
        let fb = Factor {
            columns: vec!["b".into()],
            types: vec![KeyType::BigInt],
            matches: sums(&[(0, 3), (2, 3)]),
            kind: FactorKind::Inner,
        };
        let filter = RowFilter::default();
        let count = |factors: Vec<Factor>, memo: Option<Arc<WeightMemo>>| {
            let w = RowWeights { factors, memo, ..Default::default() };
            let sum = WeightedSum {
                by: &["k".to_string()],
                types: &[KeyType::BigInt],
                filter: &filter,
                weights: &w,
                nulls: false,
            };
            let mut m: Vec<(Vec<u8>, u64)> =
                sum_rows(&table, &sum).unwrap().0.into_matches().into_iter().collect();
            m.sort_unstable();
            m
        };
        let memo = Arc::new(WeightMemo::new(1 << 20));
        let afresh = count(vec![fa.clone(), fb.clone()], None);
        assert_eq!(count(vec![fa.clone()], Some(memo.clone())), count(vec![fa.clone()], None));
        // fa's weights kept: only fb is looked up now.
        assert_eq!(
            memo.prior(&path, &[fb.clone(), fa.clone()]).map(|(_, rest)| rest.len()),
            Some(1)
        );
        assert_eq!(count(vec![fb.clone(), fa.clone()], Some(memo.clone())), afresh);
        // Kept weights of factors not all wanted are not used.
        assert!(memo.prior(&path, std::slice::from_ref(&fb)).is_none());
        assert_eq!(count(vec![fb.clone()], Some(memo.clone())), count(vec![fb.clone()], None));
        // A budget too small for the file keeps nothing.
        let small = Arc::new(WeightMemo::new(100));
        assert_eq!(count(vec![fa.clone(), fb.clone()], Some(small.clone())), afresh);
        assert!(small.prior(&path, &[fa, fb]).is_none());
    }

    #[test]
    fn literals_take_the_column_type() {
        assert_eq!(rows("d >= DATE '2024-10-23'").unwrap(), [false, false, true, true]);
        assert_eq!(rows("d = '2024-10-14'").unwrap(), [false, true, false, false]);
        assert_eq!(rows("m < 0 OR m = 12.50").unwrap(), [true, true, false, false]);
        assert_eq!(rows("f > 1").unwrap(), [false, true, true, true]);
        assert_eq!(decimal("-0.5", 2), Ok(-50));
        // Comparisons Spark makes in another type are refused, not guessed.
        assert!(rows("k > 1.5").is_err());
        assert!(rows("m = 0.125").is_err());
        assert!(rows("s = 1").is_err());
        assert!(rows("upper(s) = 'A'").is_err());
    }
}
