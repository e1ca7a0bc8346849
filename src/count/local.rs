//! A worker thread's share of the counting: its staged keys (see `stage`; past the memory
//! budget they spill to a file, see `spill`), or, once a job's stage has overflowed (a byte
//! partition of 4 GiB, a failed spill), its buffer for the bounded shared counter; its
//! split counts (see `split`), and the buffers and open file it reads with.

use hashbrown::HashMap;

use super::counter::{KeyCounter, Pending};
use super::job::{Counter, Job};
use super::pages::{Dict, LastFile, Scratch};
use super::split::Split;
use super::stage::{self, ByteBuf, IntBuf, Stage, StageBuf};

/// One worker thread's counting, per job. On drop the staged keys are handed in (or drained
/// into the counter) and buffers are flushed.
pub(crate) struct Local<'a> {
    jobs: &'a [Job],
    st: stage::State,
    ints: Vec<IntBuf>,
    bytes: Vec<ByteBuf>,
    /// This thread's staged bytes as last reported to the job's stage.
    reported: Vec<usize>,
    /// The job's stage overflowed: keys go to the shared counter.
    over: Vec<bool>,
    int_pend: Vec<Option<Pending<i64>>>,
    byte_pend: Vec<Option<Pending<Box<[u8]>>>>,
    /// Fixed-width keys: pre-aggregate each batch unless keys rarely repeat.
    pub(crate) raw_ints: Vec<bool>,
    pub(crate) agg: Vec<HashMap<i64, u64>>,
    /// Buffers for reading column chunks page by page.
    pub(crate) scratch: Scratch,
    /// The file this thread read last, kept open.
    pub(crate) open: LastFile,
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
    On(Split),
}

impl<'a> Local<'a> {
    pub(crate) fn new(jobs: &'a [Job], want: usize, switch_at: usize) -> Self {
        let n = jobs.len();
        Local {
            jobs,
            st: stage::hasher(),
            ints: jobs.iter().map(|j| IntBuf::new(j.dense)).collect(),
            bytes: jobs.iter().map(|_| ByteBuf::default()).collect(),
            reported: vec![0; n],
            over: vec![false; n],
            int_pend: (0..n).map(|_| None).collect(),
            byte_pend: (0..n).map(|_| None).collect(),
            // Keys counted by value are not worth pre-aggregating.
            raw_ints: jobs.iter().map(|j| j.dense.is_some()).collect(),
            agg: (0..n).map(|_| HashMap::new()).collect(),
            scratch: Default::default(),
            open: Default::default(),
            split: jobs
                .iter()
                .map(|j| if j.split { SplitState::Exact } else { SplitState::Never })
                .collect(),
            want,
            switch_at,
        }
    }

    #[inline]
    pub(crate) fn add_int(&mut self, j: usize, k: i64, n: u64) {
        if self.over[j] {
            if let Counter::Int(c) = &self.jobs[j].counter {
                c.add(self.int_pend[j].get_or_insert_with(|| c.pending()), k, n);
            }
        } else {
            self.ints[j].push(&self.st, k, n);
        }
    }

    /// Add each key of `keys` once.
    pub(crate) fn add_int_slice(&mut self, j: usize, keys: &[i64]) {
        if self.over[j] {
            keys.iter().for_each(|&k| self.add_int(j, k, 1));
        } else {
            self.ints[j].push_slice(&self.st, keys);
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, j: usize, key: &[u8], n: u64) {
        if !self.over[j] && self.bytes[j].push(&self.st, key, n) {
            return;
        }
        if !self.over[j] {
            // An arena reached 4 GiB: go to the counter.
            self.jobs[j].byte_stage.overflow();
            self.settle(j);
        }
        if let Counter::Bytes(c) = &self.jobs[j].counter {
            c.add(self.byte_pend[j].get_or_insert_with(|| c.pending()), Box::from(key), n);
        }
    }

    /// Add many byte keys: `key(i)` with count `count(i)`, for i in 0..n.
    pub(crate) fn add_many<'k>(
        &mut self,
        j: usize,
        n: usize,
        key: impl Fn(usize) -> &'k [u8],
        count: impl Fn(usize) -> u64,
    ) {
        let done =
            if self.over[j] { 0 } else { self.bytes[j].push_many(&self.st, n, &key, &count) };
        for i in done..n {
            // A dictionary's unused values (most of them, for a sample of its pages) are no keys.
            let c = count(i);
            if c > 0 {
                self.add(j, key(i), c);
            }
        }
    }

