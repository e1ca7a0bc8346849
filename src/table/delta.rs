//! Delta Lake tables: the live data files of a table version, read from its `_delta_log`.
//!
//! A folder with a `_delta_log` is a Delta table, and its folder holds files that are no longer
//! part of it (removed by deletes, updates, overwrites and compaction until a VACUUM). The
//! table is the replay of its log: the newest checkpoint at or below the version (its `add`
//! actions, single- or multi-part Parquet), then each JSON commit after it in order (`add`
//! puts a file in, `remove` takes it out). Partition values come from the log, typed by the
//! table's schema, not guessed from folder names. A file with a deletion vector still has its
//! deleted rows in it: those files are counted whole, and the table says its counts are upper
//! bounds. Column mapping (physical column names that differ from the schema's) is refused.

use std::path::PathBuf;

use arrow_array::{Array, ListArray, MapArray, RecordBatch, StringArray, StructArray};
use bytes::Bytes;
use hashbrown::HashMap;
use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::stats::RunStats;
use crate::value::KeyType;

/// A live data file: its path (relative to the table, or a full URL) and partition values.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFile {
    pub path: String,
    pub size: u64,
    pub partition_values: Vec<Option<String>>,
    pub deletion_vector: bool,
}

/// A table version's files.
#[derive(Debug)]
pub struct Snapshot {
    pub version: i64,
    pub partition_columns: Vec<(String, KeyType)>,
    pub files: Vec<LiveFile>,
}

impl Snapshot {
    /// Files whose deleted rows are still in them.
    pub fn with_deletion_vectors(&self) -> usize {
        self.files.iter().filter(|f| f.deletion_vector).count()
    }
}

/// Where a table's folder is: a local path or an object store URL.
pub enum Folder {
    Local(PathBuf),
    /// A folder in an object store, and the names of the files in its `_delta_log` (from the
    /// folder's listing).
    Remote(String, Vec<String>),
}

impl Folder {
    /// A folder in an object store, from its listing (keys relative to it).
    pub fn remote(url: &str, listed: &[(String, u64)]) -> Folder {
        let log = listed
            .iter()
            .filter_map(|(k, _)| k.strip_prefix("_delta_log/"))
            .filter(|n| !n.contains('/'))
            .map(str::to_string)
            .collect();
        Folder::Remote(url.to_string(), log)
    }

    /// Whether the folder holds a `_delta_log` with at least one commit or checkpoint.
    pub fn is_delta(&self) -> bool {
        match self {
            Folder::Local(p) => p.join("_delta_log").is_dir(),
            Folder::Remote(_, log) => !log.is_empty(),
        }
    }

    /// The names of the files in `_delta_log`.
    fn log_files(&self) -> Result<Vec<String>> {
        match self {
            Folder::Local(p) => {
                let dir = p.join("_delta_log");
                let entries = std::fs::read_dir(&dir)
                    .map_err(|e| Error::Io { path: dir.clone(), source: e })?;
                Ok(entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect())
            }
            Folder::Remote(_, log) => Ok(log.clone()),
        }
    }

    fn read_log(&self, name: &str, stats: &RunStats) -> Result<Bytes> {
        crate::table::store::read_whole(
            &format!("{}/_delta_log/{name}", self.shown().trim_end_matches('/')),
            stats,
        )
    }

    fn shown(&self) -> String {
        match self {
            Folder::Local(p) => p.display().to_string(),
            Folder::Remote(u, _) => u.clone(),
        }
    }
}

/// The commits and checkpoints of a log, by version.
#[derive(Default)]
struct Log {
    commits: Vec<(i64, String)>,
    /// version -> the checkpoint's part files.
    checkpoints: HashMap<i64, Vec<String>>,
}

fn log_of(names: &[String]) -> Log {
    let mut log = Log::default();
    for name in names {
        let Some((version, rest)) = name.split_once('.') else { continue };
        let Ok(v) = version.parse::<i64>() else { continue };
        if rest == "json" {
            log.commits.push((v, name.clone()));
        } else if rest.starts_with("checkpoint") && rest.ends_with(".parquet") {
            log.checkpoints.entry(v).or_default().push(name.clone());
        }
    }
    log.commits.sort();
    log
}

