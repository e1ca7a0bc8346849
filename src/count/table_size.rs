//! A table's sizes from its footers, before any data is read.

use crate::table::Table;

/// Sizes of a table from its footers, before any data is read.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct TableSize {
    pub rows: u64,
    /// Compressed bytes of every column chunk (what Spark's planner sees as the table size).
    pub disk_bytes: u64,
    /// Uncompressed bytes of every column chunk: what the rows weigh once decoded.
    pub memory_bytes: u64,
}

impl TableSize {
    pub fn of(table: &Table) -> TableSize {
        if let Some(h) = &table.held {
            return TableSize {
                rows: h.rows,
                disk_bytes: h.disk_bytes,
                memory_bytes: h.memory_bytes,
            };
        }
        let mut s = TableSize { rows: 0, disk_bytes: 0, memory_bytes: 0 };
        for f in &table.files {
            for rg in f.meta.metadata().row_groups() {
                s.rows += rg.num_rows().max(0) as u64;
                for c in rg.columns() {
                    s.disk_bytes += c.compressed_size().max(0) as u64;
                    s.memory_bytes += c.uncompressed_size().max(0) as u64;
                }
            }
        }
        s
    }
    /// Compressed bytes of the chunks of `columns` (every column when None): what a scan that
    /// reads only those columns takes from the files. A table an engine holds: from its files
    /// here when there are, else its whole size.
    pub fn read_bytes(table: &Table, columns: Option<&[String]>) -> u64 {
        if let Some(held) = &table.held {
            let here =
                (!held.files_here.is_empty()).then(|| Table::open(&held.files_here).ok()).flatten();
            return here.map_or(held.disk_bytes, |t| TableSize::read_bytes(&t, columns));
        }
        let wanted = |path: &parquet::schema::types::ColumnPath| {
            let top = path.parts().first().map_or("", String::as_str);
            columns.is_none_or(|cs| cs.iter().any(|c| c.eq_ignore_ascii_case(top)))
        };
        let mut bytes = 0;
        for f in &table.files {
            for rg in f.meta.metadata().row_groups() {
                for c in rg.columns().iter().filter(|c| wanted(c.column_path())) {
                    bytes += c.compressed_size().max(0) as u64;
                }
            }
        }
        bytes
    }

    pub fn bytes_per_row(&self) -> f64 {
        if self.rows == 0 {
            0.0
        } else {
            self.memory_bytes as f64 / self.rows as f64
        }
    }
}
