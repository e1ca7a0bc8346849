//! Find the Parquet files of a table, read their footers, and resolve key columns.
//!
//! A table is one or more paths: a Parquet file, a directory searched recursively (Hive-style
//! `k=v` folders become partition columns, as in Spark), or a glob. Hidden files and folders
//! (`.x`, `_x`, such as `_SUCCESS` and `.crc` files) are skipped as Spark skips them.

pub mod blob;
pub mod columns;
pub mod delta;
pub mod dir;
pub mod iceberg;
pub mod names;
pub mod store;
mod store_profile;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::stats::RunStats;
use crate::table::blob::{Blob, Location};
use crate::table::delta::Folder;
use crate::value::{KeyType, Value};
use names::{hive_parts, is_hidden, looks_like_parquet, unescape_path, HiveParts};

/// One Parquet file of a table, with its footer already read.
pub struct DataFile {
    /// The file's path, or its object's URL: for messages.
    pub path: PathBuf,
    pub location: Location,
    /// Hive partition values from the path, in the table's partition column order.
    pub partition_values: Vec<Value>,
    pub meta: ArrowReaderMetadata,
    /// The run whose reads of it are counted (decoded column chunks).
    pub stats: Arc<RunStats>,
}

impl DataFile {
    /// The file, open for reading.
    pub fn open(&self) -> Result<Blob> {
        crate::table::blob::open_for(&self.location, Some(self.meta.metadata()), &self.path)
    }

    /// The file's length in bytes (0 when it cannot be read; the footer was read, so it can).
    pub fn byte_len(&self) -> u64 {
        match &self.location {
            crate::table::blob::Location::Local(p) => {
                std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
            }
            crate::table::blob::Location::Remote(o) => o.size,
        }
    }

    /// Rows, as the row groups count them (some writers leave the file total at 0).
    pub fn rows(&self) -> u64 {
        self.meta.metadata().row_groups().iter().map(|rg| rg.num_rows().max(0) as u64).sum()
    }
}

/// A file and its `k=v` folders.
type Located = (Location, HiveParts);

/// A file found: (shown as, where it is, its `k=v` folders).
type FoundFile = (PathBuf, Location, HiveParts);

/// A partition column taken from `k=v` folder names.
pub struct PartitionColumn {
    pub name: String,
    pub key_type: KeyType,
}

pub struct Table {
    /// What the user passed, for messages.
    pub display: String,
    pub files: Vec<DataFile>,
    pub partitions: Vec<PartitionColumn>,
    /// A table an engine holds (no files here): its name there, columns and sizes.
    pub held: Option<Held>,
    /// The run that opened it: its notes, its reads.
    pub stats: Arc<RunStats>,
}

/// A table an engine holds, as it reported it: the name it knows it by, its columns, its rows
/// and bytes.
#[derive(Debug, Clone)]
pub struct Held {
    pub name: String,
    pub schema: SchemaRef,
    pub rows: u64,
    /// Bytes on disk, and decoded in memory (`count::TableSize`).
    pub disk_bytes: u64,
    pub memory_bytes: u64,
    /// The table's files when they are on this machine too (their footers gave the sizes):
    /// what its rows weigh in a shuffle is estimated from them, as for a table read here.
    pub files_here: Vec<String>,
}

/// Where a key column's values come from.
#[derive(Debug, Clone)]
pub enum ColumnSource {
    /// Top-level field `index` of every file's Arrow schema.
    Data { index: usize },
    /// Hive partition column `index`.
    Partition { index: usize },
}

#[derive(Debug, Clone)]
pub struct ResolvedColumn {
    pub name: String,
    pub key_type: KeyType,
    pub source: ColumnSource,
}

impl Table {
    /// Resolve every path to files and read every footer.
    pub fn open(paths: &[String]) -> Result<Table> {
        Self::open_at(paths, None)
    }

    /// As `open_in`, for a run of its own (its statistics are not reported).
    pub fn open_at(paths: &[String], as_of: Option<i64>) -> Result<Table> {
        Self::open_in(paths, as_of, &RunStats::new())
    }

