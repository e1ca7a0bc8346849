//! Count the values of key columns: exact by default, or over a sample.
//!
//! Only the key columns are read. Work is split into row groups, read in parallel; every
//! thread feeds one shared, sharded counter per key (see `counter`). String and binary
//! columns are read as dictionaries, so a dictionary-encoded column chunk is counted by its
//! integer indices and each distinct string is touched once per row group.

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use hashbrown::HashMap;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use parquet::arrow::ProjectionMask;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rayon::prelude::*;

use super::counter::{KeyCounter, Pending};
use super::stage::{self, ByteBuf, IntBuf, Stage, StageBuf};
use crate::error::{Error, Result};
use crate::source::{field_index, read_hint, ColumnSource, ResolvedColumn, Table};
use crate::value::{canonical_f32, canonical_f64, KeyType, Value};

/// A key to count: one column, or several counted as one composite key.
#[derive(Debug, Clone)]
pub struct KeySpec {
    pub columns: Vec<ResolvedColumn>,
}

impl KeySpec {
    pub fn name(&self) -> String {
        self.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(",")
    }
    pub fn types(&self) -> Vec<KeyType> {
        self.columns.iter().map(|c| c.key_type).collect()
    }
    pub fn names(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.name.clone()).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sample {
    Fraction(f64),
    Rows(u64),
}

impl std::str::FromStr for Sample {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let s = s.trim();
        let bad = || format!("bad sample {s:?}: give a fraction in (0, 1] such as 0.05, a percentage such as 5%, or a row count such as 1000000");
        if let Some(p) = s.strip_suffix('%') {
            let f: f64 = p.trim().parse().map_err(|_| bad())?;
            if f > 0.0 && f <= 100.0 {
                return Ok(Sample::Fraction(f / 100.0));
            }
            return Err(bad());
        }
        if let Ok(n) = s.replace('_', "").parse::<u64>() {
            return if n == 0 {
                Err(bad())
            } else if n == 1 {
                Ok(Sample::Fraction(1.0))
            } else {
                Ok(Sample::Rows(n))
            };
        }
        match s.parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 1.0 => Ok(Sample::Fraction(f)),
            _ => Err(bad()),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ProfileOptions {
    pub top: usize,
    pub sample: Option<Sample>,
    pub seed: u64,
    /// Memory for the counting tables, in bytes, shared by all keys.
    pub memory: usize,
    pub progress: bool,
    /// Count every distinct value exactly, even where the exact top values alone are much
    /// cheaper (see `split`): the distinct count is then exact instead of an estimate.
    pub exact_distinct: bool,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions { top: 20, sample: None, seed: 42, memory: 2 << 30, progress: false, exact_distinct: false }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SampleInfo {
    /// "whole row groups", "whole pages" or "row selections".
    pub method: String,
    pub rows_read: u64,
    pub fraction: f64,
    pub row_groups_read: usize,
    pub row_groups_total: usize,
    /// With whole pages: the pages (of the first key column) read, and in the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_read: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_total: Option<usize>,
    /// The column whose pages were sampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_column: Option<String>,
}

#[derive(Debug, Clone)]
pub struct KeyCount {
    pub key: Vec<Value>,
    /// Rows with this key: exact, a lower bound (see `count_error`), or scaled up from a sample.
    pub count: u64,
    /// Rows with this key in the sample (sample mode only).
    pub sample_count: Option<u64>,
    pub share: f64,
    /// Half-width of the 95% interval of `share` (sample mode only).
    pub share_error: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct ColumnProfile {
    pub spec: KeySpec,
    /// Rows of the table.
    pub rows: u64,
    /// Rows read to count.
    pub rows_read: u64,
    /// Rows whose key is NULL (any part NULL for a composite key); scaled in sample mode.
    pub nulls: u64,
    pub distinct: u64,
    pub distinct_exact: bool,
    /// The distinct count is a HyperLogLog estimate, not a count of the values read (with a
    /// sample, `distinct_exact` is false either way: the sample's count is not the table's).
    pub distinct_estimate: bool,
    pub counts_exact: bool,
    /// Counts may be up to this much below the truth (bounded-memory mode), 0 when exact.
    pub count_error: u64,
    /// The most frequent keys, NULL included, most frequent first.
    pub top: Vec<KeyCount>,
    pub sample: Option<SampleInfo>,
}

/// How a key is counted.
enum Plan {
    /// One fixed-width column: ints, dates, timestamps, floats (by canonical bits), decimals <= 18.
    Int { field: String, ty: KeyType },
    /// One decimal column wider than 18 digits.
    Wide { field: String },
    /// One string or binary column.
    Bytes { field: String },
    /// A composite key, or a partition column: each row encoded to bytes.
    Encoded { parts: Vec<Part> },
}

enum Part {
    Field(String, KeyType),
    Partition(usize, KeyType),
}

enum Counter {
    Int(KeyCounter<i64>),
    Wide(KeyCounter<i128>),
    Bytes(KeyCounter<Box<[u8]>>),
}

struct Job {
    spec: KeySpec,
    plan: Plan,
    counter: Counter,
    /// The fast exact path for fixed-width and byte keys; overflows into `counter`.
    int_stage: Stage<IntBuf>,
    byte_stage: Stage<ByteBuf>,
    nulls: AtomicU64,
    /// Dictionary chunks may be split once a thread's table is large (see `split`).
    split: bool,
    /// The threads' splits, handed in when they finish.
    splits: std::sync::Mutex<Vec<super::split::Split>>,
}

/// One row group of one file, maybe with a row selection.
#[derive(Clone)]
struct Unit {
    file: usize,
    row_group: usize,
    rows: u64,
    selection: Option<(RowSelection, u64)>,
    /// A sample of whole pages: the rows of each page selected, in order (each is a sampling
    /// unit of its own), and the byte ranges of those pages. Empty otherwise.
    pages: Vec<u64>,
    spans: Vec<(u64, u64)>,
}

impl Unit {
    fn rows_read(&self) -> u64 {
        self.selection.as_ref().map(|s| s.1).unwrap_or(self.rows)
    }
    /// The rows of each cluster of the unit, in the order they are read: its pages, or the
    /// whole unit as one.
    fn clusters(&self) -> Vec<u64> {
        if self.pages.is_empty() {
            vec![self.rows_read()]
        } else {
            self.pages.clone()
        }
    }
}

/// Per unit, in sample mode: rows read and the counts of its most frequent keys.
struct UnitTally {
    rows: u64,
    table_rows: u64,
    /// NULL rows (of a composite key: rows with a NULL part; only a single column's are used).
    nulls: u64,
    counts: HashMap<Vec<u8>, u64>,
}

/// Count every key of `specs` over `table`.
pub fn profile(table: &Table, specs: &[KeySpec], opts: &ProfileOptions) -> Result<Vec<ColumnProfile>> {
    let split = !opts.exact_distinct && opts.top > 0 && opts.top < 200;
    match profile_pass(table, specs, opts, split)? {
        Some(out) => Ok(out),
        // The split count could not prove its top values: count again, every value exactly.
        None => profile_pass(table, specs, opts, false)?.ok_or_else(|| Error::Internal("exact count left undecided".into())),
    }
}

/// One pass over the table; `None` when a split count (see `split`) could not prove its top.
fn profile_pass(table: &Table, specs: &[KeySpec], opts: &ProfileOptions, split: bool) -> Result<Option<Vec<ColumnProfile>>> {
    let budget = opts.memory / specs.len().max(1);
    let jobs: Vec<Job> = specs
        .iter()
        .map(|spec| {
            let plan = plan_for(spec);
            let counter = match &plan {
                Plan::Int { .. } => Counter::Int(KeyCounter::new(budget)),
                Plan::Wide { .. } => Counter::Wide(KeyCounter::new(budget)),
                _ => Counter::Bytes(KeyCounter::new(budget)),
            };
            let split = split && matches!(plan, Plan::Bytes { .. });
            Job {
                spec: spec.clone(),
                plan,
                counter,
                int_stage: Stage::new(budget),
                byte_stage: Stage::new(budget),
                nulls: AtomicU64::new(0),
                split,
                splits: Default::default(),
            }
        })
        .collect();

    // Which top-level fields to read (by name; files may order them differently).
    let mut fields: Vec<String> = Vec::new();
    for s in specs {
        for c in &s.columns {
            if matches!(c.source, ColumnSource::Data { .. }) && !fields.contains(&c.name) {
                fields.push(c.name.clone());
            }
        }
    }
    let readers = table
        .files
        .iter()
        .map(|f| {
            let idx: Vec<usize> = fields.iter().filter_map(|n| field_index(f, n)).collect();
            let hinted = read_hint(&f.meta, &idx)
                .and_then(|schema| ArrowReaderMetadata::try_new(f.meta.metadata().clone(), ArrowReaderOptions::new().with_schema(schema)).ok());
            (hinted.unwrap_or_else(|| f.meta.clone()), idx)
        })
        .collect::<Vec<_>>();

    let (units, sample_info) = choose_units(table, opts, fields.first().map(String::as_str));
    // A thread's exact table may hold this many values before its chunks are split: none for
    // a sample, whose few row groups would otherwise be counted mostly into that table.
    let switch_at = if sample_info.is_some() { 0 } else { super::split::SWITCH_KEYS };
    let total_read: u64 = units.iter().map(|u| u.rows_read()).sum();
    let bar = progress_bar(opts.progress, total_read);
    let tally = opts.sample.is_some() && sample_info.is_some();
    let walked = sample_info.as_ref().and_then(|s| s.pages_column.as_deref());

    let want = if opts.top == 0 { usize::MAX } else { opts.top + 1 };
    let locals: Vec<std::sync::Mutex<Local>> =
        (0..rayon::current_num_threads().max(1)).map(|_| std::sync::Mutex::new(Local::new(&jobs, want, switch_at))).collect();
    let tallies: Vec<Vec<UnitTally>> = std::thread::scope(|scope| {
        // Meanwhile, have the kernel read ahead what the units will read.
        scope.spawn(|| advise_units(table, &readers, &units));
        units
            .par_iter()
            .map(|unit| {
                // One Local per worker thread, so that each thread stages (and compacts) its keys
                // in one place; the lock is never contended.
                let slot = rayon::current_thread_index().unwrap_or(0) % locals.len();
                let mut guard = locals[slot].lock().unwrap_or_else(|e| e.into_inner());
                let local = &mut *guard;
                let file = &table.files[unit.file];
                let (meta, idx) = &readers[unit.file];
                crate::guard::no_panic(|| read_unit(file, meta, idx, unit, &jobs, local, tally, walked, &bar))
                    .map_err(|p| Error::bad_file(&file.path, format!("corrupt data in row group {}: {p}", unit.row_group)))?
                    .map_err(|e| match e {
                        Error::BadFile { .. } => e,
                        other => Error::bad_file(&file.path, format!("row group {}: {other}", unit.row_group)),
                    })
            })
            .collect::<Result<Vec<Vec<Vec<UnitTally>>>>>()
    })?
    .into_iter()
    .flatten()
    .collect();
    // Hand the staged keys in (Local's drop) before they are counted.
    drop(locals);
    bar.finish_and_clear();

    let rows = table.rows();
    let scale = if total_read == 0 { 1.0 } else { rows as f64 / total_read as f64 };
    let mut out = Vec::new();
    for (j, job) in jobs.into_iter().enumerate() {
        let types = job.spec.types();
        let nulls_read = job.nulls.load(Ordering::Relaxed);
        let single = job.spec.columns.len() == 1;
        let int_stage = job.int_stage;
        let byte_stage = job.byte_stage;
        let (mut top, distinct, exact, counts_exact, error): (Vec<(Vec<Value>, u64)>, u64, bool, bool, u64) = match job.counter {
            Counter::Int(c) => {
                let t = types[0];
                let over = int_stage.overflowed();
                let mut bufs = int_stage.take();
                if over {
                    bufs.iter_mut().for_each(|b| b.drain_into(&c));
                    let s = c.summary(want);
                    (s.top.into_iter().map(|(k, n)| (vec![Value::from_i64_key(k, t)], n)).collect(), s.distinct, s.exact, s.exact, s.error)
                } else {
                    let s = stage::count_ints(&bufs, want);
                    drop(bufs);
                    (s.top.into_iter().map(|(k, n)| (vec![Value::from_i64_key(k, t)], n)).collect(), s.distinct, true, true, 0)
                }
            }
            Counter::Wide(c) => {
                let s = c.summary(want);
                let (precision, scale) = match types[0] {
                    KeyType::Decimal { precision, scale } => (precision, scale),
                    _ => (38, 0),
                };
                (s.top.into_iter().map(|(k, n)| (vec![Value::Decimal { unscaled: k, precision, scale }], n)).collect(), s.distinct, s.exact, s.exact, s.error)
            }
            Counter::Bytes(c) => {
                let over = byte_stage.overflowed();
                let mut bufs = byte_stage.take();
                let splits = job.splits.into_inner().unwrap_or_else(|e| e.into_inner());
                let mut distinct_exact = true;
                let s = if !splits.is_empty() {
                    let bounds = super::split::Bounds::merge(splits);
                    // A few more than shown, to check that none left out could pass the last.
                    let listed = want.saturating_add(256);
                    let s = stage::count_bytes(&mut bufs, listed);
                    let complete = s.top.len() as u64 == s.distinct;
                    if over || !bounds.certain(&s.top, want, complete) {
                        return Ok(None);
                    }
                    let mut hll = bounds.hll;
                    for b in &bufs {
                        b.each_hash(|h| hll.add(h));
                    }
                    distinct_exact = false;
                    let mut top = s.top;
                    top.truncate(want);
                    super::counter::Summary { top, distinct: hll.estimate(), exact: true, error: 0 }
                } else if over {
                    bufs.iter_mut().for_each(|b| b.drain_into(&c));
                    c.summary(want)
                } else {
                    let s = stage::count_bytes(&mut bufs, want);
                    super::counter::Summary { top: s.top, distinct: s.distinct, exact: true, error: 0 }
                };
                drop(bufs);
                let top = s
                    .top
                    .into_iter()
                    .map(|(k, n)| {
                        let key = match &job.plan {
                            Plan::Bytes { .. } => vec![bytes_value(&k, types[0])],
                            _ => decode_key(&k, &types),
                        };
                        (key, n)
                    })
                    .collect();
                (top, s.distinct, s.exact && distinct_exact, s.exact, s.error)
            }
        };
        if single && nulls_read > 0 {
            top.push((vec![Value::Null], nulls_read));
        }
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0[0].is_null().cmp(&b.0[0].is_null()).reverse()));
        if opts.top > 0 {
            top.truncate(opts.top);
        }
        let tallies_j: Vec<&UnitTally> = tallies.iter().map(|t| &t[j]).collect();
        let top = top
            .into_iter()
            .map(|(key, n)| {
                let share = if total_read == 0 { 0.0 } else { n as f64 / total_read as f64 };
                match &sample_info {
                    None => KeyCount { key, count: n, sample_count: None, share, share_error: None },
                    Some(info) => {
                        let err = share_error(&key, &types, &tallies_j, share, info, total_read);
                        KeyCount { key, count: (n as f64 * scale).round() as u64, sample_count: Some(n), share, share_error: Some(err) }
                    }
                }
            })
            .collect();
        let distinct_estimate = !exact;
        let (nulls, distinct, distinct_exact) = match &sample_info {
            None => (nulls_read, distinct, exact),
            // From a sample, the distinct count is a lower bound: not an estimate of the table's.
            Some(_) => ((nulls_read as f64 * scale).round() as u64, distinct, false),
        };
        out.push(ColumnProfile {
            spec: job.spec,
            rows,
            rows_read: total_read,
            nulls,
            distinct,
            distinct_exact,
            distinct_estimate,
            counts_exact: counts_exact && sample_info.is_none(),
            count_error: error,
            top,
            sample: sample_info.clone(),
        });
    }
    Ok(Some(out))
}

fn plan_for(spec: &KeySpec) -> Plan {
    if spec.columns.len() == 1 {
        let c = &spec.columns[0];
        if let ColumnSource::Data { .. } = c.source {
            return match c.key_type {
                KeyType::String | KeyType::Binary => Plan::Bytes { field: c.name.clone() },
                KeyType::Decimal { precision, .. } if precision > 18 => Plan::Wide { field: c.name.clone() },
                ty => Plan::Int { field: c.name.clone(), ty },
            };
        }
    }
    Plan::Encoded {
        parts: spec
            .columns
            .iter()
            .map(|c| match c.source {
                ColumnSource::Data { .. } => Part::Field(c.name.clone(), c.key_type),
                ColumnSource::Partition { index } => Part::Partition(index, c.key_type),
            })
            .collect(),
    }
}

/// The row groups to read, whole or in part, and how they were sampled. `walk`: the first key
/// column read from the files, whose pages can be the sampling units.
fn choose_units(table: &Table, opts: &ProfileOptions, walk: Option<&str>) -> (Vec<Unit>, Option<SampleInfo>) {
    let mut all = Vec::new();
    for (fi, f) in table.files.iter().enumerate() {
        for (ri, rg) in f.meta.metadata().row_groups().iter().enumerate() {
            all.push(Unit { file: fi, row_group: ri, rows: rg.num_rows().max(0) as u64, selection: None, pages: Vec::new(), spans: Vec::new() });
        }
    }
    let total: u64 = all.iter().map(|u| u.rows).sum();
    let target = match opts.sample {
        None => return (all, None),
        Some(Sample::Fraction(f)) => (total as f64 * f).ceil() as u64,
        Some(Sample::Rows(n)) => n,
    };
    if target >= total || total == 0 {
        return (all, None);
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(opts.seed);
    // Empty row groups hold nothing to sample (and must not count as sampled units).
    all.retain(|u| u.rows > 0);
    let groups = all.len();
    // Whole row groups (cheap: the others are never read) when there are at least 32 of
    // roughly even size: at least MIN_GROUPS of them, so that their spread gives an error
    // bound, even when fewer would hold the rows asked for (the fraction read is reported).
    // Otherwise random 512-row runs (below), whose row groups' pages are still all read and
    // decompressed: with uneven row groups, a few drawn ones could miss most of the rows.
    const MIN_GROUPS: u64 = 4;
    let even = |mut sizes: Vec<u64>| {
        let max = sizes.iter().copied().max().unwrap_or(0);
        let mid = sizes.len() / 2;
        let median = if sizes.is_empty() { 0 } else { *sizes.select_nth_unstable(mid).1 };
        max <= median.saturating_mul(4)
    };
    if groups >= 32 && even(all.iter().map(|u| u.rows).collect()) {
        let sizes: Vec<u64> = all.iter().map(|u| u.rows).collect();
        let (take, rows) = draw_clusters(&sizes, target, MIN_GROUPS, &mut rng);
        let picked: Vec<Unit> = all.iter().zip(&take).filter(|(_, &t)| t).map(|(u, _)| u.clone()).collect();
        let info = SampleInfo {
            method: "whole row groups".into(),
            rows_read: rows,
            fraction: rows as f64 / total as f64,
            row_groups_read: picked.len(),
            row_groups_total: groups,
            pages_read: None,
            pages_total: None,
            pages_column: None,
        };
        return (picked, Some(info));
    }
    // Fewer or uneven row groups: whole pages of the first key column, when there are at least
    // 32 of roughly even size (their headers say where they are and how many rows each holds).
    // The reader skips the other pages without decompressing them; each page read is a
    // sampling unit, as a row group is above. At least MIN_PAGES of them: a page is cheap, and
    // with fewer a kind of page that is rare (NULL in every row, say) is too often missed,
    // and with it the spread that its absence hides.
    const MIN_PAGES: u64 = 30;
    if let Some(pages) = walk.and_then(|name| table_pages(table, &all, name)) {
        let sizes: Vec<u64> = pages.iter().flatten().map(|p| p.rows).collect();
        if sizes.len() >= 32 && even(sizes.clone()) {
            let (take, rows) = draw_clusters(&sizes, target, MIN_PAGES, &mut rng);
            let n = take.iter().filter(|&&t| t).count();
            let mut picked = Vec::new();
            let mut next = 0usize;
            for (u, unit_pages) in all.iter().zip(&pages) {
                let mut selectors: Vec<RowSelector> = Vec::new();
                let (mut rows_of, mut spans) = (Vec::new(), Vec::new());
                for p in unit_pages {
                    let keep = take[next];
                    next += 1;
                    if keep {
                        rows_of.push(p.rows);
                        spans.push((p.offset, p.len));
                    }
                    push_selector(&mut selectors, keep, p.rows as usize);
                }
                if !rows_of.is_empty() {
                    let selected = rows_of.iter().sum();
                    picked.push(Unit { selection: Some((RowSelection::from(selectors), selected)), pages: rows_of, spans, ..u.clone() });
                }
            }
            let info = SampleInfo {
                method: "whole pages".into(),
                rows_read: rows,
                fraction: rows as f64 / total as f64,
                row_groups_read: picked.len(),
                row_groups_total: groups,
                pages_read: Some(n),
                pages_total: Some(sizes.len()),
                pages_column: walk.map(str::to_string),
            };
            return (picked, Some(info));
        }
    }
    // 512-row runs drawn without replacement from all the runs of the table: as many as hold
    // the rows asked for, and at least MIN_RUNS. Row groups none of whose runs were drawn are
    // not read.
    const RUN: u64 = 512;
    const MIN_RUNS: u64 = 4;
    let runs_in: Vec<u64> = all.iter().map(|u| u.rows.div_ceil(RUN)).collect();
    let n_runs: u64 = runs_in.iter().sum();
    let want = target.div_ceil(RUN).max(MIN_RUNS).min(n_runs);
    let mut chosen = rand::seq::index::sample(&mut rng, n_runs as usize, want as usize).into_vec();
    chosen.sort_unstable();
    let mut chosen = chosen.into_iter().peekable();
    let mut rows_read = 0;
    let mut first = 0u64;
    let mut picked = Vec::new();
    for (u, &runs) in all.iter().zip(&runs_in) {
        let mut selectors: Vec<RowSelector> = Vec::new();
        let mut selected = 0;
        for r in 0..runs {
            let take = chosen.next_if(|&c| c as u64 == first + r).is_some();
            let len = RUN.min(u.rows - r * RUN) as usize;
            if take {
                selected += len as u64;
            }
            push_selector(&mut selectors, take, len);
        }
        first += runs;
        if selected > 0 {
            rows_read += selected;
            picked.push(Unit { selection: Some((RowSelection::from(selectors), selected)), ..u.clone() });
        }
    }
    let info = SampleInfo {
        method: "row selections (random 512-row runs of the row groups)".into(),
        rows_read,
        fraction: rows_read as f64 / total as f64,
        row_groups_read: picked.len(),
        row_groups_total: groups,
        pages_read: None,
        pages_total: None,
        pages_column: None,
    };
    (picked, Some(info))
}

/// Clusters (row groups or pages) of `sizes` rows drawn at random without replacement: as
/// many as hold `target` rows, and at least `min`. Which were drawn, and their rows.
fn draw_clusters(sizes: &[u64], target: u64, min: u64, rng: &mut rand::rngs::SmallRng) -> (Vec<bool>, u64) {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.shuffle(rng);
    let mut take = vec![false; sizes.len()];
    let (mut rows, mut n) = (0u64, 0u64);
    for i in order {
        if rows >= target && n >= min {
            break;
        }
        rows += sizes[i];
        n += 1;
        take[i] = true;
    }
    (take, rows)
}

/// `len` more rows, selected or skipped, at the end of `selectors`.
fn push_selector(selectors: &mut Vec<RowSelector>, select: bool, len: usize) {
    match selectors.last_mut() {
        Some(s) if s.skip != select => s.row_count += len,
        _ => selectors.push(if select { RowSelector::select(len) } else { RowSelector::skip(len) }),
    }
}

/// The data pages of column `name` in each of `units` (whole row groups), from the page
/// headers; None if any chunk's pages cannot be listed so.
fn table_pages(table: &Table, units: &[Unit], name: &str) -> Option<Vec<Vec<super::pages::PageSpan>>> {
    units
        .par_iter()
        .map(|u| {
            let f = &table.files[u.file];
            let schema = f.meta.parquet_schema();
            let leaf = schema.columns().iter().position(|c| c.path().parts().len() == 1 && c.path().parts()[0] == name)?;
            let file = File::open(&f.path).ok()?;
            let len = file.metadata().ok()?.len();
            let chunk = f.meta.metadata().row_group(u.row_group).column(leaf);
            let pages = super::pages::data_pages(&file, len, chunk, &schema.column(leaf))?;
            (pages.iter().map(|p| p.rows).sum::<u64>() == u.rows).then_some(pages)
        })
        .collect()
}

/// Tell the kernel which byte ranges are about to be read (the key columns' chunks of the units),
/// so that the parts not in the page cache are read ahead while the first units are counted.
fn advise_units(table: &Table, readers: &[(ArrowReaderMetadata, Vec<usize>)], units: &[Unit]) {
    #[cfg(unix)]
    {
        let mut last: Option<(usize, File)> = None;
        for u in units {
            let (meta, idx) = &readers[u.file];
            if last.as_ref().map(|l| l.0) != Some(u.file) {
                match File::open(&table.files[u.file].path) {
                    Ok(f) => last = Some((u.file, f)),
                    Err(_) => continue,
                }
            }
            let Some((_, f)) = &last else { continue };
            if !u.spans.is_empty() {
                // Whole pages: those of the first key column (the other columns' chunks are
                // read in part, where they are not known).
                for &(start, len) in &u.spans {
                    if let Some(len) = std::num::NonZeroU64::new(len) {
                        let _ = rustix::fs::fadvise(f, start, Some(len), rustix::fs::Advice::WillNeed);
                    }
                }
                continue;
            }
            let rg = meta.metadata().row_group(u.row_group);
            let schema = meta.parquet_schema();
            for (leaf, c) in rg.columns().iter().enumerate() {
                // Leaves of the fields read (a nested field has several).
                let root = schema.get_column_root_idx(leaf);
                if !idx.contains(&root) {
                    continue;
                }
                let start = c.dictionary_page_offset().filter(|&d| d > 0).unwrap_or(c.data_page_offset()).max(0) as u64;
                if let Some(len) = std::num::NonZeroU64::new(c.compressed_size().max(0) as u64) {
                    let _ = rustix::fs::fadvise(f, start, Some(len), rustix::fs::Advice::WillNeed);
                }
            }
        }
    }
}

fn progress_bar(show: bool, total: u64) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !show || !std::io::stderr().is_terminal() || total < 2_000_000 {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr_with_hz(5));
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} counting keys {bar:30} {human_pos}/{human_len} rows, {per_sec}, eta {eta}") {
        bar.set_style(style);
    }
    bar
}

