//! Count a flat string or binary column chunk straight from its pages: the dictionary page is
//! split into values, and each data page's dictionary indices (Parquet's RLE / bit-packed
//! hybrid) are counted without building any Arrow array. A run of N equal indices is one
//! addition. Pages written without the dictionary (PLAIN, after a writer's fallback) are
//! counted value by value. Anything else (other encodings, nested columns, a malformed page)
//! makes `count_chunk` return `None`, and the caller reads the chunk through Arrow instead.

use std::fs::File;
use std::sync::Arc;

use hashbrown::HashMap;
use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::Page;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::serialized_reader::SerializedPageReader;
use parquet::schema::types::ColumnDescriptor;

/// The counts of one column chunk. A value may appear twice: once from dictionary pages and
/// once from plain pages.
pub struct ChunkCounts {
    pub nulls: u64,
    dict: bytes::Bytes,
    /// (start, end, count) of the dictionary values seen.
    entries: Vec<(usize, usize, u64)>,
    plain: HashMap<Vec<u8>, u64>,
}

impl ChunkCounts {
    pub fn each(&self, mut f: impl FnMut(&[u8], u64)) {
        for &(s, e, c) in &self.entries {
            f(&self.dict[s..e], c);
        }
        for (v, c) in &self.plain {
            f(v, *c);
        }
    }
}

/// Whether this path can read the column at all (flat BYTE_ARRAY, optional or required).
pub fn eligible(descr: &ColumnDescriptor) -> bool {
    descr.physical_type() == PhysicalType::BYTE_ARRAY && descr.max_rep_level() == 0 && descr.max_def_level() <= 1
}

pub fn count_chunk(file: &Arc<File>, meta: &ColumnChunkMetaData, descr: &ColumnDescriptor, rows: usize) -> Option<ChunkCounts> {
    if !eligible(descr) {
        return None;
    }
    let reader = SerializedPageReader::new(file.clone(), meta, rows, None).ok()?;
    let has_def = descr.max_def_level() == 1;
    let mut dict: Vec<(usize, usize)> = Vec::new();
    let mut dict_buf = bytes::Bytes::new();
    let mut counts: Vec<u64> = Vec::new();
    let mut plain: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut nulls = 0u64;
    let mut seen = 0u64;
    for page in reader {
        match page.ok()? {
            Page::DictionaryPage { buf, num_values, encoding, .. } => {
                if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) || !dict.is_empty() {
                    return None;
                }
                dict = split_plain(&buf, num_values as usize)?;
                counts = vec![0; dict.len()];
                dict_buf = buf;
            }
            Page::DataPage { buf, num_values, encoding, def_level_encoding, .. } => {
                let n = num_values as usize;
                let (non_null, values) = if has_def {
                    if def_level_encoding != Encoding::RLE || buf.len() < 4 {
                        return None;
                    }
                    let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    let levels = buf.get(4..4 + len)?;
                    let mut ones = 0usize;
                    hybrid(levels, 1, n, &mut |v, c| {
                        if v == 1 {
                            ones += c;
                        }
                        v <= 1
                    })?;
                    (ones, buf.get(4 + len..)?)
                } else {
                    (n, &buf[..])
                };
                nulls += (n - non_null) as u64;
                seen += n as u64;
                values_of(values, encoding, non_null, &mut counts, &mut plain)?;
            }
            Page::DataPageV2 { buf, num_values, encoding, num_nulls, def_levels_byte_len, rep_levels_byte_len, .. } => {
                let n = num_values as usize;
                let nn = num_nulls as usize;
                if nn > n || rep_levels_byte_len != 0 {
                    return None;
                }
                nulls += nn as u64;
                seen += n as u64;
                let values = buf.get(def_levels_byte_len as usize..)?;
                values_of(values, encoding, n - nn, &mut counts, &mut plain)?;
            }
        }
    }
    if seen != rows as u64 {
        return None;
    }
    let entries = counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (dict[i].0, dict[i].1, *c)).collect();
    Some(ChunkCounts { nulls, dict: dict_buf, entries, plain })
}

