//! Exact counts of an integer key whose values fill a range not much wider than the table's
//! rows (surrogate keys, ids handed out in order, dates): one byte per value of the range and
//! worker thread, indexed by the value, with what passes 255 carried into a small map. No
//! hashing, no staging, no spill.
//!
//! The range is read from the row groups' min/max statistics (`range_of`). A value outside it
//! (statistics that are wrong) goes to the hashed staging as before, and every thread routes a
//! value the same way, so the counts are exact whatever the statistics say.

use hashbrown::HashMap;
use parquet::file::statistics::Statistics;
use rayon::prelude::*;

use super::counter::TopK;
use crate::table::Table;
use crate::value::KeyType;

/// The values `lo..lo + len` of a key, counted by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DenseRange {
    pub(crate) lo: i64,
    pub(crate) len: usize,
}

/// A range is used when it is at most this many times the rows read (plus `SLACK`): wider,
/// the final scan over the range would cost more than hashing the keys.
const WIDTH_PER_ROW: u64 = 2;
const SLACK: u64 = 1 << 16;

/// Tables of more files than these are not looked at: each file's footer is read again for
/// its statistics (in an object store, one request of at most 64 KiB each).
const LOCAL_FILES: usize = 64;
const REMOTE_FILES: usize = 16;

/// The range of `field` (a key of type `ty`) over the row groups of `table`, if every row
/// group with a value states its min and max, the range is at most `WIDTH_PER_ROW` times the
/// rows, and `threads` arrays of it fit in `memory` bytes.
pub(crate) fn range_of(
    table: &Table,
    field: &str,
    ty: KeyType,
    threads: usize,
    memory: usize,
) -> Option<DenseRange> {
    let ints = matches!(
        ty,
        KeyType::TinyInt | KeyType::SmallInt | KeyType::Int | KeyType::BigInt | KeyType::Date
    );
    if !ints || table.files.len() > if table.in_store() { REMOTE_FILES } else { LOCAL_FILES } {
        return None;
    }
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for file in &table.files {
        let schema = file.meta.metadata().file_metadata().schema_descr_ptr();
        let Some(col) = schema.columns().iter().position(|c| c.path().parts() == [field]) else {
            continue;
        };
        let meta = crate::table::footer_with_stats(file, col).ok()?;
        for rg in meta.metadata().row_groups() {
            let (a, b) = chunk_bounds(rg, col)?;
            (lo, hi) = (lo.min(a), hi.max(b));
        }
    }
    if lo > hi {
        return None;
    }
    let len = (hi as i128 - lo as i128 + 1) as u128;
    let wide = len > (WIDTH_PER_ROW * table.rows() + SLACK) as u128;
    if wide || len.saturating_mul(threads.max(1) as u128) > memory as u128 {
        return None;
    }
    Some(DenseRange { lo, len: len as usize })
}

/// The min and max of column `col` in row group `rg` (an empty range for a chunk of NULLs
/// only), or None when its statistics do not say.
fn chunk_bounds(rg: &parquet::file::metadata::RowGroupMetaData, col: usize) -> Option<(i64, i64)> {
    let chunk = rg.column(col);
    let stats = chunk.statistics();
    let (min, max) = match stats {
        Some(Statistics::Int32(s)) => {
            (s.min_opt().map(|&v| v as i64), s.max_opt().map(|&v| v as i64))
        }
        Some(Statistics::Int64(s)) => (s.min_opt().copied(), s.max_opt().copied()),
        _ => (None, None),
    };
    match (min, max) {
        (Some(a), Some(b)) => Some((a, b)),
        _ if rg.num_rows() == 0
            || stats.and_then(|s| s.null_count_opt()) == Some(rg.num_rows() as u64) =>
        {
            Some((i64::MAX, i64::MIN))
        }
        _ => None,
    }
}

/// One thread's counts of the values of a range.
pub(crate) struct Dense {
    lo: i64,
    /// Each value's count, modulo 256.
    low: Vec<u8>,
    /// Each value's count past its `low` byte (a multiple of 256), for values counted 256
    /// times or more.
    carry: HashMap<i64, u64>,
}

impl Dense {
    pub(crate) fn new(r: DenseRange) -> Self {
        Dense { lo: r.lo, low: vec![0; r.len], carry: HashMap::new() }
    }

    /// Count `k` `n` more times; false when `k` is outside the range.
    #[inline]
    pub(crate) fn add(&mut self, k: i64, n: u64) -> bool {
        // Below `lo` the difference wraps past any length (the range ends at or below i64::MAX).
        let i = k.wrapping_sub(self.lo) as u64;
        if i >= self.low.len() as u64 {
            return false;
        }
        let slot = &mut self.low[i as usize];
        let sum = *slot as u64 + n;
        *slot = sum as u8;
        if sum > 255 {
            *self.carry.entry(k).or_insert(0) += sum & !255;
        }
        true
    }

