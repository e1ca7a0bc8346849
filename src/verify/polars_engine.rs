//! verify's embedded engine: both queries run in this process on Polars' lazy SQL engine, on the
//! full tables or on a sample, and the rows are compared as multisets. The Spark SQL texts are
//! rendered for Polars SQL first (`polars_sql`); Spark's `hash()` is a registered function that
//! computes Spark's Murmur3, so a salted branch sends each row to the salt Spark would.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use polars::prelude::*;
use polars::sql::{FunctionRegistry, SQLContext};

use super::polars_sql::{self, PolarsSql, HASH_FN, SALTS_COLUMN, SALTS_TABLE};
use super::RunStats;
use crate::count::Sample;
use crate::error::{Error, Result};
use crate::format::fmt_count;
use crate::hash::{hash_value, SPARK_SEED};
use crate::table::Table;
use crate::value::Value;

/// What one run of the two queries gave.
pub struct PolarsRun {
    pub before: RunStats,
    pub after: RunStats,
    pub identical: bool,
    pub only_in_original: Vec<String>,
    pub only_in_rewritten: Vec<String>,
    /// The texts Polars ran, and what was rendered differently from the Spark SQL.
    pub original: PolarsSql,
    pub rewritten: PolarsSql,
    /// One line per table: read whole, or which rows of how many.
    pub inputs: Vec<String>,
}

fn perr(what: &str, e: PolarsError) -> Error {
    let msg = e.to_string();
    let line = msg.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
    Error::Usage(format!("polars: {what}: {line}"))
}

struct Registry(HashMap<String, UserDefinedFunction>);