    /// As `open`, with a Delta table read at version `as_of` (default: its newest).
    pub fn open_in(paths: &[String], as_of: Option<i64>, stats: &Arc<RunStats>) -> Result<Table> {
        if paths.is_empty() {
            return Err(Error::Usage("no table given".into()));
        }
        let mut found: Vec<Located> = Vec::new();
        let mut declared = None;
        for p in paths {
            // A folder in an object store is listed once: the listing tells a Delta or Iceberg
            // table from plain files.
            let listed = if crate::table::store::is_remote(p) && !p.contains(['*', '?', '[']) {
                Some(crate::table::store::list_folder(p, stats)?)
            } else {
                None
            };
            let folder = match &listed {
                Some(keys) => Folder::remote(p, keys),
                None => Folder::Local(crate::table::store::local_path(p)),
            };
            if folder.is_delta() {
                let (files, types) = delta_files(p, &folder, as_of, stats)?;
                found.extend(files);
                declared = Some(types);
            } else if let Some(metadata) =
                crate::table::iceberg::metadata_file(p, listed.as_deref(), stats)?
            {
                found.extend(iceberg_files(p, &metadata, as_of, stats)?);
            } else if as_of.is_some() {
                return Err(Error::Usage(format!(
                    "{p}: --as-of reads a Delta table version or an Iceberg snapshot, and this is neither (no _delta_log, no metadata/*.metadata.json)"
                )));
            } else if crate::table::store::is_remote(p) {
                found.extend(
                    crate::table::store::list(p, listed.as_deref(), stats)?
                        .into_iter()
                        .map(|(o, parts)| (Location::Remote(o), parts)),
                );
            } else {
                let mut local = Vec::new();
                find_local(&crate::table::store::local_path(p), p, &mut local)?;
                found.extend(local.into_iter().map(|(path, parts)| (Location::Local(path), parts)));
            }
        }
        let found: Vec<FoundFile> =
            found.into_iter().map(|(l, parts)| (display_path(&l), l, parts)).collect();
        Self::from_files(paths, found, declared, stats)
    }

    /// The table of `found` files: (shown as, where, k=v folders).
    fn from_files(
        paths: &[String],
        mut found: Vec<FoundFile>,
        declared: Option<Vec<KeyType>>,
        stats: &Arc<RunStats>,
    ) -> Result<Table> {
        if found.is_empty() {
            return Err(Error::NoParquet(paths.join(" ")));
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found.dedup_by(|a, b| a.0 == b.0);

        // Partition columns: the same k=v names in the same order on every file.
        let part_names: Vec<String> = found[0].2.iter().map(|(k, _)| k.clone()).collect();
        for (path, _, parts) in &found {
            let names: Vec<&String> = parts.iter().map(|(k, _)| k).collect();
            if names != part_names.iter().collect::<Vec<_>>() {
                return Err(Error::bad_file(
                    path,
                    format!(
                        "partition folders {:?} differ from {:?} of the other files",
                        names, part_names
                    ),
                ));
            }
        }
        let partitions: Vec<PartitionColumn> = part_names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let key_type = match declared.as_ref().and_then(|d| d.get(i)) {
                    Some(t) => *t,
                    None => {
                        infer_partition_type(found.iter().map(|(_, _, parts)| parts[i].1.as_str()))
                    }
                };
                PartitionColumn { name: name.clone(), key_type }
            })
            .collect();

        let files = found
            .into_par_iter()
            .map(|(path, location, parts)| {
                let meta = read_footer(&path, &location, &[])?;
                let partition_values = parts
                    .iter()
                    .zip(&partitions)
                    .map(|((_, raw), col)| parse_partition_value(raw, col.key_type))
                    .collect();
                Ok(DataFile { path, location, partition_values, meta, stats: stats.clone() })
            })
            .collect::<Result<Vec<_>>>()?;

