//! Exact top values of a dictionary-encoded column without an exact table of every value.
//!
//! Counting a string column by its dictionary indices leaves one (value, rows) entry per
//! distinct value per row group: on a skewed key with many distinct values that is millions of
//! entries, and adding each to an exact table of every value (too large for the CPU's cache)
//! costs more than reading the column. So once a thread's exact table holds `SWITCH_KEYS`
//! values (a sample: from its first row group on), each further row group is split:
//!
//! - the *heavy* entries, those with at least `t` rows in the row group (about the 256 most
//!   frequent of it), are added to the exact table as before;
//! - every other (*light*) entry only goes into a HyperLogLog, for the distinct count.
//!
//! A value's count in the exact table is then a lower bound L; what it misses are its light
//! entries, each under `t` rows. Per value the table keeps its *credit*: the sum of `t - 1`
//! over the row groups where it was heavy. With `slack` the sum of `t - 1` over all split row
//! groups, a value's true count is at most L + (slack - credit), and a value never heavy has
//! at most `slack` rows. The top N is reported only when it is certain: each of the N was heavy
//! in every split row group (its count is exact), and every other value's upper bound is below
//! the N-th count. Otherwise the column is counted again with the exact table alone. On a
//! skewed key (the case this tool exists for) the check passes: the hot values are heavy
//! everywhere, and the values near the N-th place are too.
//!
//! The bound assumes that a row group's dictionary holds each value once, as every writer we
//! know builds it (from a hash table). A value heavy twice in one dictionary gives up the split
//! (the column is counted again exactly), and so does any repeat in the dictionary of the first
//! split row group of each file, all of whose values are checked.
//!
//! The distinct count becomes an estimate (HyperLogLog, about 0.8% standard error) and says so.

use hashbrown::HashMap;

use super::counter::Hll;
use super::stage::{digest, key_hash, ByteBuf};

/// Values in a thread's exact table before its row groups are split.
pub(crate) const SWITCH_KEYS: usize = 1 << 14;
/// About this many of a row group's most frequent values are heavy.
const HEAVY: usize = 256;
/// Heavy values a thread may track before splitting is given up (the column is then counted
/// again exactly, which is what such an unskewed column needs anyway).
const MAX_CREDITED: usize = 1 << 20;

/// One thread's split counting of one key.
pub(crate) struct Split {
    /// Rows at or above which an entry is heavy.
    t: u32,
    /// Sum of `t - 1` over this thread's split row groups.
    pub(crate) slack: u64,
    /// Split row groups so far.
    chunks: u64,
    /// Per value heavy at least once: the sum of `t - 1` over the row groups where it was, and
    /// the last of those row groups.
    pub(crate) credit: HashMap<Box<[u8]>, (u64, u64)>,
    /// Files whose first split dictionary was checked for repeated values.
    checked: Vec<usize>,
    /// Every light value.
    pub(crate) hll: Hll,
    /// Too many heavy values to track: the result cannot be trusted.
    pub(crate) failed: bool,
}

impl Split {
    /// Whether to split from now on, judged on a row group's entries (rows of each value
    /// present): the `want`-th largest count must stand well clear of the heavy threshold, or
    /// the check at the end would fail and the column be read twice.
    pub(crate) fn start(counts: &mut [u32], want: usize) -> Option<Split> {
        if counts.len() <= HEAVY || want == 0 || want >= HEAVY {
            return None;
        }
        // The HEAVY-th largest count, and the want-th largest (among the HEAVY before it),
        // by selection rather than by sorting every count.
        counts.select_nth_unstable_by(HEAVY - 1, |a, b| b.cmp(a));
        let t = counts[HEAVY - 1].max(2);
        let top = &mut counts[..HEAVY];
        top.select_nth_unstable_by(want - 1, |a, b| b.cmp(a));
        let nth = top[want - 1];
        if (nth as u64) <= 2 * (t as u64 - 1) {
            return None;
        }
        Some(Split {
            t,
            slack: 0,
            chunks: 0,
            credit: HashMap::new(),
            checked: Vec::new(),
            hll: Hll::new(),
            failed: false,
        })
    }

    /// Count one row group's dictionary entries: heavy ones into `buf` (and their credit),
    /// light ones into the HyperLogLog. `file` is the file the row group is in. Returns false
    /// when `buf` refused a key (its arena is full): the caller then treats the column as
    /// overflowed, as `ByteBuf::push` callers do.
    pub(crate) fn chunk(
        &mut self,
        st: &super::stage::State,
        dict: &super::pages::Dict,
        file: usize,
        buf: &mut ByteBuf,
    ) -> bool {
        if !self.checked.contains(&file) {
            self.checked.push(file);
            let hashes: Vec<u64> = dict.used().map(|(k, _)| key_hash(st, k)).collect();
            // A repeat (or two values of one 64-bit hash, which costs only the recount).
            if has_repeat(&hashes) {
                self.failed = true;
            }
        }
        let slack = self.t as u64 - 1;
        self.slack += slack;
        self.chunks += 1;
        let mut ok = true;
        for (k, n) in dict.used() {
            if n < self.t {
                self.hll.add(key_hash(st, k));
                continue;
            }
            let (h, form) = digest(st, k);
            ok &= buf.push_digested(h, &form, k, n as u64);
            if self.failed {
                continue;
            }
            match self.credit.get_mut(k) {
                // Heavy twice in one dictionary: a repeated value, which the bound cannot cover.
                Some((_, last)) if *last == self.chunks => self.failed = true,
                Some((c, last)) => {
                    *c += slack;
                    *last = self.chunks;
                }
                None => {
                    if self.credit.len() >= MAX_CREDITED {
                        self.failed = true;
                    } else {
                        self.credit.insert(Box::from(k), (slack, self.chunks));
                    }
                }
            }
        }
        ok
    }
}

