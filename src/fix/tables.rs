//! The tables of the query `fix` rewrites: each one's name and where it is read, and the files
//! and bytes the job's scan of it read (the log's SQL metrics) against those there now, so that
//! a table that changed since the run is said to have.

use std::collections::HashMap;

use serde::Serialize;

use super::query::{catalog_names, execution_of, reads, stage_scans, FixQuery};
use crate::diagnose::model::App;
use crate::table::Table;

/// A table of the query: the files and bytes the job's scan of it read (the log's SQL
/// metrics), against the files there now.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TableCheck {
    pub name: String,
    pub files_read: i64,
    pub bytes_read: i64,
    pub files_now: u64,
    pub bytes_now: u64,
    /// The scan read only some partitions (partition filters): its counts are of those.
    pub pruned: bool,
    /// Not pruned, and the files or bytes differ from the job's: the table changed since.
    pub changed: bool,
}

impl TableCheck {
    /// What the job read: `N files, M bytes`.
    pub fn read_text(&self) -> String {
        files_and_bytes(self.files_read.max(0) as u64, self.bytes_read.max(0) as u64)
    }

    /// What is there now: `N files, M bytes`.
    pub fn now_text(&self) -> String {
        files_and_bytes(self.files_now, self.bytes_now)
    }
}

fn files_and_bytes(files: u64, bytes: u64) -> String {
    format!("{} files, {} bytes", crate::format::fmt_count(files), crate::format::fmt_count(bytes))
}

/// Each table of `q` whose scan in the stage's execution has its files-read metrics, against
/// `now`: the table's name -> (files, bytes) there today.
pub fn table_checks(
    app: &App,
    stage_id: i64,
    q: &FixQuery,
    now: &HashMap<String, (u64, u64)>,
) -> Vec<TableCheck> {
    let Some(exec) = execution_of(app, stage_id) else { return Vec::new() };
    let all = stage_scans(app, stage_id);
    let metric = |id: Option<i64>| id.and_then(|id| exec.driver_metrics.get(&id).copied());
    q.tables
        .iter()
        .filter_map(|t| {
            let scan = all.iter().filter(|s| reads(s, t)).min_by_key(|s| s.pruned)?;
            let (files_read, bytes_read) = (metric(scan.files_metric)?, metric(scan.bytes_metric)?);
            let &(files_now, bytes_now) = now.get(&t.name)?;
            let changed =
                !scan.pruned && (files_read as u64 != files_now || bytes_read as u64 != bytes_now);
            Some(TableCheck {
                name: t.name.clone(),
                files_read,
                bytes_read,
                files_now,
                bytes_now,
                pruned: scan.pruned,
                changed,
            })
        })
        .collect()
}

/// Each table of the query and where it is read: its path, or on Spark (`by_name`) its catalog
/// name where the plan gives one.
pub fn named(app: &App, stage_id: i64, q: &FixQuery, by_name: bool) -> Vec<(String, String)> {
    let names = if by_name { catalog_names(app, stage_id, q) } else { vec![None; q.tables.len()] };
    q.tables
        .iter()
        .zip(names)
        .map(|(t, c)| (t.name.clone(), c.unwrap_or_else(|| t.table.clone())))
        .collect()
}

/// The files and bytes of each table read here (a table Spark reads has none to compare).
pub fn files_now(tables: &HashMap<String, Table>) -> HashMap<String, (u64, u64)> {
    tables
        .iter()
        .filter(|(_, t)| !t.is_held())
        .map(|(n, t)| {
            (n.clone(), (t.files.len() as u64, t.files.iter().map(|f| f.byte_len()).sum()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::model::SqlExecution;
    use crate::fix::query::TableRef;

    #[test]
    fn each_table_is_set_against_the_files_its_scan_read() {
        let scan = |name: &str, files: i64, bytes: i64, parts: &str| {
            serde_json::json!({"nodeName": format!("Scan parquet {name}"), "simpleString": format!("FileScan parquet {name}[k#1]"),
                "metadata": {"Location": format!("InMemoryFileIndex(1 paths)[file:/w/{name}]"), "PartitionFilters": parts},
                "metrics": [{"name": "number of files read", "accumulatorId": files}, {"name": "size of files read", "accumulatorId": bytes}],
                "children": []})
        };
        let plan = serde_json::json!({"nodeName": "SortMergeJoin", "simpleString": "SortMergeJoin [k#1], [k#1], Inner",
            "children": [scan("a", 10, 11, "[]"), scan("b", 20, 21, "[]"), scan("c", 30, 31, "[(dt#2 = 1)]")]});
        let mut app = App::default();
        app.stages.insert(
            (7, 0),
            crate::diagnose::model::Stage { id: 7, job: Some(1), ..Default::default() },
        );
        app.jobs
            .insert(1, crate::diagnose::model::Job { id: 1, sql: Some(0), ..Default::default() });
        let metrics = HashMap::from([(10, 2), (11, 2_000), (20, 1), (21, 500), (30, 1), (31, 90)]);
        app.sql.insert(
            0,
            SqlExecution { plan: Some(plan), driver_metrics: metrics, ..Default::default() },
        );
        let table = |n: &str| TableRef { name: n.into(), table: format!("/w/{n}") };
        let q = FixQuery {
            sql: String::new(),
            source: "sql_text",
            tables: vec![table("a"), table("b"), table("c")],
            notes: vec![],
        };
        let now = HashMap::from([
            ("a".to_string(), (2, 2_000)),
            ("b".to_string(), (2, 900)),
            ("c".to_string(), (4, 400)),
        ]);
        let checks = table_checks(&app, 7, &q, &now);
        let got: Vec<(&str, i64, u64, bool, bool)> = checks
            .iter()
            .map(|t| (t.name.as_str(), t.files_read, t.files_now, t.pruned, t.changed))
            .collect();
        assert_eq!(
            got,
            vec![("a", 2, 2, false, false), ("b", 1, 2, false, true), ("c", 1, 4, true, false)]
        );
    }
}