#[allow(clippy::too_many_arguments)]
fn read_unit(
    file: &crate::source::DataFile,
    meta: &ArrowReaderMetadata,
    idx: &[usize],
    unit: &Unit,
    jobs: &[Job],
    local: &mut Local,
    tally: bool,
    walked: Option<&str>,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<Vec<UnitTally>>> {
    // Per cluster of the unit (see `Unit::clusters`), per job: its rows, NULL rows and frequent
    // values. The NULL rows are added to the job's when the unit is done (a failed unit fails
    // the whole count).
    let clusters = unit.clusters();
    let table_rows = |rows: u64| if clusters.len() == 1 { unit.rows } else { rows };
    let mut tallies: Vec<Vec<UnitTally>> = clusters
        .iter()
        .map(|&rows| jobs.iter().map(|_| UnitTally { rows, table_rows: table_rows(rows), nulls: 0, counts: HashMap::new() }).collect())
        .collect();
    // String and binary keys straight from their pages where the chunk allows it (see `pages`).
    let mut done = vec![false; jobs.len()];
    // A unit of whole pages has them of one column only (`walked`); other units all pages.
    let paged = !unit.spans.is_empty();
    if (unit.selection.is_none() || paged) && std::env::var_os("SKEWJOIN_ARROW_ONLY").is_none() {
        let schema = meta.parquet_schema();
        for (j, job) in jobs.iter().enumerate() {
            let Plan::Bytes { field } = &job.plan else { continue };
            if paged && walked != Some(field.as_str()) {
                continue;
            }
            let Some(leaf) = schema.columns().iter().position(|c| c.path().parts().len() == 1 && c.path().parts()[0] == *field) else { continue };
            let descr = schema.column(leaf);
            if !super::pages::eligible(&descr) {
                continue;
            }
            let (f, file_len) = local.open.open(unit.file, &file.path).map_err(|e| Error::Io { path: file.path.clone(), source: e })?;
            let chunk = meta.metadata().row_group(unit.row_group).column(leaf);
            let mut scratch = std::mem::take(&mut local.scratch);
            let min = unit.rows / 5000;
            let mut sink = ChunkSink { local: &mut *local, j, file: unit.file, tallies: &mut tallies[..], tally, paged, min };
            let counted = if paged {
                // A page's values of at least its rows / 5000 are tallied, as Arrow's path does.
                let mins: Vec<u64> = unit.pages.iter().map(|r| r / 5000).collect();
                super::pages::count_pages(&f, file_len, chunk, &descr, &unit.spans, &mins, &mut scratch, &mut sink)
            } else {
                super::pages::count_chunk(&f, file_len, chunk, &descr, unit.rows as usize, &mut scratch, &mut sink)
            };
            local.scratch = scratch;
            if let Some(counted) = counted {
                // Paged: each page's NULLs are in its tally already.
                if !paged {
                    tallies[0][j].nulls += counted.nulls;
                }
                local.settle(j);
                done[j] = true;
            }
        }
    }
    let mut pends: Vec<Pend> = jobs
        .iter()
        .map(|j| match &j.counter {
            Counter::Wide(c) => Pend::Wide(c.pending()),
            Counter::Int(_) | Counter::Bytes(_) => Pend::Local,
        })
        .collect();
    let mut dicts: Vec<DictTally> =
        jobs.iter().map(|_| DictTally { tally_min: unit.rows_read() / 5000, clustered: tally && clusters.len() > 1, ..Default::default() }).collect();

    // Job `j`'s rows of `batch` (None: a unit of partition columns only), all of cluster `c`;
    // `last`: the cluster ends with them.
    let mut sink = |j: usize, c: usize, batch_rows: usize, batch: Option<&RecordBatch>, last: bool| -> Result<()> {
        let job = &jobs[j];
        let col = |name: &str| -> Result<&ArrayRef> {
            batch.and_then(|b| b.column_by_name(name)).ok_or_else(|| Error::bad_file(&file.path, format!("column {name} missing")))
        };
        let UnitTally { counts, nulls: cluster_nulls, rows: cluster_rows, .. } = &mut tallies[c][j];
        let mut local_tally = if tally { Some(counts) } else { None };
        match (&job.plan, &job.counter, &mut pends[j]) {
            (Plan::Int { field, ty }, Counter::Int(_), _) => {
                let mut nulls = 0;
                let raw = local.raw_ints[j];
                let mut agg = std::mem::take(&mut local.agg[j]);
                each_i64(col(field)?, *ty, &mut |v| match v {
                    Some(k) => {
                        if raw {
                            local.add_int(j, k, 1);
                        } else {
                            *agg.entry(k).or_insert(0) += 1;
                        }
                        if let Some(t) = local_tally.as_mut() {
                            *t.entry_ref(&k.to_le_bytes()[..]).or_insert(0) += 1;
                        }
                    }
                    None => nulls += 1,
                })
                .map_err(|m| Error::bad_file(&file.path, format!("column {field}: {m}")))?;
                if !raw {
                    // Pre-aggregating a batch pays off only when keys repeat within it.
                    if agg.len() * 2 > batch_rows {
                        local.raw_ints[j] = true;
                    }
                    for (k, n) in agg.drain() {
                        local.add_int(j, k, n);
                    }
                }
                local.agg[j] = agg;
                local.settle(j);
                *cluster_nulls += nulls;
            }
            (Plan::Wide { field }, Counter::Wide(c), Pend::Wide(p)) => {
                let mut nulls = 0;
                each_i128(col(field)?, &mut |v| match v {
                    Some(k) => {
                        c.add(p, k, 1);
                        if let Some(t) = local_tally.as_mut() {
                            *t.entry_ref(&k.to_le_bytes()[..]).or_insert(0) += 1;
                        }
                    }
                    None => nulls += 1,
                })
                .map_err(|m| Error::bad_file(&file.path, format!("column {field}: {m}")))?;
                *cluster_nulls += nulls;
            }
            (Plan::Bytes { field }, Counter::Bytes(_), _) => {
                let array = col(field)?;
                // Sample mode: only values above 0.02% of the cluster matter for the error bound
                // of a top value.
                dicts[j].tally_min = *cluster_rows / 5000;
                let nulls = if dicts[j].try_add(array, local, j, cluster_nulls, local_tally.as_deref_mut()) {
                    0
                } else {
                    dicts[j].flush(local, j, cluster_nulls, local_tally.as_deref_mut());
                    count_bytes(array, local, j, local_tally.as_deref_mut()).map_err(|m| Error::bad_file(&file.path, format!("column {field}: {m}")))?
                };
                if last && dicts[j].clustered {
                    dicts[j].end_cluster(cluster_nulls, local_tally.as_deref_mut());
                }
                local.settle(j);
                *cluster_nulls += nulls;
            }
            (Plan::Encoded { parts }, Counter::Bytes(_), _) => {
                let mut cols: Vec<Atoms> = Vec::new();
                for part in parts {
                    cols.push(match part {
                        Part::Field(name, ty) => Atoms::from_array(col(name)?, *ty).map_err(|m| Error::bad_file(&file.path, format!("column {name}: {m}")))?,
                        Part::Partition(i, ty) => Atoms::Const(atom_of(&file.partition_values[*i], *ty)),
                    });
                }
                let nulls = count_encoded(&cols, batch_rows, local, j, local_tally.as_deref_mut());
                local.settle(j);
                *cluster_nulls += nulls;
            }
            _ => return Err(Error::Internal(format!("no counter for key {}", job.spec.name()))),
        }
        Ok(())
    };

    // The fields the remaining keys need.
    let schema = meta.schema();
    let rest: Vec<usize> = idx
        .iter()
        .copied()
        .filter(|&i| {
            let name = schema.field(i).name();
            jobs.iter().zip(&done).any(|(job, d)| {
                !*d && match &job.plan {
                    Plan::Int { field, .. } | Plan::Wide { field } | Plan::Bytes { field } => field == name,
                    Plan::Encoded { parts } => parts.iter().any(|p| matches!(p, Part::Field(f, _) if f == name)),
                }
            })
        })
        .collect();
    if rest.is_empty() {
        // Only partition columns, or keys already counted from their pages: nothing to read.
        for (c, &rows) in clusters.iter().enumerate() {
            for j in 0..jobs.len() {
                if !done[j] {
                    sink(j, c, rows as usize, None, true)?;
                }
            }
        }
        bar.inc(unit.rows_read());
    } else {
        let f = File::open(&file.path).map_err(|e| Error::Io { path: file.path.clone(), source: e })?;
        let mask = ProjectionMask::roots(meta.parquet_schema(), rest.iter().copied());
        let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta.clone())
            .with_projection(mask)
            .with_row_groups(vec![unit.row_group])
            .with_batch_size(64 * 1024);
        if let Some((sel, _)) = &unit.selection {
            builder = builder.with_row_selection(sel.clone());
        }
        let reader = builder.build().map_err(|e| Error::bad_file(&file.path, e))?;
        // The rows come in the order of the clusters: a batch is cut where one ends.
        let (mut c, mut left) = (0usize, clusters[0]);
        for batch in reader {
            let batch = batch.map_err(|e| Error::bad_file(&file.path, format!("row group {}: {e}", unit.row_group)))?;
            let mut at = 0usize;
            while at < batch.num_rows() {
                if left == 0 {
                    if c + 1 >= clusters.len() {
                        return Err(Error::bad_file(&file.path, format!("row group {}: more rows than selected", unit.row_group)));
                    }
                    c += 1;
                    left = clusters[c];
                    continue;
                }
                let take = (batch.num_rows() - at).min(usize::try_from(left).unwrap_or(usize::MAX));
                let part = if take == batch.num_rows() { batch.clone() } else { batch.slice(at, take) };
                left -= take as u64;
                for j in 0..jobs.len() {
                    if !done[j] {
                        sink(j, c, take, Some(&part), left == 0)?;
                    }
                }
                at += take;
            }
            bar.inc(batch.num_rows() as u64);
        }
    }
    for (j, job) in jobs.iter().enumerate() {
        match (&job.counter, &mut pends[j]) {
            (Counter::Wide(c), Pend::Wide(p)) => c.flush(p),
            (Counter::Int(_) | Counter::Wide(_), _) => {}
            (Counter::Bytes(_), _) => {
                // Whatever is left belongs to the last cluster.
                let Some(UnitTally { counts, nulls, .. }) = tallies.last_mut().map(|t| &mut t[j]) else { continue };
                dicts[j].flush(local, j, nulls, if tally { Some(counts) } else { None });
            }
        }
    }
    for (j, job) in jobs.iter().enumerate() {
        job.nulls.fetch_add(tallies.iter().map(|t| t[j].nulls).sum(), Ordering::Relaxed);
    }
    if tally {
        for t in tallies.iter_mut().flatten() {
            keep_top(&mut t.counts, 2000);
        }
    }
    Ok(tallies)
}

