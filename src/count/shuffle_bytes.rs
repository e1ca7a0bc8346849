//! What a table's rows weigh in a Spark shuffle, from a sample of them: AQE decides on these
//! bytes (a partition is skewed over its threshold, partitions are coalesced up to the advisory
//! size, a side under the broadcast threshold is broadcast at run time).
//!
//! Spark writes a shuffle row as an `UnsafeRow` behind its 4-byte length: one 8-byte word of
//! NULL bits per 64 columns, one 8-byte slot per column (a fixed-width value, or the offset and
//! length of a variable one), then each variable value padded to 8 bytes. A map task writes
//! each reduce partition's rows together, compressed by LZ4 in 32 KB blocks
//! (`spark.io.compression.codec`, `spark.io.compression.lz4.blockSize`). The sample's rows are
//! laid out that way, grouped by a hash of the key as a partition groups them, and compressed
//! in 32 KB blocks: the bytes per row before compression are what AQE compares with the
//! broadcast threshold, the bytes after are the shuffle's blocks.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use std::hash::BuildHasher;

use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::table::Table;

/// Rows sampled: the first rows of the first row groups, up to this many.
const SAMPLE_ROWS: usize = 16_384;
/// LZ4's block size in Spark's shuffle (`spark.io.compression.lz4.blockSize`).
const LZ4_BLOCK: usize = 32 << 10;
/// The header of each block of Spark's `LZ4BlockOutputStream`.
const LZ4_BLOCK_HEADER: usize = 21;
/// Groups the sample's rows are laid out in, as a map task's output is by partition.
const GROUPS: u64 = 32;

/// A table's rows in a shuffle, per row.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ShuffleBytes {
    /// As `UnsafeRow`s, before compression (AQE's runtime `dataSize`).
    pub row_bytes: f64,
    /// As the shuffle writes them, LZ4-compressed: the rows of values that are not frequent.
    pub block_bytes: f64,
    /// The same for the rows of one frequent value (1% of the sample or more) written
    /// together, as a hot key's rows are: the repeated key compresses well.
    pub hot_block_bytes: f64,
    /// Rows the estimate is from.
    pub sampled_rows: u64,
}

/// The shuffle bytes of `table`'s rows (of `columns`, every column when None), from a sample;
/// None when the table has no rows here or cannot be read (the planner then uses the decoded
/// size).
pub fn shuffle_bytes(table: &Table, key: &str, columns: Option<&[String]>) -> Option<ShuffleBytes> {
    if let Some(held) = &table.held {
        // A table an engine holds: from its files when they are here too.
        let here = Table::open(&held.files_here).ok().filter(|_| !held.files_here.is_empty())?;
        return shuffle_bytes(&here, key, columns);
    }
    let mut rows: Vec<Row> = Vec::new();
    for file in &table.files {
        if rows.len() >= SAMPLE_ROWS {
            break;
        }
        let f = file.open().ok()?;
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(f, file.meta.clone())
            .with_batch_size(4096)
            .with_limit(SAMPLE_ROWS - rows.len());
        let builder = match columns {
            Some(cols) => {
                let fields = builder.parquet_schema().root_schema().get_fields();
                let wanted = |name: &str| {
                    name.eq_ignore_ascii_case(key)
                        || cols.iter().any(|c| c.eq_ignore_ascii_case(name))
                };
                let roots: Vec<usize> =
                    (0..fields.len()).filter(|&i| wanted(fields[i].name())).collect();
                let mask = parquet::arrow::ProjectionMask::roots(builder.parquet_schema(), roots);
                builder.with_projection(mask)
            }
            None => builder,
        };
        let reader = builder.build().ok()?;
        for batch in reader {
            add_rows(&batch.ok()?, key, &mut rows);
        }
    }
    if rows.is_empty() {
        return None;
    }
    // A partition's rows are written together, in the order the map task read them; a hot
    // value's rows are most of its partition's.
    let mut counts: std::collections::HashMap<&[u8], usize> = std::collections::HashMap::new();
    rows.iter().for_each(|r| *counts.entry(r.1.as_slice()).or_default() += 1);
    let frequent = |r: &Row| counts.get(r.1.as_slice()).copied().unwrap_or(0) * 100 >= rows.len();
    let (hot, mut rest): (Vec<&Row>, Vec<&Row>) = rows.iter().partition(|r| frequent(r));
    rest.sort_by_key(|r| r.0);
    let mut hot = hot;
    hot.sort_by(|a, b| a.1.cmp(&b.1));
    let raw_bytes: usize = rows.iter().map(|r| r.2.len()).sum();
    let block_bytes = compressed_per_row(&rest).or(compressed_per_row(&hot))?;
    let hot_block_bytes = compressed_per_row(&hot).unwrap_or(block_bytes);
    Some(ShuffleBytes {
        row_bytes: raw_bytes as f64 / rows.len() as f64,
        block_bytes,
        hot_block_bytes,
        sampled_rows: rows.len() as u64,
    })
}

