//! Exact counting by partitioned staging: the fast path of `profile`.
//!
//! Worker threads append keys to one of 256 buffers chosen by hash bits (fixed-width keys as
//! raw values or (key, count) pairs; byte keys into an arena), without touching any shared
//! table. When all input is read, each partition is counted on its own in a hash table small
//! enough to stay in cache, in parallel, and yields its distinct count and its top keys.
//! If the buffers outgrow the memory budget, everything staged goes to the bounded
//! `KeyCounter` instead (see `counter`), which then takes the rest of the input too.

use std::hash::BuildHasher;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use hashbrown::hash_table::{Entry, HashTable};
use rayon::prelude::*;

use super::counter::{KeyCounter, Pending, TopK};
use super::dense::{self, Dense, DenseRange};
use super::spill::SpillFile;

pub(crate) const PARTS: usize = 256;

pub(crate) type State = foldhash::quality::FixedState;

pub(crate) fn hasher() -> State {
    State::with_seed(0x0005_ca1e_d00d)
}

#[inline]
fn part_of(h: u64) -> usize {
    ((h >> 48) as usize) & (PARTS - 1)
}

/// A thread's staged keys of one kind: their memory, spilled to a file past the budget, or
/// handed to the bounded counter.
pub(crate) trait StageBuf {
    type Key: super::counter::CountKey;
    /// Bytes of memory the staged keys hold (what was allocated, not only what is used).
    fn held(&self) -> usize;
    /// Write the staged keys to this thread's spill file and free their memory.
    fn spill(&mut self) -> io::Result<()>;
    /// Every key, spilled ones included, into the counter.
    fn drain_into(&mut self, c: &KeyCounter<Self::Key>) -> io::Result<()>;
    /// Bytes written to this thread's spill file so far.
    fn spilled_bytes(&self) -> u64;
}

impl StageBuf for IntBuf {
    type Key = i64;
    fn held(&self) -> usize {
        IntBuf::held(self)
    }
    fn spill(&mut self) -> io::Result<()> {
        IntBuf::spill(self)
    }
    fn drain_into(&mut self, c: &KeyCounter<i64>) -> io::Result<()> {
        IntBuf::drain_into(self, c)
    }
    fn spilled_bytes(&self) -> u64 {
        IntBuf::spilled_bytes(self)
    }
}

impl StageBuf for ByteBuf {
    type Key = Box<[u8]>;
    fn held(&self) -> usize {
        ByteBuf::held(self)
    }
    fn spill(&mut self) -> io::Result<()> {
        ByteBuf::spill(self)
    }
    fn drain_into(&mut self, c: &KeyCounter<Box<[u8]>>) -> io::Result<()> {
        ByteBuf::drain_into(self, c)
    }
    fn spilled_bytes(&self) -> u64 {
        ByteBuf::spilled_bytes(self)
    }
}

/// One thread's staged fixed-width keys.
pub(crate) struct IntBuf {
    raw: Vec<Vec<i64>>,
    pairs: Vec<Vec<(i64, u64)>>,
    pub(crate) bytes: usize,
    compact_at: usize,
    /// Keys spilled past the memory budget: per partition, segments of (raw keys, then pairs).
    spilled: Option<SpillFile>,
    /// Keys of a narrow range, counted by value (see `dense`); the others are staged.
    dense: Option<Dense>,
}

/// One thread's staged byte keys: per partition an arena and (hash, offset, length, count),
/// behind an aggregating table (`Front`) that takes repeated keys first.
pub(crate) struct ByteBuf {
    arena: Vec<Vec<u8>>,
    ents: Vec<Vec<(u64, u32, u32, u64)>>,
    front: Front,
    /// Reused by `push_many`: each key's hash and inline form.
    hashes: Vec<(u64, [u8; INLINE])>,
    /// Bytes staged in the partitions (the front table's are `front.bytes()`).
    part_bytes: usize,
    compact_at: usize,
    /// Keys spilled past the memory budget: per partition, records of (hash, count, length,
    /// bytes).
    spilled: Option<SpillFile>,
    spilled_keys: usize,
}

/// A thread's staged keys are aggregated in place when they pass this many bytes, and again
/// each time they double: repeated keys then cost memory once, unique keys are not re-sorted
/// over and over.
const COMPACT_AT: usize = 8 << 20;

impl Default for IntBuf {
    fn default() -> Self {
        IntBuf {
            raw: (0..PARTS).map(|_| Vec::new()).collect(),
            pairs: (0..PARTS).map(|_| Vec::new()).collect(),
            bytes: 0,
            compact_at: COMPACT_AT,
            spilled: None,
            dense: None,
        }
    }
}

impl Default for ByteBuf {
    fn default() -> Self {
        ByteBuf {
            arena: (0..PARTS).map(|_| Vec::new()).collect(),
            ents: (0..PARTS).map(|_| Vec::new()).collect(),
            front: Front::default(),
            hashes: Vec::new(),
            part_bytes: 0,
            compact_at: COMPACT_AT,
            spilled: None,
            spilled_keys: 0,
        }
    }
}

impl IntBuf {
    /// A thread's buffer, counting the keys of `dense` by value.
    pub(crate) fn new(dense: Option<DenseRange>) -> Self {
        IntBuf { dense: dense.map(Dense::new), ..IntBuf::default() }
    }

    #[inline]
    pub(crate) fn push(&mut self, st: &State, k: i64, n: u64) {
        if let Some(d) = &mut self.dense {
            if d.add(k, n) {
                return;
            }
        }
        let p = part_of(st.hash_one(k));
        if n == 1 {
            self.raw[p].push(k);
            self.bytes += 8;
        } else {
            self.pairs[p].push((k, n));
            self.bytes += 16;
        }
    }
    /// Stage each key of `keys` once.
    pub(crate) fn push_slice(&mut self, st: &State, keys: &[i64]) {
        let IntBuf { raw, bytes, dense, .. } = self;
        match dense {
            Some(d) => d.add_slice(keys, |k| {
                raw[part_of(st.hash_one(k))].push(k);
                *bytes += 8;
            }),
            None => {
                for &k in keys {
                    raw[part_of(st.hash_one(k))].push(k);
                }
                *bytes += keys.len() * 8;
            }
        }
    }