        Ok(Table { display: paths.join(" "), files, partitions, held: None, stats: stats.clone() })
    }

    /// Whether the table's files are in an object store.
    pub fn in_store(&self) -> bool {
        self.files.iter().any(|f| matches!(f.location, Location::Remote(_)))
    }

    /// A table an engine holds: its columns and sizes are the engine's.
    pub fn held(display: &str, held: Held, stats: &Arc<RunStats>) -> Table {
        Table {
            display: display.to_string(),
            files: Vec::new(),
            partitions: Vec::new(),
            held: Some(held),
            stats: stats.clone(),
        }
    }

    /// Whether an engine holds the table (its rows are counted there, not read here).
    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// Ok when the table's files are read here; the error for a table an engine holds, whose
    /// counts that engine makes.
    pub fn files_here(&self) -> Result<()> {
        match self.held {
            None => Ok(()),
            Some(_) => Err(Error::Usage(format!(
                "{}: the table is held by an engine: its counts are made there",
                self.display
            ))),
        }
    }

    pub fn rows(&self) -> u64 {
        match &self.held {
            Some(s) => s.rows,
            None => self.files.iter().map(|f| f.rows()).sum(),
        }
    }

    pub fn schema(&self) -> &SchemaRef {
        match &self.held {
            Some(s) => &s.schema,
            None => self.files[0].meta.schema(),
        }
    }

    /// The names a user can pass as key columns, for error messages.
    pub fn column_names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            self.schema().fields().iter().map(|f| f.name().clone()).collect();
        names.extend(self.partitions.iter().map(|p| p.name.clone()));
        names
    }

    /// Resolve a column name as Spark does (exact match first, then case-insensitive) and
    /// check that every file has it with the same type.
    pub fn resolve(&self, name: &str) -> Result<ResolvedColumn> {
        let name = name.trim().trim_matches('`');
        let schema = self.schema();
        let find = |pred: &dyn Fn(&str) -> bool| -> Vec<usize> {
            schema
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| pred(f.name()))
                .map(|(i, _)| i)
                .collect()
        };
        let mut hits = find(&|n| n == name);
        if hits.is_empty() {
            hits = find(&|n| n.eq_ignore_ascii_case(name));
        }
        if hits.len() > 1 {
            return Err(Error::Column {
                column: name.into(),
                msg: "matches several columns that differ only in case".into(),
            });
        }
        if let Some(&index) = hits.first() {
            let field = schema.field(index);
            let key_type = key_type_of(field)
                .map_err(|msg| Error::Column { column: field.name().clone(), msg })?;
            for f in self.files.iter().skip(1) {
                let other = f.meta.schema();
                match other.fields().iter().position(|g| g.name() == field.name()) {
                    None => {
                        return Err(Error::bad_file(
                            &f.path,
                            format!("has no column {} (the first file has it)", field.name()),
                        ))
                    }
                    Some(j) => {
                        let t = key_type_of(other.field(j))
                            .map_err(|msg| Error::Column { column: field.name().clone(), msg })?;
                        if t != key_type {
                            return Err(Error::bad_file(
                                &f.path,
                                format!(
                                    "column {} is {} here but {} in {}",
                                    field.name(),
                                    t.spark_name(),
                                    key_type.spark_name(),
                                    self.files[0].path.display()
                                ),
                            ));
                        }
                    }
                }
            }
            // Every file must also agree on the field's position for the projection.
            return Ok(ResolvedColumn {
                name: field.name().clone(),
                key_type,
                source: ColumnSource::Data { index },
            });
        }
        if let Some(index) =
            self.partitions.iter().position(|p| p.name == name || p.name.eq_ignore_ascii_case(name))
        {
            let p = &self.partitions[index];
            return Ok(ResolvedColumn {
                name: p.name.clone(),
                key_type: p.key_type,
                source: ColumnSource::Partition { index },
            });
        }
        Err(Error::NoColumn {
            column: name.into(),
            msg: format!(
                "no such column in {}; available: {}",
                self.display,
                self.column_names().join(", ")
            ),
        })
    }
}

/// The live files of the Delta table at `p` and its partition columns' types; a note says
/// which version was read, and that counts are upper bounds where deletion vectors hide rows.
fn delta_files(
    p: &str,
    folder: &Folder,
    as_of: Option<i64>,
    stats: &Arc<RunStats>,
) -> Result<(Vec<Located>, Vec<KeyType>)> {
    let snap = crate::table::delta::snapshot(folder, as_of, stats)?;
    let root = p.trim_end_matches('/');
    let mut out = Vec::with_capacity(snap.files.len());
    for f in &snap.files {
        let rel = unescape_path(&f.path);
        let location = if crate::table::store::is_remote(&rel) {
            Location::Remote(crate::table::store::object_at(&rel, f.size, stats)?)
        } else if rel.contains("://") {
            Location::Local(crate::table::store::local_path(&rel))
        } else if crate::table::store::is_remote(root) {
            Location::Remote(crate::table::store::object_at(
                &format!("{root}/{rel}"),
                f.size,
                stats,
            )?)
        } else {
            Location::Local(crate::table::store::local_path(root).join(&rel))
        };
        let parts = snap
            .partition_columns
            .iter()
            .zip(&f.partition_values)
            .map(|((name, _), v)| {
                (
                    name.clone(),
                    v.clone().filter(|v| !v.is_empty()).unwrap_or_else(|| HIVE_NULL.to_string()),
                )
            })
            .collect();
        out.push((location, parts));
    }
    let mut note =
        format!("{root}: Delta table version {}, {} live files", snap.version, snap.files.len());
    let dv = snap.with_deletion_vectors();
    if dv > 0 {
        note += &format!("; {dv} of them have deletion vectors, whose deleted rows are counted: every count of this table is an upper bound");
    }
    stats.note(note);
    Ok((out, snap.partition_columns.iter().map(|(_, t)| *t).collect()))
}

