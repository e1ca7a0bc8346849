//! Apache Iceberg tables: the live data files of a snapshot, from the table's metadata.
//!
//! The table is its newest metadata file (`metadata/version-hint.text`, else the highest
//! numbered `*.metadata.json`; or the metadata file named directly). Its current snapshot (or
//! the one `--as-of` names by id) has a manifest list (Avro), which lists manifests (Avro),
//! whose entries that are not DELETED (status 2) are the snapshot's files. Data files carry
//! every column, identity partitions included, so partition values are read from the files.
//! Delete files (position or equality deletes, format v2) are not applied: with any, the
//! counts are upper bounds and the table's note says so. Only Parquet data files are read.

use apache_avro::types::Value as Avro;
use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::stats::RunStats;

/// A data file of a snapshot: its URI (or path) and size.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFile {
    pub uri: String,
    pub size: u64,
}

#[derive(Debug)]
pub struct Snapshot {
    pub snapshot_id: i64,
    pub metadata: String,
    pub files: Vec<DataFile>,
    /// Live delete files (not applied).
    pub delete_files: usize,
}

/// The newest metadata file of the table at `root` (a folder, or a metadata file), if it is
/// an Iceberg table. `listed`: the keys under a folder in an object store, already listed.
pub fn metadata_file(
    root: &str,
    listed: Option<&[(String, u64)]>,
    stats: &RunStats,
) -> Result<Option<String>> {
    if root.ends_with(".metadata.json") {
        return Ok(Some(root.to_string()));
    }
    let dir = format!("{}/metadata", root.trim_end_matches('/'));
    let names: Vec<String> = match listed {
        Some(keys) => keys
            .iter()
            .filter_map(|(k, _)| k.strip_prefix("metadata/"))
            .filter(|n| !n.contains('/'))
            .map(str::to_string)
            .collect(),
        None => match std::fs::read_dir(crate::table::store::local_path(&dir)) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => return Ok(None),
        },
    };
    if names.iter().any(|n| n == "version-hint.text") {
        let hint = crate::table::store::read_whole(&format!("{dir}/version-hint.text"), stats)?;
        let v = String::from_utf8_lossy(&hint).trim().to_string();
        return Ok(Some(format!("{dir}/v{v}.metadata.json")));
    }
    let newest = names
        .iter()
        .filter(|n| n.ends_with(".metadata.json"))
        .max_by_key(|n| (sequence(n), (*n).clone()));
    Ok(newest.map(|n| format!("{dir}/{n}")))
}

/// The number a metadata file name starts with (`00004-uuid` or `v4`).
fn sequence(name: &str) -> i64 {
    let digits: String =
        name.trim_start_matches('v').chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap_or(-1)
}

/// The snapshot `as_of` (an id; default the current one) of the table whose metadata is at
/// `metadata`.
pub fn snapshot(metadata: &str, as_of: Option<i64>, stats: &RunStats) -> Result<Snapshot> {
    let bad = |what: &str, msg: String| Error::bad_file(what, msg);
    let meta: Json = serde_json::from_slice(&crate::table::store::read_whole(metadata, stats)?)
        .map_err(|e| bad(metadata, format!("not JSON: {e}")))?;
    let current = meta.get("current-snapshot-id").and_then(Json::as_i64).filter(|&id| id != -1);
    let Some(id) = as_of.or(current) else {
        return Err(Error::NoParquet(format!(
            "{metadata}: the Iceberg table has no snapshot (no data yet)"
        )));
    };
    let snapshots = meta.get("snapshots").and_then(Json::as_array).cloned().unwrap_or_default();
    let Some(snap) =
        snapshots.iter().find(|s| s.get("snapshot-id").and_then(Json::as_i64) == Some(id))
    else {
        let ids: Vec<String> = snapshots
            .iter()
            .filter_map(|s| s.get("snapshot-id").and_then(Json::as_i64))
            .map(|i| i.to_string())
            .collect();
        return Err(Error::Usage(format!(
            "{metadata}: no snapshot {id}; the table has {}",
            ids.join(", ")
        )));
    };
    let list = snap.get("manifest-list").and_then(Json::as_str).ok_or_else(|| {
        bad(
            metadata,
            format!(
                "snapshot {id} has no manifest-list (format v1 inline manifests are not supported)"
            ),
        )
    })?;
    let mut out = Snapshot {
        snapshot_id: id,
        metadata: metadata.to_string(),
        files: Vec::new(),
        delete_files: 0,
    };
    for manifest in records(list, stats)? {
        let path = string(&manifest, "manifest_path")
            .ok_or_else(|| bad(list, "an entry without manifest_path".into()))?;
        let deletes = long(&manifest, "content").unwrap_or(0) == 1;
        for entry in records(&path, stats)? {
            if long(&entry, "status") == Some(2) {
                continue;
            }
            let Some(file) = field(&entry, "data_file") else {
                return Err(bad(&path, "an entry without data_file".into()));
            };
            if deletes || long(file, "content").unwrap_or(0) != 0 {
                out.delete_files += 1;
                continue;
            }
            let uri = string(file, "file_path")
                .ok_or_else(|| bad(&path, "a data file without file_path".into()))?;
            let format = string(file, "file_format").unwrap_or_default();
            if !format.eq_ignore_ascii_case("parquet") {
                return Err(bad(
                    &uri,
                    format!("an {format} data file: only Parquet data files are read"),
                ));
            }
            out.files.push(DataFile {
                uri,
                size: long(file, "file_size_in_bytes").unwrap_or(0).max(0) as u64,
            });
        }
    }
    out.files.sort_by(|a, b| a.uri.cmp(&b.uri));
    Ok(out)
}

