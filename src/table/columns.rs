//! Decoded columns of whole row groups, kept for the run: a chain of joins reads the same key
//! columns many times (a join's key counts, its rows per Spark partition, and the weights of
//! every later join that the table takes part in), and each is read and decoded once while
//! they fit the run's budget (the run's `cache::ColumnCache`, which its `RunStats` holds; 0,
//! `keys`' budget, keeps nothing, as `keys` reads each column once anyway).
//!
//! A row group's columns come as batches of `BATCH` rows, cut where a reader of the whole row
//! group cuts them, whether they were read now or kept from before. A column is kept per
//! (file, row group, column, Arrow type it was read as), so a string read as a dictionary and
//! as plain strings are two entries.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::cache::ChunkKey;
use crate::stats::RunStats;
use crate::table::DataFile;

/// Rows per batch, as the readers of the project read row groups.
pub const BATCH: usize = 64 * 1024;

/// Column chunks the run read: decoded from the file, decoded again (a chunk decoded before
/// and not kept), and served from memory instead of the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reads {
    /// Column chunks decoded from their files.
    pub decoded: u64,
    /// Of those, chunks decoded before in the run (not kept: past the budget).
    pub decoded_again: u64,
    /// Reads of a column chunk served from memory.
    pub from_memory: u64,
    /// Bytes of decoded columns kept at the end of the run.
    pub kept_bytes: u64,
}

/// The reads counted in `stats`, and the bytes kept.
pub fn reads(stats: &RunStats) -> Reads {
    let kept_bytes = stats.columns.kept_bytes();
    let r = stats.chunk_reads();
    Reads {
        decoded: r.decoded,
        decoded_again: r.decoded_again,
        from_memory: r.from_memory,
        kept_bytes,
    }
}

/// The run's reads when it keeps columns (a run that plans joins), else None.
pub fn kept_reads(stats: &RunStats) -> Option<Reads> {
    stats.columns.keeps().then(|| reads(stats))
}

/// Batches of a row group.
pub type Batches = Box<dyn Iterator<Item = crate::Result<RecordBatch>> + Send>;

/// Row group `g` of `file`, its root columns `fields` (indices of `meta`'s Arrow schema, which
/// gives their types) in batches of `BATCH` rows; the batches' columns in schema order. With
/// no budget, streamed from the file as they are decoded.
pub fn row_group(
    file: &DataFile,
    meta: &ArrowReaderMetadata,
    g: usize,
    fields: &[usize],
) -> crate::Result<Batches> {
    let mut fields = fields.to_vec();
    fields.sort_unstable();
    fields.dedup();
    let cache = &file.stats.columns;
    if !cache.keeps() {
        file.stats.decoded(fields.len() as u64, 0);
        let path = file.path.clone();
        let reader = reader(file, meta, g, &fields)?;
        return Ok(Box::new(reader.map(move |b| {
            b.map_err(|e| crate::Error::bad_file(&path, format!("row group {g}: {e}")))
        })));
    }
    let schema = meta.schema();
    let file_rows = meta.metadata().file_metadata().num_rows();
    let key = |f: usize| ChunkKey {
        path: file.path.clone(),
        file_rows,
        row_group: g,
        field: f,
        data_type: schema.field(f).data_type().clone(),
    };
    let mut got: Vec<Option<Arc<Vec<ArrayRef>>>> =
        fields.iter().map(|&f| cache.get(&key(f))).collect();
    file.stats.from_memory(got.iter().flatten().count() as u64);
    let missing: Vec<usize> =
        fields.iter().zip(&got).filter(|(_, c)| c.is_none()).map(|(&f, _)| f).collect();
    if !missing.is_empty() {
        let read = read_columns(file, meta, g, &missing)?;
        let mut read = read.into_iter();
        for (i, slot) in got.iter_mut().enumerate() {
            if slot.is_none() {
                let chunks = Arc::new(read.next().unwrap_or_default());
                if cache.keep(key(fields[i]), &chunks) {
                    file.stats.decoded(0, 1);
                }
                *slot = Some(chunks);
            }
        }
    }
    let batches = assemble(schema, &fields, got.into_iter().flatten().collect())
        .map_err(|e| crate::Error::bad_file(&file.path, format!("row group {g}: {e}")))?;
    Ok(Box::new(batches.into_iter().map(Ok)))
}