fn keep_top(m: &mut HashMap<Vec<u8>, u64>, n: usize) {
    if m.len() <= n {
        return;
    }
    let mut counts: Vec<u64> = m.values().copied().collect();
    let (_, t, _) = counts.select_nth_unstable_by(n, |a, b| b.cmp(a));
    let t = *t;
    m.retain(|_, c| *c > t);
}

/// Where a column chunk counted from its pages goes: the thread's staged keys, and in sample
/// mode the unit's tally of its frequent values.
struct ChunkSink<'a, 'b> {
    local: &'a mut Local<'b>,
    j: usize,
    /// The file of the chunk.
    file: usize,
    /// The unit's tallies, per cluster and job: the first cluster's from the chunk's counts,
    /// or (`paged`) each page's from `tally`.
    tallies: &'a mut [Vec<UnitTally>],
    /// Sample mode: values are tallied (NULLs always are).
    tally: bool,
    paged: bool,
    min: u64,
}

impl super::pages::Sink for ChunkSink<'_, '_> {
    fn dict(&mut self, dict: &super::pages::Dict) {
        let (j, local) = (self.j, &mut *self.local);
        match &mut local.split[j] {
            SplitState::On(s) if !local.over[j] => {
                if !s.chunk(&local.st, dict, self.file, &mut local.bytes[j]) {
                    // An arena is full: as `Local::add` does, go to the counter.
                    s.failed = true;
                    local.jobs[j].byte_stage.account(usize::MAX / 2, 0);
                    local.settle(j);
                }
            }
            state => {
                // Decide before this chunk would take the exact table past its size.
                if matches!(state, SplitState::Exact) && !local.over[j] && local.bytes[j].staged_keys() + dict.len() > local.switch_at {
                    let mut counts: Vec<u32> = dict.used().map(|(_, n)| n).collect();
                    local.split[j] = match super::split::Split::start(&mut counts, local.want) {
                        Some(s) => SplitState::On(s),
                        None => SplitState::Never,
                    };
                    if matches!(local.split[j], SplitState::On(_)) {
                        return self.dict(dict);
                    }
                }
                // A dictionary of which few values were counted (a sample of a few of its
                // pages): only those are hashed and staged.
                let idx: Vec<usize> = (0..dict.len()).filter(|&i| dict.rows(i) > 0).collect();
                if idx.len() * 2 < dict.len() {
                    local.add_many(j, idx.len(), |x| dict.value(idx[x]), |x| dict.rows(idx[x]) as u64);
                } else {
                    local.add_many(j, dict.len(), |i| dict.value(i), |i| dict.rows(i) as u64);
                }
            }
        }
        if self.tally && !self.paged {
            let t = &mut self.tallies[0][self.j].counts;
            for (k, n) in dict.used() {
                if n as u64 >= self.min {
                    *t.entry_ref(k).or_insert(0) += n as u64;
                }
            }
        }
    }
    fn one(&mut self, value: &[u8], rows: u64) {
        self.local.add(self.j, value, rows);
        if self.tally && !self.paged && rows >= self.min {
            *self.tallies[0][self.j].counts.entry_ref(value).or_insert(0) += rows;
        }
    }
    fn tally(&mut self, page: usize, value: &[u8], rows: u64) {
        if let Some(t) = self.tallies.get_mut(page).filter(|_| self.tally) {
            *t[self.j].counts.entry_ref(value).or_insert(0) += rows;
        }
    }
    fn page_nulls(&mut self, page: usize, nulls: u64) {
        if let Some(t) = self.tallies.get_mut(page) {
            t[self.j].nulls += nulls;
        }
    }
}

