//! One key's counting job: how its values are read (`Plan`), where they go (the stages of the
//! exact fast path, and the bounded counter past the memory budget), and, once every unit is
//! read, what was counted (`Job::counts`).

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use super::counter::{KeyCounter, Summary};
use super::dense::{self, DenseRange};
use super::encode::{bytes_value, decode_key};
use super::split::{Bounds, Split};
use super::stage::{self, ByteBuf, IntBuf, Stage};
use super::KeySpec;
use crate::error::{Error, Result};
use crate::table::{ColumnSource, Table};
use crate::value::{KeyType, Value};

/// Memory of the bounded counter (see `Job::for_specs`), whatever `--memory` says.
const COUNTER_MEMORY: usize = 2 << 30;

/// How a key is counted.
pub(crate) enum Plan {
    /// One fixed-width column: ints, dates, timestamps, floats (by canonical bits), decimals <= 18.
    Int { field: String, ty: KeyType },
    /// One decimal column wider than 18 digits.
    Wide { field: String },
    /// One string or binary column.
    Bytes { field: String },
    /// A composite key, or a partition column: each row encoded to bytes.
    Encoded { parts: Vec<Part> },
}

pub(crate) enum Part {
    Field(String, KeyType),
    Partition(usize, KeyType),
}

pub(crate) enum Counter {
    Int(KeyCounter<i64>),
    Wide(KeyCounter<i128>),
    Bytes(KeyCounter<Box<[u8]>>),
}

pub(crate) struct Job {
    pub(crate) spec: KeySpec,
    pub(crate) plan: Plan,
    pub(crate) counter: Counter,
    /// The fast exact path for fixed-width and byte keys; overflows into `counter`.
    pub(crate) int_stage: Stage<IntBuf>,
    pub(crate) byte_stage: Stage<ByteBuf>,
    pub(crate) nulls: AtomicU64,
    /// Dictionary chunks may be split once a thread's table is large (see `split`).
    pub(crate) split: bool,
    /// The threads' splits, handed in when they finish.
    pub(crate) splits: Mutex<Vec<Split>>,
    /// An integer key of a narrow range: its values counted by value (see `dense`).
    pub(crate) dense: Option<DenseRange>,
}

/// What a job counted (NULL rows apart).
pub(crate) struct Counts {
    /// The most frequent keys, at most the number asked for.
    pub(crate) top: Vec<(Vec<Value>, u64)>,
    pub(crate) distinct: u64,
    /// The distinct count is exact (false: a HyperLogLog estimate).
    pub(crate) distinct_exact: bool,
    pub(crate) counts_exact: bool,
    /// Counts may be up to this much below the truth (bounded memory), 0 when exact.
    pub(crate) error: u64,
}

impl Job {
    /// One job per key of `specs`, each with `budget` bytes for its staged keys (past it they
    /// spill); `split`: string keys may split.
    pub(crate) fn for_specs(specs: &[KeySpec], budget: usize, split: bool) -> Vec<Job> {
        // The bounded counter cannot spill: it takes decimals wider than 18 digits, and the
        // keys of a stage that overflowed (a byte partition of 4 GiB).
        let counted = budget.max(COUNTER_MEMORY);
        specs
            .iter()
            .map(|spec| {
                let plan = plan_for(spec);
                let counter = match &plan {
                    Plan::Int { .. } => Counter::Int(KeyCounter::new(counted)),
                    Plan::Wide { .. } => Counter::Wide(KeyCounter::new(counted)),
                    _ => Counter::Bytes(KeyCounter::new(counted)),
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
                    dense: None,
                }
            })
            .collect()
    }

    /// Count the values of an integer key by value if they span a narrow range (see `dense`)
    /// and `threads` arrays of it fit in `budget` (they take less memory than staging the same
    /// keys would); its stage keeps the rest of the budget.
    pub(crate) fn count_narrow_range(&mut self, table: &Table, threads: usize, budget: usize) {
        let Plan::Int { field, ty } = &self.plan else { return };
        if let Some(r) = dense::range_of(table, field, *ty, threads, budget) {
            self.int_stage = Stage::new(budget - r.len * threads);
            self.dense = Some(r);
        }
    }

    /// The `want` most frequent keys and the distinct count, once every unit is read and every
    /// thread has handed its keys in; None when a split count (see `split`) could not prove
    /// its top.
    /// The key's counts (None: a split count could not prove its top), and the bytes its
    /// staged keys spilled to temporary files.
    pub(crate) fn counts(self, want: usize) -> Result<(Option<Counts>, u64)> {
        let types = self.spec.types();
        let spilled = self.int_stage.spilled_bytes() + self.byte_stage.spilled_bytes();
        let counts = match self.counter {
            Counter::Int(c) => Some(int_counts(c, self.int_stage, types[0], want)?),
            Counter::Wide(c) => Some(wide_counts(c, types[0], want)),
            Counter::Bytes(c) => {
                byte_counts(c, self.byte_stage, self.splits, &self.plan, &types, want)?
            }
        };
        Ok((counts, spilled))
    }
}