    /// Count each of `keys` once; `outside` gets those outside the range. The count of the key
    /// `AHEAD` places on is fetched into the cache meanwhile: the array is larger than the
    /// cache, and each count costs a miss otherwise.
    pub(crate) fn add_slice(&mut self, keys: &[i64], mut outside: impl FnMut(i64)) {
        // Chosen by measuring 16, 64 and 128 on the benchmark's 40M keys (BENCHMARKS.md, "The
        // prefetch distance of the dense counter").
        const AHEAD: usize = 64;
        for (i, &k) in keys.iter().enumerate() {
            if let Some(&next) = keys.get(i + AHEAD) {
                let j = next.wrapping_sub(self.lo) as u64;
                if let Some(slot) = self.low.get(j as usize) {
                    prefetch(slot);
                }
            }
            if !self.add(k, 1) {
                outside(k);
            }
        }
    }

    /// Each value counted, with its count, in value order.
    pub(crate) fn each(&self, mut f: impl FnMut(i64, u64)) {
        let mut carried: Vec<(i64, u64)> = self.carry.iter().map(|(&k, &c)| (k, c)).collect();
        carried.sort_unstable();
        let mut next = carried.iter().peekable();
        for (i, &c) in self.low.iter().enumerate() {
            let k = self.lo + i as i64;
            let more = next.next_if(|x| x.0 == k).map_or(0, |x| x.1);
            if c > 0 || more > 0 {
                f(k, c as u64 + more);
            }
        }
    }
}

#[inline(always)]
fn prefetch(slot: &u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is only a hint (it never faults, not even on a bad address), and
        // SSE, which it needs, is part of every x86_64 target.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(slot as *const u8 as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = slot;
}

/// Values scanned at a time when the threads' counts are added up.
const BLOCK: usize = 1 << 14;

/// The top `want` values counted by the threads' `parts` (count descending, value ascending)
/// and how many distinct values they counted.
pub(crate) fn top_and_distinct(parts: &[&Dense], want: usize) -> (Vec<(i64, u64)>, u64) {
    let Some(first) = parts.first() else { return (Vec::new(), 0) };
    let (lo, len) = (first.lo, first.low.len());
    // The carried part of every value counted 256 times or more by some thread, by index.
    let mut carried: HashMap<usize, u64> = HashMap::new();
    for d in parts {
        d.carry.iter().for_each(|(&k, &c)| *carried.entry((k - lo) as usize).or_insert(0) += c);
    }
    let mut carried: Vec<(usize, u64)> = carried.into_iter().collect();
    carried.sort_unstable();
    let blocks: Vec<(TopK<i64>, u64)> = (0..len.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let (start, end) = (b * BLOCK, ((b + 1) * BLOCK).min(len));
            let mut sums = vec![0u64; end - start];
            for d in parts {
                sums.iter_mut().zip(&d.low[start..end]).for_each(|(s, &c)| *s += c as u64);
            }
            let from = carried.partition_point(|c| c.0 < start);
            carried[from..]
                .iter()
                .take_while(|c| c.0 < end)
                .for_each(|&(i, c)| sums[i - start] += c);
            let mut top = TopK::new(want);
            let mut distinct = 0;
            for (i, &s) in sums.iter().enumerate() {
                if s > 0 {
                    distinct += 1;
                    top.push(lo + (start + i) as i64, s);
                }
            }
            (top, distinct)
        })
        .collect();
    let distinct = blocks.iter().map(|b| b.1).sum();
    let mut top = TopK::new(want);
    blocks.into_iter().flat_map(|b| b.0.into_sorted()).for_each(|(k, c)| top.push(k, c));
    (top.into_sorted(), distinct)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn counts_past_a_byte_and_across_threads_are_exact() {
        let r = DenseRange { lo: -3, len: 10 };
        let (mut a, mut b) = (Dense::new(r), Dense::new(r));
        let mut want: BTreeMap<i64, u64> = BTreeMap::new();
        for i in 0..2_000i64 {
            let (x, y) = (-3 + i % 7, if i % 3 == 0 { 6 } else { -3 });
            assert!(a.add(x, 1));
            assert!(b.add(y, (i % 5) as u64 + 1));
            *want.entry(x).or_default() += 1;
            *want.entry(y).or_default() += (i % 5) as u64 + 1;
        }
        assert!(b.add(5, 300));
        *want.entry(5).or_default() += 300;
        for out in [-4, 7, i64::MIN, i64::MAX] {
            assert!(!a.add(out, 1), "{out} is outside the range");
        }
        let (top, distinct) = top_and_distinct(&[&a, &b], usize::MAX);
        assert_eq!(distinct as usize, want.len());
        assert_eq!(top.iter().copied().collect::<BTreeMap<_, _>>(), want);
        assert!(top.windows(2).all(|w| w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0)));
        let (top2, _) = top_and_distinct(&[&a, &b], 2);
        assert_eq!(top2, top[..2].to_vec());
        let mut each = BTreeMap::new();
        a.each(|k, c| *each.entry(k).or_default() += c);
        b.each(|k, c| *each.entry(k).or_default() += c);
        assert_eq!(each, want);
    }

    #[test]
    fn a_range_ending_at_the_largest_value_takes_no_value_below_it() {
        let mut d = Dense::new(DenseRange { lo: i64::MAX - 3, len: 4 });
        assert!(d.add(i64::MAX, 1));
        assert!(!d.add(i64::MIN, 1) && !d.add(0, 1) && !d.add(i64::MAX - 4, 1));
        let (top, distinct) = top_and_distinct(&[&d], 5);
        assert_eq!((top, distinct), (vec![(i64::MAX, 1)], 1));
    }
}