impl FunctionRegistry for Registry {
    fn register(&mut self, name: &str, fun: UserDefinedFunction) -> PolarsResult<()> {
        self.0.insert(name.to_string(), fun);
        Ok(())
    }
    fn get_udf(&self, name: &str) -> PolarsResult<Option<UserDefinedFunction>> {
        Ok(self.0.get(name).cloned())
    }
    fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

/// A Polars value as the `Value` Spark would hash (Spark reads uint8/16 as int, uint32 as
/// bigint, uint64 as decimal(20,0)).
fn spark_value(v: AnyValue<'_>) -> std::result::Result<Value, String> {
    Ok(match v {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(b),
        AnyValue::Int8(x) => Value::Int(x as i32),
        AnyValue::Int16(x) => Value::Int(x as i32),
        AnyValue::Int32(x) => Value::Int(x),
        AnyValue::UInt8(x) => Value::Int(x as i32),
        AnyValue::UInt16(x) => Value::Int(x as i32),
        AnyValue::Int64(x) => Value::Long(x),
        AnyValue::UInt32(x) => Value::Long(x as i64),
        AnyValue::UInt64(x) => Value::Decimal { unscaled: x as i128, precision: 20, scale: 0 },
        AnyValue::Float32(x) => Value::Float(x),
        AnyValue::Float64(x) => Value::Double(x),
        AnyValue::String(s) => Value::Str(s.to_string()),
        AnyValue::StringOwned(s) => Value::Str(s.to_string()),
        AnyValue::Binary(b) => Value::Binary(b.to_vec()),
        AnyValue::BinaryOwned(b) => Value::Binary(b),
        AnyValue::Date(d) => Value::Date(d),
        AnyValue::Datetime(x, tu, _) | AnyValue::DatetimeOwned(x, tu, _) => {
            Value::Timestamp(match tu {
                TimeUnit::Nanoseconds => x.div_euclid(1000),
                TimeUnit::Microseconds => x,
                TimeUnit::Milliseconds => x * 1000,
            })
        }
        AnyValue::Decimal(x, p, s) => {
            Value::Decimal { unscaled: x, precision: p as u8, scale: s as i8 }
        }
        other => return Err(format!("hash() of a {} value", other.dtype())),
    })
}

/// Spark's `hash(c1, c2, ...)` over Polars columns: Murmur3 from seed 42, chained.
fn spark_hash_columns(cols: &[Column]) -> PolarsResult<Column> {
    let n = cols.iter().map(|c| c.len()).max().unwrap_or(0);
    let mut h = vec![SPARK_SEED; n];
    for c in cols {
        let s = c.as_materialized_series().rechunk();
        let scalar = s.len() == 1 && n > 1;
        for (i, hi) in h.iter_mut().enumerate() {
            let v = s.get(if scalar { 0 } else { i })?;
            let v = spark_value(v).map_err(|e| polars_err!(ComputeError: "{}", e))?;
            *hi = hash_value(&v, *hi);
        }
    }
    let name = cols.first().map(|c| c.name().clone()).unwrap_or_else(|| "hash".into());
    Ok(Column::new(name, h))
}

fn hash_udf() -> UserDefinedFunction {
    UserDefinedFunction::new(
        HASH_FN.into(),
        BaseColumnUdf::new(
            |cols: &mut [Column]| spark_hash_columns(cols),
            |_: &Schema, fs: &[Field]| {
                Ok(Field::new(
                    fs.first().map(|f| f.name().clone()).unwrap_or_else(|| "hash".into()),
                    DataType::Int32,
                ))
            },
        ),
    )
}

fn partition_lit(v: &Value) -> Expr {
    match v {
        Value::Null => lit(NULL),
        Value::Bool(b) => lit(*b),
        Value::Int(i) => lit(*i),
        Value::Long(l) => lit(*l),
        Value::Float(f) => lit(*f),
        Value::Double(d) => lit(*d),
        Value::Str(s) => lit(s.clone()),
        Value::Binary(b) => lit(b.clone()),
        Value::Date(d) => lit(*d).cast(DataType::Date),
        Value::Timestamp(t) => lit(*t).cast(DataType::Datetime(TimeUnit::Microseconds, None)),
        Value::Decimal { unscaled, scale, .. } => {
            lit(Value::decimal_string(*unscaled, *scale)).cast(DataType::Float64)
        }
    }
}

/// One table as a LazyFrame: its files (and Hive partition values), names in lower case,
/// timestamps as UTC wall clocks, and, with a sample, every k-th row. Also the line that says
/// what was read.
fn scan(
    name: &str,
    table: &Table,
    sample: Option<Sample>,
    copies: &std::path::Path,
) -> Result<(LazyFrame, String)> {
    let (mut lf, copied) = read_files(name, table, copies)?;
    let (cols, decimals) = spark_columns(name, &mut lf)?;
    let rows = table.rows();
    let step = sample_step(rows, sample);
    let what = if step > 1 {
        lf = lf
            .with_row_index("__sj_row", None)
            .filter((col("__sj_row") % lit(step as IdxSize)).eq(lit(0 as IdxSize)));
        format!(
            "{name}: every {step}{} row, {} of {} rows",
            ordinal_suffix(step),
            fmt_count(rows.div_ceil(step)),
            fmt_count(rows)
        )
    } else {
        format!("{name}: all {} rows", fmt_count(rows))
    };
    let what = if decimals.is_empty() {
        what
    } else {
        format!("{what} (decimal {} read as double)", decimals.join(", "))
    };
    let what = match copied {
        0 => what,
        n => format!(
            "{what} (its {} in an object store copied here first, {})",
            if n == 1 { "file".to_string() } else { format!("{n} files") },
            crate::format::human(table.files.iter().map(|f| f.byte_len()).sum())
        ),
    };
    Ok((lf.select(cols), what))
}

/// A table's files as one LazyFrame, each with its Hive partition values as columns, and how
/// many were in an object store: this build's Polars reads local files only, so those are
/// copied into the folder `copies` first (whole: the queries read every column).
fn read_files(name: &str, table: &Table, copies: &std::path::Path) -> Result<(LazyFrame, usize)> {
    let mut frames = Vec::with_capacity(table.files.len());
    let mut copied = 0;
    for (i, f) in table.files.iter().enumerate() {
        let path = match &f.location {
            crate::table::blob::Location::Remote(o) => {
                let to = copies.join(format!(
                    "{}-{i}.parquet",
                    name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
                ));
                crate::table::store::download_to(o, &to)?;
                copied += 1;
                to.to_string_lossy().to_string()
            }
            crate::table::blob::Location::Local(_) => f.path.to_string_lossy().to_string(),
        };
        let mut args = ScanArgsParquet::default();
        args.hive_options.enabled = Some(false);
        let mut lf = LazyFrame::scan_parquet(PlRefPath::new(path.as_str()), args)
            .map_err(|e| perr(&format!("reading {path}"), e))?;
        if !table.partitions.is_empty() {
            let parts: Vec<Expr> = table
                .partitions
                .iter()
                .zip(&f.partition_values)
                .map(|(p, v)| partition_lit(v).alias(p.name.as_str()))
                .collect();
            lf = lf.with_columns(parts);
        }
        frames.push(lf);
    }
    let lf = match frames.len() {
        0 => return Err(Error::Usage(format!("table {name}: no files"))),
        1 => frames.remove(0),
        _ => {
            concat(&frames, UnionArgs::default()).map_err(|e| perr(&format!("table {name}"), e))?
        }
    };
    Ok((lf, copied))
}

/// The columns of `lf` as Spark reads them: lower-case names (two that differ only in case are
/// refused), timestamps as UTC wall clocks and decimals as doubles; and the decimal columns.
fn spark_columns(name: &str, lf: &mut LazyFrame) -> Result<(Vec<Expr>, Vec<String>)> {
    let schema = lf.collect_schema().map_err(|e| perr(&format!("table {name}"), e))?;
    let mut seen = std::collections::HashSet::new();
    let mut cols = Vec::with_capacity(schema.len());
    let mut decimals: Vec<String> = Vec::new();
    for (n, dt) in schema.iter() {
        let lower = n.to_lowercase();
        if !seen.insert(lower.clone()) {
            return Err(Error::Usage(format!("table {name}: two columns are named {lower} when case is ignored (as Spark ignores it)")));
        }
        let mut e = col(n.clone());
        if let DataType::Datetime(tu, Some(_)) = dt {
            e = e.cast(DataType::Int64).cast(DataType::Datetime(*tu, None));
        }
        // This build's Polars joins and groups no decimals (that needs its 128-bit integer
        // types, a much longer build: BENCHMARKS.md, "Decimals in the Polars engine"): a
        // decimal is read as a double, the same for both queries. Keys up to 15 digits stay
        // distinct.
        if let DataType::Decimal(_, _) = dt {
            e = e.cast(DataType::Float64);
            decimals.push(lower.clone());
        }
        cols.push(e.alias(lower.as_str()));
    }
    Ok((cols, decimals))
}

/// With a sample, every how many rows one is read (1: all of them).
fn sample_step(rows: u64, sample: Option<Sample>) -> u64 {
    match sample {
        None => 1,
        Some(Sample::Fraction(f)) => (1.0 / f.clamp(1e-12, 1.0)).round().max(1.0) as u64,
        Some(Sample::Rows(r)) => rows.div_ceil(r.max(1)).max(1),
    }
}

/// "nd", "rd" or "th" after `n`, as in "every 4th row" (a step of 1 is "all rows").
fn ordinal_suffix(n: u64) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// A value as text for comparing rows: floating-point values to `digits` significant digits,
/// NaN as one value and -0.0 as 0.0 (as Spark groups them).
fn cell(v: AnyValue<'_>, digits: usize) -> String {
    let float = |x: f64| -> String {
        if x.is_nan() {
            "NaN".into()
        } else if x == 0.0 {
            "0".into()
        } else if x.is_infinite() {
            if x > 0.0 {
                "inf".into()
            } else {
                "-inf".into()
            }
        } else {
            format!("{:.*e}", digits.saturating_sub(1), x)
        }
    };
    match v {
        AnyValue::Null => "NULL".into(),
        AnyValue::Float32(x) => float(x as f64),
        AnyValue::Float64(x) => float(x),
        AnyValue::String(s) => format!("{s:?}"),
        AnyValue::StringOwned(s) => format!("{:?}", s.as_str()),
        AnyValue::Binary(b) => format!("X'{}'", Value::hex(b)),
        AnyValue::BinaryOwned(b) => format!("X'{}'", Value::hex(&b)),
        other => other.to_string(),
    }
}

fn rows_of(df: &DataFrame, digits: usize) -> Result<HashMap<Vec<String>, i64>> {
    let cols: Vec<Series> =
        df.columns().iter().map(|c| c.as_materialized_series().rechunk()).collect();
    let mut out: HashMap<Vec<String>, i64> = HashMap::new();
    for i in 0..df.height() {
        let mut row = Vec::with_capacity(cols.len());
        for s in &cols {
            row.push(cell(s.get(i).map_err(|e| perr("reading a result", e))?, digits));
        }
        *out.entry(row).or_default() += 1;
    }
    Ok(out)
}

/// Register each relation a salt hashes columns of, with those hashes as columns: a table
/// from its scan, a CTE or subquery from its rows run first (with what they hash in turn).
fn register_hashed(
    ctx: &mut SQLContext,
    hashed: &[polars_sql::Hashed],
    frames: &HashMap<String, LazyFrame>,
    which: &str,
) -> Result<()> {
    for h in hashed {
        let base = match &h.source {
            Some(rows) => {
                register_hashed(ctx, &rows.hashed, frames, which)?;
                ctx.execute(&rows.sql).map_err(|e| {
                    perr(
                        &format!(
                            "the rows of {} in the {which} query (rendered for Polars SQL)",
                            h.table
                        ),
                        e,
                    )
                })?
            }
            None => frames.get(&h.table).cloned().ok_or_else(|| {
                Error::Usage(format!(
                    "the {which} query hashes columns of {}, which no --table names",
                    h.table
                ))
            })?,
        };
        let cols: Vec<Expr> = h
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                hash_udf()
                    .call(c.iter().map(|x| col(x.as_str())).collect())
                    .alias(format!("{}_{i}", h.name))
            })
            .collect();
        ctx.register(&h.name, base.with_columns(cols));
    }
    Ok(())
}