/// A sampled row: the group its key puts it in, its key's bytes, the row as serialized.
type Row = (u64, Vec<u8>, Vec<u8>);

/// These rows, in this order, compressed in 32 KB blocks: bytes per row (None: no rows).
fn compressed_per_row(rows: &[&Row]) -> Option<f64> {
    if rows.is_empty() {
        return None;
    }
    let raw: Vec<u8> = rows.iter().flat_map(|r| r.2.iter().copied()).collect();
    let compressed: usize = raw
        .chunks(LZ4_BLOCK)
        .map(|c| lz4_flex::block::compress(c).len().min(c.len()) + LZ4_BLOCK_HEADER)
        .sum();
    Some(compressed as f64 / rows.len() as f64)
}

/// Each row of `batch` as Spark serializes it, with the group its key puts it in.
fn add_rows(batch: &RecordBatch, key: &str, out: &mut Vec<Row>) {
    let columns: Vec<ArrayRef> = batch.columns().iter().map(plain).collect();
    let key_col = batch.schema().fields().iter().position(|f| f.name().eq_ignore_ascii_case(key));
    let words = columns.len().div_ceil(64);
    for i in 0..batch.num_rows() {
        let mut fixed = vec![0u8; 8 * (words + columns.len())];
        let mut var: Vec<u8> = Vec::new();
        for (c, a) in columns.iter().enumerate() {
            let slot = 8 * (words + c);
            if a.is_null(i) {
                fixed[(c / 64) * 8 + (c % 64) / 8] |= 1 << (c % 8);
                continue;
            }
            match value(a, i) {
                Field::Fixed(b) => {
                    fixed[slot..slot + b.len().min(8)].copy_from_slice(&b[..b.len().min(8)])
                }
                Field::Var(b) => {
                    let offset = (fixed.len() + var.len()) as u64;
                    fixed[slot..slot + 8]
                        .copy_from_slice(&((offset << 32) | b.len() as u64).to_le_bytes());
                    var.extend_from_slice(&b);
                    var.resize(var.len().div_ceil(8) * 8, 0);
                }
            }
        }
        let mut row = ((fixed.len() + var.len()) as u32).to_be_bytes().to_vec();
        row.extend(fixed);
        row.extend(var);
        let key = key_col
            .map_or_else(|| (i as u64).to_le_bytes().to_vec(), |k| key_bytes(&columns[k], i));
        let group = foldhash::fast::FixedState::with_seed(42).hash_one(&key) % GROUPS;
        out.push((group, key, row));
    }
}

/// A dictionary-encoded column as its values.
fn plain(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Dictionary(_, _) => {
            let d = a.as_any_dictionary();
            let keys = arrow_array::UInt64Array::from_iter(
                d.normalized_keys()
                    .into_iter()
                    .enumerate()
                    .map(|(i, k)| (!d.keys().is_null(i)).then_some(k as u64)),
            );
            arrow_select::take::take(d.values().as_ref(), &keys, None).unwrap_or_else(|_| a.clone())
        }
        _ => a.clone(),
    }
}