/// The table in `folder` at `as_of` (default: the newest version).
pub fn snapshot(folder: &Folder, as_of: Option<i64>, stats: &RunStats) -> Result<Snapshot> {
    let shown = folder.shown();
    let bad = |msg: String| Error::bad_file(format!("{shown}/_delta_log"), msg);
    let log = log_of(&folder.log_files()?);
    let newest = log
        .commits
        .iter()
        .map(|c| c.0)
        .chain(log.checkpoints.keys().copied())
        .max()
        .ok_or_else(|| bad("no commits".into()))?;
    let version = as_of.unwrap_or(newest);
    if version > newest || version < 0 {
        return Err(Error::Usage(format!(
            "{shown}: --as-of {version}: the table's versions go up to {newest}"
        )));
    }
    // The newest complete checkpoint at or below the version.
    let checkpoint = log
        .checkpoints
        .iter()
        .filter(|(v, parts)| **v <= version && complete(parts))
        .map(|(v, _)| *v)
        .max();
    let mut replay = Replay::default();
    if let Some(v) = checkpoint {
        for part in &log.checkpoints[&v] {
            let bytes = folder.read_log(part, stats)?;
            replay.checkpoint(&bytes).map_err(|m| bad(format!("checkpoint {part}: {m}")))?;
        }
    }
    let from = checkpoint.map_or(0, |v| v + 1);
    let mut expected = from;
    for (v, name) in log.commits.iter().filter(|(v, _)| *v >= from && *v <= version) {
        if *v != expected {
            return Err(bad(format!("commit {expected} is missing (the log has {name} next): cannot rebuild version {version}")));
        }
        let bytes = folder.read_log(name, stats)?;
        replay.commit(&bytes).map_err(|m| bad(format!("{name}: {m}")))?;
        expected = v + 1;
    }
    if expected <= version {
        return Err(bad(format!("commit {expected} is missing: cannot rebuild version {version}")));
    }
    replay.finish(version).map_err(bad)
}

/// Whether a checkpoint's parts are all there (`N.checkpoint.parquet`, or parts `i` of `n`).
fn complete(parts: &[String]) -> bool {
    if parts.iter().any(|p| p.ends_with(".checkpoint.parquet")) {
        return true;
    }
    let total =
        parts.first().and_then(|p| p.split('.').nth(3)).and_then(|n| n.parse::<usize>().ok());
    total.is_some_and(|n| n == parts.len())
}

/// A file's `add` action: its size, partition values by column, and whether it has a
/// deletion vector.
struct Added(u64, HashMap<String, Option<String>>, bool);

#[derive(Default)]
struct Replay {
    files: HashMap<String, Added>,
    partition_columns: Vec<String>,
    schema: Option<String>,
    column_mapping: Option<String>,
}