/// A unit's buffer of fixed-width keys for the shared counter; byte keys go through `Local`.
enum Pend {
    Wide(Pending<i128>),
    Local,
}

/// A worker thread's share of the counting: its staged keys (see `stage`), or, once a job's
/// stage has overflowed its memory budget, its buffer for the bounded shared counter. On drop
/// the staged keys are handed in (or drained into the counter) and buffers are flushed.
struct Local<'a> {
    jobs: &'a [Job],
    st: foldhash::quality::FixedState,
    ints: Vec<IntBuf>,
    bytes: Vec<ByteBuf>,
    /// This thread's staged bytes as last reported to the job's stage.
    reported: Vec<usize>,
    /// The job's stage overflowed: keys go to the shared counter.
    over: Vec<bool>,
    int_pend: Vec<Option<Pending<i64>>>,
    byte_pend: Vec<Option<Pending<Box<[u8]>>>>,
    /// Fixed-width keys: pre-aggregate each batch unless keys rarely repeat.
    raw_ints: Vec<bool>,
    agg: Vec<HashMap<i64, u64>>,
    /// Buffers for reading column chunks page by page.
    scratch: super::pages::Scratch,
    /// The file this thread read last, kept open.
    open: super::pages::LastFile,
    /// Per job: whether its dictionary chunks are split, may be later, or never will be.
    split: Vec<SplitState>,
    /// The `want` most frequent values are asked for.
    want: usize,
    /// Dictionary chunks are split once the exact table would pass this many values.
    switch_at: usize,
}