/// Count the `n` non-null values of a data page into dictionary counts or plain values.
fn values_of(values: &[u8], encoding: Encoding, n: usize, counts: &mut [u64], plain: &mut HashMap<Vec<u8>, u64>) -> Option<()> {
    if n == 0 {
        return Some(());
    }
    match encoding {
        Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY => {
            let (&bw, data) = values.split_first()?;
            if bw > 32 || (counts.is_empty() && n > 0) {
                return None;
            }
            let len = counts.len();
            hybrid(data, bw as u32, n, &mut |v, c| {
                let v = v as usize;
                if v < len {
                    counts[v] += c as u64;
                    true
                } else {
                    false
                }
            })
        }
        Encoding::PLAIN => {
            for (s, e) in split_plain(values, n)? {
                *plain.entry_ref(&values[s..e]).or_insert(0) += 1;
            }
            Some(())
        }
        _ => None,
    }
}

/// PLAIN byte arrays: a 4-byte little-endian length before each value.
fn split_plain(buf: &[u8], n: usize) -> Option<Vec<(usize, usize)>> {
    let mut out = Vec::with_capacity(n);
    let mut pos = 0usize;
    for _ in 0..n {
        let len = u32::from_le_bytes(buf.get(pos..pos + 4)?.try_into().ok()?) as usize;
        let start = pos + 4;
        let end = start.checked_add(len)?;
        if end > buf.len() {
            return None;
        }
        out.push((start, end));
        pos = end;
    }
    Some(out)
}

/// Decode `n` values of Parquet's RLE / bit-packed hybrid encoding with bit width `bw`,
/// calling `f(value, repeat)`; `f` returns false on a value out of range. None on bad input.
fn hybrid<F: FnMut(u32, usize) -> bool>(data: &[u8], bw: u32, n: usize, f: &mut F) -> Option<()> {
    let mut pos = 0usize;
    let mut left = n;
    let value_bytes = bw.div_ceil(8) as usize;
    let mask: u64 = if bw == 0 { 0 } else { (1u64 << bw) - 1 };
    while left > 0 {
        // ULEB128 run header.
        let mut header: u64 = 0;
        let mut shift = 0;
        loop {
            let b = *data.get(pos)?;
            pos += 1;
            header |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 56 {
                return None;
            }
        }
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
            if !f(v, count) {
                return None;
            }
            left -= count;
        } else {
            let groups = (header >> 1) as usize;
            let bytes = groups.checked_mul(bw as usize)?;
            let chunk = data.get(pos..pos.checked_add(bytes)?)?;
            pos += bytes;
            let take = (groups * 8).min(left);
            if bw == 0 {
                if take > 0 && !f(0, take) {
                    return None;
                }
            } else {
                let mut acc: u64 = 0;
                let mut have: u32 = 0;
                let mut it = chunk.iter();
                for _ in 0..take {
                    while have < bw {
                        acc |= (*it.next()? as u64) << have;
                        have += 8;
                    }
                    if !f((acc & mask) as u32, 1) {
                        return None;
                    }
                    acc >>= bw;
                    have -= bw;
                }
            }
            if groups == 0 {
                return None;
            }
            left -= take;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_runs_and_bit_packed_groups() {
        // RLE run of 5 x value 3 (bw 2), then one bit-packed group of 8 values 0..=3,0..=3.
        let mut data = vec![5 << 1, 3];
        data.push((1 << 1) | 1);
        // 8 values with bw 2: 0,1,2,3,0,1,2,3 -> bits little-endian: 0b11100100 twice.
        data.extend_from_slice(&[0b1110_0100, 0b1110_0100]);
        let mut counts = [0usize; 4];
        hybrid(&data, 2, 13, &mut |v, c| {
            counts[v as usize] += c;
            true
        })
        .unwrap();
        assert_eq!(counts, [2, 2, 2, 7]);
        // Truncated input is refused, not read past.
        assert!(hybrid(&data[..3], 2, 13, &mut |_, _| true).is_none());
    }

    #[test]
    fn plain_byte_arrays() {
        let buf = [1, 0, 0, 0, b'a', 0, 0, 0, 0, 2, 0, 0, 0, b'b', b'c'];
        let v = split_plain(&buf, 3).unwrap();
        assert_eq!(v, vec![(4, 5), (9, 9), (13, 15)]);
        assert!(split_plain(&buf, 4).is_none());
    }
}