    /// Aggregate repeated keys in place once the buffer is large (see `COMPACT_AT`).
    pub(crate) fn maybe_compact(&mut self, st: &State) {
        if self.bytes < self.compact_at {
            return;
        }
        let mut bytes = 0;
        for p in 0..PARTS {
            let mut t: HashTable<(i64, u64)> =
                HashTable::with_capacity(self.pairs[p].len() + self.raw[p].len() / 2);
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
        self.compact_at =
            if bytes * 4 > self.bytes * 3 { usize::MAX } else { (bytes * 2).max(COMPACT_AT) };
        self.bytes = bytes;
    }

    pub(crate) fn drain_into(&mut self, c: &KeyCounter<i64>) -> io::Result<()> {
        let mut pend: Pending<i64> = c.pending();
        if let Some(d) = self.dense.take() {
            d.each(|k, n| c.add(&mut pend, k, n));
        }
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
        self.bytes = 0;
        let mut buf = Vec::new();
        let read = (0..PARTS)
            .try_for_each(|p| self.each_spilled(p, &mut buf, |k, n| c.add(&mut pend, k, n)));
        self.spilled = None;
        c.flush(&mut pend);
        read
    }

    /// Bytes of memory the staged keys hold.
    pub(crate) fn held(&self) -> usize {
        self.raw.iter().map(|v| v.capacity() * 8).sum::<usize>()
            + self.pairs.iter().map(|v| v.capacity() * 16).sum::<usize>()
    }

    /// Write the staged keys to this thread's spill file, a segment per partition (its raw
    /// keys' number, the raw keys, then the (key, count) pairs), and free their memory.
    pub(crate) fn spill(&mut self) -> io::Result<()> {
        let mut file = match self.spilled.take() {
            Some(f) => f,
            None => SpillFile::create(PARTS)?,
        };
        let mut out: Vec<u8> = Vec::new();
        let mut written = Ok(());
        for p in 0..PARTS {
            if self.raw[p].is_empty() && self.pairs[p].is_empty() {
                continue;
            }
            out.clear();
            out.extend_from_slice(&(self.raw[p].len() as u64).to_le_bytes());
            self.raw[p].iter().for_each(|k| out.extend_from_slice(&k.to_le_bytes()));
            for (k, n) in &self.pairs[p] {
                out.extend_from_slice(&k.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
            }
            written = file.append(p, &out);
            if written.is_err() {
                break;
            }
            self.raw[p] = Vec::new();
            self.pairs[p] = Vec::new();
        }
        self.spilled = Some(file);
        self.bytes = self.raw.iter().map(|v| v.len() * 8).sum::<usize>()
            + self.pairs.iter().map(|v| v.len() * 16).sum::<usize>();
        written
    }

    /// About how many keys of partition `p` are spilled (8 bytes or more each).
    fn spilled_keys(&self, p: usize) -> usize {
        self.spilled.as_ref().map_or(0, |f| f.part_bytes(p) as usize / 8)
    }

    /// Each spilled key of partition `p` with its count; `buf` is reused.
    fn each_spilled(
        &self,
        p: usize,
        buf: &mut Vec<u8>,
        mut f: impl FnMut(i64, u64),
    ) -> io::Result<()> {
        let Some(file) = &self.spilled else { return Ok(()) };
        file.each_segment(p, buf, |seg| {
            let raw = load64(seg, 0) as usize;
            let (keys, pairs) = seg[8..].split_at(raw * 8);
            keys.chunks_exact(8).for_each(|w| f(load64(w, 0) as i64, 1));
            pairs.chunks_exact(16).for_each(|w| f(load64(w, 0) as i64, load64(w, 8)));
        })
    }

    /// Bytes spilled to this thread's file.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.spilled.as_ref().map_or(0, SpillFile::bytes)
    }
}

impl ByteBuf {
    /// Returns false when the partition's arena would pass 4 GiB (the caller overflows).
    #[inline]
    pub(crate) fn push(&mut self, st: &State, k: &[u8], n: u64) -> bool {
        let (h, form) = digest(st, k);
        self.push_digested(h, &form, k, n)
    }

    /// Push many keys at once: `key(i)` with count `count(i)` for i in 0..n. The keys are
    /// hashed first, then added to the front table with their slots prefetched. Returns how
    /// many were pushed: fewer than n only where `push` would return false.
    pub(crate) fn push_many<'k>(
        &mut self,
        st: &State,
        n: usize,
        key: impl Fn(usize) -> &'k [u8],
        count: impl Fn(usize) -> u64,
    ) -> usize {
        let mut done = 0;
        if self.front.on {
            let mut hashes = std::mem::take(&mut self.hashes);
            hashes.clear();
            hashes.extend((0..n).map(|i| digest(st, key(i))));
            done = self.front.add_batch(&hashes, &key, &count);
            self.hashes = hashes;
        }
        for i in done..n {
            if !self.push(st, key(i), count(i)) {
                return i;
            }
        }
        n
    }

    /// Move the front table's keys into the partitions; false when an arena would pass 4 GiB
    /// (the keys not moved stay in the front table, so nothing is lost).
    fn flush_front(&mut self) -> bool {
        let mut front = std::mem::take(&mut self.front);
        let mut ok = true;
        let mut rest: Vec<(u64, Vec<u8>, u64)> = Vec::new();
        front.each(|h, k, n| {
            if !(ok && self.push_hashed(h, k, n)) {
                ok = false;
                rest.push((h, k.to_vec(), n));
            }
        });
        front.clear();
        for (h, k, n) in rest {
            let _ = front.add(h, &k, &digest(&hasher(), &k).1, n);
        }
        self.front = front;
        ok
    }