enum SplitState {
    Exact,
    Never,
    On(super::split::Split),
}

impl<'a> Local<'a> {
    fn new(jobs: &'a [Job], want: usize, switch_at: usize) -> Self {
        let n = jobs.len();
        Local {
            jobs,
            st: stage::hasher(),
            ints: jobs.iter().map(|_| IntBuf::default()).collect(),
            bytes: jobs.iter().map(|_| ByteBuf::default()).collect(),
            reported: vec![0; n],
            over: vec![false; n],
            int_pend: (0..n).map(|_| None).collect(),
            byte_pend: (0..n).map(|_| None).collect(),
            raw_ints: vec![false; n],
            agg: (0..n).map(|_| HashMap::new()).collect(),
            scratch: Default::default(),
            open: Default::default(),
            split: jobs.iter().map(|j| if j.split { SplitState::Exact } else { SplitState::Never }).collect(),
            want,
            switch_at,
        }
    }

    #[inline]
    fn add_int(&mut self, j: usize, k: i64, n: u64) {
        if self.over[j] {
            if let Counter::Int(c) = &self.jobs[j].counter {
                c.add(self.int_pend[j].get_or_insert_with(|| c.pending()), k, n);
            }
        } else {
            self.ints[j].push(&self.st, k, n);
        }
    }

