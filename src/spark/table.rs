//! A table as the Spark engine sees it: a path Spark reads as Parquet, or a name its catalog
//! knows, registered as a temporary view in the session. Its columns are Spark's; its rows are
//! Spark's count; its sizes are the Parquet footers' when Spark's files are on this machine (the
//! embedded engine's figures, to the byte), else Spark's own estimate, said in a note.

use std::sync::Arc;

use arrow_schema::{Field, Schema};
use serde_json::json;

use super::{wire, Session};
use crate::count::TableSize;
use crate::error::{Error, Result};
use crate::stats::RunStats;
use crate::table::{Held, Table};

/// Files whose footers are read for the sizes: beyond this many, Spark's estimate is used.
const MAX_FOOTERS: usize = 10_000;

/// Open `spec` (a path, or a catalog name such as `prod.events`) in the session.
pub fn open(session: &Arc<Session>, spec: &str) -> Result<Table> {
    open_as(session, spec, is_catalog_name(spec))
}

/// Open the table the session's catalog knows as `name`.
pub fn open_name(session: &Arc<Session>, name: &str) -> Result<Table> {
    open_as(session, name, true)
}

fn open_as(session: &Arc<Session>, spec: &str, by_name: bool) -> Result<Table> {
    // A path on this machine goes to Spark as an absolute one: a Connect server's working
    // folder is not ours.
    let path = std::path::absolute(spec)
        .ok()
        .filter(|p| p.exists())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| spec.to_string());
    let req = if by_name {
        json!({"op": "open", "name": spec})
    } else {
        json!({"op": "open", "path": path, "format": format_of(spec, session.stats())?})
    };
    let a = session.request(&req, &format!("opening {spec}"))?;
    let view = a["view"]
        .as_str()
        .ok_or_else(|| Error::Internal("Spark engine: no view".into()))?
        .to_string();
    let fields: Vec<Field> = a["fields"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .map(|f| {
                    Field::new(
                        f["name"].as_str().unwrap_or_default(),
                        wire::arrow_type(f["type"].as_str().unwrap_or_default()),
                        true,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let rows = a["rows"].as_u64().unwrap_or(0);
    let files: Vec<String> = a["files"]
        .as_array()
        .map(|f| f.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let (size, files_here) = footer_size(&files, rows).unwrap_or_else(|| {
        let estimate = (a["size_bytes"].as_u64(), a["size_exact"].as_bool() == Some(true));
        (spark_size(spec, rows, estimate, session.stats()), Vec::new())
    });
    // The table is known to the session by its temporary view.
    let held = Held {
        name: view,
        schema: Arc::new(Schema::new(fields)),
        rows: size.rows,
        disk_bytes: size.disk_bytes,
        memory_bytes: size.memory_bytes,
        files_here,
    };
    Ok(Table::held(spec, held, session.stats()))
}

/// How Spark must read the path: a Delta table as `delta` (never its folder's Parquet files,
/// which include the removed ones); an Iceberg table is read by its catalog name.
fn format_of(spec: &str, stats: &RunStats) -> Result<&'static str> {
    let listed = if crate::table::store::is_remote(spec) {
        crate::table::store::list_folder(spec, stats).ok()
    } else {
        None
    };
    let folder = match &listed {
        Some(keys) => crate::table::delta::Folder::remote(spec, keys),
        None => crate::table::delta::Folder::Local(crate::table::store::local_path(spec)),
    };
    if folder.is_delta() {
        return Ok("delta");
    }
    if crate::table::iceberg::metadata_file(spec, listed.as_deref(), stats).ok().flatten().is_some()
    {
        return Err(Error::Usage(format!(
            "{spec}: an Iceberg table: with --engine spark, give the name the Spark catalog knows it by (e.g. --table events=cat.db.events)"
        )));
    }
    Ok("parquet")
}

/// A catalog name rather than a path: dotted identifiers (`events`, `prod.events`,
/// `cat.db.events`, backquotes allowed) that name nothing on this machine.
pub fn is_catalog_name(spec: &str) -> bool {
    if spec.contains("://") || spec.contains('/') || std::path::Path::new(spec).exists() {
        return false;
    }
    let ident = |p: &str| {
        let p = p.trim_matches('`');
        !p.is_empty()
            && p.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            && !p.starts_with('-')
    };
    spec.split('.').all(ident) && !spec.ends_with(".parquet")
}

/// The sizes from the files' footers, and the files' local paths, when every file is on this
/// machine and they agree with Spark's row count.
fn footer_size(files: &[String], rows: u64) -> Option<(TableSize, Vec<String>)> {
    if files.is_empty() || files.len() > MAX_FOOTERS {
        return None;
    }
    let local: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix("file://").or_else(|| f.strip_prefix("file:")).map(str::to_string))
        .collect::<Option<_>>()?;
    let local: Vec<String> = local.into_iter().map(|p| percent_decode(&p)).collect();
    let t = Table::open(&local).ok()?;
    let size = TableSize::of(&t);
    (size.rows == rows).then_some((size, local))
}

/// Spark's `sizeInBytes` for both sizes, with a note that says so.
fn spark_size(
    spec: &str,
    rows: u64,
    (bytes, exact): (Option<u64>, bool),
    stats: &RunStats,
) -> TableSize {
    let b = bytes.unwrap_or(0);
    let how = if exact { "" } else { " (as EXPLAIN COST prints it, to 2 or 3 digits)" };
    stats.note(match bytes {
        Some(_) => format!(
            "{spec}: its files are not on this machine: its size is Spark's estimate, {}{how}, used as the bytes in memory too (Parquet's decoded size is larger)",
            crate::format::human(b)
        ),
        None => format!("{spec}: Spark gave no size: its bytes are taken as 0"),
    });
    TableSize { rows, disk_bytes: b, memory_bytes: b }
}

/// `%20` and the like in a `file:` URI.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |j: usize| b.get(j).and_then(|c| (*c as char).to_digit(16));
        if let (b'%', Some(h), Some(l)) = (b[i], hex(i + 1), hex(i + 2)) {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert!(is_catalog_name("prod.events"));
        assert!(is_catalog_name("`spark_catalog`.`default`.events"));
        assert!(!is_catalog_name("data/events"));
        assert!(!is_catalog_name("s3://b/events"));
        assert!(!is_catalog_name("events.parquet"));
        assert!(!is_catalog_name("Cargo.toml"));
    }

    #[test]
    fn file_uris() {
        assert_eq!(percent_decode("/a%20b/c.parquet"), "/a b/c.parquet");
        assert_eq!(percent_decode("/a%2"), "/a%2");
    }
}
