//! Count the values of key columns: exact by default, or over a sample.
//!
//! One pass chooses the units (`units`), reads them in parallel, one `Local` per worker thread
//! (`reader`), then turns each key's counts (`Job::counts`) into its profile: the top values
//! with their shares, scaled up from a sample with their error bounds (`stats`). A split count
//! that cannot prove its top values is counted again, every value exactly.

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use rayon::prelude::*;

use super::job::{fields_read, Counts, Job};
use super::local::Local;
use super::reader::UnitReader;
use super::split::SWITCH_KEYS;
use super::stats::share_error;
use super::tally::UnitTally;
use super::units::{choose_units, Unit};
use super::{ColumnProfile, KeyCount, KeySpec, ProfileOptions, SampleInfo};
use crate::error::{Error, Result};
use crate::progress::Step;
use crate::table::Table;
use crate::value::Value;

/// Count every key of `specs` over `table`.
pub fn profile(
    table: &Table,
    specs: &[KeySpec],
    opts: &ProfileOptions,
) -> Result<Vec<ColumnProfile>> {
    table.files_here()?;
    let split = !opts.exact_distinct && opts.top > 0 && opts.top < 200;
    match profile_pass(table, specs, opts, split)? {
        Some(out) => Ok(out),
        // The split count could not prove its top values: count again, every value exactly.
        None => profile_pass(table, specs, opts, false)?
            .ok_or_else(|| Error::Internal("exact count left undecided".into())),
    }
}

/// One pass over the table; `None` when a split count (see `split`) could not prove its top.
fn profile_pass(
    table: &Table,
    specs: &[KeySpec],
    opts: &ProfileOptions,
    split: bool,
) -> Result<Option<Vec<ColumnProfile>>> {
    let budget = opts.memory / specs.len().max(1);
    let mut jobs = Job::for_specs(specs, budget, split);
    let fields = fields_read(specs);
    let (units, sample) = choose_units(table, opts, fields.first().map(String::as_str));
    if sample.is_none() {
        let threads = rayon::current_num_threads().max(1);
        jobs.iter_mut().for_each(|j| j.count_narrow_range(table, threads, budget));
    }
    // A thread's exact table may hold this many values before its chunks are split: none for
    // a sample, whose few row groups would otherwise be counted mostly into that table.
    let switch_at = if sample.is_some() { 0 } else { SWITCH_KEYS };
    let rows_read: u64 = units.iter().map(|u| u.rows_read()).sum();
    let bar = opts.progress.start(Step::CountingRows { remote: table.in_store() }, rows_read);
    let tally = opts.sample.is_some() && sample.is_some();
    let walked = sample.as_ref().and_then(|s| s.pages_column.as_deref());
    let want = if opts.top == 0 { usize::MAX } else { opts.top + 1 };
    let reader = UnitReader::new(table, &fields, &jobs, tally, walked, bar.as_ref());
    let tallies = read_units(&reader, &units, want, switch_at)?;
    bar.finish();

    let read = Read { rows: table.rows(), rows_read, sample: sample.as_ref(), tallies };
    let mut out = Vec::new();
    for (j, (job, spec)) in jobs.into_iter().zip(specs).enumerate() {
        let nulls = job.nulls.load(Ordering::Relaxed);
        let (counts, spilled) = job.counts(want)?;
        table.stats.spill(spilled);
        let Some(counts) = counts else { return Ok(None) };
        out.push(read.column_profile(spec, j, nulls, counts, opts.top));
    }
    Ok(Some(out))
}