/// One value as an `UnsafeRow` holds it.
enum Field {
    Fixed(Vec<u8>),
    Var(Vec<u8>),
}

fn value(a: &ArrayRef, i: usize) -> Field {
    use DataType::*;
    let fixed_width = |w: usize| {
        let d = a.to_data();
        let b = &d.buffers()[0].as_slice()[(d.offset() + i) * w..(d.offset() + i + 1) * w];
        Field::Fixed(b.to_vec())
    };
    match a.data_type() {
        Boolean => Field::Fixed(vec![u8::from(a.as_boolean().value(i))]),
        Int8 | UInt8 => fixed_width(1),
        Int16 | UInt16 | Float16 => fixed_width(2),
        Int32 | UInt32 | Float32 | Date32 | Time32(_) => fixed_width(4),
        Int64 | UInt64 | Float64 | Date64 | Time64(_) | Timestamp(_, _) | Duration(_) => {
            fixed_width(8)
        }
        Decimal128(p, _) if *p <= 18 => Field::Fixed(
            a.as_primitive::<arrow_array::types::Decimal128Type>().value(i).to_le_bytes()[..8]
                .to_vec(),
        ),
        Decimal128(_, _) => Field::Var(
            a.as_primitive::<arrow_array::types::Decimal128Type>().value(i).to_be_bytes().to_vec(),
        ),
        Utf8 => Field::Var(a.as_string::<i32>().value(i).as_bytes().to_vec()),
        LargeUtf8 => Field::Var(a.as_string::<i64>().value(i).as_bytes().to_vec()),
        Utf8View => Field::Var(a.as_string_view().value(i).as_bytes().to_vec()),
        Binary => Field::Var(a.as_binary::<i32>().value(i).to_vec()),
        LargeBinary => Field::Var(a.as_binary::<i64>().value(i).to_vec()),
        BinaryView => Field::Var(a.as_binary_view().value(i).to_vec()),
        FixedSizeBinary(_) => Field::Var(a.as_fixed_size_binary().value(i).to_vec()),
        // Nested values: their decoded size, as zeros (they are rare as shuffled columns).
        _ => Field::Var(vec![0u8; a.get_array_memory_size() / a.len().max(1)]),
    }
}

/// A key value's bytes (empty for NULL).
fn key_bytes(a: &ArrayRef, i: usize) -> Vec<u8> {
    if a.is_null(i) {
        return Vec::new();
    }
    match value(a, i) {
        Field::Fixed(b) | Field::Var(b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn rows_are_unsafe_rows_and_compress() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.parquet");
        let n = 10_000;
        let k: Vec<String> = (0..n).map(|i| format!("k{:05}", i % 2000)).collect();
        let v: Vec<i64> = (0..n as i64).collect();
        let schema = Arc::new(arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("k", DataType::Utf8, false),
            arrow_schema::Field::new("v", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(arrow_array::StringArray::from(k)),
                Arc::new(arrow_array::Int64Array::from(v)),
            ],
        )
        .unwrap();
        crate::write_test_parquet(&p, &batch, None);
        let t = Table::open(&[p.to_string_lossy().into_owned()]).unwrap();
        let s = shuffle_bytes(&t, "k", None).unwrap();
        // 4 (length) + 8 (NULL bits) + 2 x 8 (slots) + 8 (a 6-byte string padded): 36 bytes.
        assert_eq!(s.row_bytes, 36.0);
        assert!(s.block_bytes < 20.0, "{s:?}");
        // No value has 1% of the rows: the hot rate is the rest's.
        assert_eq!(s.hot_block_bytes, s.block_bytes);
        assert_eq!(s.sampled_rows, n as u64);
        // The key alone: 4 + 8 + 8 + 8.
        assert_eq!(shuffle_bytes(&t, "k", Some(&[])).unwrap().row_bytes, 28.0);
    }
}