    #[inline]
    fn add(&mut self, j: usize, key: &[u8], n: u64) {
        if !self.over[j] && self.bytes[j].push(&self.st, key, n) {
            return;
        }
        if !self.over[j] {
            // An arena reached 4 GiB: go to the counter as on overflow.
            self.jobs[j].byte_stage.account(usize::MAX / 2, 0);
            self.settle(j);
        }
        if let Counter::Bytes(c) = &self.jobs[j].counter {
            c.add(self.byte_pend[j].get_or_insert_with(|| c.pending()), Box::from(key), n);
        }
    }

    /// Add many byte keys: `key(i)` with count `count(i)`, for i in 0..n.
    fn add_many<'k>(&mut self, j: usize, n: usize, key: impl Fn(usize) -> &'k [u8], count: impl Fn(usize) -> u64) {
        let done = if self.over[j] { 0 } else { self.bytes[j].push_many(&self.st, n, &key, &count) };
        for i in done..n {
            // A dictionary's unused values (most of them, for a sample of its pages) are no keys.
            let c = count(i);
            if c > 0 {
                self.add(j, key(i), c);
            }
        }
    }

    /// Report staged bytes; on overflow move this thread's staged keys into the counter.
    fn settle(&mut self, j: usize) {
        if self.over[j] {
            return;
        }
        self.ints[j].maybe_compact(&self.st);
        self.bytes[j].maybe_compact();
        let job = &self.jobs[j];
        // Report the change of this thread's staged bytes (compaction can shrink them).
        let now = self.ints[j].bytes + self.bytes[j].bytes();
        let before = std::mem::replace(&mut self.reported[j], now);
        let stage_over = |grow: usize, shrink: usize| match &job.counter {
            Counter::Int(_) => job.int_stage.account(grow, shrink),
            Counter::Bytes(_) => job.byte_stage.account(grow, shrink),
            Counter::Wide(_) => false,
        };
        let over = if now >= before { stage_over(now - before, 0) } else { stage_over(0, before - now) };
        if over {
            self.over[j] = true;
            match &job.counter {
                Counter::Int(c) => self.ints[j].drain_into(c),
                Counter::Bytes(c) => self.bytes[j].drain_into(c),
                Counter::Wide(_) => {}
            }
        }
    }
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        for (j, job) in self.jobs.iter().enumerate() {
            if let SplitState::On(mut s) = std::mem::replace(&mut self.split[j], SplitState::Never) {
                // Past the memory budget the counter takes the keys, and the bounds no longer hold.
                s.failed |= self.over[j];
                job.splits.lock().unwrap_or_else(|e| e.into_inner()).push(s);
            }
            let over = self.over[j];
            match &job.counter {
                Counter::Int(c) => hand_over(std::mem::take(&mut self.ints[j]), over, &job.int_stage, c, self.int_pend[j].as_mut()),
                Counter::Bytes(c) => hand_over(std::mem::take(&mut self.bytes[j]), over, &job.byte_stage, c, self.byte_pend[j].as_mut()),
                Counter::Wide(_) => {}
            }
        }
    }
}

/// A finished thread's staged keys go to the stage, or into the counter once the stage has
/// overflowed; its counter buffer is flushed.
fn hand_over<B: StageBuf>(mut buf: B, over: bool, stage: &Stage<B>, c: &KeyCounter<B::Key>, pend: Option<&mut Pending<B::Key>>) {
    if over || stage.overflowed() {
        buf.drain_into(c);
    } else {
        stage.hand_in(buf);
    }
    if let Some(p) = pend {
        c.flush(p);
    }
}

/// Counts per dictionary index while consecutive batches share one dictionary.
#[derive(Default)]
struct DictTally {
    /// Smallest count recorded in the sample tally of a cluster.
    tally_min: u64,
    /// The unit is read in several clusters (whole pages) for the sample tallies: their counts
    /// are kept apart in `cluster` until each ends (see `end_cluster`).
    clustered: bool,
    values: Option<ArrayRef>,
    sig: (usize, usize, usize),
    counts: Vec<u64>,
    cluster: Vec<u64>,
    /// Rows with a NULL dictionary key, of the current cluster.
    nulls: u64,
}

impl DictTally {
    /// Count `array` by dictionary index if it is an Int32 dictionary of strings or binaries;
    /// a batch with a new dictionary first flushes the counts of the old one.
    fn try_add(&mut self, array: &ArrayRef, local: &mut Local, j: usize, nulls: &mut u64, tally: Option<&mut HashMap<Vec<u8>, u64>>) -> bool {
        let Some(dict) = array.as_dictionary_opt::<Int32Type>() else { return false };
        let values = dict.values();
        let sig = match values.data_type() {
            DataType::Utf8 => {
                let v = values.as_string::<i32>();
                (v.values().as_ptr() as usize, v.offsets().as_ptr() as usize, v.len())
            }
            DataType::Binary => {
                let v = values.as_binary::<i32>();
                (v.values().as_ptr() as usize, v.offsets().as_ptr() as usize, v.len())
            }
            _ => return false,
        };
        if self.values.is_some() && self.sig != sig {
            self.flush(local, j, nulls, tally);
        }
        if self.values.is_none() {
            self.values = Some(values.clone());
            self.sig = sig;
            self.counts.clear();
            self.counts.resize(values.len(), 0);
            if self.clustered {
                self.cluster.clear();
                self.cluster.resize(values.len(), 0);
            }
        }
        let keys = dict.keys();
        let n = self.counts.len();
        let clustered = self.clustered;
        let mut count = |k: usize| {
            self.counts[k] += 1;
            if clustered {
                self.cluster[k] += 1;
            }
        };
        if keys.null_count() == 0 {
            for &k in keys.values().iter() {
                let k = k as usize;
                if k < n {
                    count(k);
                }
            }
        } else {
            for k in keys.iter() {
                match k {
                    Some(k) if (k as usize) < n => count(k as usize),
                    _ => self.nulls += 1,
                }
            }
        }
        true
    }

    /// Value `i` of the dictionary (None for a NULL value).
    fn value(values: &ArrayRef, i: usize) -> Option<&[u8]> {
        if values.is_null(i) {
            return None;
        }
        Some(match values.data_type() {
            DataType::Utf8 => values.as_string::<i32>().value(i).as_bytes(),
            _ => values.as_binary::<i32>().value(i),
        })
    }

    /// The cluster's values into its sample tally (those of at least `tally_min` rows: only
    /// values above 0.02% of the cluster matter for the error bound of a top value), and its
    /// NULL rows into `nulls`. Without clusters, the unit is one, ended by `flush`.
    fn end_cluster(&mut self, nulls: &mut u64, mut tally: Option<&mut HashMap<Vec<u8>, u64>>) {
        let Some(values) = &self.values else { return };
        let counts = if self.clustered { &mut self.cluster } else { &mut self.counts };
        for (i, n) in counts.iter_mut().enumerate() {
            if *n == 0 {
                continue;
            }
            match Self::value(values, i) {
                Some(b) => {
                    if let Some(t) = tally.as_mut().filter(|_| *n >= self.tally_min) {
                        *t.entry_ref(b).or_insert(0) += *n;
                    }
                }
                None => *nulls += *n,
            }
            if self.clustered {
                *n = 0;
            }
        }
        *nulls += std::mem::take(&mut self.nulls);
    }