    /// `push` for a key already digested (see `digest`).
    #[inline]
    pub(crate) fn push_digested(&mut self, h: u64, form: &[u8; INLINE], k: &[u8], n: u64) -> bool {
        if n == 0 {
            return true;
        }
        if self.front.on {
            if let Added::Yes = self.front.add(h, k, form, n) {
                return true;
            }
            // Full: its keys go to the partitions, and it starts again empty (or stays off when
            // the keys did not repeat enough to pay for it). Keys it could not move stay in it.
            if !self.flush_front() {
                return false;
            }
            self.front.restart();
            if self.front.on {
                return self.push_digested(h, form, k, n);
            }
        }
        self.push_hashed(h, k, n)
    }

    /// Bytes staged: the partitions' and the front table's.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.part_bytes + self.front.bytes()
    }

    /// Keys staged, the front table's and the spilled ones included (a key may be counted
    /// more than once).
    pub(crate) fn staged_keys(&self) -> usize {
        self.front.len + self.ents.iter().map(Vec::len).sum::<usize>() + self.spilled_keys
    }

    /// The hash of every staged key (repeats included), for a HyperLogLog.
    pub(crate) fn each_hash(&self, mut f: impl FnMut(u64)) -> io::Result<()> {
        self.front.each(|h, _, _| f(h));
        self.ents.iter().flatten().for_each(|e| f(e.0));
        let mut buf = Vec::new();
        (0..PARTS).try_for_each(|p| {
            buf.clear();
            self.read_spilled(p, &mut buf)?;
            each_record(&buf, |h, _, _| f(h));
            Ok(())
        })
    }

    /// Bytes of memory the staged keys hold, the front table's included.
    pub(crate) fn held(&self) -> usize {
        self.arena.iter().map(Vec::capacity).sum::<usize>()
            + self.ents.iter().map(|v| v.capacity() * 24).sum::<usize>()
            + self.front.bytes()
    }

    /// Write the partitions' keys to this thread's spill file, a record (hash, count, length,
    /// bytes) per key, and free their memory. The front table stays: it is bounded.
    pub(crate) fn spill(&mut self) -> io::Result<()> {
        let mut file = match self.spilled.take() {
            Some(f) => f,
            None => SpillFile::create(PARTS)?,
        };
        let mut out: Vec<u8> = Vec::new();
        let mut written = Ok(());
        for p in 0..PARTS {
            out.clear();
            let arena = &self.arena[p];
            for &(h, off, len, n) in &self.ents[p] {
                out.extend_from_slice(&h.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(&arena[off as usize..(off + len) as usize]);
            }
            written = file.append(p, &out);
            if written.is_err() {
                break;
            }
            self.spilled_keys += self.ents[p].len();
            self.arena[p] = Vec::new();
            self.ents[p] = Vec::new();
        }
        self.spilled = Some(file);
        self.part_bytes = self.arena.iter().map(Vec::len).sum::<usize>()
            + self.ents.iter().map(|v| v.len() * 24).sum::<usize>();
        written
    }

    /// Partition `p`'s spilled records (see `each_record`), appended to `out`.
    fn read_spilled(&self, p: usize, out: &mut Vec<u8>) -> io::Result<()> {
        match &self.spilled {
            Some(file) => file.read_part(p, out),
            None => Ok(()),
        }
    }

    /// Bytes spilled to this thread's file.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.spilled.as_ref().map_or(0, SpillFile::bytes)
    }

    #[inline]
    fn push_hashed(&mut self, h: u64, k: &[u8], n: u64) -> bool {
        let p = part_of(h);
        let arena = &mut self.arena[p];
        let off = arena.len();
        if off + k.len() > u32::MAX as usize {
            return false;
        }
        arena.extend_from_slice(k);
        self.ents[p].push((h, off as u32, k.len() as u32, n));
        self.part_bytes += k.len() + 24;
        true
    }
    /// Aggregate repeated keys in place once the buffer is large (see `COMPACT_AT`).
    pub(crate) fn maybe_compact(&mut self) {
        if self.part_bytes < self.compact_at {
            return;
        }
        let mut bytes = 0;
        for p in 0..PARTS {
            let arena = std::mem::take(&mut self.arena[p]);
            let ents = std::mem::take(&mut self.ents[p]);
            let mut t: HashTable<(u64, u32, u32, u64)> =
                HashTable::with_capacity(ents.len() / 4 + 16);
            let mut new_arena = Vec::new();
            for (h, off, len, c) in ents {
                let k = &arena[off as usize..(off + len) as usize];
                match t.entry(
                    h,
                    |e| e.2 == len && &new_arena[e.1 as usize..(e.1 + e.2) as usize] == k,
                    |e| e.0,
                ) {
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
        self.compact_at =
            if bytes * 4 > self.part_bytes * 3 { usize::MAX } else { (bytes * 2).max(COMPACT_AT) };
        self.part_bytes = bytes;
    }

    pub(crate) fn drain_into(&mut self, c: &KeyCounter<Box<[u8]>>) -> io::Result<()> {
        let mut pend: Pending<Box<[u8]>> = c.pending();
        let front = std::mem::take(&mut self.front);
        front.each(|_, k, n| c.add(&mut pend, Box::from(k), n));
        let mut buf = Vec::new();
        let mut read = Ok(());
        for p in 0..PARTS {
            let arena = std::mem::take(&mut self.arena[p]);
            for (_, off, len, n) in std::mem::take(&mut self.ents[p]) {
                c.add(&mut pend, Box::from(&arena[off as usize..(off + len) as usize]), n);
            }
            buf.clear();
            if read.is_ok() {
                read = self.read_spilled(p, &mut buf);
                each_record(&buf, |_, k, n| c.add(&mut pend, Box::from(k), n));
            }
        }
        c.flush(&mut pend);
        self.part_bytes = 0;
        self.spilled = None;
        self.spilled_keys = 0;
        read
    }
}

/// Each spilled byte-key record of `buf`: its hash, bytes and count.
fn each_record<'a>(mut buf: &'a [u8], mut f: impl FnMut(u64, &'a [u8], u64)) {
    while buf.len() >= 20 {
        let (h, n, len) = (load64(buf, 0), load64(buf, 8), load32(buf, 16) as usize);
        f(h, &buf[20..20 + len], n);
        buf = &buf[20 + len..];
    }
}

/// Keys of up to this many bytes are kept inside their slot of the front table.
const INLINE: usize = 12;
/// The front table holds at most this many keys; then they go to the partitions.
const FRONT_MAX: usize = 1 << 19;
/// How many keys ahead of the one being added a batch prefetches its slot.
const AHEAD: usize = 32;

/// A slot of the front table: the key inline (zero-padded) when short, else its arena offset
/// and its first 8 bytes. `count == 0` is an empty slot.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    hash: u64,
    count: u64,
    len: u32,
    data: [u8; INLINE],
}

/// The hash of a byte key in the staging (its partition and its front-table slot). A key of up
/// to 16 bytes is read as two words with overlapping loads and hashed from them and its length
/// (two folded multiplies, as foldhash hashes short input); a longer one by foldhash.
#[inline]
pub(crate) fn key_hash(st: &State, k: &[u8]) -> u64 {
    const K: [u64; 4] = [
        0x243f_6a88_85a3_08d3,
        0x1319_8a2e_0370_7344,
        0xa409_3822_299f_31d0,
        0x082e_fa98_ec4e_6c89,
    ];
    let len = k.len();
    let (lo, hi) = if len > 16 {
        return st.hash_one(k);
    } else if len >= 8 {
        (load64(k, 0), load64(k, len - 8))
    } else if len >= 4 {
        (load32(k, 0) as u64, load32(k, len - 4) as u64)
    } else if len > 0 {
        (k[0] as u64 | (k[len / 2] as u64) << 8 | (k[len - 1] as u64) << 16, 0)
    } else {
        (0, 0)
    };
    fold(fold(lo ^ K[0], hi ^ K[1] ^ (len as u64) << 56) ^ K[2], K[3])
}

/// A byte key's hash (`key_hash`) and its inline form: its bytes zero-padded to 12 for a short
/// key, else 4 zero bytes (the arena offset's place) and its first 8 bytes.
#[inline]
pub(crate) fn digest(st: &State, k: &[u8]) -> (u64, [u8; INLINE]) {
    let len = k.len();
    let mut form = [0u8; INLINE];
    if len > INLINE {
        form[4..12].copy_from_slice(&k[..8]);
        return (key_hash(st, k), form);
    }
    // The key's bytes as 12 zero-padded little-endian bytes: a (bytes 0..8) and b (8..12).
    let (a, b): (u64, u32) = if len >= 8 {
        let b = if len == 8 { 0 } else { load32(k, len - 4) >> (8 * (INLINE - len)) };
        (load64(k, 0), b)
    } else if len >= 4 {
        let hi = if len == 4 { 0 } else { (load32(k, len - 4) >> (8 * (8 - len))) as u64 };
        (load32(k, 0) as u64 | hi << 32, 0)
    } else {
        let mut a = 0u64;
        for (i, &x) in k.iter().enumerate() {
            a |= (x as u64) << (8 * i);
        }
        (a, 0)
    };
    form[..8].copy_from_slice(&a.to_le_bytes());
    form[8..].copy_from_slice(&b.to_le_bytes());
    (key_hash(st, k), form)
}

#[inline(always)]
fn load64(k: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&k[at..at + 8]);
    u64::from_le_bytes(w)
}

