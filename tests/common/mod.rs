//! Helpers shared by the integration tests.

use std::fs::File;
use std::path::Path;

use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::ArrowWriter;

/// Write one Parquet file of the given columns; returns its path.
pub fn write(path: &Path, cols: Vec<(&str, ArrayRef)>) -> String {
    let batch = RecordBatch::try_from_iter(cols).unwrap();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.display().to_string()
}