impl Replay {
    fn commit(&mut self, bytes: &[u8]) -> std::result::Result<(), String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let action: Json =
                serde_json::from_str(line).map_err(|e| format!("not a JSON action: {e}"))?;
            if let Some(add) = action.get("add") {
                let path =
                    add.get("path").and_then(Json::as_str).ok_or("an add action without a path")?;
                let size = add.get("size").and_then(Json::as_u64).unwrap_or(0);
                let values = add
                    .get("partitionValues")
                    .and_then(Json::as_object)
                    .map(|m| {
                        m.iter().map(|(k, v)| (k.clone(), v.as_str().map(str::to_string))).collect()
                    })
                    .unwrap_or_default();
                let dv = add.get("deletionVector").is_some_and(|d| !d.is_null());
                self.files.insert(path.to_string(), Added(size, values, dv));
            } else if let Some(remove) = action.get("remove") {
                let path = remove
                    .get("path")
                    .and_then(Json::as_str)
                    .ok_or("a remove action without a path")?;
                self.files.remove(path);
            } else if let Some(meta) = action.get("metaData") {
                let columns = meta
                    .get("partitionColumns")
                    .and_then(Json::as_array)
                    .ok_or("metaData without partitionColumns")?;
                self.partition_columns =
                    columns.iter().filter_map(Json::as_str).map(str::to_string).collect();
                self.schema = meta.get("schemaString").and_then(Json::as_str).map(str::to_string);
                self.column_mapping = meta
                    .pointer("/configuration/delta.columnMapping.mode")
                    .and_then(Json::as_str)
                    .map(str::to_string);
            }
        }
        Ok(())
    }

    /// A checkpoint part: its live files (`add`) and the table's metadata.
    fn checkpoint(&mut self, bytes: &Bytes) -> std::result::Result<(), String> {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .and_then(|b| b.build())
            .map_err(|e| e.to_string())?;
        for batch in reader {
            let batch = batch.map_err(|e| e.to_string())?;
            self.checkpoint_adds(&batch)?;
            self.checkpoint_meta(&batch)?;
        }
        Ok(())
    }

    fn checkpoint_adds(&mut self, batch: &RecordBatch) -> std::result::Result<(), String> {
        let Some(add) = struct_column(batch, "add") else { return Ok(()) };
        let path = string_field(add, "path").ok_or("add without path")?;
        let size = add
            .column_by_name("size")
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::Int64Array>());
        let values = add
            .column_by_name("partitionValues")
            .and_then(|c| c.as_any().downcast_ref::<MapArray>());
        let dv = add.column_by_name("deletionVector");
        for i in (0..add.len()).filter(|&i| add.is_valid(i)) {
            let parts = values.map(|m| map_entries(m, i)).unwrap_or_default();
            let has_dv = dv.is_some_and(|d| d.is_valid(i));
            self.files.insert(
                path.value(i).to_string(),
                Added(size.map_or(0, |s| s.value(i).max(0) as u64), parts, has_dv),
            );
        }
        Ok(())
    }

    fn checkpoint_meta(&mut self, batch: &RecordBatch) -> std::result::Result<(), String> {
        let Some(meta) = struct_column(batch, "metaData") else { return Ok(()) };
        let Some(i) = (0..meta.len()).find(|&i| meta.is_valid(i)) else { return Ok(()) };
        self.schema = string_field(meta, "schemaString").map(|s| s.value(i).to_string());
        if let Some(list) = meta
            .column_by_name("partitionColumns")
            .and_then(|c| c.as_any().downcast_ref::<ListArray>())
        {
            let names = list.value(i);
            let names = names
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or("partitionColumns not strings")?;
            self.partition_columns = names.iter().flatten().map(str::to_string).collect();
        }
        if let Some(conf) =
            meta.column_by_name("configuration").and_then(|c| c.as_any().downcast_ref::<MapArray>())
        {
            self.column_mapping = map_entries(conf, i).remove("delta.columnMapping.mode").flatten();
        }
        Ok(())
    }

    fn finish(self, version: i64) -> std::result::Result<Snapshot, String> {
        if let Some(mode) = self.column_mapping.filter(|m| m != "none") {
            return Err(format!("column mapping mode '{mode}' (physical column names differ from the schema's) is not supported"));
        }
        let schema = self.schema.ok_or("no metaData action: the table's schema is unknown")?;
        let types = partition_types(&schema, &self.partition_columns)?;
        let mut files: Vec<LiveFile> = self
            .files
            .into_iter()
            .map(|(path, Added(size, mut values, dv))| LiveFile {
                path,
                size,
                partition_values: self
                    .partition_columns
                    .iter()
                    .map(|c| values.remove(c).flatten())
                    .collect(),
                deletion_vector: dv,
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Snapshot {
            version,
            partition_columns: self.partition_columns.into_iter().zip(types).collect(),
            files,
        })
    }
}

fn struct_column<'a>(batch: &'a RecordBatch, name: &str) -> Option<&'a StructArray> {
    batch.column_by_name(name)?.as_any().downcast_ref::<StructArray>()
}

fn string_field<'a>(s: &'a StructArray, name: &str) -> Option<&'a StringArray> {
    s.column_by_name(name)?.as_any().downcast_ref::<StringArray>()
}

/// Entry `i` of a map<string, string> column.
fn map_entries(m: &MapArray, i: usize) -> HashMap<String, Option<String>> {
    if m.is_null(i) {
        return HashMap::new();
    }
    let entries = m.value(i);
    let (Some(k), Some(v)) = (
        entries.column(0).as_any().downcast_ref::<StringArray>(),
        entries.column(1).as_any().downcast_ref::<StringArray>(),
    ) else {
        return HashMap::new();
    };
    (0..k.len())
        .map(|j| (k.value(j).to_string(), v.is_valid(j).then(|| v.value(j).to_string())))
        .collect()
}

