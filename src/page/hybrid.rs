//! Parquet's RLE / bit-packed hybrid, counted without decoding into a buffer: dictionary
//! indices into a table of counts (a run of N equal indices is one addition; bit-packed groups
//! of widths up to 24 unpacked with loads of a width known at compile time), and the ones of a
//! bit-width-1 run of definition levels (the non-null values) by popcount.

/// One run header of the RLE / bit-packed hybrid: (header, bytes it took).
#[inline]
fn uleb(data: &[u8], mut pos: usize) -> Option<(u64, usize)> {
    let mut header: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *data.get(pos)?;
        pos += 1;
        header |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some((header, pos));
        }
        shift += 7;
        if shift > 56 {
            return None;
        }
    }
}

/// The ones among `n` definition levels of bit width 1 (the non-null values of a flat
/// optional column): RLE runs are counted whole, bit-packed groups by popcount.
pub(crate) fn count_ones(data: &[u8], n: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has POPCNT, the one feature the function is compiled with.
            return unsafe { count_ones_popcnt(data, n) };
        }
    }
    count_ones_any(data, n)
}

/// `count_ones` compiled with the POPCNT instruction (x86_64's baseline lacks it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn count_ones_popcnt(data: &[u8], n: usize) -> Option<usize> {
    count_ones_any(data, n)
}

#[inline(always)]
fn count_ones_any(data: &[u8], n: usize) -> Option<usize> {
    let mut pos = 0usize;
    let mut left = n;
    let mut ones = 0usize;
    while left > 0 {
        let (header, p) = uleb(data, pos)?;
        pos = p;
        if header & 1 == 0 {
            let count = ((header >> 1) as usize).min(left);
            let v = *data.get(pos)?;
            pos += 1;
            if count == 0 || v > 1 {
                return None;
            }
            ones += count * v as usize;
            left -= count;
        } else {
            let groups = (header >> 1) as usize;
            if groups == 0 {
                return None;
            }
            let chunk = data.get(pos..pos.checked_add(groups)?)?;
            pos += groups;
            let take = groups.checked_mul(8)?.min(left);
            let full = take / 8;
            let words = chunk[..full].chunks_exact(8);
            let rest = words.remainder();
            ones += words
                .map(|w| {
                    u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
                        .count_ones() as usize
                })
                .sum::<usize>();
            let mut tail = [0u8; 8];
            tail[..rest.len()].copy_from_slice(rest);
            ones += u64::from_le_bytes(tail).count_ones() as usize;
            if take % 8 != 0 {
                ones += (chunk[full] & ((1u8 << (take % 8)) - 1)).count_ones() as usize;
            }
            left -= take;
        }
    }
    Some(ones)
}

/// Count `n` dictionary indices of bit width `bw` (RLE / bit-packed hybrid) into `counts`;
/// None on bad input or an index past the dictionary.
pub(crate) fn count_indices(data: &[u8], bw: u32, n: usize, counts: &mut [u32]) -> Option<()> {
    let mut pos = 0usize;
    let mut left = n;
    let value_bytes = bw.div_ceil(8) as usize;
    while left > 0 {
        let (header, p) = uleb(data, pos)?;
        pos = p;
        if header & 1 == 0 {
            let count = ((header >> 1) as usize).min(left);
            if count == 0 {
                return None;
            }
            let mut v: u32 = 0;
            for i in 0..value_bytes {
                v |= (*data.get(pos + i)? as u32) << (8 * i);
            }
            pos += value_bytes;
            let slot = counts.get_mut(v as usize)?;
            *slot = slot.wrapping_add(count as u32);
            left -= count;
        } else {
            let groups = (header >> 1) as usize;
            if groups == 0 {
                return None;
            }
            let bytes = groups.checked_mul(bw as usize)?;
            let chunk = data.get(pos..pos.checked_add(bytes)?)?;
            let take = groups.checked_mul(8)?.min(left);
            // The loads may read past the run into the rest of the page (never past the page).
            unpack_count(chunk, &data[pos..], bw, take, counts)?;
            pos += bytes;
            left -= take;
        }
    }
    Some(())
}

/// Widths up to this are counted by `unpack_fixed`, into a table of 2^width counts.
pub(crate) const FIXED_MAX: u32 = 24;

/// Count the first `take` values of bit-packed `chunk` (width `bw`, at most 32); `readable`
/// starts where `chunk` does and may go on past it (whole-word loads may read there, the
/// values come from `chunk` alone). For widths up to `FIXED_MAX`, `counts` must hold at least
/// 2^bw entries (an index past the dictionary then lands in the padding, which the caller
/// checks is still zero).
#[inline]
fn unpack_count(
    chunk: &[u8],
    readable: &[u8],
    bw: u32,
    take: usize,
    counts: &mut [u32],
) -> Option<()> {
    macro_rules! fixed {
        ($($w:literal)*) => {
            match bw {
                $($w => return unpack_fixed::<$w>(chunk, readable, take, counts),)*
                _ => {}
            }
        };
    }
    if counts.len() >= 1 << bw.min(FIXED_MAX + 1) {
        fixed!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24);
    }
    if bw == 0 {
        let slot = counts.get_mut(0)?;
        *slot = slot.wrapping_add(take as u32);
        return Some(());
    }
    unpack_tail(chunk, bw as usize, 0, take, counts)
}

