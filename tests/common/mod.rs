//! Helpers shared by the integration tests: the one way they write Parquet files.

#![allow(dead_code)] // each test binary uses some of them

use std::fs::File;
use std::path::Path;

use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

/// Write `batches` to one Parquet file, each batch a row group of its own (or split where it
/// passes `props`' row-group size), creating the folder; returns its path.
pub fn write_row_groups(path: &Path, batches: &[RecordBatch], props: WriterProperties) -> String {
    assert!(!batches.is_empty(), "{}: no batch to write", path.display());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batches[0].schema(), Some(props))
        .unwrap();
    for b in batches {
        w.write(b).unwrap();
        w.flush().unwrap();
    }
    w.close().unwrap();
    path.display().to_string()
}

/// Write one batch with `props`; returns the file's path.
pub fn write_batch(path: &Path, batch: &RecordBatch, props: WriterProperties) -> String {
    write_row_groups(path, std::slice::from_ref(batch), props)
}

/// Write one Parquet file of the given columns, with the writer's defaults; returns its path.
pub fn write(path: &Path, cols: Vec<(&str, ArrayRef)>) -> String {
    write_batch(path, &RecordBatch::try_from_iter(cols).unwrap(), WriterProperties::default())
}

/// The same in row groups of at most `rows` rows.
pub fn write_in_groups(path: &Path, cols: Vec<(&str, ArrayRef)>, rows: usize) -> String {
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(rows)).build();
    write_batch(path, &RecordBatch::try_from_iter(cols).unwrap(), props)
}
