//! The tallies of a unit: in sample mode its rows, NULL rows and frequent values per cluster
//! (for the error bounds of `stats`); the counts of a string key per dictionary index while
//! batches share one dictionary (`DictTally`); and where a chunk counted from its pages goes
//! (`ChunkSink`).

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use hashbrown::HashMap;

use super::local::Local;
use super::pages::{Dict, Sink};

/// Per unit, in sample mode: rows read and the counts of its most frequent keys.
pub(crate) struct UnitTally {
    pub(crate) rows: u64,
    pub(crate) table_rows: u64,
    /// NULL rows (of a composite key: rows with a NULL part; only a single column's are used).
    pub(crate) nulls: u64,
    pub(crate) counts: HashMap<Vec<u8>, u64>,
    /// A fixed-width key's values, tallied by value: a unit of a million distinct keys would
    /// otherwise allocate a million byte keys (the sample cost more than the exact count). Its
    /// most frequent move into `counts` when the unit is done (`fold_ints`).
    pub(crate) ints: HashMap<i64, u64>,
}

impl UnitTally {
    pub(crate) fn new(rows: u64, table_rows: u64) -> UnitTally {
        UnitTally { rows, table_rows, nulls: 0, counts: HashMap::new(), ints: HashMap::new() }
    }

    /// The `n` most frequent values of `ints` (those above the n-th count, as `keep_top`
    /// keeps them) into `counts`, keyed as `tally_key` encodes an integer.
    pub(crate) fn fold_ints(&mut self, n: usize) {
        if self.ints.len() > n {
            let mut counts: Vec<u64> = self.ints.values().copied().collect();
            let (_, t, _) = counts.select_nth_unstable_by(n, |a, b| b.cmp(a));
            let t = *t;
            self.ints.retain(|_, c| *c > t);
        }
        for (k, c) in self.ints.drain() {
            *self.counts.entry(k.to_le_bytes().to_vec()).or_insert(0) += c;
        }
    }
}

/// Keep the entries of `m` above its `n`-th largest count.
pub(crate) fn keep_top(m: &mut HashMap<Vec<u8>, u64>, n: usize) {
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
pub(crate) struct ChunkSink<'a, 'b> {
    pub(crate) local: &'a mut Local<'b>,
    pub(crate) j: usize,
    /// The file of the chunk.
    pub(crate) file: usize,
    /// The unit's tallies, per cluster and job: the first cluster's from the chunk's counts,
    /// or (`paged`) each page's from `tally`.
    pub(crate) tallies: &'a mut [Vec<UnitTally>],
    /// Sample mode: values are tallied (NULLs always are).
    pub(crate) tally: bool,
    pub(crate) paged: bool,
    pub(crate) min: u64,
}

impl Sink for ChunkSink<'_, '_> {
    fn dict(&mut self, dict: &Dict) {
        self.local.add_dict(self.j, dict, self.file);
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

/// Counts per dictionary index while consecutive batches share one dictionary.
#[derive(Default)]
pub(crate) struct DictTally {
    /// Smallest count recorded in the sample tally of a cluster.
    pub(crate) tally_min: u64,
    /// The unit is read in several clusters (whole pages) for the sample tallies: their counts
    /// are kept apart in `cluster` until each ends (see `end_cluster`).
    pub(crate) clustered: bool,
    values: Option<ArrayRef>,
    sig: (usize, usize, usize),
    counts: Vec<u64>,
    cluster: Vec<u64>,
    /// Rows with a NULL dictionary key, of the current cluster.
    nulls: u64,
}

impl DictTally {
    pub(crate) fn new(tally_min: u64, clustered: bool) -> Self {
        DictTally { tally_min, clustered, ..Default::default() }
    }

    /// Count `array` by dictionary index if it is an Int32 dictionary of strings or binaries;
    /// a batch with a new dictionary first flushes the counts of the old one.
    pub(crate) fn try_add(
        &mut self,
        array: &ArrayRef,
        local: &mut Local,
        j: usize,
        nulls: &mut u64,
        tally: Option<&mut HashMap<Vec<u8>, u64>>,
    ) -> bool {
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
    pub(crate) fn end_cluster(
        &mut self,
        nulls: &mut u64,
        mut tally: Option<&mut HashMap<Vec<u8>, u64>>,
    ) {
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
    pub(crate) fn flush(
        &mut self,
        local: &mut Local,
        j: usize,
        nulls: &mut u64,
        tally: Option<&mut HashMap<Vec<u8>, u64>>,
    ) {
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