/// The data files of the Iceberg table at `p` (snapshot `as_of`, default the current one),
/// with a note of the snapshot read and of delete files not applied.
fn iceberg_files(
    p: &str,
    metadata: &str,
    as_of: Option<i64>,
    stats: &Arc<RunStats>,
) -> Result<Vec<Located>> {
    let snap = crate::table::iceberg::snapshot(metadata, as_of, stats)?;
    let mut out = Vec::with_capacity(snap.files.len());
    for f in &snap.files {
        let location = if crate::table::store::is_remote(&f.uri) {
            Location::Remote(crate::table::store::object_at(&f.uri, f.size, stats)?)
        } else {
            Location::Local(crate::table::store::local_path(&f.uri))
        };
        out.push((location, HiveParts::new()));
    }
    let name = metadata.rsplit('/').next().unwrap_or(metadata);
    let mut note = format!(
        "{}: Iceberg table snapshot {} ({name}), {} data files",
        p.trim_end_matches('/'),
        snap.snapshot_id,
        snap.files.len()
    );
    if snap.delete_files > 0 {
        note += &format!(
            "; {} delete files are not applied: every count of this table is an upper bound",
            snap.delete_files
        );
    }
    stats.note(note);
    Ok(out)
}

/// The local files of `path` (a file, a folder or a glob; `shown` as the user wrote it).
fn find_local(
    path: &Path,
    shown: &str,
    found: &mut Vec<(PathBuf, Vec<(String, String)>)>,
) -> Result<()> {
    let before = found.len();
    let text = path.to_string_lossy();
    if text.contains(['*', '?', '[']) && !path.exists() {
        let entries =
            glob::glob(&text).map_err(|e| Error::Usage(format!("bad glob {shown}: {e}")))?;
        for entry in entries {
            let path =
                entry.map_err(|e| Error::Io { path: e.path().to_path_buf(), source: e.into() })?;
            collect(&path, &path, found)?;
        }
        if found.len() == before {
            return Err(Error::NoParquet(format!("glob {shown} matched nothing")));
        }
    } else {
        if !path.exists() {
            return Err(Error::NotFound(path.to_path_buf()));
        }
        collect(path, path, found)?;
        if found.len() == before {
            return Err(Error::NoParquet(shown.to_string()));
        }
    }
    Ok(())
}

fn display_path(at: &Location) -> PathBuf {
    match at {
        Location::Local(p) => p.clone(),
        Location::Remote(o) => PathBuf::from(&o.url),
    }
}

/// Index of field `name` in one file's schema (files may order columns differently).
pub fn field_index(file: &DataFile, name: &str) -> Option<usize> {
    file.meta.schema().fields().iter().position(|f| f.name() == name)
}

/// Collect the Parquet files under `path`, with the `k=v` folders between `root` and each file.
fn collect(
    root: &Path,
    path: &Path,
    out: &mut Vec<(PathBuf, Vec<(String, String)>)>,
) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
    if meta.is_file() {
        // A file named directly is read whatever its name; Hive folders count from the root.
        let parts = if path == root { Vec::new() } else { hive_parts(root, path) };
        out.push((path.to_path_buf(), parts));
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)
        .map_err(|e| Error::Io { path: path.into(), source: e })?
        .filter_map(|e| e.ok())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if is_hidden(&name) {
            continue;
        }
        let p = e.path();
        if p.is_dir() {
            collect(root, &p, out)?;
        } else if looks_like_parquet(&name) {
            out.push((p.clone(), hive_parts(root, &p)));
        }
    }
    Ok(())
}

