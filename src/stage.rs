//! Exact counting by partitioned staging: the fast path of `profile`.
//!
//! Worker threads append keys to one of 256 buffers chosen by hash bits (fixed-width keys as
//! raw values or (key, count) pairs; byte keys into an arena), without touching any shared
//! table. When all input is read, each partition is counted on its own in a hash table small
//! enough to stay in cache, in parallel, and yields its distinct count and its top keys.
//! If the buffers outgrow the memory budget, everything staged goes to the bounded
//! `KeyCounter` instead (see `counter`), which then takes the rest of the input too.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use hashbrown::hash_table::{Entry, HashTable};
use rayon::prelude::*;

use crate::counter::{KeyCounter, Pending, TopK};

pub const PARTS: usize = 256;

type State = foldhash::quality::FixedState;

pub fn hasher() -> State {
    State::with_seed(0x0005_ca1e_d00d)
}

#[inline]
fn part_of(h: u64) -> usize {
    ((h >> 48) as usize) & (PARTS - 1)
}

/// A thread's staged keys of one kind, which can be handed to the bounded counter.
pub trait StageBuf {
    type Key: crate::counter::CountKey;
    fn drain_into(&mut self, c: &KeyCounter<Self::Key>);
}

impl StageBuf for IntBuf {
    type Key = i64;
    fn drain_into(&mut self, c: &KeyCounter<i64>) {
        IntBuf::drain_into(self, c)
    }
}

impl StageBuf for ByteBuf {
    type Key = Box<[u8]>;
    fn drain_into(&mut self, c: &KeyCounter<Box<[u8]>>) {
        ByteBuf::drain_into(self, c)
    }
}

/// One thread's staged fixed-width keys.
pub struct IntBuf {
    raw: Vec<Vec<i64>>,
    pairs: Vec<Vec<(i64, u64)>>,
    pub bytes: usize,
    compact_at: usize,
}

/// One thread's staged byte keys: per partition an arena and (hash, offset, length, count).
pub struct ByteBuf {
    arena: Vec<Vec<u8>>,
    ents: Vec<Vec<(u64, u32, u32, u64)>>,
    pub bytes: usize,
    compact_at: usize,
}

/// A thread's staged keys are aggregated in place when they pass this many bytes, and again
/// each time they double: repeated keys then cost memory once, unique keys are not re-sorted
/// over and over.
const COMPACT_AT: usize = 8 << 20;

impl Default for IntBuf {
    fn default() -> Self {
        IntBuf { raw: (0..PARTS).map(|_| Vec::new()).collect(), pairs: (0..PARTS).map(|_| Vec::new()).collect(), bytes: 0, compact_at: COMPACT_AT }
    }
}

impl Default for ByteBuf {
    fn default() -> Self {
        ByteBuf { arena: (0..PARTS).map(|_| Vec::new()).collect(), ents: (0..PARTS).map(|_| Vec::new()).collect(), bytes: 0, compact_at: COMPACT_AT }
    }
}

impl IntBuf {
    #[inline]
    pub fn push(&mut self, st: &State, k: i64, n: u64) {
        let p = part_of(st.hash_one(k));
        if n == 1 {
            self.raw[p].push(k);
            self.bytes += 8;
        } else {
            self.pairs[p].push((k, n));
            self.bytes += 16;
        }
    }
    /// Aggregate repeated keys in place once the buffer is large (see `COMPACT_AT`).
    pub fn maybe_compact(&mut self, st: &State) {
        if self.bytes < self.compact_at {
            return;
        }
        let mut bytes = 0;
        for p in 0..PARTS {
            let mut t: HashTable<(i64, u64)> = HashTable::with_capacity(self.pairs[p].len() + self.raw[p].len() / 2);
            let mut add = |k: i64, c: u64| add_int(&mut t, st, k, c);
            for k in std::mem::take(&mut self.raw[p]) {
                add(k, 1);
            }
            for (k, c) in std::mem::take(&mut self.pairs[p]) {
                add(k, c);
            }
            // Keys seen once stay raw (8 bytes), the others become (key, count) pairs.
            let (mut raw, mut pairs) = (Vec::new(), Vec::new());
            for (k, c) in t {
                if c == 1 {
                    raw.push(k);
                } else {
                    pairs.push((k, c));
                }
            }
            bytes += raw.len() * 8 + pairs.len() * 16;
            self.raw[p] = raw;
            self.pairs[p] = pairs;
        }
        // Mostly distinct keys: compacting again would cost time and save little.
        self.compact_at = if bytes * 4 > self.bytes * 3 { usize::MAX } else { (bytes * 2).max(COMPACT_AT) };
        self.bytes = bytes;
    }

    pub fn drain_into(&mut self, c: &KeyCounter<i64>) {
        let mut pend: Pending<i64> = c.pending();
        for v in self.raw.iter_mut() {
            for k in v.drain(..) {
                c.add(&mut pend, k, 1);
            }
            *v = Vec::new();
        }
        for v in self.pairs.iter_mut() {
            for (k, n) in v.drain(..) {
                c.add(&mut pend, k, n);
            }
            *v = Vec::new();
        }
        c.flush(&mut pend);
        self.bytes = 0;
    }
}