/// The Spark types of the partition columns, from the schema's JSON.
fn partition_types(schema: &str, columns: &[String]) -> std::result::Result<Vec<KeyType>, String> {
    let schema: Json =
        serde_json::from_str(schema).map_err(|e| format!("schemaString is not JSON: {e}"))?;
    let fields =
        schema.get("fields").and_then(Json::as_array).ok_or("schemaString has no fields")?;
    columns
        .iter()
        .map(|c| {
            let field = fields
                .iter()
                .find(|f| f.get("name").and_then(Json::as_str) == Some(c))
                .ok_or(format!("partition column {c} is not in the schema"))?;
            let t = field.get("type").and_then(Json::as_str).unwrap_or("");
            Ok(match t {
                "string" => KeyType::String,
                "long" => KeyType::BigInt,
                "integer" => KeyType::Int,
                "short" => KeyType::SmallInt,
                "byte" => KeyType::TinyInt,
                "double" => KeyType::Double,
                "boolean" => KeyType::Boolean,
                "date" => KeyType::Date,
                other => {
                    return Err(format!(
                    "partition column {c} is of type {other}, which is not supported as a key here"
                ))
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"k\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},{\"name\":\"day\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},{\"name\":\"n\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":["day"],"configuration":{}}}"#;

    fn add(path: &str, day: Option<&str>, dv: bool) -> String {
        let day = day.map_or("null".to_string(), |d| format!("\"{d}\""));
        let dv = if dv {
            r#","deletionVector":{"storageType":"u","pathOrInlineDv":"ab","offset":1,"sizeInBytes":10,"cardinality":2}"#
        } else {
            ""
        };
        format!(
            r#"{{"add":{{"path":"{path}","partitionValues":{{"day":{day}}},"size":10,"modificationTime":1,"dataChange":true{dv}}}}}"#
        )
    }

    #[test]
    fn replay_keeps_added_files_that_were_not_removed() {
        let mut r = Replay::default();
        r.commit(
            format!(
                "{META}\n{}\n{}\n",
                add("day=1/a.parquet", Some("1"), false),
                add("day=2/b.parquet", None, false)
            )
            .as_bytes(),
        )
        .unwrap();
        r.commit(
            format!(
                "{}\n{{\"remove\":{{\"path\":\"day=1/a.parquet\",\"dataChange\":true}}}}\n",
                add("day=1/c.parquet", Some("1"), true)
            )
            .as_bytes(),
        )
        .unwrap();
        let s = r.finish(1).unwrap();
        assert_eq!(s.partition_columns, vec![("day".to_string(), KeyType::String)]);
        let paths: Vec<_> = s
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.partition_values.clone(), f.deletion_vector))
            .collect();
        assert_eq!(
            paths,
            vec![
                ("day=1/c.parquet", vec![Some("1".to_string())], true),
                ("day=2/b.parquet", vec![None], false)
            ]
        );
        assert_eq!(s.with_deletion_vectors(), 1);
    }

    #[test]
    fn column_mapping_is_refused() {
        let mut r = Replay::default();
        r.commit(
            META.replace(
                r#""configuration":{}"#,
                r#""configuration":{"delta.columnMapping.mode":"name"}"#,
            )
            .as_bytes(),
        )
        .unwrap();
        assert!(r.finish(0).unwrap_err().contains("column mapping mode 'name'"));
    }

    #[test]
    fn log_names_give_commits_and_checkpoints() {
        let names: Vec<String> = [
            "00000000000000000000.json",
            "00000000000000000002.checkpoint.parquet",
            "00000000000000000003.checkpoint.0000000001.0000000002.parquet",
            "_last_checkpoint",
            "00000000000000000001.json",
            "00000000000000000001.crc",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let log = log_of(&names);
        assert_eq!(log.commits.iter().map(|c| c.0).collect::<Vec<_>>(), vec![0, 1]);
        assert!(complete(&log.checkpoints[&2]));
        assert!(!complete(&log.checkpoints[&3]), "one of two parts");
    }
}