fn reader(
    file: &DataFile,
    meta: &ArrowReaderMetadata,
    g: usize,
    fields: &[usize],
) -> crate::Result<ParquetRecordBatchReader> {
    let f = file.open()?;
    let mask = ProjectionMask::roots(meta.parquet_schema(), fields.iter().copied());
    ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta.clone())
        .with_projection(mask)
        .with_row_groups(vec![g])
        .with_batch_size(BATCH)
        .build()
        .map_err(|e| crate::Error::bad_file(&file.path, format!("row group {g}: {e}")))
}

/// Read `fields` of row group `g`: per field, its arrays of `BATCH` rows.
fn read_columns(
    file: &DataFile,
    meta: &ArrowReaderMetadata,
    g: usize,
    fields: &[usize],
) -> crate::Result<Vec<Vec<ArrayRef>>> {
    let bad = |e: String| crate::Error::bad_file(&file.path, format!("row group {g}: {e}"));
    let reader = reader(file, meta, g, fields)?;
    let mut out: Vec<Vec<ArrayRef>> = vec![Vec::new(); fields.len()];
    for batch in reader {
        let batch = batch.map_err(|e| bad(e.to_string()))?;
        if batch.num_columns() != fields.len() {
            return Err(bad(format!(
                "{} columns read for {} asked",
                batch.num_columns(),
                fields.len()
            )));
        }
        out.iter_mut().zip(batch.columns()).for_each(|(o, c)| o.push(c.clone()));
    }
    file.stats.decoded(fields.len() as u64, 0);
    Ok(out)
}

/// The batches of the columns `fields` (in schema order), from each one's arrays; an error when
/// they do not line up (chunks of one row group with different row counts: a corrupt file).
fn assemble(
    schema: &Schema,
    fields: &[usize],
    columns: Vec<Arc<Vec<ArrayRef>>>,
) -> Result<Vec<RecordBatch>, String> {
    let projected = Arc::new(schema.project(fields).map_err(|e| e.to_string())?);
    let n = columns.first().map_or(0, |c| c.len());
    (0..n)
        .map(|b| {
            let arrays: Vec<ArrayRef> = columns
                .iter()
                .map(|c| c.get(b).cloned())
                .collect::<Option<_>>()
                .unwrap_or_default();
            RecordBatch::try_new(projected.clone(), arrays)
                .map_err(|e| format!("columns of one row group read apart do not line up: {e}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_group_read_twice_is_decoded_once_and_gives_the_same_batches() {
        use arrow_array::{Int64Array, StringArray};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let n = 150_000;
        let ids = Arc::new(Int64Array::from_iter_values((0..n).map(|i| i % 977))) as ArrayRef;
        let names = Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("n{}", i % 13))))
            as ArrayRef;
        let batch = RecordBatch::try_from_iter([("id", ids), ("name", names)]).unwrap();
        crate::write_test_parquet(&path, &batch, None);
        let stats = RunStats::with_column_budget(64 << 20);
        let table =
            crate::table::Table::open_in(&[path.to_string_lossy().into_owned()], None, &stats)
                .unwrap();
        let file = &table.files[0];
        let first: Vec<RecordBatch> =
            row_group(file, &file.meta, 0, &[0]).unwrap().collect::<crate::Result<_>>().unwrap();
        let both: Vec<RecordBatch> =
            row_group(file, &file.meta, 0, &[1, 0]).unwrap().collect::<crate::Result<_>>().unwrap();
        let after = reads(&table.stats);
        // The id column once from the file and once from memory; the names once from the file:
        // this table's run counts its own reads.
        assert_eq!((after.decoded, after.decoded_again, after.from_memory), (2, 0, 1));
        assert_eq!(
            first.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            vec![BATCH, BATCH, n as usize - 2 * BATCH]
        );
        assert_eq!(both.len(), first.len());
        for (a, b) in first.iter().zip(&both) {
            assert_eq!(b.schema().field(0).name(), "id");
            assert_eq!(a.column(0), b.column(0));
            assert_eq!(b.column(1).len(), a.num_rows());
        }
    }
}