#[inline(always)]
fn load32(k: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&k[at..at + 4]);
    u32::from_le_bytes(w)
}

#[inline(always)]
fn fold(x: u64, y: u64) -> u64 {
    let p = x as u128 * y as u128;
    (p as u64) ^ ((p >> 64) as u64)
}

#[inline]
fn slot_key<'a>(s: &'a Slot, arena: &'a [u8]) -> &'a [u8] {
    let len = s.len as usize;
    if len <= INLINE {
        &s.data[..len]
    } else {
        let off = u32::from_le_bytes([s.data[0], s.data[1], s.data[2], s.data[3]]) as usize;
        &arena[off..off + len]
    }
}

/// Whether slot `s` holds key `k` (hash `h`, inline form `form`).
#[inline]
fn slot_is(s: &Slot, h: u64, k: &[u8], form: &[u8; INLINE], arena: &[u8]) -> bool {
    if s.hash != h || s.len as usize != k.len() {
        return false;
    }
    if k.len() <= INLINE {
        s.data == *form
    } else {
        s.data[4..] == form[4..] && slot_key(s, arena) == k
    }
}

#[inline(always)]
fn prefetch(s: &Slot) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is only a hint (it never faults, not even on a bad address), and
        // SSE, which it needs, is part of every x86_64 target.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(s as *const Slot as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = s;
}

enum Added {
    Yes,
    Full,
}

/// A thread's aggregating hash table in front of the partitions: most keys of a dictionary
/// column repeat from row group to row group, and adding to a slot in place is far cheaper
/// than staging a copy. Linear probing, at most half full; turned off when it fills with keys
/// that mostly did not repeat.
pub(crate) struct Front {
    slots: Vec<Slot>,
    len: usize,
    arena: Vec<u8>,
    pushes: u64,
    hits: u64,
    on: bool,
}

impl Default for Front {
    fn default() -> Self {
        Front { slots: Vec::new(), len: 0, arena: Vec::new(), pushes: 0, hits: 0, on: true }
    }
}