/// The top-level fields the keys of `specs` read (by name; files may order them differently).
pub(crate) fn fields_read(specs: &[KeySpec]) -> Vec<String> {
    let mut fields: Vec<String> = Vec::new();
    for s in specs {
        for c in &s.columns {
            if matches!(c.source, ColumnSource::Data { .. }) && !fields.contains(&c.name) {
                fields.push(c.name.clone());
            }
        }
    }
    fields
}

fn plan_for(spec: &KeySpec) -> Plan {
    if spec.columns.len() == 1 {
        let c = &spec.columns[0];
        if let ColumnSource::Data { .. } = c.source {
            return match c.key_type {
                KeyType::String | KeyType::Binary => Plan::Bytes { field: c.name.clone() },
                KeyType::Decimal { precision, .. } if precision > 18 => {
                    Plan::Wide { field: c.name.clone() }
                }
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

/// A spill file that could not be written or read.
fn spill_error(source: std::io::Error) -> Error {
    Error::Spill { dir: super::spill::spill_dir(), source }
}

/// A fixed-width key: counted from the stage (spilled keys included), or by the counter once
/// the stage overflowed.
fn int_counts(
    c: KeyCounter<i64>,
    int_stage: Stage<IntBuf>,
    t: KeyType,
    want: usize,
) -> Result<Counts> {
    let over = int_stage.overflowed();
    let mut bufs = int_stage.take().map_err(spill_error)?;
    let key = |(k, n)| (vec![Value::from_i64_key(k, t)], n);
    if over {
        bufs.iter_mut().try_for_each(|b| b.drain_into(&c)).map_err(spill_error)?;
        let s = c.summary(want);
        Ok(Counts {
            top: s.top.into_iter().map(key).collect(),
            distinct: s.distinct,
            distinct_exact: s.exact,
            counts_exact: s.exact,
            error: s.error,
        })
    } else {
        let s = stage::count_ints(&bufs, want).map_err(spill_error)?;
        drop(bufs);
        Ok(Counts {
            top: s.top.into_iter().map(key).collect(),
            distinct: s.distinct,
            distinct_exact: true,
            counts_exact: true,
            error: 0,
        })
    }
}

/// A decimal wider than 18 digits: always through the counter.
fn wide_counts(c: KeyCounter<i128>, t: KeyType, want: usize) -> Counts {
    let s = c.summary(want);
    let (precision, scale) = match t {
        KeyType::Decimal { precision, scale } => (precision, scale),
        _ => (38, 0),
    };
    let top = s
        .top
        .into_iter()
        .map(|(k, n)| (vec![Value::Decimal { unscaled: k, precision, scale }], n))
        .collect();
    Counts {
        top,
        distinct: s.distinct,
        distinct_exact: s.exact,
        counts_exact: s.exact,
        error: s.error,
    }
}

/// A string, binary or composite key: from the stage (split or not), or by the counter once
/// the stage overflowed; the byte keys decoded to values.
fn byte_counts(
    c: KeyCounter<Box<[u8]>>,
    byte_stage: Stage<ByteBuf>,
    splits: Mutex<Vec<Split>>,
    plan: &Plan,
    types: &[KeyType],
    want: usize,
) -> Result<Option<Counts>> {
    let over = byte_stage.overflowed();
    let mut bufs = byte_stage.take().map_err(spill_error)?;
    let splits = splits.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut distinct_exact = true;
    let s = if !splits.is_empty() {
        distinct_exact = false;
        match split_summary(&mut bufs, splits, over, want).map_err(spill_error)? {
            Some(s) => s,
            None => return Ok(None),
        }
    } else if over {
        bufs.iter_mut().try_for_each(|b| b.drain_into(&c)).map_err(spill_error)?;
        c.summary(want)
    } else {
        let s = stage::count_bytes(&mut bufs, want).map_err(spill_error)?;
        Summary { top: s.top, distinct: s.distinct, exact: true, error: 0 }
    };
    drop(bufs);
    let top = s
        .top
        .into_iter()
        .map(|(k, n)| {
            let key = match plan {
                Plan::Bytes { .. } => vec![bytes_value(&k, types[0])],
                _ => decode_key(&k, types),
            };
            (key, n)
        })
        .collect();
    Ok(Some(Counts {
        top,
        distinct: s.distinct,
        distinct_exact: s.exact && distinct_exact,
        counts_exact: s.exact,
        error: s.error,
    }))
}

/// The top of a split count, if the bounds prove it (see `split`), and its estimated distinct
/// count.
fn split_summary(
    bufs: &mut [ByteBuf],
    splits: Vec<Split>,
    over: bool,
    want: usize,
) -> std::io::Result<Option<Summary<Box<[u8]>>>> {
    let bounds = Bounds::merge(splits);
    // A few more than shown, to check that none left out could pass the last.
    let listed = want.saturating_add(256);
    let s = stage::count_bytes(bufs, listed)?;
    let complete = s.top.len() as u64 == s.distinct;
    if over || !bounds.certain(&s.top, want, complete) {
        return Ok(None);
    }
    let mut hll = bounds.hll;
    for b in bufs.iter() {
        b.each_hash(|h| hll.add(h))?;
    }
    let mut top = s.top;
    top.truncate(want);
    Ok(Some(Summary { top, distinct: hll.estimate(), exact: true, error: 0 }))
}