const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// Spark's partition type inference, narrowed to the types a key can take: int, bigint,
/// double, date, else string.
fn infer_partition_type<'a>(values: impl Iterator<Item = &'a str>) -> KeyType {
    let vals: Vec<&str> = values.filter(|v| *v != HIVE_NULL).collect();
    if vals.is_empty() {
        return KeyType::String;
    }
    if vals.iter().all(|v| v.parse::<i32>().is_ok()) {
        KeyType::Int
    } else if vals.iter().all(|v| v.parse::<i64>().is_ok()) {
        KeyType::BigInt
    } else if vals.iter().all(|v| v.parse::<f64>().is_ok() && !v.chars().any(|c| c.is_alphabetic()))
    {
        KeyType::Double
    } else if vals
        .iter()
        .all(|v| v.len() == 10 && chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d").is_ok())
    {
        KeyType::Date
    } else {
        KeyType::String
    }
}

fn parse_partition_value(raw: &str, t: KeyType) -> Value {
    if raw == HIVE_NULL {
        return Value::Null;
    }
    match t {
        KeyType::Int | KeyType::SmallInt | KeyType::TinyInt => {
            raw.parse().map(Value::Int).unwrap_or(Value::Null)
        }
        KeyType::Boolean => {
            raw.to_ascii_lowercase().parse().map(Value::Bool).unwrap_or(Value::Null)
        }
        KeyType::BigInt => raw.parse().map(Value::Long).unwrap_or(Value::Null),
        KeyType::Double => raw.parse().map(Value::Double).unwrap_or(Value::Null),
        KeyType::Date => chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d")
            .map(|d| {
                Value::Date(
                    (d - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()).num_days()
                        as i32,
                )
            })
            .unwrap_or(Value::Null),
        _ => Value::Str(raw.to_string()),
    }
}

/// The footer of `file` again, with the min/max statistics of its leaf column `col` (the
/// footer read when the table was opened skips them all).
pub(crate) fn footer_with_stats(file: &DataFile, col: usize) -> Result<ArrowReaderMetadata> {
    read_footer(&file.path, &file.location, &[col])
}

/// The footer at `at`, with the column statistics of the leaf columns `stats_of` only.
fn read_footer(path: &Path, at: &Location, stats_of: &[usize]) -> Result<ArrowReaderMetadata> {
    let file = crate::table::blob::open_for(at, None, path)?;
    let len = file.len();
    if len < 12 {
        return Err(Error::bad_file(
            path,
            format!("not a Parquet file ({len} bytes, too short for a footer)"),
        ));
    }
    // Through the parquet crate's reader: an object's footer is fetched once, with these.
    use parquet::file::reader::ChunkReader;
    let magic = file
        .get_bytes(len - 4, 4)
        .map_err(|e| Error::bad_file(path, format!("cannot read: {e}")))?;
    let magic = &magic[..];
    if magic == b"PARE" {
        return Err(Error::bad_file(
            path,
            "encrypted Parquet file (encrypted footers are not supported)",
        ));
    }
    if magic != b"PAR1" {
        return Err(Error::bad_file(
            path,
            "not a Parquet file (no PAR1 magic bytes at the end; truncated or another format)",
        ));
    }
    // Statistics are seldom used: skip decoding them (a footer of many row groups is mostly
    // statistics).
    use parquet::file::metadata::ParquetStatisticsPolicy as Skip;
    let options = ArrowReaderOptions::new()
        .with_column_stats_policy(Skip::skip_except(stats_of))
        .with_encoding_stats_policy(Skip::SkipAll)
        .with_size_stats_policy(Skip::SkipAll);
    let loaded = crate::guard::no_reader_panic(|| ArrowReaderMetadata::load(&file, options));
    match loaded {
        Ok(Ok(m)) => Ok(fix_row_count(m)),
        Ok(Err(e)) => {
            let msg = e.to_string();
            if msg.contains("magic") || msg.contains("PAR1") {
                Err(Error::bad_file(path, "not a Parquet file (no PAR1 magic bytes at the end)"))
            } else {
                Err(Error::bad_file(path, format!("corrupt Parquet footer: {msg}")))
            }
        }
        Err(panic) => Err(Error::bad_file(path, format!("corrupt Parquet footer: {panic}"))),
    }
}

/// Some writers leave the file's row count at 0 while the row groups hold rows; the reader
/// sizes its batches by the file's count and would read nothing. Trust the row groups.
fn fix_row_count(m: ArrowReaderMetadata) -> ArrowReaderMetadata {
    use parquet::file::metadata::{FileMetaData, ParquetMetaData};
    let md = m.metadata();
    let groups: i64 = md.row_groups().iter().map(|rg| rg.num_rows().max(0)).sum();
    let fm = md.file_metadata();
    if fm.num_rows() == groups {
        return m;
    }
    let fixed = FileMetaData::new(
        fm.version(),
        groups,
        fm.created_by().map(str::to_string),
        fm.key_value_metadata().cloned(),
        fm.schema_descr_ptr(),
        fm.column_orders().cloned(),
    );
    let meta = ParquetMetaData::new(fixed, md.row_groups().to_vec());
    ArrowReaderMetadata::try_new(Arc::new(meta), ArrowReaderOptions::new()).unwrap_or(m)
}

/// The Spark type a Parquet column is read as, or why it cannot be a join key.
pub fn key_type_of(field: &Field) -> std::result::Result<KeyType, String> {
    data_type_key(field.data_type())
}

fn data_type_key(dt: &DataType) -> std::result::Result<KeyType, String> {
    Ok(match dt {
        DataType::Null => KeyType::Void,
        DataType::Boolean => KeyType::Boolean,
        DataType::Int8 => KeyType::TinyInt,
        DataType::Int16 => KeyType::SmallInt,
        DataType::Int32 => KeyType::Int,
        DataType::Int64 => KeyType::BigInt,
        // Spark reads unsigned Parquet integers one size up; UINT64 as decimal(20,0).
        DataType::UInt8 => KeyType::SmallInt,
        DataType::UInt16 => KeyType::Int,
        DataType::UInt32 => KeyType::BigInt,
        DataType::UInt64 => KeyType::Decimal { precision: 20, scale: 0 },
        DataType::Float32 => KeyType::Float,
        DataType::Float64 => KeyType::Double,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => KeyType::String,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => KeyType::Binary,
        DataType::Date32 | DataType::Date64 => KeyType::Date,
        DataType::Timestamp(_, tz) => KeyType::Timestamp { utc: tz.is_some() },
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
            KeyType::Decimal { precision: *p, scale: *s }
        }
        DataType::Decimal256(p, s) => {
            if *p > 38 {
                return Err(format!("decimal({p},{s}) is wider than Spark's largest decimal(38): Spark cannot read it"));
            }
            KeyType::Decimal { precision: *p, scale: *s }
        }
        DataType::Dictionary(_, v) => return data_type_key(v),
        DataType::Float16 => {
            return Err(
                "float16 (HALF_FLOAT) has no Spark SQL type, so it cannot be a Spark join key"
                    .into(),
            )
        }
        DataType::Time32(_) | DataType::Time64(_) => {
            return Err("TIME has no Spark 3.5 SQL type, so it cannot be a Spark join key".into())
        }
        DataType::Duration(_) | DataType::Interval(_) => {
            return Err(format!("{dt} is an interval, not a join key type"))
        }
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::ListView(_)
        | DataType::LargeListView(_)
        | DataType::FixedSizeList(_, _)
        | DataType::Struct(_)
        | DataType::Map(_, _)
        | DataType::Union(_, _)
        | DataType::RunEndEncoded(_, _) => {
            return Err(format!(
                "is a nested type ({}); a join key must be a flat column",
                short_type(dt)
            ))
        }
    })
}