/// Whether a value occurs twice in `hashes`, in linear time: the hashes are spread over about
/// as many buckets as there are hashes by their top bits (one counting pass, one scatter
/// pass), and only each bucket's few hashes are compared.
fn has_repeat(hashes: &[u64]) -> bool {
    let n = hashes.len();
    if n < 2 {
        return false;
    }
    let bits = (usize::BITS - (n - 1).leading_zeros()).clamp(1, 24);
    let shift = 64 - bits;
    let buckets = 1usize << bits;
    let mut start = vec![0u32; buckets + 1];
    for &h in hashes {
        start[(h >> shift) as usize + 1] += 1;
    }
    for b in 0..buckets {
        start[b + 1] += start[b];
    }
    let mut next = start.clone();
    let mut spread = vec![0u64; n];
    for &h in hashes {
        let b = (h >> shift) as usize;
        spread[next[b] as usize] = h;
        next[b] += 1;
    }
    (0..buckets).any(|b| {
        let group = &mut spread[start[b] as usize..start[b + 1] as usize];
        if group.len() < 2 {
            return false;
        }
        group.sort_unstable();
        group.windows(2).any(|w| w[0] == w[1])
    })
}

/// The threads' splits of one key, merged: the total slack and each value's total credit.
pub(crate) struct Bounds {
    pub(crate) slack: u64,
    credit: HashMap<Box<[u8]>, u64>,
    pub(crate) hll: Hll,
    pub(crate) failed: bool,
}

impl Bounds {
    pub(crate) fn merge(splits: Vec<Split>) -> Bounds {
        let mut out = Bounds { slack: 0, credit: HashMap::new(), hll: Hll::new(), failed: false };
        for s in splits {
            out.slack += s.slack;
            out.failed |= s.failed;
            out.hll.merge(&s.hll);
            for (k, (c, _)) in s.credit {
                *out.credit.entry(k).or_insert(0) += c;
            }
        }
        out
    }

    /// Rows value `k` may have beyond its count in the exact table.
    pub(crate) fn missing(&self, k: &[u8]) -> u64 {
        self.slack - self.credit.get(k).copied().unwrap_or(0).min(self.slack)
    }