fn run_one(
    ctx: &mut SQLContext,
    q: &PolarsSql,
    frames: &HashMap<String, LazyFrame>,
    which: &str,
) -> Result<(DataFrame, i64)> {
    register_hashed(ctx, &q.hashed, frames, which)?;
    if std::env::var_os("SKEWJOIN_SHOW_POLARS_SQL").is_some() {
        eprintln!("-- the {which} query as Polars SQL:\n{};", q.sql);
    }
    let t0 = Instant::now();
    // Polars panics on some inputs it cannot handle: that is one line for the user too.
    let out = crate::guard::no_panic_anywhere(|| ctx.execute(&q.sql).and_then(|lf| lf.collect()));
    let df = match out {
        Ok(r) => {
            r.map_err(|e| perr(&format!("the {which} query (rendered for Polars SQL) failed"), e))?
        }
        Err(msg) => {
            return Err(Error::Usage(format!(
                "polars: the {which} query (rendered for Polars SQL) stopped Polars: {}",
                msg.lines().next().unwrap_or("a panic")
            )));
        }
    };
    Ok((df, t0.elapsed().as_millis() as i64))
}

/// Past this many rows apart, the results differ: they are not paired off one by one.
const MAX_PAIRED: usize = 10_000;

/// Takes out of both multisets the pairs of rows that the rounded comparison left apart but
/// that differ only by one unit in the last digit kept of their floating-point cells: a sum on
/// a rounding boundary (cents summed in another order) falls on either side of it.
fn pair_off(c0: &mut HashMap<Vec<String>, i64>, c1: &mut HashMap<Vec<String>, i64>, digits: usize) {
    let (Some(mut s0), Some(mut s1)) = (surplus(c0, c1), surplus(c1, c0)) else { return };
    if s0.len() != s1.len() || s0.is_empty() {
        return;
    }
    // In one order whatever order the maps gave, each row to its closest candidate: the
    // verdict does not depend on the run.
    s0.sort();
    s1.sort();
    let mut by_rest: HashMap<Vec<&str>, Vec<&Vec<String>>> = HashMap::new();
    for r in &s1 {
        by_rest.entry(rest(r)).or_default().push(r);
    }
    for r0 in &s0 {
        let Some(candidates) = by_rest.get_mut(&rest(r0)) else { continue };
        let near = candidates
            .iter()
            .enumerate()
            .filter(|(_, r1)| r0.iter().zip(r1.iter()).all(|(a, b)| a == b || close(a, b, digits)))
            .map(|(i, r1)| (distance(r0, r1), i))
            .min_by(|x, y| x.0.total_cmp(&y.0));
        let Some((_, i)) = near else { continue };
        let r1 = candidates.remove(i);
        for (c, r) in [(&mut *c0, r0), (&mut *c1, r1)] {
            if let Some(n) = c.get_mut(r) {
                *n -= 1;
                if *n == 0 {
                    c.remove(r);
                }
            }
        }
    }
}