fn short_type(dt: &DataType) -> &'static str {
    match dt {
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::ListView(_)
        | DataType::LargeListView(_)
        | DataType::FixedSizeList(_, _) => "list",
        DataType::Struct(_) => "struct",
        DataType::Map(_, _) => "map",
        DataType::Union(_, _) => "union",
        _ => "nested",
    }
}

/// The schema to read the key columns with: strings and binaries as dictionaries, so that
/// dictionary-encoded pages are counted by index instead of decoded to strings; INT96
/// timestamps as microseconds, as Spark reads them (as nanoseconds they overflow past 2262).
pub fn read_hint(meta: &ArrowReaderMetadata, columns: &[usize]) -> Option<SchemaRef> {
    let schema = meta.schema();
    let roots = meta.parquet_schema().root_schema().get_fields();
    let mut changed = false;
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if !columns.contains(&i) {
                return f.as_ref().clone();
            }
            let int96 = roots.get(i).is_some_and(|r| {
                r.is_primitive() && r.get_physical_type() == parquet::basic::Type::INT96
            });
            let new = match f.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                    Some(DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)))
                }
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView => Some(
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Binary)),
                ),
                DataType::Timestamp(TimeUnit::Nanosecond, tz) if int96 => {
                    Some(DataType::Timestamp(TimeUnit::Microsecond, tz.clone()))
                }
                _ => None,
            };
            match new {
                Some(t) => {
                    changed = true;
                    f.as_ref().clone().with_data_type(t)
                }
                None => f.as_ref().clone(),
            }
        })
        .collect();
    changed.then(|| Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}