    /// Everything counted into the thread's keys, and the current cluster as `end_cluster`.
    fn flush(&mut self, local: &mut Local, j: usize, nulls: &mut u64, tally: Option<&mut HashMap<Vec<u8>, u64>>) {
        if self.values.is_none() {
            return;
        }
        self.end_cluster(nulls, tally);
        let Some(values) = self.values.take() else { return };
        for (i, &n) in self.counts.iter().enumerate() {
            if n > 0 {
                if let Some(b) = Self::value(&values, i) {
                    local.add(j, b, n);
                }
            }
        }
        self.counts.clear();
    }
}

/// Count a string or binary array that is not a plain dictionary: pre-aggregate the batch,
/// then hand each distinct value to the counter once. Returns the NULL rows.
fn count_bytes(array: &ArrayRef, local: &mut Local, j: usize, tally: Option<&mut HashMap<Vec<u8>, u64>>) -> std::result::Result<u64, String> {
    let mut batch: HashMap<&[u8], u64> = HashMap::new();
    let mut nulls = 0;
    each_bytes(array, &mut |b| match b {
        Some(b) => *batch.entry(b).or_insert(0) += 1,
        None => nulls += 1,
    })?;
    let mut tally = tally;
    for (k, n) in batch {
        if let Some(t) = tally.as_mut() {
            *t.entry(k.to_vec()).or_insert(0) += n;
        }
        local.add(j, k, n);
    }
    Ok(nulls)
}

/// The values of one key part in a batch, ready to be encoded row by row.
enum Atoms<'a> {
    I64(Vec<Option<i64>>),
    I128(Vec<Option<i128>>),
    Bytes(Vec<Option<&'a [u8]>>),
    Const(Atom),
}

#[derive(Debug, Clone)]
enum Atom {
    Null,
    I64(i64),
    I128(i128),
    Bytes(Vec<u8>),
}

impl<'a> Atoms<'a> {
    fn from_array(a: &'a ArrayRef, ty: KeyType) -> std::result::Result<Self, String> {
        Ok(match ty {
            KeyType::String | KeyType::Binary => {
                let mut v = Vec::with_capacity(a.len());
                each_bytes(a, &mut |b| v.push(b))?;
                Atoms::Bytes(v)
            }
            KeyType::Decimal { precision, .. } if precision > 18 => {
                let mut v = Vec::with_capacity(a.len());
                each_i128(a, &mut |x| v.push(x))?;
                Atoms::I128(v)
            }
            _ => {
                let mut v = Vec::with_capacity(a.len());
                each_i64(a, ty, &mut |x| v.push(x))?;
                Atoms::I64(v)
            }
        })
    }

    fn encode(&self, row: usize, out: &mut Vec<u8>) -> bool {
        match self {
            Atoms::I64(v) => encode_atom(&v[row].map(Atom::I64).unwrap_or(Atom::Null), out),
            Atoms::I128(v) => encode_atom(&v[row].map(Atom::I128).unwrap_or(Atom::Null), out),
            Atoms::Bytes(v) => match v[row] {
                Some(b) => {
                    out.push(6);
                    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    out.extend_from_slice(b);
                    true
                }
                None => encode_atom(&Atom::Null, out),
            },
            Atoms::Const(a) => encode_atom(a, out),
        }
    }
}

/// Append an atom; returns false for NULL.
fn encode_atom(a: &Atom, out: &mut Vec<u8>) -> bool {
    match a {
        Atom::Null => {
            out.push(0);
            false
        }
        Atom::I64(v) => {
            out.push(3);
            out.extend_from_slice(&v.to_le_bytes());
            true
        }
        Atom::I128(v) => {
            out.push(8);
            out.extend_from_slice(&v.to_le_bytes());
            true
        }
        Atom::Bytes(b) => {
            out.push(6);
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
            true
        }
    }
}

fn atom_of(v: &Value, ty: KeyType) -> Atom {
    match v {
        Value::Null => Atom::Null,
        Value::Bool(b) => Atom::I64(*b as i64),
        Value::Int(i) | Value::Date(i) => Atom::I64(*i as i64),
        Value::Long(l) | Value::Timestamp(l) => Atom::I64(*l),
        Value::Float(f) => Atom::I64(canonical_f32(*f).to_bits() as i64),
        Value::Double(d) => Atom::I64(canonical_f64(*d).to_bits() as i64),
        Value::Str(s) => Atom::Bytes(s.as_bytes().to_vec()),
        Value::Binary(b) => Atom::Bytes(b.clone()),
        Value::Decimal { unscaled, precision, .. } => {
            let _ = ty;
            if *precision > 18 {
                Atom::I128(*unscaled)
            } else {
                Atom::I64(*unscaled as i64)
            }
        }
    }
}

fn decode_key(mut buf: &[u8], types: &[KeyType]) -> Vec<Value> {
    let mut out = Vec::with_capacity(types.len());
    for &t in types {
        if buf.is_empty() {
            out.push(Value::Null);
            continue;
        }
        let tag = buf[0];
        buf = &buf[1..];
        let v = match tag {
            3 if buf.len() >= 8 => {
                let k = i64::from_le_bytes(buf[..8].try_into().unwrap_or([0; 8]));
                buf = &buf[8..];
                Value::from_i64_key(k, t)
            }
            8 if buf.len() >= 16 => {
                let k = i128::from_le_bytes(buf[..16].try_into().unwrap_or([0; 16]));
                buf = &buf[16..];
                let (precision, scale) = match t {
                    KeyType::Decimal { precision, scale } => (precision, scale),
                    _ => (38, 0),
                };
                Value::Decimal { unscaled: k, precision, scale }
            }
            6 if buf.len() >= 4 => {
                let len = (u32::from_le_bytes(buf[..4].try_into().unwrap_or([0; 4])) as usize).min(buf.len() - 4);
                let v = bytes_value(&buf[4..4 + len], t);
                buf = &buf[4 + len..];
                v
            }
            _ => Value::Null,
        };
        out.push(v);
    }
    out
}

pub(crate) fn bytes_value(b: &[u8], t: KeyType) -> Value {
    match t {
        KeyType::String => Value::Str(String::from_utf8_lossy(b).into_owned()),
        _ => Value::Binary(b.to_vec()),
    }
}

fn count_encoded(cols: &[Atoms], rows: usize, local: &mut Local, j: usize, tally: Option<&mut HashMap<Vec<u8>, u64>>) -> u64 {
    let mut batch: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut nulls = 0;
    let mut buf = Vec::with_capacity(32);
    for row in 0..rows {
        buf.clear();
        let mut any_null = false;
        for col in cols {
            any_null |= !col.encode(row, &mut buf);
        }
        if any_null {
            nulls += 1;
            // A single NULL (a partition column) is reported apart, like any one-column NULL.
            if cols.len() == 1 {
                continue;
            }
        }
        match batch.get_mut(buf.as_slice()) {
            Some(n) => *n += 1,
            None => {
                batch.insert(buf.clone(), 1);
            }
        }
    }
    let mut tally = tally;
    for (k, n) in batch {
        if let Some(t) = tally.as_mut() {
            *t.entry(k.clone()).or_insert(0) += n;
        }
        local.add(j, &k, n);
    }
    nulls
}

/// Call `f` with each row's 64-bit counting key (None for NULL).
pub(crate) fn each_i64(a: &ArrayRef, ty: KeyType, f: &mut dyn FnMut(Option<i64>)) -> std::result::Result<(), String> {
    macro_rules! prim {
        ($t:ty, $conv:expr) => {{
            let arr = a.as_primitive::<$t>();
            let conv = $conv;
            if arr.null_count() == 0 {
                for &v in arr.values().iter() {
                    f(Some(conv(v)));
                }
            } else {
                for v in arr.iter() {
                    f(v.map(conv));
                }
            }
        }};
    }
    match a.data_type() {
        DataType::Null => (0..a.len()).for_each(|_| f(None)),
        DataType::Boolean => a.as_boolean().iter().for_each(|v| f(v.map(|b| b as i64))),
        DataType::Int8 => prim!(Int8Type, |v: i8| v as i64),
        DataType::Int16 => prim!(Int16Type, |v: i16| v as i64),
        DataType::Int32 => prim!(Int32Type, |v: i32| v as i64),
        DataType::Int64 => prim!(Int64Type, |v: i64| v),
        DataType::UInt8 => prim!(UInt8Type, |v: u8| v as i64),
        DataType::UInt16 => prim!(UInt16Type, |v: u16| v as i64),
        DataType::UInt32 => prim!(UInt32Type, |v: u32| v as i64),
        DataType::Float32 => prim!(Float32Type, |v: f32| canonical_f32(v).to_bits() as i64),
        DataType::Float64 => prim!(Float64Type, |v: f64| canonical_f64(v).to_bits() as i64),
        DataType::Date32 => prim!(Date32Type, |v: i32| v as i64),
        DataType::Date64 => prim!(Date64Type, |v: i64| v.div_euclid(86_400_000)),
        DataType::Timestamp(TimeUnit::Second, _) => prim!(TimestampSecondType, |v: i64| v.saturating_mul(1_000_000)),
        DataType::Timestamp(TimeUnit::Millisecond, _) => prim!(TimestampMillisecondType, |v: i64| v.saturating_mul(1_000)),
        DataType::Timestamp(TimeUnit::Microsecond, _) => prim!(TimestampMicrosecondType, |v: i64| v),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => prim!(TimestampNanosecondType, |v: i64| v.div_euclid(1_000)),
        DataType::Decimal32(..) => prim!(Decimal32Type, |v: i32| v as i64),
        DataType::Decimal64(..) => prim!(Decimal64Type, |v: i64| v),
        DataType::Decimal128(..) => prim!(Decimal128Type, |v: i128| v as i64),
        DataType::Decimal256(..) => {
            for v in a.as_primitive::<Decimal256Type>().iter() {
                f(v.and_then(|x| x.to_i128()).map(|x| x as i64));
            }
        }
        DataType::Dictionary(_, _) => {
            let dict = a.as_any_dictionary();
            let mut values = Vec::with_capacity(dict.values().len());
            each_i64(dict.values(), ty, &mut |v| values.push(v))?;
            let keys = dict.keys();
            for (i, k) in dict.normalized_keys().into_iter().enumerate() {
                f(if keys.is_null(i) { None } else { values.get(k).copied().flatten() });
            }
        }
        other => return Err(format!("type {other} cannot be counted as {}", ty.spark_name())),
    }
    Ok(())
}