    /// A column chunk's dictionary, counted from its pages (of file number `file`): split (see
    /// `split`) or staged whole.
    pub(crate) fn add_dict(&mut self, j: usize, dict: &Dict, file: usize) {
        match &mut self.split[j] {
            SplitState::On(s) if !self.over[j] => {
                if !s.chunk(&self.st, dict, file, &mut self.bytes[j]) {
                    // An arena is full: as `Local::add` does, go to the counter.
                    s.failed = true;
                    self.jobs[j].byte_stage.overflow();
                    self.settle(j);
                }
            }
            state => {
                // Decide before this chunk would take the exact table past its size.
                if matches!(state, SplitState::Exact)
                    && !self.over[j]
                    && self.bytes[j].staged_keys() + dict.len() > self.switch_at
                {
                    let mut counts: Vec<u32> = dict.used().map(|(_, n)| n).collect();
                    self.split[j] = match Split::start(&mut counts, self.want) {
                        Some(s) => SplitState::On(s),
                        None => SplitState::Never,
                    };
                    if matches!(self.split[j], SplitState::On(_)) {
                        return self.add_dict(j, dict, file);
                    }
                }
                // A dictionary of which few values were counted (a sample of a few of its
                // pages): only those are hashed and staged.
                let idx: Vec<usize> = (0..dict.len()).filter(|&i| dict.rows(i) > 0).collect();
                if idx.len() * 2 < dict.len() {
                    self.add_many(
                        j,
                        idx.len(),
                        |x| dict.value(idx[x]),
                        |x| dict.rows(idx[x]) as u64,
                    );
                } else {
                    self.add_many(j, dict.len(), |i| dict.value(i), |i| dict.rows(i) as u64);
                }
            }
        }
    }

    /// Report staged bytes: past the memory budget they are spilled to a file (see `spill`);
    /// once the job's stage overflowed, this thread's keys go to the bounded counter.
    pub(crate) fn settle(&mut self, j: usize) {
        if self.over[j] {
            return;
        }
        self.ints[j].maybe_compact(&self.st);
        self.bytes[j].maybe_compact();
        let job = &self.jobs[j];
        let reported = &mut self.reported[j];
        self.over[j] = match &job.counter {
            Counter::Int(c) => job.int_stage.settle(&mut self.ints[j], reported, c),
            Counter::Bytes(c) => job.byte_stage.settle(&mut self.bytes[j], reported, c),
            Counter::Wide(_) => false,
        };
    }
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        for (j, job) in self.jobs.iter().enumerate() {
            if let SplitState::On(mut s) = std::mem::replace(&mut self.split[j], SplitState::Never)
            {
                // Past the memory budget the counter takes the keys, and the bounds no longer hold.
                s.failed |= self.over[j];
                job.splits.lock().unwrap_or_else(|e| e.into_inner()).push(s);
            }
            let over = self.over[j];
            match &job.counter {
                Counter::Int(c) => hand_over(
                    std::mem::take(&mut self.ints[j]),
                    over,
                    &job.int_stage,
                    c,
                    self.int_pend[j].as_mut(),
                ),
                Counter::Bytes(c) => hand_over(
                    std::mem::take(&mut self.bytes[j]),
                    over,
                    &job.byte_stage,
                    c,
                    self.byte_pend[j].as_mut(),
                ),
                Counter::Wide(_) => {}
            }
        }
    }
}

/// A finished thread's staged keys go to the stage, or into the counter once the stage has
/// overflowed; its counter buffer is flushed.
fn hand_over<B: StageBuf>(
    mut buf: B,
    over: bool,
    stage: &Stage<B>,
    c: &KeyCounter<B::Key>,
    pend: Option<&mut Pending<B::Key>>,
) {
    if over || stage.overflowed() {
        if let Err(e) = buf.drain_into(c) {
            stage.fail(e);
        }
    } else {
        stage.hand_in(buf);
    }
    if let Some(p) = pend {
        c.flush(p);
    }
}