/// Every unit read in parallel, each worker thread into its own `Local`; per unit, per
/// cluster, per job, its tally.
fn read_units(
    reader: &UnitReader,
    units: &[Unit],
    want: usize,
    switch_at: usize,
) -> Result<Vec<Vec<UnitTally>>> {
    let locals: Vec<Mutex<Local>> = (0..rayon::current_num_threads().max(1))
        .map(|_| Mutex::new(Local::new(reader.jobs(), want, switch_at)))
        .collect();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let tallies = std::thread::scope(|scope| {
        // Meanwhile, have the kernel read ahead what the units will read, or the store's
        // client fetch it: then the units are taken in order, as it fetches them.
        scope.spawn(|| reader.advise(units, &stop));
        let read = |unit: &Unit| {
            // One Local per worker thread, so that each thread stages (and compacts) its keys
            // in one place; the lock is never contended.
            let slot = rayon::current_thread_index().unwrap_or(0) % locals.len();
            let mut guard = locals[slot].lock().unwrap_or_else(|e| e.into_inner());
            let path = &reader.file(unit).path;
            crate::guard::no_reader_panic(|| reader.read(unit, &mut guard))
                .map_err(|p| {
                    Error::bad_file(
                        path,
                        format!("corrupt data in row group {}: {p}", unit.row_group),
                    )
                })?
                .map_err(|e| match e {
                    Error::BadFile { .. } => e,
                    other => {
                        Error::bad_file(path, format!("row group {}: {other}", unit.row_group))
                    }
                })
        };
        let out = if reader.is_remote() {
            let mut done: Vec<(usize, Result<Vec<Vec<UnitTally>>>)> =
                units.iter().enumerate().par_bridge().map(|(i, u)| (i, read(u))).collect();
            done.sort_by_key(|d| d.0);
            done.into_iter().map(|d| d.1).collect::<Result<Vec<Vec<Vec<UnitTally>>>>>()
        } else {
            units.par_iter().map(read).collect::<Result<Vec<Vec<Vec<UnitTally>>>>>()
        };
        stop.store(true, Ordering::Relaxed);
        out
    });
    crate::table::store::end_ahead();
    let tallies = tallies?.into_iter().flatten().collect();
    // Hand the staged keys in (Local's drop) before they are counted.
    drop(locals);
    Ok(tallies)
}

/// What a pass read: the table's rows, the rows read, how they were sampled, and the units'
/// tallies (per unit cluster, per job).
struct Read<'a> {
    rows: u64,
    rows_read: u64,
    sample: Option<&'a SampleInfo>,
    tallies: Vec<Vec<UnitTally>>,
}

impl Read<'_> {
    /// The profile of key `spec` (job `j`) from its counts and `nulls` NULL rows read; `top`
    /// keys shown (0: all).
    fn column_profile(
        &self,
        spec: &KeySpec,
        j: usize,
        nulls: u64,
        counts: Counts,
        top: usize,
    ) -> ColumnProfile {
        let scale =
            if self.rows_read == 0 { 1.0 } else { self.rows as f64 / self.rows_read as f64 };
        let ranked = ranked(counts.top, nulls, spec.columns.len() == 1, top);
        let types = spec.types();
        let tallies: Vec<&UnitTally> = self.tallies.iter().map(|t| &t[j]).collect();
        let top = ranked
            .into_iter()
            .map(|(key, n)| {
                let share = super::share(n, self.rows_read);
                match self.sample {
                    None => {
                        KeyCount { key, count: n, sample_count: None, share, share_error: None }
                    }
                    Some(info) => {
                        let err = share_error(&key, &types, &tallies, share, info, self.rows_read);
                        KeyCount {
                            key,
                            count: (n as f64 * scale).round() as u64,
                            sample_count: Some(n),
                            share,
                            share_error: Some(err),
                        }
                    }
                }
            })
            .collect();
        let (nulls, distinct_exact) = match self.sample {
            None => (nulls, counts.distinct_exact),
            // From a sample, the distinct count is a lower bound: not an estimate of the table's.
            Some(_) => ((nulls as f64 * scale).round() as u64, false),
        };
        ColumnProfile {
            spec: spec.clone(),
            rows: self.rows,
            rows_read: self.rows_read,
            nulls,
            distinct: counts.distinct,
            distinct_exact,
            distinct_estimate: !counts.distinct_exact,
            counts_exact: counts.counts_exact && self.sample.is_none(),
            count_error: counts.error,
            top,
            sample: self.sample.cloned(),
        }
    }
}

/// The `top` most frequent keys (0: all), NULL among them (a single column's `nulls`): count
/// descending, NULL before a value of the same count.
fn ranked(
    mut keys: Vec<(Vec<Value>, u64)>,
    nulls: u64,
    single: bool,
    top: usize,
) -> Vec<(Vec<Value>, u64)> {
    if single && nulls > 0 {
        keys.push((vec![Value::Null], nulls));
    }
    keys.sort_by(|a, b| {
        b.1.cmp(&a.1).then_with(|| a.0[0].is_null().cmp(&b.0[0].is_null()).reverse())
    });
    if top > 0 {
        keys.truncate(top);
    }
    keys
}