impl Front {
    fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>() + self.arena.capacity()
    }

    /// Make room for `more` new keys without growing while they are added; false when the
    /// table would pass `FRONT_MAX`.
    fn reserve(&mut self, more: usize) -> bool {
        if self.len + more > FRONT_MAX {
            return false;
        }
        let need = ((self.len + more) * 2).next_power_of_two().max(1 << 10);
        if need > self.slots.len() {
            self.grow_to(need);
        }
        true
    }

    #[inline]
    fn add(&mut self, h: u64, k: &[u8], form: &[u8; INLINE], n: u64) -> Added {
        if n == 0 {
            return Added::Yes;
        }
        if !self.reserve(1) {
            return Added::Full;
        }
        self.add_reserved(h, k, form, n)
    }

    /// Add to a table with room for the key (see `reserve`).
    #[inline]
    fn add_reserved(&mut self, h: u64, k: &[u8], form: &[u8; INLINE], n: u64) -> Added {
        self.pushes += 1;
        let mask = self.slots.len() - 1;
        let mut i = h as usize & mask;
        loop {
            let s = &self.slots[i];
            if s.count == 0 {
                break;
            }
            if slot_is(s, h, k, form, &self.arena) {
                self.slots[i].count += n;
                self.hits += 1;
                return Added::Yes;
            }
            i = (i + 1) & mask;
        }
        let mut s = Slot { hash: h, count: n, len: k.len() as u32, data: *form };
        if k.len() > INLINE {
            let off = self.arena.len();
            if off + k.len() > u32::MAX as usize {
                self.pushes -= 1;
                return Added::Full;
            }
            self.arena.extend_from_slice(k);
            s.data[..4].copy_from_slice(&(off as u32).to_le_bytes());
        }
        self.slots[i] = s;
        self.len += 1;
        Added::Yes
    }

    /// Add many keys (`digests[i]` of `key(i)`, count `count(i)`), each slot prefetched a few
    /// keys ahead so that the cache misses overlap. Returns how many were added: fewer than
    /// all only when the table is full.
    fn add_batch<'k>(
        &mut self,
        digests: &[(u64, [u8; INLINE])],
        key: impl Fn(usize) -> &'k [u8],
        count: impl Fn(usize) -> u64,
    ) -> usize {
        let n = digests.len();
        if !self.reserve(n) {
            return 0;
        }
        let mask = self.slots.len() - 1;
        for d in digests.iter().take(AHEAD) {
            prefetch(&self.slots[d.0 as usize & mask]);
        }
        for i in 0..n {
            if let Some(d) = digests.get(i + AHEAD) {
                prefetch(&self.slots[d.0 as usize & mask]);
            }
            let c = count(i);
            if c == 0 {
                continue;
            }
            let (h, form) = &digests[i];
            if let Added::Full = self.add_reserved(*h, key(i), form, c) {
                return i;
            }
        }
        n
    }

    /// Add every key of `other` (another thread's table); false, with `self` unchanged, when
    /// the keys would not fit.
    fn merge(&mut self, other: &Front) -> bool {
        // Checked before anything is added: `other`'s long keys take at most its arena's bytes.
        if self.arena.len() + other.arena.len() > u32::MAX as usize || !self.reserve(other.len) {
            return false;
        }
        for s in other.slots.iter().filter(|s| s.count != 0) {
            // The slot's bytes are its key's inline form (an arena offset in the first 4 bytes
            // of a long key's, which `add_reserved` neither compares nor keeps).
            let k = slot_key(s, &other.arena);
            if let Added::Full = self.add_reserved(s.hash, k, &s.data, s.count) {
                return false;
            }
        }
        true
    }

    /// Rehash into `size` slots (a power of two), in one step.
    fn grow_to(&mut self, size: usize) {
        let bigger = vec![Slot::default(); size];
        let old = std::mem::replace(&mut self.slots, bigger);
        let mask = self.slots.len() - 1;
        for s in old.into_iter().filter(|s| s.count != 0) {
            let mut i = s.hash as usize & mask;
            while self.slots[i].count != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    fn each<'a>(&'a self, mut f: impl FnMut(u64, &'a [u8], u64)) {
        for s in self.slots.iter().filter(|s| s.count != 0) {
            f(s.hash, slot_key(s, &self.arena), s.count);
        }
    }

    fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = Slot::default());
        self.arena.clear();
        self.len = 0;
    }

    /// After a flush: keep going only if at least half of the keys added were repeats.
    fn restart(&mut self) {
        if self.hits * 2 < self.pushes {
            self.on = false;
            self.slots = Vec::new();
            self.arena = Vec::new();
        }
        self.pushes = 0;
        self.hits = 0;
    }
}

/// The staged keys of one counted column, shared by all threads.
pub(crate) struct Stage<B> {
    handed_in: Mutex<Vec<B>>,
    bytes: AtomicUsize,
    budget: usize,
    /// Keys go to the bounded counter (a byte partition passed 4 GiB, or a spill failed).
    overflow: AtomicBool,
    /// The first spill that failed: the count ends in this error.
    failed: Mutex<Option<io::Error>>,
    /// Bytes the buffers spilled to their files, all threads together.
    spilled: AtomicU64,
}