impl ByteBuf {
    /// Returns false when the partition's arena would pass 4 GiB (the caller overflows).
    #[inline]
    pub fn push(&mut self, st: &State, k: &[u8], n: u64) -> bool {
        let h = st.hash_one(k);
        let p = part_of(h);
        let arena = &mut self.arena[p];
        let off = arena.len();
        if off + k.len() > u32::MAX as usize {
            return false;
        }
        arena.extend_from_slice(k);
        self.ents[p].push((h, off as u32, k.len() as u32, n));
        self.bytes += k.len() + 24;
        true
    }
    /// Aggregate repeated keys in place once the buffer is large (see `COMPACT_AT`).
    pub fn maybe_compact(&mut self) {
        if self.bytes < self.compact_at {
            return;
        }
        let mut bytes = 0;
        for p in 0..PARTS {
            let arena = std::mem::take(&mut self.arena[p]);
            let ents = std::mem::take(&mut self.ents[p]);
            let mut t: HashTable<(u64, u32, u32, u64)> = HashTable::with_capacity(ents.len() / 4 + 16);
            let mut new_arena = Vec::new();
            for (h, off, len, c) in ents {
                let k = &arena[off as usize..(off + len) as usize];
                match t.entry(h, |e| e.2 == len && &new_arena[e.1 as usize..(e.1 + e.2) as usize] == k, |e| e.0) {
                    Entry::Occupied(mut o) => o.get_mut().3 += c,
                    Entry::Vacant(v) => {
                        let o = new_arena.len() as u32;
                        new_arena.extend_from_slice(k);
                        v.insert((h, o, len, c));
                    }
                }
            }
            self.ents[p] = t.into_iter().collect();
            bytes += new_arena.len() + self.ents[p].len() * 24;
            self.arena[p] = new_arena;
        }
        self.compact_at = if bytes * 4 > self.bytes * 3 { usize::MAX } else { (bytes * 2).max(COMPACT_AT) };
        self.bytes = bytes;
    }

    pub fn drain_into(&mut self, c: &KeyCounter<Box<[u8]>>) {
        let mut pend: Pending<Box<[u8]>> = c.pending();
        for p in 0..PARTS {
            let arena = std::mem::take(&mut self.arena[p]);
            for (_, off, len, n) in std::mem::take(&mut self.ents[p]) {
                c.add(&mut pend, Box::from(&arena[off as usize..(off + len) as usize]), n);
            }
        }
        c.flush(&mut pend);
        self.bytes = 0;
    }
}

/// The staged keys of one counted column, shared by all threads.
pub struct Stage<B> {
    handed_in: Mutex<Vec<B>>,
    bytes: AtomicUsize,
    budget: usize,
    overflow: AtomicBool,
}