pub(crate) fn each_i128(a: &ArrayRef, f: &mut dyn FnMut(Option<i128>)) -> std::result::Result<(), String> {
    match a.data_type() {
        DataType::Decimal128(..) => a.as_primitive::<Decimal128Type>().iter().for_each(|v| f(v)),
        DataType::Decimal256(..) => {
            for v in a.as_primitive::<Decimal256Type>().iter() {
                f(v.and_then(|x| x.to_i128()));
            }
        }
        DataType::UInt64 => a.as_primitive::<UInt64Type>().iter().for_each(|v| f(v.map(|x| x as i128))),
        DataType::Dictionary(_, _) => {
            let dict = a.as_any_dictionary();
            let mut values = Vec::with_capacity(dict.values().len());
            each_i128(dict.values(), &mut |v| values.push(v))?;
            let keys = dict.keys();
            for (i, k) in dict.normalized_keys().into_iter().enumerate() {
                f(if keys.is_null(i) { None } else { values.get(k).copied().flatten() });
            }
        }
        other => return Err(format!("type {other} cannot be counted as a wide decimal")),
    }
    Ok(())
}

pub(crate) fn each_bytes<'a>(a: &'a ArrayRef, f: &mut dyn FnMut(Option<&'a [u8]>)) -> std::result::Result<(), String> {
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().iter().for_each(|v| f(v.map(str::as_bytes))),
        DataType::LargeUtf8 => a.as_string::<i64>().iter().for_each(|v| f(v.map(str::as_bytes))),
        DataType::Utf8View => a.as_string_view().iter().for_each(|v| f(v.map(str::as_bytes))),
        DataType::Binary => a.as_binary::<i32>().iter().for_each(|v| f(v)),
        DataType::LargeBinary => a.as_binary::<i64>().iter().for_each(|v| f(v)),
        DataType::BinaryView => a.as_binary_view().iter().for_each(|v| f(v)),
        DataType::FixedSizeBinary(_) => a.as_fixed_size_binary().iter().for_each(|v| f(v)),
        DataType::Dictionary(_, _) => {
            let dict = a.as_any_dictionary();
            let mut values: Vec<Option<&'a [u8]>> = Vec::with_capacity(dict.values().len());
            each_bytes(dict.values(), &mut |v| values.push(v))?;
            let keys = dict.keys();
            for (i, k) in dict.normalized_keys().into_iter().enumerate() {
                f(if keys.is_null(i) { None } else { values.get(k).copied().flatten() });
            }
        }
        other => return Err(format!("type {other} cannot be counted as a string or binary")),
    }
    Ok(())
}

/// Half-width of the 95% interval of a share estimated from a sample, from the spread of the
/// value's share across the sampled units (cluster sampling for whole row groups; for row
/// selections, the larger of the stratified one within row groups and the spread between the
/// row groups read).
fn share_error(key: &[Value], types: &[KeyType], tallies: &[&UnitTally], share: f64, info: &SampleInfo, n: u64) -> f64 {
    let enc = tally_key(key, types);
    // A single-column NULL is tallied apart, as each unit's NULL rows.
    let count_in = |t: &UnitTally| -> f64 {
        match &enc {
            Some(k) => t.counts.get(k).copied().unwrap_or(0) as f64,
            None => t.nulls as f64,
        }
    };
    let n = n.max(1) as f64;
    let binomial = (share * (1.0 - share) / n).sqrt();
    // The half-width from the spread of the share over `units` taken as clusters (0 under
    // two): Student's t with m - 1 degrees of freedom for m of them, `fpc` the finite
    // population correction.
    let cluster = |units: &[&UnitTally], fpc: f64| -> f64 {
        let m = units.len();
        if m < 2 {
            return 0.0;
        }
        let nbar = n / m as f64;
        let ss: f64 = units.iter().map(|t| (count_in(t) - share * t.rows as f64).powi(2)).sum();
        t975(m - 1) * (fpc.max(0.0) * ss / (m as f64 - 1.0) / (m as f64 * nbar * nbar)).sqrt()
    };
    if info.method.starts_with("whole") {
        let (read, all) = match (info.pages_read, info.pages_total) {
            (Some(r), Some(a)) => (r, a),
            _ => (info.row_groups_read, info.row_groups_total),
        };
        let fpc = 1.0 - read as f64 / all.max(1) as f64;
        let t = if tallies.len() < 2 { 1.96 } else { t975(tallies.len() - 1) };
        return cluster(tallies, fpc).max(t * binomial);
    }
    let se = {
        let total: f64 = tallies.iter().map(|t| t.table_rows as f64).sum::<f64>().max(1.0);
        let var: f64 = tallies
            .iter()
            .filter(|t| t.rows > 0)
            .map(|t| {
                let w = t.table_rows as f64 / total;
                let ph = count_in(t) / t.rows as f64;
                let f = t.rows as f64 / t.table_rows.max(1) as f64;
                w * w * ph * (1.0 - ph) / t.rows as f64 * (1.0 - f)
            })
            .sum();
        var.sqrt().max(binomial)
    };
    // The runs fall at random across the row groups, and a run's rows are often alike (sorted
    // or clustered data): besides the spread within each row group, the spread between the
    // row groups read (each the cluster of its drawn runs) bounds the error. The larger is used.
    let read: Vec<&UnitTally> = tallies.iter().copied().filter(|t| t.rows > 0).collect();
    (1.96 * se).max(cluster(&read, 1.0 - info.fraction))
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (the half-width of a 95%
/// interval in standard errors): a table to 30, then the Cornish-Fisher expansion (within
/// 0.001 of the exact value there).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
        2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        _ => {
            let (z, d) = (1.959964f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * d) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

/// The key as the per-unit tallies store it (None for a single NULL, which is tallied apart).
fn tally_key(key: &[Value], types: &[KeyType]) -> Option<Vec<u8>> {
    if key.len() == 1 {
        let t = types[0];
        return match atom_of(&key[0], t) {
            Atom::Null => None,
            Atom::I64(v) => Some(v.to_le_bytes().to_vec()),
            Atom::I128(v) => Some(v.to_le_bytes().to_vec()),
            Atom::Bytes(b) => Some(b),
        };
    }
    let mut buf = Vec::new();
    for (v, t) in key.iter().zip(types) {
        encode_atom(&atom_of(v, *t), &mut buf);
    }
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::t975;

    #[test]
    fn student_t_quantiles() {
        // Exact values (R's qt(0.975, df)) and the normal limit.
        for (df, want) in [(1, 12.7062), (3, 3.1824), (9, 2.2622), (30, 2.0423), (31, 2.0395), (40, 2.0211), (60, 2.0003), (120, 1.9799), (1000, 1.9623)] {
            assert!((t975(df) - want).abs() < 1e-3, "df {df}: {} vs {want}", t975(df));
        }
        assert!(t975(0).is_infinite());
        assert!((t975(1_000_000) - 1.95997).abs() < 1e-4);
        // Never below the normal quantile, and falling with df.
        for df in 1..500 {
            assert!(t975(df + 1) < t975(df) && t975(df + 1) > 1.959);
        }
    }
}