/// The rows of `a` not in `b`, each as often as it is over; None past MAX_PAIRED.
fn surplus(
    a: &HashMap<Vec<String>, i64>,
    b: &HashMap<Vec<String>, i64>,
) -> Option<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for (k, n) in a {
        let over = n - b.get(k).copied().unwrap_or(0);
        for _ in 0..over.max(0) {
            out.push(k.clone());
            if out.len() > MAX_PAIRED {
                return None;
            }
        }
    }
    Some(out)
}

/// A cell written by `cell` as a rounded float (`1.95329218e7`).
fn rounded_float(c: &str) -> Option<f64> {
    if c.contains('e') && !c.starts_with('"') {
        c.parse().ok()
    } else {
        None
    }
}

/// How far apart two rows' rounded floats are, summed.
fn distance(r0: &[String], r1: &[String]) -> f64 {
    r0.iter().zip(r1).filter_map(|(a, b)| Some((rounded_float(a)? - rounded_float(b)?).abs())).sum()
}

/// A row's cells other than its rounded floats.
fn rest(row: &[String]) -> Vec<&str> {
    row.iter().map(|c| if rounded_float(c).is_some() { "~" } else { c.as_str() }).collect()
}

/// Two rounded floats one unit (and a half, for the rounding of the larger) apart in their
/// last digit kept, or less.
fn close(a: &str, b: &str, digits: usize) -> bool {
    let (Some(x), Some(y)) = (rounded_float(a), rounded_float(b)) else { return false };
    let big = x.abs().max(y.abs());
    let unit = 10f64.powi(big.log10().floor() as i32 + 1 - digits as i32);
    (x - y).abs() <= 1.5 * unit
}