impl<B> Stage<B> {
    pub fn new(budget: usize) -> Self {
        Stage { handed_in: Mutex::new(Vec::new()), bytes: AtomicUsize::new(0), budget, overflow: AtomicBool::new(false) }
    }
    pub fn overflowed(&self) -> bool {
        self.overflow.load(Ordering::Relaxed)
    }
    /// Account `grow` more and `shrink` fewer staged bytes; true once the budget was exceeded.
    pub fn account(&self, grow: usize, shrink: usize) -> bool {
        if shrink > 0 {
            self.bytes.fetch_sub(shrink.min(self.bytes.load(Ordering::Relaxed)), Ordering::Relaxed);
        }
        let total = self.bytes.fetch_add(grow, Ordering::Relaxed).saturating_add(grow);
        if total > self.budget {
            self.overflow.store(true, Ordering::Relaxed);
        }
        self.overflowed()
    }
    pub fn hand_in(&self, b: B) {
        self.handed_in.lock().unwrap_or_else(|e| e.into_inner()).push(b);
    }
    pub fn take(self) -> Vec<B> {
        self.handed_in.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// Top keys (count descending, key ascending) and the exact distinct count.
pub struct Counted<K> {
    pub top: Vec<(K, u64)>,
    pub distinct: u64,
}


/// Top `want` of a table's entries without sorting all of them.
fn top_of<K: Ord>(entries: impl Iterator<Item = (K, u64)>, want: usize) -> Vec<(K, u64)> {
    let mut top = TopK::new(want);
    entries.for_each(|(k, c)| top.push(k, c));
    top.into_sorted()
}

/// Add `c` to key `k` of a partition's table.
#[inline]
fn add_int(t: &mut HashTable<(i64, u64)>, st: &State, k: i64, c: u64) {
    let h = st.hash_one(k);
    match t.entry(h, |e| e.0 == k, |e| st.hash_one(e.0)) {
        Entry::Occupied(mut o) => o.get_mut().1 += c,
        Entry::Vacant(v) => {
            v.insert((k, c));
        }
    }
}

pub fn count_ints(bufs: &[IntBuf], want: usize) -> Counted<i64> {
    let st = hasher();
    let per: Vec<(Vec<(i64, u64)>, u64)> = (0..PARTS)
        .into_par_iter()
        .map(|p| {
            let n: usize = bufs.iter().map(|b| b.raw[p].len() + b.pairs[p].len()).sum();
            let mut t: HashTable<(i64, u64)> = HashTable::with_capacity(n.min(1 << 22) / 2 + 16);
            let mut add = |k: i64, c: u64| add_int(&mut t, &st, k, c);
            for b in bufs {
                for &k in &b.raw[p] {
                    add(k, 1);
                }
                for &(k, c) in &b.pairs[p] {
                    add(k, c);
                }
            }
            let distinct = t.len() as u64;
            (top_of(t.into_iter(), want), distinct)
        })
        .collect();
    let distinct = per.iter().map(|x| x.1).sum();
    let all: Vec<(i64, u64)> = per.into_iter().flat_map(|x| x.0).collect();
    Counted { top: top_of(all.into_iter(), want), distinct }
}

pub fn count_bytes(bufs: &[ByteBuf], want: usize) -> Counted<Box<[u8]>> {
    let per: Vec<(Vec<(Box<[u8]>, u64)>, u64)> = (0..PARTS)
        .into_par_iter()
        .map(|p| {
            let n: usize = bufs.iter().map(|b| b.ents[p].len()).sum();
            let mut t: HashTable<(u64, &[u8], u64)> = HashTable::with_capacity(n.min(1 << 22) / 4 + 16);
            for b in bufs {
                let arena = &b.arena[p];
                for &(h, off, len, c) in &b.ents[p] {
                    let k = &arena[off as usize..(off + len) as usize];
                    match t.entry(h, |e| e.1 == k, |e| e.0) {
                        Entry::Occupied(mut o) => o.get_mut().2 += c,
                        Entry::Vacant(v) => {
                            v.insert((h, k, c));
                        }
                    }
                }
            }
            let distinct = t.len() as u64;
            (top_of(t.into_iter().map(|(_, k, c)| (k, c)), want).into_iter().map(|(k, c)| (Box::from(k), c)).collect(), distinct)
        })
        .collect();
    let distinct = per.iter().map(|x| x.1).sum();
    let all: Vec<(Box<[u8]>, u64)> = per.into_iter().flat_map(|x| x.0).collect();
    Counted { top: top_of(all.into_iter(), want), distinct }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_counts_are_exact_across_threads() {
        let st = hasher();
        let mut a = IntBuf::default();
        let mut b = IntBuf::default();
        for i in 0..10_000i64 {
            a.push(&st, i % 100, 1);
            b.push(&st, i % 7, 2);
        }
        let c = count_ints(&[a, b], 3);
        assert_eq!(c.distinct, 100);
        // 0..7 get 100 from a and 10000/7*2 from b.
        assert_eq!(c.top[0], (0, 100 + 2 * 1429));
        let mut x = ByteBuf::default();
        for s in ["a", "b", "a", "", "a"] {
            assert!(x.push(&st, s.as_bytes(), 1));
        }
        let c = count_bytes(&[x], 10);
        assert_eq!(c.distinct, 3);
        assert_eq!(c.top[0], (Box::from(&b"a"[..]), 3));
        assert_eq!(c.top[1], (Box::from(&b""[..]), 1));
    }

    #[test]
    fn compaction_keeps_counts_exact() {
        let st = hasher();
        // 2M pushes of 1000 distinct ints: 16 MB raw, compacted at 8 MB.
        let mut a = IntBuf::default();
        for i in 0..2_000_000i64 {
            a.push(&st, i % 1000, 1);
            a.maybe_compact(&st);
        }
        assert!(a.bytes <= COMPACT_AT && a.compact_at == COMPACT_AT, "{} bytes staged", a.bytes);
        let c = count_ints(&[a], 2);
        assert_eq!(c.distinct, 1000);
        assert_eq!(c.top, vec![(0, 2000), (1, 2000)]);
        // Mostly distinct keys: one compaction, then no more.
        let mut u = IntBuf::default();
        for i in 0..1_500_000i64 {
            u.push(&st, i, 1);
            u.maybe_compact(&st);
        }
        assert_eq!(u.compact_at, usize::MAX);
        assert_eq!(count_ints(&[u], 1).distinct, 1_500_000);
        // Byte keys.
        let mut b = ByteBuf::default();
        for i in 0..400_000u32 {
            let k = format!("title-{:05}", i % 5000);
            assert!(b.push(&st, k.as_bytes(), 1 + (i % 2) as u64));
            b.maybe_compact();
        }
        assert!(b.bytes <= COMPACT_AT && b.compact_at == COMPACT_AT, "{} bytes staged", b.bytes);
        let c = count_bytes(&[b], 1);
        assert_eq!(c.distinct, 5000);
        // Odd i weigh 2: title-00001 (80 odd i) is the smallest key with the top count, 160.
        assert_eq!(c.top[0], (Box::from(&b"title-00001"[..]), 160));
    }
}
