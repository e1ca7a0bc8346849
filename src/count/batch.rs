//! One key's rows of one Arrow batch, counted into the worker thread's keys (`Local`) and the
//! tally of the cluster they belong to: by the key's plan, a fixed-width column (pre-aggregated
//! while keys repeat), a wide decimal, a string or binary column (by dictionary index where it
//! can), or a composite key encoded row by row.

use arrow_array::ArrayRef;
use hashbrown::HashMap;

use super::arrays::{each_bytes, each_i128, each_i64, plain_i64};
use super::counter::{KeyCounter, Pending};
use super::encode::Atoms;
use super::local::Local;
use super::tally::{DictTally, UnitTally};
use crate::value::KeyType;

/// A unit's buffer of fixed-width keys for the shared counter; byte keys go through `Local`.
pub(crate) enum Pend {
    Wide(Pending<i128>),
    Local,
}

/// Where job `j`'s rows of one batch go: the thread's keys, and the tally of their cluster.
pub(crate) struct BatchSink<'a, 'l> {
    pub(crate) local: &'a mut Local<'l>,
    pub(crate) j: usize,
    /// The rows of the cluster.
    pub(crate) rows: u64,
    /// The cluster's NULL rows.
    pub(crate) nulls: &'a mut u64,
    /// The cluster's frequent values (sample mode only).
    pub(crate) values: Option<&'a mut HashMap<Vec<u8>, u64>>,
    /// The same for a fixed-width key, by value (sample mode only).
    pub(crate) ints: Option<&'a mut HashMap<i64, u64>>,
}

impl<'a, 'l> BatchSink<'a, 'l> {
    /// The cluster of `tally`, into which the batch's values are tallied if `tally`.
    pub(crate) fn new(
        local: &'a mut Local<'l>,
        j: usize,
        cluster: &'a mut UnitTally,
        tally: bool,
    ) -> Self {
        let UnitTally { counts, nulls, rows, ints, .. } = cluster;
        let (values, ints) = if tally { (Some(counts), Some(ints)) } else { (None, None) };
        BatchSink { local, j, rows: *rows, nulls, values, ints }
    }

    /// A fixed-width column of `rows` rows.
    pub(crate) fn ints(mut self, array: &ArrayRef, ty: KeyType, rows: usize) -> Result<(), String> {
        let (local, j) = (&mut *self.local, self.j);
        // Keys that do not repeat, with no NULL and nothing to tally: staged as a slice.
        if local.raw_ints[j] && self.values.is_none() {
            if let Some(keys) = plain_i64(array) {
                local.add_int_slice(j, keys);
                local.settle(j);
                return Ok(());
            }
        }
        let mut nulls = 0;
        let raw = local.raw_ints[j];
        let mut agg = std::mem::take(&mut local.agg[j]);
        each_i64(array, ty, &mut |v| match v {
            Some(k) => {
                if raw {
                    local.add_int(j, k, 1);
                } else {
                    *agg.entry(k).or_insert(0) += 1;
                }
                if let Some(t) = self.ints.as_mut() {
                    *t.entry(k).or_insert(0) += 1;
                }
            }
            None => nulls += 1,
        })?;
        if !raw {
            // Pre-aggregating a batch pays off only when keys repeat within it.
            if agg.len() * 2 > rows {
                local.raw_ints[j] = true;
            }
            for (k, n) in agg.drain() {
                local.add_int(j, k, n);
            }
        }
        local.agg[j] = agg;
        local.settle(j);
        *self.nulls += nulls;
        Ok(())
    }

    /// A decimal column wider than 18 digits, into the shared counter `c`.
    pub(crate) fn wide(
        mut self,
        array: &ArrayRef,
        c: &KeyCounter<i128>,
        p: &mut Pending<i128>,
    ) -> Result<(), String> {
        let mut nulls = 0;
        each_i128(array, &mut |v| match v {
            Some(k) => {
                c.add(p, k, 1);
                if let Some(t) = self.values.as_mut() {
                    *t.entry_ref(&k.to_le_bytes()[..]).or_insert(0) += 1;
                }
            }
            None => nulls += 1,
        })?;
        *self.nulls += nulls;
        Ok(())
    }

    /// A string or binary column: by dictionary index while batches share one dictionary
    /// (`dict`), else value by value. `last`: the cluster ends with this batch.
    pub(crate) fn strings(
        self,
        array: &ArrayRef,
        dict: &mut DictTally,
        last: bool,
    ) -> Result<(), String> {
        let BatchSink { local, j, rows, nulls: cluster_nulls, values: mut tally, .. } = self;
        // Sample mode: only values above 0.02% of the cluster matter for the error bound of a
        // top value.
        dict.tally_min = rows / 5000;
        let nulls = if dict.try_add(array, local, j, cluster_nulls, tally.as_deref_mut()) {
            0
        } else {
            dict.flush(local, j, cluster_nulls, tally.as_deref_mut());
            count_bytes(array, local, j, tally.as_deref_mut())?
        };
        if last && dict.clustered {
            dict.end_cluster(cluster_nulls, tally);
        }
        local.settle(j);
        *cluster_nulls += nulls;
        Ok(())
    }

    /// A composite key (or a partition column) of `rows` rows, its parts in `cols`.
    pub(crate) fn encoded(self, cols: &[Atoms], rows: usize) {
        let nulls = count_encoded(cols, rows, self.local, self.j, self.values);
        self.local.settle(self.j);
        *self.nulls += nulls;
    }
}

/// Count a string or binary array that is not a plain dictionary: pre-aggregate the batch,
/// then hand each distinct value to the counter once. Returns the NULL rows.
fn count_bytes(
    array: &ArrayRef,
    local: &mut Local,
    j: usize,
    tally: Option<&mut HashMap<Vec<u8>, u64>>,
) -> Result<u64, String> {
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

/// Count the composite keys of `rows` rows, each encoded from its parts `cols`: pre-aggregated,
/// then each distinct key handed to the counter once. Returns the NULL rows.
fn count_encoded(
    cols: &[Atoms],
    rows: usize,
    local: &mut Local,
    j: usize,
    tally: Option<&mut HashMap<Vec<u8>, u64>>,
) -> u64 {
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