/// The records of the Avro file at `uri`.
fn records(uri: &str, stats: &RunStats) -> Result<Vec<Avro>> {
    let bytes = crate::table::store::read_whole(uri, stats)?;
    let reader = apache_avro::Reader::new(&bytes[..])
        .map_err(|e| Error::bad_file(uri, format!("not an Avro file: {e}")))?;
    reader.map(|r| r.map_err(|e| Error::bad_file(uri, format!("corrupt Avro: {e}")))).collect()
}

/// Field `name` of a record (through a union's branch).
fn field<'a>(v: &'a Avro, name: &str) -> Option<&'a Avro> {
    match v {
        Avro::Record(fields) => {
            fields.iter().find(|(n, _)| n == name).map(|(_, v)| unwrap_union(v))
        }
        Avro::Union(_, inner) => field(inner, name),
        _ => None,
    }
}

fn unwrap_union(v: &Avro) -> &Avro {
    match v {
        Avro::Union(_, inner) => unwrap_union(inner),
        other => other,
    }
}

fn string(v: &Avro, name: &str) -> Option<String> {
    match field(v, name)? {
        Avro::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn long(v: &Avro, name: &str) -> Option<i64> {
    match field(v, name)? {
        Avro::Long(x) => Some(*x),
        Avro::Int(x) => Some(*x as i64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_numbered_metadata_file_is_the_newest() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("metadata")).unwrap();
        for n in [
            "00001-b.metadata.json",
            "00010-a.metadata.json",
            "00002-c.metadata.json",
            "snap-1.avro",
        ] {
            std::fs::write(d.path().join("metadata").join(n), "{}").unwrap();
        }
        let root = d.path().to_string_lossy().to_string();
        assert_eq!(
            metadata_file(&root, None, &RunStats::default()).unwrap(),
            Some(format!("{root}/metadata/00010-a.metadata.json"))
        );
        std::fs::write(d.path().join("metadata/version-hint.text"), "3\n").unwrap();
        assert_eq!(
            metadata_file(&root, None, &RunStats::default()).unwrap(),
            Some(format!("{root}/metadata/v3.metadata.json"))
        );
        assert_eq!(
            metadata_file(&d.path().join("nothing").to_string_lossy(), None, &RunStats::default())
                .unwrap(),
            None
        );
    }

    #[test]
    fn fields_are_read_through_unions() {
        let rec = Avro::Record(vec![
            ("status".into(), Avro::Int(1)),
            (
                "data_file".into(),
                Avro::Record(vec![(
                    "file_path".into(),
                    Avro::Union(1, Box::new(Avro::String("s3://b/x.parquet".into()))),
                )]),
            ),
        ]);
        assert_eq!(long(&rec, "status"), Some(1));
        assert_eq!(
            field(&rec, "data_file").and_then(|f| string(f, "file_path")),
            Some("s3://b/x.parquet".to_string())
        );
        assert_eq!(string(&rec, "missing"), None);
    }
}