    /// Whether the first `want` of `top` (count descending, the exact table's top values, with
    /// `complete` true when `top` holds every value of the table) are certainly the top
    /// `want` values with their exact counts.
    pub(crate) fn certain(&self, top: &[(Box<[u8]>, u64)], want: usize, complete: bool) -> bool {
        if self.failed {
            return false;
        }
        let shown = &top[..want.min(top.len())];
        if shown.len() < want {
            // Values never heavy (up to `slack` rows each) could fill the other places.
            return self.slack == 0;
        }
        let Some(&(_, last)) = shown.last() else { return true };
        if shown.iter().any(|(k, _)| self.missing(k) > 0) {
            return false;
        }
        // A value left out, seen in the table or not, must be certainly below the last shown.
        let below = |upper: u64| upper < last;
        if !below(self.slack) {
            return false;
        }
        if !top[shown.len()..].iter().all(|(k, c)| below(c + self.missing(k))) {
            return false;
        }
        if !complete {
            // Values of the table past `top`: at most the smallest count listed, plus slack.
            let floor = top.last().map(|x| x.1).unwrap_or(0);
            if !below(floor + self.slack) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_found_in_any_bucket() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        for n in [0usize, 1, 2, 3, 100, 4097, 90_000] {
            let mut v: Vec<u64> = (0..n).map(|_| next()).collect();
            // Values that share their top bits, so that buckets hold more than one.
            v.extend((0..n.min(50) as u64).map(|i| (7u64 << 60) | i));
            assert!(!has_repeat(&v), "n {n}: no repeat");
            if v.is_empty() {
                continue;
            }
            for at in [0, v.len() / 2, v.len() - 1] {
                let mut w = v.clone();
                w.push(v[at]);
                assert!(has_repeat(&w), "n {n}: the repeat of entry {at}");
            }
        }
        assert!(has_repeat(&[0, 0]));
        assert!(has_repeat(&[u64::MAX, 1, u64::MAX]));
    }

    #[test]
    fn start_finds_the_heavy_threshold_by_selection() {
        // 20 hot counts (10,001..10,020) among 980 counts 1..=980, shuffled: the 256th largest
        // is 745, the 20th 10,001 and the 21st 980.
        let base: Vec<u32> =
            (1..=980).map(|i| (i * 617) % 980 + 1).chain(10_001..=10_020).collect();
        let shuffled: Vec<u32> = (0..base.len()).map(|i| base[(i * 389) % base.len()]).collect();
        let s = Split::start(&mut shuffled.clone(), 20).expect("20 values far above the threshold");
        assert_eq!(s.t, 745);
        // The 21st (980) is not above 2 (t - 1) = 1488: no split.
        assert!(Split::start(&mut shuffled.clone(), 21).is_none());
    }

    fn top(v: &[(&str, u64)]) -> Vec<(Box<[u8]>, u64)> {
        v.iter().map(|(k, c)| (Box::from(k.as_bytes()), *c)).collect()
    }

    fn bounds(slack: u64, credit: &[(&str, u64)]) -> Bounds {
        Bounds {
            slack,
            credit: credit.iter().map(|(k, c)| (Box::from(k.as_bytes()), *c)).collect(),
            hll: Hll::new(),
            failed: false,
        }
    }

    #[test]
    fn certain_only_when_no_value_left_out_could_reach_the_last_shown() {
        // 10 split row groups with t = 5: slack 40; a and b heavy in all of them.
        let b = bounds(40, &[("a", 40), ("b", 40), ("c", 20)]);
        // c may have up to 20 more rows: 60 + 20 = 80 < 100, so the top 2 are certain.
        assert!(b.certain(&top(&[("a", 500), ("b", 100), ("c", 60)]), 2, true));
        // With c at 85 it could pass b.
        assert!(!b.certain(&top(&[("a", 500), ("b", 100), ("c", 85)]), 2, true));
        // c itself shown: its count may be short.
        assert!(!b.certain(&top(&[("a", 500), ("b", 100), ("c", 60)]), 3, true));
        // A value never heavy may have up to 40 rows: not below a last shown of 40.
        assert!(!b.certain(&top(&[("a", 500), ("b", 40)]), 2, true));
        // Values past the list: up to its smallest count plus the slack.
        assert!(!b.certain(&top(&[("a", 500), ("b", 100), ("c", 61)]), 2, false));
        assert!(b.certain(&top(&[("a", 500), ("b", 100), ("c", 59)]), 2, false));
        // Fewer values than asked for: only certain with nothing left uncounted.
        assert!(!b.certain(&top(&[("a", 500)]), 2, true));
        assert!(bounds(0, &[]).certain(&top(&[("a", 500)]), 2, true));
    }

    #[test]
    fn start_needs_a_clear_gap_between_the_nth_value_and_the_heavy_threshold() {
        // 1,000 values: 20 of 1,000 rows, the rest 3 rows: t = 3, the 20th count 1,000.
        let mut counts: Vec<u32> = (0..1000).map(|i| if i < 20 { 1000 } else { 3 }).collect();
        let s = Split::start(&mut counts, 20).expect("skewed enough");
        assert_eq!(s.t, 3);
        // The 21st count (3) is not clear of the threshold; nor is anything evenly spread.
        assert!(Split::start(&mut counts, 21).is_none());
        let mut flat: Vec<u32> = (0..1000).map(|i| 3 + (i % 2)).collect();
        assert!(Split::start(&mut flat, 20).is_none());
        // Too few values to split.
        assert!(Split::start(&mut vec![5; 100], 21).is_none());
    }

    /// The HyperLogLog is fed `key_hash` itself (no extra mixing): its estimates on sets of
    /// id-like strings (short and long, sequential and not) are as good as HyperLogLog's
    /// 0.8% standard error says.
    #[test]
    fn distinct_estimates_from_key_hash_are_within_the_stated_error() {
        let st = crate::count::stage::hasher();
        let shapes: [fn(u64) -> String; 5] = [
            |i| format!("tt{i:07}"),
            |i| format!("{i}"),
            |i| format!("user-{}", i * 7919),
            |i| format!("{:08x}-0000-4000-8000-{:012x}", i, i * 31),
            |i| format!("k{}", i % 1000 + (i / 1000) * 1_000_003),
        ];
        let mut errors = Vec::new();
        for (s, shape) in shapes.iter().enumerate() {
            for (r, n) in [20_000u64, 100_000, 300_000].into_iter().enumerate() {
                let mut hll = Hll::new();
                let base = (s as u64 * 3 + r as u64) * 10_000_000;
                for i in base..base + n {
                    hll.add(key_hash(&st, shape(i).as_bytes()));
                }
                errors.push((hll.estimate() as f64 - n as f64) / n as f64);
            }
        }
        let rms = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
        let worst = errors.iter().fold(0f64, |m, e| m.max(e.abs()));
        assert!(rms < 0.015 && worst < 0.035, "rms {rms:.4}, worst {worst:.4}: {errors:?}");
    }
}
