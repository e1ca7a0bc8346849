//! `--tables DIR`: tables found by name under one folder: `name`, `name.parquet`, and Spark's
//! warehouse layout (`db.db/name` for `db.name`, `name` for `default.name`). Names are compared
//! ignoring case, as Spark compares them. The names are the caller's (those a query names:
//! `rewrite::table_names`): tables read no SQL.

use std::path::Path;

use crate::error::{Error, Result};
use crate::stats::RunStats;

/// The tables found under a folder: (name, path) each, and the names not found.
pub struct Found {
    pub tables: Vec<(String, String)>,
    pub missing: Vec<String>,
}

/// Each name found under `dir` (a local folder or an object store URL), and the names not
/// found.
pub fn find(dir: &str, names: &[String], stats: &RunStats) -> Result<Found> {
    let remote = crate::table::store::is_remote(dir);
    if remote {
        if crate::table::store::children(dir, stats)?.is_empty() {
            return Err(Error::Usage(format!("--tables {dir}: no such folder (nothing under it)")));
        }
    } else if !Path::new(dir).is_dir() {
        return Err(Error::Usage(format!("--tables {dir}: not a folder")));
    }
    let (mut found, mut missing) = (Vec::new(), Vec::new());
    for name in names {
        match candidates(name).into_iter().find_map(|rel| lookup(dir, &rel, remote, stats)) {
            Some(p) => found.push((name.clone(), p)),
            None => missing.push(name.clone()),
        }
    }
    Ok(Found { tables: found, missing })
}

/// Where a table may be, relative to the folder: each a list of path parts. `db.t` is in
/// `db.db/t` (Spark's warehouse) or `db/t`, and `default.t` also at the top, as `t` is.
fn candidates(name: &str) -> Vec<Vec<String>> {
    let (db, table) = match name.rsplit_once('.') {
        Some((db, t)) => (Some(db.rsplit('.').next().unwrap_or(db)), t),
        None => (None, name),
    };
    let files = |dir: Option<String>| {
        let file = [table.to_string(), format!("{table}.parquet")];
        file.map(|f| dir.iter().cloned().chain(std::iter::once(f)).collect::<Vec<_>>())
    };
    let mut out = Vec::new();
    if let Some(db) = db {
        out.extend(files(Some(format!("{db}.db"))));
        out.extend(files(Some(db.to_string())));
    }
    if db.is_none_or(|d| d == "default") {
        out.extend(files(None));
    }
    out
}

/// `rel` under `dir`, each part matched exactly, else ignoring case.
fn lookup(dir: &str, rel: &[String], remote: bool, stats: &RunStats) -> Option<String> {
    let mut cur = dir.trim_end_matches('/').to_string();
    for part in rel {
        let names = if remote {
            crate::table::store::children(&cur, stats).ok()?
        } else {
            local_children(&cur)?
        };
        let name = names
            .iter()
            .find(|n| *n == part)
            .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(part)))?;
        cur = format!("{cur}/{name}");
    }
    Some(cur)
}

fn local_children(dir: &str) -> Option<Vec<String>> {
    Some(
        std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sales.db/Orders")).unwrap();
        std::fs::write(d.path().join("items.parquet"), b"").unwrap();
        std::fs::create_dir(d.path().join("users")).unwrap();
        let names: Vec<String> = ["sales.orders", "items", "default.users", "nope", "other.items"]
            .map(String::from)
            .to_vec();
        let Found { tables: found, missing } =
            find(&d.path().to_string_lossy(), &names, &RunStats::default()).unwrap();
        let rel: Vec<(String, String)> = found
            .into_iter()
            .map(|(n, p)| {
                (n, Path::new(&p).strip_prefix(d.path()).unwrap().to_string_lossy().into_owned())
            })
            .collect();
        assert_eq!(
            rel,
            vec![
                ("sales.orders".into(), "sales.db/Orders".into()),
                ("items".into(), "items.parquet".into()),
                ("default.users".into(), "users".into())
            ]
        );
        assert_eq!(missing, vec!["nope", "other.items"]);
    }
}