/// Bit-packed values of a width known at compile time: each group of 8 values is `W` bytes,
/// and each value one unaligned 8-byte load with a constant offset, shift and mask.
#[inline(always)]
fn unpack_fixed<const W: usize>(
    chunk: &[u8],
    readable: &[u8],
    take: usize,
    counts: &mut [u32],
) -> Option<()> {
    let mask = (1usize << W) - 1;
    let c = counts.get_mut(..1 << W)?;
    // Whole groups whose last load (at byte W - 1 + 7 of the group at most) stays readable.
    let groups = (take / 8).min(readable.len().saturating_sub(7) / W);
    for g in 0..groups {
        let grp = &readable[g * W..g * W + W + 7];
        for i in 0..8 {
            let bit = i * W;
            let at = bit / 8;
            let w = u64::from_le_bytes([
                grp[at],
                grp[at + 1],
                grp[at + 2],
                grp[at + 3],
                grp[at + 4],
                grp[at + 5],
                grp[at + 6],
                grp[at + 7],
            ]);
            let v = (w >> (bit % 8)) as usize & mask;
            c[v] = c[v].wrapping_add(1);
        }
    }
    unpack_tail(chunk, W, groups * 8, take, c)
}

/// Values `from..take` of bit-packed `chunk`, read byte by byte into an 8-byte window.
fn unpack_tail(
    chunk: &[u8],
    bw: usize,
    from: usize,
    take: usize,
    counts: &mut [u32],
) -> Option<()> {
    let mask: u64 = (1u64 << bw) - 1;
    let mut bit = from * bw;
    for _ in from..take {
        let at = bit >> 3;
        let mut w = [0u8; 8];
        let end = (at + 8).min(chunk.len());
        w[..end.checked_sub(at)?].copy_from_slice(&chunk[at..end]);
        let v = ((u64::from_le_bytes(w) >> (bit & 7)) & mask) as usize;
        let slot = counts.get_mut(v)?;
        *slot = slot.wrapping_add(1);
        bit += bw;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Counts of a dictionary of `len` values, padded as `values_of` pads them; None also for
    /// an index past the dictionary.
    fn counts_of(data: &[u8], bw: u32, n: usize, len: usize) -> Option<Vec<u32>> {
        let mut c = vec![0u32; if bw <= FIXED_MAX { len.max(1 << bw) } else { len }];
        count_indices(data, bw, n, &mut c)?;
        if c[len..].iter().any(|&x| x != 0) {
            return None;
        }
        c.truncate(len);
        Some(c)
    }

    #[test]
    fn hybrid_runs_and_bit_packed_groups() {
        // RLE run of 5 x value 3 (bw 2), then one bit-packed group of 8 values 0..=3,0..=3.
        let mut data = vec![5 << 1, 3];
        data.push((1 << 1) | 1);
        // 8 values with bw 2: 0,1,2,3,0,1,2,3 -> bits little-endian: 0b11100100 twice.
        data.extend_from_slice(&[0b1110_0100, 0b1110_0100]);
        assert_eq!(counts_of(&data, 2, 13, 4).unwrap(), [2, 2, 2, 7]);
        // Truncated input is refused, not read past; so is an index past the dictionary.
        assert!(counts_of(&data[..3], 2, 13, 4).is_none());
        assert!(counts_of(&data, 2, 13, 3).is_none());
    }

    #[test]
    fn bit_packed_widths_match_a_plain_unpacker() {
        // Every width 1..=32, 40 groups (320 values) of which 316 are taken, so the last group
        // is partly padding: the fixed-width loads, the tail path and bit-by-bit reads agree.
        for bw in 1..=32u32 {
            let groups = 40usize;
            let vals: Vec<u64> = (0..groups as u64 * 8)
                .map(|i| (i * 2_654_435_761 + (i >> 3)) & ((1u64 << bw) - 1))
                .collect();
            let mut bits = vec![0u8; groups * bw as usize];
            for (i, v) in vals.iter().enumerate() {
                for b in 0..bw as usize {
                    if v >> b & 1 == 1 {
                        let at = i * bw as usize + b;
                        bits[at / 8] |= 1 << (at % 8);
                    }
                }
            }
            let mut data = vec![((groups as u8) << 1) | 1];
            data.extend_from_slice(&bits);
            let take = groups * 8 - 4;
            let mut want: HashMap<u64, u32> = HashMap::new();
            for v in &vals[..take] {
                *want.entry(*v).or_insert(0) += 1;
            }
            let len = 1usize << bw.min(20);
            if bw <= 20 {
                let c = counts_of(&data, bw, take, len).unwrap();
                let got: HashMap<u64, u32> = c
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(i, n)| (i as u64, *n))
                    .collect();
                assert_eq!(got, want, "width {bw}");
            } else {
                // Indices past a dictionary of 2^20 values are refused.
                assert!(counts_of(&data, bw, take, len).is_none(), "width {bw}");
            }
        }
    }

    #[test]
    fn definition_levels_by_popcount() {
        // RLE run of 10 ones, a bit-packed group of 8 (0b1011_0001: 4 ones) of which 6 taken.
        let data = [10 << 1, 1, (1 << 1) | 1, 0b1011_0001];
        assert_eq!(count_ones(&data, 16), Some(10 + 3));
        assert_eq!(count_ones(&data, 18), Some(14));
        assert_eq!(count_ones(&data, 19), None);
        // A level above 1 is not a flat column's.
        assert_eq!(count_ones(&[4 << 1, 2], 4), None);
    }
}