fn only(a: &HashMap<Vec<String>, i64>, b: &HashMap<Vec<String>, i64>) -> Vec<String> {
    let mut out = Vec::new();
    let mut keys: Vec<&Vec<String>> = a.keys().collect();
    keys.sort();
    for k in keys {
        let d = a[k] - b.get(k).copied().unwrap_or(0);
        if d > 0 {
            out.push(format!(
                "({}){}",
                k.join(", "),
                if d > 1 { format!(" x{d}") } else { String::new() }
            ));
            if out.len() == 5 {
                break;
            }
        }
    }
    out
}

/// Polars prints its warnings on stderr; the deprecations come from its own SQL front end
/// (a `DATE '...'` literal is a deprecated cast inside it) and mean nothing to our user.
fn quiet_deprecations(msg: &str, w: polars::error::PolarsWarning) {
    if !matches!(w, polars::error::PolarsWarning::Deprecation) {
        eprintln!("polars: {w:?}: {msg}");
    }
}

/// Run both Spark SQL queries on Polars over the named tables.
pub fn run(
    original: &str,
    rewritten: &str,
    tables: &[(String, &Table)],
    how: &super::PolarsOptions,
) -> Result<PolarsRun> {
    let (sample, tolerance) = (how.sample, how.tolerance);
    polars::error::set_warning_function(quiet_deprecations);
    let mut udfs = HashMap::new();
    udfs.insert(HASH_FN.to_string(), hash_udf());
    let mut ctx = SQLContext::new().with_function_registry(Arc::new(Registry(udfs)));
    let mut inputs = Vec::new();
    let mut frames: HashMap<String, LazyFrame> = HashMap::new();
    // Copies of the tables' files in object stores, removed when the run is done.
    let copies = tempfile::Builder::new()
        .prefix("skewjoin-verify-")
        .tempdir()
        .map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
    for (name, t) in tables {
        let (lf, what) = scan(name, t, sample, copies.path())?;
        ctx.register(name, lf.clone());
        frames.insert(name.to_lowercase(), lf);
        inputs.push(what);
    }
    let mut schemas: HashMap<String, Vec<String>> = HashMap::new();
    for (name, lf) in &frames {
        let schema = lf.clone().collect_schema().map_err(|e| perr(&format!("table {name}"), e))?;
        schemas.insert(name.clone(), schema.iter_names().map(|n| n.to_string()).collect());
    }
    let columns_of = |name: &str| -> Option<Vec<String>> { schemas.get(name).cloned() };
    let p0 = polars_sql::render_with(original, &columns_of)?;
    let p1 = polars_sql::render_with(rewritten, &columns_of)?;
    if let Some(m) = p0.max_salt.max(p1.max_salt) {
        let salts = df!(SALTS_COLUMN => (0..=m.max(0)).collect::<Vec<i64>>())
            .map_err(|e| perr("the salts table", e))?;
        ctx.register(SALTS_TABLE, salts.lazy());
    }
    let digits = (-tolerance.log10()).round().clamp(1.0, 17.0) as usize;
    // The first round gives the rows; with more, it is the warm-up, and the others are timed.
    let (d0, ms0) = run_one(&mut ctx, &p0, &frames, "original")?;
    let (d1, ms1) = run_one(&mut ctx, &p1, &frames, "rewritten")?;
    let (mut runs0, mut runs1) = (Vec::new(), Vec::new());
    for _ in 1..how.runs {
        runs0.push(run_one(&mut ctx, &p0, &frames, "original")?.1);
        runs1.push(run_one(&mut ctx, &p1, &frames, "rewritten")?.1);
    }
    let warmup = (how.runs > 1).then_some((ms0, ms1));
    if warmup.is_none() {
        (runs0, runs1) = (vec![ms0], vec![ms1]);
    }
    let mut c0 = rows_of(&d0, digits)?;
    let mut c1 = rows_of(&d1, digits)?;
    pair_off(&mut c0, &mut c1, digits);
    // Spark's names: Polars suffixes a repeated name with `:table` (and the renderer with `:N`).
    let names = |d: &DataFrame| {
        d.get_column_names()
            .iter()
            .map(|s| s.split(':').next().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    let stats = |d: &DataFrame, runs: Vec<i64>, warmup_ms: Option<i64>| RunStats {
        wall_ms: super::median(&runs),
        runs_ms: runs,
        warmup_ms,
        total_task_ms: 0,
        rows: d.height() as i64,
        columns: names(d),
        stages: vec![],
        aqe: None,
        ..RunStats::default()
    };
    Ok(PolarsRun {
        identical: c0 == c1,
        only_in_original: only(&c0, &c1),
        only_in_rewritten: only(&c1, &c0),
        before: stats(&d0, runs0, warmup.map(|w| w.0)),
        after: stats(&d1, runs1, warmup.map(|w| w.1)),
        original: p0,
        rewritten: p1,
        inputs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn multiset(rows: &[&[&str]]) -> HashMap<Vec<String>, i64> {
        let mut m = HashMap::new();
        for r in rows {
            *m.entry(r.iter().map(|c| c.to_string()).collect()).or_default() += 1;
        }
        m
    }

    #[test]
    fn sums_on_either_side_of_a_rounding_boundary_are_paired_and_real_differences_stay() {
        // 9 digits: 1.95329218e7 and 1.95329217e7 are one unit apart (19532921.75 summed in
        // two orders); 2.00000000e0 and 2.00000003e0 are three.
        let mut a =
            multiset(&[&["7", "1.95329218e7"], &["\"x\"", "2.00000000e0"], &["8", "1.0e0"]]);
        let mut b =
            multiset(&[&["7", "1.95329217e7"], &["\"x\"", "2.00000003e0"], &["8", "1.0e0"]]);
        pair_off(&mut a, &mut b, 9);
        assert_eq!(only(&a, &b), vec!["(\"x\", 2.00000000e0)"]);
        assert_eq!(only(&b, &a), vec!["(\"x\", 2.00000003e0)"]);
        // The other cells must be equal: the same floats under another key are not paired.
        let mut a = multiset(&[&["7", "1.95329218e7"]]);
        let mut b = multiset(&[&["6", "1.95329217e7"]]);
        pair_off(&mut a, &mut b, 9);
        assert_eq!((a.len(), b.len()), (1, 1));
        let mut a = multiset(&[&["7", "1.95329218e7"], &["7", "1.95329218e7"]]);
        let mut b = multiset(&[&["7", "1.95329217e7"], &["7", "1.95329219e7"]]);
        pair_off(&mut a, &mut b, 9);
        assert!(a.is_empty() && b.is_empty(), "{a:?} {b:?}");
    }
}
