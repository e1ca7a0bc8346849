//! Counting key values with bounded memory.
//!
//! `KeyCounter` is one hash table split into shards by hash: threads buffer their keys per
//! shard and insert a shard's keys under its lock, so every insert touches a small table that
//! stays in cache, and all threads share one table (memory is one copy of the distinct keys).
//! When a shard outgrows its share of the memory budget it is pruned Misra-Gries style: the
//! smallest half of its counts is subtracted from every count and the entries that reach zero
//! are dropped. A count is then a lower bound, at most `error` below the truth, with
//! `error <= 2 * rows / entries kept`; counts are exact as long as no shard was ever pruned.
//! The keys seen before each prune and at the end go into a HyperLogLog, for the distinct count.

use std::hash::{BuildHasher, Hash};
use std::sync::Mutex;

use hashbrown::hash_table::{Entry, HashTable};

const SHARD_BITS: u32 = 8;
pub(crate) const SHARDS: usize = 1 << SHARD_BITS;
/// Keys a thread buffers before inserting them.
const FLUSH_AT: usize = 1 << 19;

pub(crate) trait CountKey: Hash + Eq + Ord + Clone + Send + Sync {
    /// Bytes this key owns on the heap.
    fn heap_size(&self) -> usize {
        0
    }
}
impl CountKey for i64 {}
impl CountKey for i128 {}
impl CountKey for Box<[u8]> {
    fn heap_size(&self) -> usize {
        self.len() + 16
    }
}

type State = foldhash::fast::FixedState;

/// The `want` most frequent keys of a stream of (key, count): count descending, ties by key
/// ascending, without sorting everything.
pub(crate) struct TopK<K: Ord> {
    want: usize,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, std::cmp::Reverse<K>)>>,
}

impl<K: Ord> TopK<K> {
    pub(crate) fn new(want: usize) -> Self {
        TopK { want, heap: std::collections::BinaryHeap::with_capacity(want.min(1 << 20) + 1) }
    }

    #[inline]
    pub(crate) fn push(&mut self, k: K, c: u64) {
        use std::cmp::Reverse;
        if self.want == 0 {
            return;
        }
        if self.heap.len() < self.want {
            self.heap.push(Reverse((c, Reverse(k))));
        } else if let Some(Reverse((mc, Reverse(mk)))) = self.heap.peek() {
            if c > *mc || (c == *mc && k < *mk) {
                self.heap.pop();
                self.heap.push(Reverse((c, Reverse(k))));
            }
        }
    }

    pub(crate) fn into_sorted(self) -> Vec<(K, u64)> {
        let mut v: Vec<(K, u64)> = self
            .heap
            .into_iter()
            .map(|std::cmp::Reverse((c, std::cmp::Reverse(k)))| (k, c))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }
}

fn state() -> State {
    State::with_seed(0x5eed_5ca1_ab1e)
}

struct Shard<K> {
    table: HashTable<(K, u64)>,
    heap_bytes: usize,
    /// Total subtracted from every surviving count by pruning (Misra-Gries error bound).
    error: u64,
    hll: Option<Hll>,
}

pub(crate) struct KeyCounter<K: CountKey> {
    shards: Vec<Mutex<Shard<K>>>,
    shard_budget: usize,
    state: State,
}

/// A thread's buffer of keys waiting to be inserted, grouped by shard.
pub(crate) struct Pending<K> {
    buckets: Vec<Vec<(u64, K, u64)>>,
    len: usize,
}

pub(crate) struct Summary<K> {
    /// Top keys by count (descending), ties by key (ascending).
    pub(crate) top: Vec<(K, u64)>,
    pub(crate) distinct: u64,
    pub(crate) exact: bool,
    /// Upper bound of how far below the truth any count may be (0 when exact).
    pub(crate) error: u64,
}

impl<K: CountKey> KeyCounter<K> {
    /// A counter that keeps its tables under about `memory_budget` bytes.
    pub(crate) fn new(memory_budget: usize) -> Self {
        let shards = (0..SHARDS)
            .map(|_| {
                Mutex::new(Shard { table: HashTable::new(), heap_bytes: 0, error: 0, hll: None })
            })
            .collect();
        KeyCounter { shards, shard_budget: (memory_budget / SHARDS).max(4096), state: state() }
    }

    pub(crate) fn pending(&self) -> Pending<K> {
        Pending { buckets: (0..SHARDS).map(|_| Vec::new()).collect(), len: 0 }
    }

    #[inline]
    pub(crate) fn add(&self, p: &mut Pending<K>, key: K, n: u64) {
        let h = self.state.hash_one(&key);
        let shard = ((h >> 40) as usize) & (SHARDS - 1);
        p.buckets[shard].push((h, key, n));
        p.len += 1;
        if p.len >= FLUSH_AT {
            self.flush(p);
        }
    }

    pub(crate) fn flush(&self, p: &mut Pending<K>) {
        if p.len == 0 {
            return;
        }
        for (i, bucket) in p.buckets.iter_mut().enumerate() {
            if bucket.is_empty() {
                continue;
            }
            let mut shard = self.shards[i].lock().unwrap_or_else(|e| e.into_inner());
            let st = &self.state;
            for (h, key, n) in bucket.drain(..) {
                let heap = key.heap_size();
                match shard.table.entry(h, |e| e.0 == key, |e| st.hash_one(&e.0)) {
                    Entry::Occupied(mut o) => o.get_mut().1 += n,
                    Entry::Vacant(v) => {
                        v.insert((key, n));
                        shard.heap_bytes += heap;
                    }
                }
            }
            if shard.bytes() > self.shard_budget {
                shard.prune(st);
            }
        }
        p.len = 0;
    }