impl<B: StageBuf> Stage<B> {
    pub(crate) fn new(budget: usize) -> Self {
        Stage {
            handed_in: Mutex::new(Vec::new()),
            bytes: AtomicUsize::new(0),
            budget,
            overflow: AtomicBool::new(false),
            failed: Mutex::new(None),
            spilled: AtomicU64::new(0),
        }
    }
    pub(crate) fn overflowed(&self) -> bool {
        self.overflow.load(Ordering::Relaxed)
    }
    /// From now on, every thread's keys go to the bounded counter.
    pub(crate) fn overflow(&self) {
        self.overflow.store(true, Ordering::Relaxed);
    }
    /// A thread's staged keys now hold `now` bytes where it last reported `*reported`; true
    /// when all threads' together are past the budget.
    fn report(&self, reported: &mut usize, now: usize) -> bool {
        let before = std::mem::replace(reported, now);
        let total = if now >= before {
            self.bytes.fetch_add(now - before, Ordering::Relaxed).saturating_add(now - before)
        } else {
            let shrink = (before - now).min(self.bytes.load(Ordering::Relaxed));
            self.bytes.fetch_sub(shrink, Ordering::Relaxed).saturating_sub(shrink)
        };
        total > self.budget
    }
    /// Report a thread's staged keys (see `report`); past the budget, spill them. Once the
    /// stage has overflowed (or the spill failed), they go into the counter: true.
    pub(crate) fn settle(&self, buf: &mut B, reported: &mut usize, c: &KeyCounter<B::Key>) -> bool {
        if !self.overflowed() && self.report(reported, buf.held()) {
            let before = buf.spilled_bytes();
            let spilled = buf.spill();
            self.spilled.fetch_add(buf.spilled_bytes().saturating_sub(before), Ordering::Relaxed);
            match spilled {
                Ok(()) => {
                    self.report(reported, buf.held());
                }
                Err(e) => self.fail(e),
            }
        }
        if !self.overflowed() {
            return false;
        }
        if let Err(e) = buf.drain_into(c) {
            self.fail(e);
        }
        self.report(reported, 0);
        true
    }
    /// A spill or its reading failed: the count ends in this error, and meanwhile the keys
    /// go to the counter.
    pub(crate) fn fail(&self, e: io::Error) {
        self.failed.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
        self.overflow();
    }
    /// Bytes spilled to temporary files so far.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.spilled.load(Ordering::Relaxed)
    }
    pub(crate) fn hand_in(&self, b: B) {
        self.handed_in.lock().unwrap_or_else(|e| e.into_inner()).push(b);
    }
    /// The staged keys handed in, or the error a spill ended in.
    pub(crate) fn take(self) -> io::Result<Vec<B>> {
        if let Some(e) = self.failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e);
        }
        Ok(self.handed_in.into_inner().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Top keys (count descending, key ascending) and the exact distinct count.
pub(crate) struct Counted<K> {
    pub(crate) top: Vec<(K, u64)>,
    pub(crate) distinct: u64,
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

pub(crate) fn count_ints(bufs: &[IntBuf], want: usize) -> io::Result<Counted<i64>> {
    let st = hasher();
    let mut per: Vec<(Vec<(i64, u64)>, u64)> = (0..PARTS)
        .into_par_iter()
        .map(|p| count_int_part(bufs, p, &st, want))
        .collect::<io::Result<_>>()?;
    // The keys counted by value: no key of theirs is in the partitions.
    let dense: Vec<&Dense> = bufs.iter().filter_map(|b| b.dense.as_ref()).collect();
    per.push(dense::top_and_distinct(&dense, want));
    let distinct = per.iter().map(|x| x.1).sum();
    let all: Vec<(i64, u64)> = per.into_iter().flat_map(|x| x.0).collect();
    Ok(Counted { top: top_of(all.into_iter(), want), distinct })
}

/// A staging partition with more keys than this is split again before it is counted.
const SPLIT_PART_AT: usize = 1 << 15;
/// Sub-partitions of a large staging partition: each one's table fits in a core's L2 cache
/// where the whole partition's would not (BENCHMARKS.md, "The staging sub-partitions").
const SUBS: usize = 16;

/// Each key of partition `p` (staged in memory or spilled) with its count.
fn each_int_of_part(bufs: &[IntBuf], p: usize, mut f: impl FnMut(i64, u64)) -> io::Result<()> {
    let mut buf = Vec::new();
    for b in bufs {
        b.raw[p].iter().for_each(|&k| f(k, 1));
        b.pairs[p].iter().for_each(|&(k, c)| f(k, c));
        b.each_spilled(p, &mut buf, &mut f)?;
    }
    Ok(())
}

/// Partition `p`'s top keys and distinct count.
fn count_int_part(
    bufs: &[IntBuf],
    p: usize,
    st: &State,
    want: usize,
) -> io::Result<(Vec<(i64, u64)>, u64)> {
    let n: usize = bufs.iter().map(|b| b.raw[p].len() + b.pairs[p].len() + b.spilled_keys(p)).sum();
    if n <= SPLIT_PART_AT {
        let mut t: HashTable<(i64, u64)> = HashTable::with_capacity(n / 2 + 16);
        each_int_of_part(bufs, p, |k, c| add_int(&mut t, st, k, c))?;
        let distinct = t.len() as u64;
        return Ok((top_of(t.into_iter(), want), distinct));
    }
    let mut subs: Vec<Vec<(u64, i64, u64)>> =
        (0..SUBS).map(|_| Vec::with_capacity(n / SUBS + n / (4 * SUBS))).collect();
    each_int_of_part(bufs, p, |k, c| {
        let h = st.hash_one(k);
        subs[((h >> 40) as usize) & (SUBS - 1)].push((h, k, c));
    })?;
    let mut top = TopK::new(want);
    let mut distinct = 0;
    let mut t: HashTable<(i64, u64)> = HashTable::new();
    for sub in subs {
        t.clear();
        t.reserve(sub.len().min(1 << 22) / 2 + 16, |e| st.hash_one(e.0));
        for (h, k, c) in sub {
            match t.entry(h, |e| e.0 == k, |e| st.hash_one(e.0)) {
                Entry::Occupied(mut o) => o.get_mut().1 += c,
                Entry::Vacant(v) => {
                    v.insert((k, c));
                }
            }
        }
        distinct += t.len() as u64;
        t.drain().for_each(|(k, c)| top.push(k, c));
    }
    Ok((top.into_sorted(), distinct))
}

/// One partition's top byte keys and its distinct count.
type PartCount = (Vec<(Box<[u8]>, u64)>, u64);

pub(crate) fn count_bytes(bufs: &mut [ByteBuf], want: usize) -> io::Result<Counted<Box<[u8]>>> {
    if bufs.iter().all(|b| b.ents.iter().all(Vec::is_empty) && b.spilled.is_none()) {
        // Only front tables (each already aggregated): merge them into the largest.
        let Some(big) = (0..bufs.len()).max_by_key(|&i| bufs[i].front.len) else {
            return Ok(Counted { top: Vec::new(), distinct: 0 });
        };
        let mut base = std::mem::take(&mut bufs[big].front);
        let merged =
            bufs.iter().enumerate().filter(|&(i, _)| i != big).all(|(_, b)| base.merge(&b.front));
        if merged {
            let distinct = base.len as u64;
            let mut top = TopK::new(want);
            base.each(|_, k, c| top.push(k, c));
            let top = top.into_sorted().into_iter().map(|(k, c)| (Box::from(k), c)).collect();
            bufs[big].front = base;
            return Ok(Counted { top, distinct });
        }
        // Past the front table's size: count through the partitions below.
        bufs[big].front = base;
    }
    let bufs: &[ByteBuf] = bufs;
    // The front tables' keys, by partition, to be counted with the partitions' own.
    let mut fronts: Vec<Vec<(u64, &[u8], u64)>> = (0..PARTS).map(|_| Vec::new()).collect();
    for b in bufs {
        b.front.each(|h, k, c| fronts[part_of(h)].push((h, k, c)));
    }
    let per: Vec<PartCount> = (0..PARTS)
        .into_par_iter()
        .map(|p| {
            let mut spilled = Vec::new();
            for b in bufs {
                b.read_spilled(p, &mut spilled)?;
            }
            let n: usize = bufs.iter().map(|b| b.ents[p].len()).sum::<usize>()
                + fronts[p].len()
                + spilled.len() / 32;
            let mut t: HashTable<(u64, &[u8], u64)> =
                HashTable::with_capacity(n.min(1 << 22) / 4 + 16);
            for b in bufs {
                let arena = &b.arena[p];
                for &(h, off, len, c) in &b.ents[p] {
                    add_bytes(&mut t, h, &arena[off as usize..(off + len) as usize], c);
                }
            }
            for &(h, k, c) in &fronts[p] {
                add_bytes(&mut t, h, k, c);
            }
            each_record(&spilled, |h, k, c| add_bytes(&mut t, h, k, c));
            let distinct = t.len() as u64;
            Ok((
                top_of(t.into_iter().map(|(_, k, c)| (k, c)), want)
                    .into_iter()
                    .map(|(k, c)| (Box::from(k), c))
                    .collect(),
                distinct,
            ))
        })
        .collect::<io::Result<_>>()?;
    let distinct = per.iter().map(|x| x.1).sum();
    let all: Vec<(Box<[u8]>, u64)> = per.into_iter().flat_map(|x| x.0).collect();
    Ok(Counted { top: top_of(all.into_iter(), want), distinct })
}

#[inline]
fn add_bytes<'a>(t: &mut HashTable<(u64, &'a [u8], u64)>, h: u64, k: &'a [u8], c: u64) {
    match t.entry(h, |e| e.1 == k, |e| e.0) {
        Entry::Occupied(mut o) => o.get_mut().2 += c,
        Entry::Vacant(v) => {
            v.insert((h, k, c));
        }
    }
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
        let c = count_ints(&[a, b], 3).unwrap();
        assert_eq!(c.distinct, 100);
        // 0..7 get 100 from a and 10000/7*2 from b.
        assert_eq!(c.top[0], (0, 100 + 2 * 1429));
        let mut x = ByteBuf::default();
        for s in ["a", "b", "a", "", "a"] {
            assert!(x.push(&st, s.as_bytes(), 1));
        }
        let c = count_bytes(&mut [x], 10).unwrap();
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
        let c = count_ints(&[a], 2).unwrap();
        assert_eq!(c.distinct, 1000);
        assert_eq!(c.top, vec![(0, 2000), (1, 2000)]);
        // Mostly distinct keys: one compaction, then no more.
        let mut u = IntBuf::default();
        for i in 0..1_500_000i64 {
            u.push(&st, i, 1);
            u.maybe_compact(&st);
        }
        assert_eq!(u.compact_at, usize::MAX);
        assert_eq!(count_ints(&[u], 1).unwrap().distinct, 1_500_000);
        // Byte keys.
        let mut b = ByteBuf::default();
        for i in 0..400_000u32 {
            let k = format!("title-{:05}", i % 5000);
            assert!(b.push(&st, k.as_bytes(), 1 + (i % 2) as u64));
            b.maybe_compact();
        }
        assert!(
            b.bytes() <= COMPACT_AT && b.compact_at == COMPACT_AT,
            "{} bytes staged",
            b.bytes()
        );
        let c = count_bytes(&mut [b], 1).unwrap();
        assert_eq!(c.distinct, 5000);
        // Odd i weigh 2: title-00001 (80 odd i) is the smallest key with the top count, 160.
        assert_eq!(c.top[0], (Box::from(&b"title-00001"[..]), 160));
    }

    /// Byte keys through the front table and the partitions, against a plain map: lengths 0 to
    /// 40 (inline and arena keys), keys that differ only in trailing zero bytes or past their
    /// first 8 bytes, added one by one and in batches, a front table that fills up and flushes.
    #[test]
    fn byte_keys_count_exactly_through_the_front_table() {
        use std::collections::HashMap as Map;
        let st = hasher();
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for len in 0..=40usize {
            for _ in 0..20 {
                keys.push((0..len).map(|_| (next() % 3) as u8).collect());
            }
            keys.push(vec![0; len]);
            keys.push(vec![b'a'; len]);
        }
        let mut want: Map<Vec<u8>, u64> = Map::new();
        let mut a = ByteBuf::default();
        let mut b = ByteBuf::default();
        for round in 0..50u64 {
            let n = (round % 5) + 1;
            for k in &keys {
                *want.entry(k.clone()).or_insert(0) += n;
            }
            if round % 2 == 0 {
                for k in &keys {
                    assert!(a.push(&st, k, n));
                }
            } else {
                assert_eq!(b.push_many(&st, keys.len(), |i| &keys[i], |_| n), keys.len());
            }
        }
        // Then many distinct keys: b's front table fills, flushes and turns itself off.
        for i in 0..(FRONT_MAX as u64 + 10) {
            let k = format!("unique-{i}").into_bytes();
            *want.entry(k.clone()).or_insert(0) += 1;
            assert!(b.push(&st, &k, 1));
        }
        assert!(!b.front.on);
        let c = count_bytes(&mut [a, b], usize::MAX).unwrap();
        assert_eq!(c.distinct as usize, want.len());
        let got: Map<Vec<u8>, u64> = c.top.into_iter().map(|(k, n)| (k.into_vec(), n)).collect();
        assert_eq!(got, want);
    }

    /// Keys spilled part way, some partitions of a thread more than once, others never, and
    /// keys still in memory: the counts are those of a plain map.
    #[test]
    fn spilled_keys_count_exactly() {
        use std::collections::HashMap as Map;
        let st = hasher();
        let mut want: Map<i64, u64> = Map::new();
        let (mut a, mut b) = (IntBuf::default(), IntBuf::default());
        for round in 0..4i64 {
            for i in 0..50_000i64 {
                let (x, y) = ((i * 7 + round) % 30_011, i % 1000);
                a.push(&st, x, 1);
                b.push(&st, y, 3);
                *want.entry(x).or_insert(0) += 1;
                *want.entry(y).or_insert(0) += 3;
            }
            a.spill().unwrap();
            if round % 2 == 0 {
                b.maybe_compact(&st);
                b.spill().unwrap();
            }
        }
        a.push(&st, -5, 2);
        *want.entry(-5).or_insert(0) += 2;
        assert!(a.held() < 1 << 12 && a.spilled_bytes() >= 4 * 50_000 * 8);
        let c = count_ints(&[a, b], usize::MAX).unwrap();
        assert_eq!(c.distinct as usize, want.len());
        assert_eq!(c.top.into_iter().collect::<Map<i64, u64>>(), want);

        // Byte keys: inline and arena lengths, the front table on, then off.
        let mut want: Map<Vec<u8>, u64> = Map::new();
        let mut x = ByteBuf::default();
        for round in 0..3u64 {
            for i in 0..(FRONT_MAX as u64 + 1000) {
                let k = if i % 3 == 0 {
                    format!("a key longer than twelve bytes {}", i % 5000)
                } else {
                    format!("k{}", i + round * 1_000_000)
                }
                .into_bytes();
                assert!(x.push(&st, &k, round + 1));
                *want.entry(k).or_insert(0) += round + 1;
            }
            x.spill().unwrap();
        }
        assert!(x.spilled_bytes() > 0 && x.ents.iter().all(Vec::is_empty));
        let mut hashes = 0;
        x.each_hash(|_| hashes += 1).unwrap();
        assert!(hashes >= want.len());
        let c = count_bytes(&mut [x], usize::MAX).unwrap();
        assert_eq!(c.distinct as usize, want.len());
        let got: Map<Vec<u8>, u64> = c.top.into_iter().map(|(k, n)| (k.into_vec(), n)).collect();
        assert_eq!(got, want);
    }

    /// A stage of 64 KiB: threads that pass it spill and stay exact; nothing overflows into
    /// the bounded counter.
    #[test]
    fn a_stage_past_its_budget_spills_and_stays_exact() {
        let st = hasher();
        let stage: Stage<IntBuf> = Stage::new(64 << 10);
        let counter = KeyCounter::new(64 << 10);
        let mut reported = [0usize; 2];
        let mut bufs = [IntBuf::default(), IntBuf::default()];
        for i in 0..200_000i64 {
            let t = (i % 2) as usize;
            bufs[t].push(&st, i % 90_000, 1);
            if (i / 2) % 500 == 499 {
                assert!(!stage.settle(&mut bufs[t], &mut reported[t], &counter));
            }
        }
        assert!(bufs.iter().all(|b| b.spilled_bytes() > 0));
        bufs.into_iter().for_each(|b| stage.hand_in(b));
        let c = count_ints(&stage.take().unwrap(), 3).unwrap();
        assert_eq!(c.distinct, 90_000);
        assert_eq!(c.top, vec![(0, 3), (1, 3), (2, 3)]);
    }

    /// Two threads' front tables merged in place: short (inline) and long (arena) keys, some
    /// in both tables, some in one.
    #[test]
    fn front_tables_merge_exactly() {
        use std::collections::HashMap as Map;
        let st = hasher();
        let mut want: Map<Vec<u8>, u64> = Map::new();
        let mut a = ByteBuf::default();
        let mut b = ByteBuf::default();
        for i in 0..3000u64 {
            let k = if i % 3 == 0 {
                format!("a-long-key-of-more-than-twelve-bytes-{}", i % 700)
            } else {
                format!("k{}", i % 900)
            }
            .into_bytes();
            let (buf, n) = if i % 2 == 0 { (&mut a, 1) } else { (&mut b, 2) };
            assert!(buf.push(&st, &k, n));
            *want.entry(k).or_insert(0) += n;
        }
        assert!(a.ents.iter().chain(b.ents.iter()).all(Vec::is_empty));
        let c = count_bytes(&mut [a, b], usize::MAX).unwrap();
        assert_eq!(c.distinct as usize, want.len());
        let got: Map<Vec<u8>, u64> = c.top.into_iter().map(|(k, n)| (k.into_vec(), n)).collect();
        assert_eq!(got, want);
    }
}