    /// The `n` most frequent keys, the distinct count and the error bound.
    pub(crate) fn summary(self, n: usize) -> Summary<K> {
        let st = self.state;
        let mut top = TopK::new(n);
        let mut distinct = 0u64;
        let mut error = 0u64;
        let mut hll: Option<Hll> = None;
        let shards: Vec<Shard<K>> = self
            .shards
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect();
        let any_pruned = shards.iter().any(|s| s.hll.is_some());
        for mut shard in shards {
            distinct += shard.table.len() as u64;
            error = error.max(shard.error);
            if any_pruned {
                shard.remember(&st);
                let h = hll.get_or_insert_with(Hll::new);
                if let Some(s) = &shard.hll {
                    h.merge(s);
                }
            }
            for (key, count) in shard.table.drain() {
                top.push(key, count);
            }
        }
        let top = top.into_sorted();
        match hll {
            Some(h) => Summary { top, distinct: h.estimate().max(distinct), exact: false, error },
            None => Summary { top, distinct, exact: true, error: 0 },
        }
    }
}

impl<K: CountKey> Shard<K> {
    fn bytes(&self) -> usize {
        self.table.capacity() * (std::mem::size_of::<(K, u64)>() + 1) + self.heap_bytes
    }

    /// Put every key of the shard into its HyperLogLog.
    fn remember(&mut self, st: &State) {
        let hll = self.hll.get_or_insert_with(Hll::new);
        for (k, _) in self.table.iter() {
            hll.add(fmix64(st.hash_one(k)));
        }
    }

    /// Misra-Gries: subtract the median count from every count, drop those at zero.
    fn prune(&mut self, st: &State) {
        self.remember(st);
        let mut counts: Vec<u64> = self.table.iter().map(|e| e.1).collect();
        let mid = counts.len() / 2;
        let (_, t, _) = counts.select_nth_unstable(mid);
        let t = (*t).max(1);
        let mut freed = 0;
        self.table.retain(|e| {
            if e.1 > t {
                e.1 -= t;
                true
            } else {
                freed += e.0.heap_size();
                false
            }
        });
        self.heap_bytes -= freed;
        self.table.shrink_to_fit(|e| st.hash_one(&e.0));
        self.error += t;
    }
}

/// MurmurHash3's 64-bit finalizer: spreads every input bit over the output for the HLL.
pub(crate) fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ceb93fe53e69b9);
    k ^ (k >> 33)
}

/// HyperLogLog with 2^14 registers (about 0.8% standard error).
pub(crate) struct Hll {
    regs: Vec<u8>,
}

const HLL_P: u32 = 14;

impl Hll {
    pub(crate) fn new() -> Self {
        Hll { regs: vec![0; 1 << HLL_P] }
    }
    #[inline]
    pub(crate) fn add(&mut self, h: u64) {
        let idx = (h >> (64 - HLL_P)) as usize;
        let rest = (h << HLL_P) | (1 << (HLL_P - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        if rank > self.regs[idx] {
            self.regs[idx] = rank;
        }
    }
    pub(crate) fn merge(&mut self, other: &Hll) {
        for (a, b) in self.regs.iter_mut().zip(&other.regs) {
            *a = (*a).max(*b);
        }
    }
    pub(crate) fn estimate(&self) -> u64 {
        let m = self.regs.len() as f64;
        let sum: f64 = self.regs.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let raw = alpha * m * m / sum;
        let zeros = self.regs.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            (m * (m / zeros as f64).ln()).round() as u64
        } else {
            raw.round() as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_when_within_budget() {
        let c: KeyCounter<i64> = KeyCounter::new(64 << 20);
        let mut p = c.pending();
        for i in 0..100_000i64 {
            c.add(&mut p, i % 1000, 1);
        }
        c.add(&mut p, 7, 5);
        c.flush(&mut p);
        let s = c.summary(3);
        assert!(s.exact);
        assert_eq!(s.distinct, 1000);
        assert_eq!(s.top, vec![(7, 105), (0, 100), (1, 100)]);
    }

    #[test]
    fn bounded_memory_keeps_heavy_hitters_within_the_error() {
        // 2M distinct keys in a budget that holds far fewer, plus three heavy hitters.
        let c: KeyCounter<i64> = KeyCounter::new(4 << 20);
        let mut p = c.pending();
        let mut total = 0u64;
        for i in 0..2_000_000i64 {
            c.add(&mut p, i + 1000, 1);
            total += 1;
            if i % 10 == 0 {
                c.add(&mut p, 1, 1);
                total += 1;
            }
            if i % 20 == 0 {
                c.add(&mut p, 2, 1);
                c.add(&mut p, 3, 1);
                total += 2;
            }
        }
        c.flush(&mut p);
        let s = c.summary(3);
        assert!(!s.exact);
        assert!(s.error > 0 && s.error < total / 100, "error {}", s.error);
        let truth = [(1i64, 200_000u64), (2, 100_000), (3, 100_000)];
        for (k, want) in truth {
            let got = s.top.iter().find(|e| e.0 == k).map(|e| e.1).unwrap_or(0);
            assert!(got <= want && got + s.error >= want, "key {k}: {got} + {} vs {want}", s.error);
        }
        let rel = (s.distinct as f64 - 2_000_003.0).abs() / 2_000_003.0;
        assert!(rel < 0.05, "distinct estimate {} is {:.1}% off", s.distinct, rel * 100.0);
    }
}
