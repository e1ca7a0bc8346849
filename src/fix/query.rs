//! The query `fix` rewrites, found in the log: the SQL text the log holds for the slow stage's
//! job when each table it names is one the plan scans, else the stage's join rebuilt from the
//! physical plan (`SELECT * FROM l <join> r ON ...` over the tables its scans read, each side
//! filtered as the plan filters it where the conditions read back as SQL).

use std::ops::ControlFlow;

use serde::Serialize;
use sqlparser::ast::{visit_relations, Statement};

use crate::diagnose::model::{App, Job, SqlExecution};
use crate::diagnose::plan::{attr_name, scans, JoinInfo, JoinSide, ScanInfo};
use crate::diagnose::{spark_expr, Diagnosis, Kind};

/// A table of the rebuilt query: the name the SQL gives it, and what it reads.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TableRef {
    pub name: String,
    /// A path (or object-store URL), or a catalog name (`db.table`).
    pub table: String,
}

/// The query `fix` rewrites, and where it came from.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FixQuery {
    pub sql: String,
    /// `sql_text`: the log's SQL text; `rebuilt_from_plan`: the stage's join alone, over the
    /// whole tables its scans read.
    pub source: &'static str,
    pub tables: Vec<TableRef>,
    /// What the rebuilt query does not carry of the job's (its other operators, its filters).
    pub notes: Vec<String>,
}

/// The hot-key finding whose stage ran a join, and that join.
pub fn hot_join(d: &Diagnosis) -> Option<(i64, &JoinInfo)> {
    d.findings
        .iter()
        .filter(|f| f.kind == Kind::HotKey)
        .find_map(|f| Some((f.stage_id?, f.join.as_ref()?)))
}

/// Why there is no query to rewrite in `d`, or None when there is one.
pub fn no_query(d: &Diagnosis) -> Option<String> {
    if hot_join(d).is_some() {
        return None;
    }
    Some(match d.findings.iter().find(|f| f.kind == Kind::HotKey) {
        Some(f) => format!(
            "stage {} has a hot key, but the log holds no SQL plan for it (an RDD or DataFrame job without SQL events): there is no query to rewrite",
            f.stage_id.unwrap_or(-1)
        ),
        None => "no stage of this application is slowed by a hot key: there is no join to rewrite".to_string(),
    })
}

/// The query as the log's SQL text gives it: the stage's SQL execution's description, or its
/// job's `spark.job.description` (spark-sql, the Thrift server and notebooks set them), when it
/// parses as one query and each table it names is a catalog table the plan's scans read.
pub fn from_sql_text(app: &App, stage_id: i64) -> Option<FixQuery> {
    let job = job_of(app, stage_id)?;
    let exec = execution_of(app, stage_id);
    let scans = stage_scans(app, stage_id);
    let texts = [exec.map(|e| e.description.as_str()), job.description.as_deref()];
    texts.into_iter().flatten().find_map(|t| query_of_text(t, &scans))
}

/// The job that ran the stage.
fn job_of(app: &App, stage_id: i64) -> Option<&Job> {
    let st = app.stages.values().find(|s| s.id == stage_id)?;
    app.jobs.get(&st.job?)
}

/// The SQL execution whose job ran the stage.
pub(super) fn execution_of(app: &App, stage_id: i64) -> Option<&SqlExecution> {
    app.sql.get(&job_of(app, stage_id)?.sql?)
}

/// The catalog name the plan gives each table of `q` (`spark_catalog.db.t`), where it gives
/// one: what Spark reads the table by when it counts it.
pub fn catalog_names(app: &App, stage_id: i64, q: &FixQuery) -> Vec<Option<String>> {
    let all = stage_scans(app, stage_id);
    q.tables.iter().map(|t| all.iter().find(|s| reads(s, t))?.name.clone()).collect()
}

/// The scans of the stage's SQL execution (none when the log has no plan for it).
pub(super) fn stage_scans(app: &App, stage_id: i64) -> Vec<ScanInfo> {
    execution_of(app, stage_id).and_then(|e| e.plan.as_ref()).map(scans).unwrap_or_default()
}

/// Whether `scan` reads the query's table `t` (by its location, or its catalog name).
pub(super) fn reads(scan: &ScanInfo, t: &TableRef) -> bool {
    scan.location.as_deref() == Some(t.table.as_str())
        || scan.name.as_deref() == Some(t.table.as_str())
}

fn query_of_text(text: &str, scans: &[ScanInfo]) -> Option<FixQuery> {
    let statements = crate::sql::parse(text).ok()?;
    let [Statement::Query(q)] = statements.as_slice() else {
        return None;
    };
    let mut names: Vec<String> = Vec::new();
    let _ = visit_relations(&**q, |r| {
        let n = r.to_string();
        if !names.contains(&n) {
            names.push(n);
        }
        ControlFlow::<()>::Continue(())
    });
    if names.len() < 2 {
        return None;
    }
    let located = |n: &String| {
        let scan = scans.iter().find(|s| s.name.as_deref().is_some_and(|sn| same_table(sn, n)))?;
        Some(TableRef { name: n.clone(), table: scan.location.clone()? })
    };
    let tables = names.iter().map(located).collect::<Option<Vec<_>>>()?;
    Some(FixQuery {
        sql: format!("{}\n", text.trim().trim_end_matches(';')),
        source: "sql_text",
        tables,
        notes: vec!["the query is the SQL text the log holds; its tables are read from the files the plan's scans read".into()],
    })
}

/// Whether the plan's `spark_catalog.db.t` is the query's `t`, `db.t` or itself.
fn same_table(scan: &str, written: &str) -> bool {
    let parts = |s: &str| {
        s.split('.').map(|p| p.trim_matches('`').to_ascii_lowercase()).collect::<Vec<_>>()
    };
    let (s, w) = (parts(scan), parts(written));
    w.len() <= s.len() && s[s.len() - w.len()..] == w[..]
}

/// The stage's join as a query: `SELECT * FROM l <join> r ON l.k = r.k`, over the tables its
/// scans read, each side filtered as the plan filtered it where its conditions read back as
/// SQL. Err names what is missing (a side that scans no table, a key that is an expression).
pub fn rebuild(join: &JoinInfo) -> Result<FixQuery, String> {
    let (Some(lt), Some(rt)) = (&join.left_table, &join.right_table) else {
        return Err(format!(
            "the {} join's plan does not name the table of each side",
            join.operator
        ));
    };
    let keys: Vec<(String, String)> = join
        .left_keys
        .iter()
        .zip(&join.right_keys)
        .map(|(l, r)| (attr_name(l), attr_name(r)))
        .collect();
    if let Some((l, r)) = keys.iter().find(|(l, r)| !plain(l) || !plain(r)) {
        return Err(format!("the join key {l} = {r} is an expression, not a column of each table"));
    }
    let left = table_name(lt, None);
    let right = table_name(rt, Some(&left));
    let (l_from, l_notes) = side_from(&left, "l", &join.left_side);
    let (r_from, r_notes) = side_from(&right, "r", &join.right_side);
    let on: Vec<String> = keys
        .iter()
        .map(|(l, r)| format!("l.{} = r.{}", crate::sql::ident(l), crate::sql::ident(r)))
        .collect();
    let sql = format!(
        "SELECT *\nFROM {l_from}\n{} {r_from} ON {}\n",
        join_words(&join.join_type),
        on.join(" AND ")
    );
    let mut notes = vec![
        "the query is rebuilt from the physical plan: the stage's join alone (SELECT *), over the tables its scans read, with the filters the plan applies to each side before it".to_string(),
    ];
    notes.extend(l_notes.into_iter().chain(r_notes));
    Ok(FixQuery {
        sql,
        source: "rebuilt_from_plan",
        tables: vec![
            TableRef { name: left, table: lt.clone() },
            TableRef { name: right, table: rt.clone() },
        ],
        notes,
    })
}

/// One side of the rebuilt join: `table alias`, or `(SELECT * FROM table WHERE ...) alias`
/// with the plan's conditions on it; and notes on what the plan does there that it leaves out.
fn side_from(table: &str, alias: &str, side: &JoinSide) -> (String, Vec<String>) {
    let types = spark_expr::read_schema(&side.schema);
    let mut carried = Vec::new();
    let mut notes = Vec::new();
    for c in side.filters.iter().flat_map(|f| spark_expr::conjuncts(f)) {
        match spark_expr::to_sql(&c, &side.columns, &types) {
            Some(sql) if !carried.contains(&sql) => carried.push(sql),
            Some(_) => {}
            None => notes.push(format!(
                "{alias}: the plan's condition {c} is left out (it does not read back as SQL exactly): the rebuilt query may read more rows than the job"
            )),
        }
    }
    if !side.through.is_empty() {
        notes.push(format!(
            "{alias}: the plan passes this side through {} before the join: the rebuilt query joins the table's rows as they are",
            side.through.join(", ")
        ));
    }
    let from = if carried.is_empty() {
        format!("{} {alias}", crate::sql::ident(table))
    } else {
        format!(
            "(SELECT * FROM {} WHERE {}) {alias}",
            crate::sql::ident(table),
            carried.join(" AND ")
        )
    };
    (from, notes)
}

/// A column name as Spark's plan prints an attribute (no call, cast or arithmetic).
fn plain(name: &str) -> bool {
    !name.is_empty() && !name.contains(['(', ')', ' ', '+', '-', '*', '/'])
}

fn join_words(spark_type: &str) -> &'static str {
    match spark_type {
        "LeftOuter" => "LEFT JOIN",
        "RightOuter" => "RIGHT JOIN",
        "FullOuter" => "FULL JOIN",
        "LeftSemi" => "LEFT SEMI JOIN",
        "LeftAnti" => "LEFT ANTI JOIN",
        _ => "JOIN",
    }
}

/// The SQL name of a table: its file or folder name (a catalog name's last part), as an
/// identifier; `_2` after it when `taken` has it already.
fn table_name(table: &str, taken: Option<&str>) -> String {
    let table = table.trim_end_matches('/');
    // A path's file or folder name (without `.parquet`); a catalog name's last part.
    let last = if table.contains('/') {
        std::path::Path::new(table).file_stem().and_then(|s| s.to_str())
    } else {
        table.rsplit('.').next()
    };
    let last = last.unwrap_or("t");
    let mut name: String =
        last.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, 't');
    }
    if taken.is_some_and(|t| t.eq_ignore_ascii_case(&name)) {
        name.push_str("_2");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(kind: &str, l: &str, r: &str, lk: &str, rk: &str) -> JoinInfo {
        JoinInfo {
            operator: "SortMergeJoin".into(),
            join_type: kind.into(),
            left_keys: vec![lk.into()],
            right_keys: vec![rk.into()],
            left_table: Some(l.into()),
            right_table: Some(r.into()),
            ..JoinInfo::default()
        }
    }

    #[test]
    fn a_join_is_rebuilt_over_the_tables_its_scans_read() {
        let q = rebuild(&join(
            "LeftOuter",
            "/data/events_300000.parquet",
            "/data/titles",
            "title_id#2",
            "title_id#10",
        ))
        .unwrap();
        assert_eq!(q.sql, "SELECT *\nFROM `events_300000` l\nLEFT JOIN `titles` r ON l.`title_id` = r.`title_id`\n");
        assert_eq!(
            q.tables,
            vec![
                TableRef {
                    name: "events_300000".into(),
                    table: "/data/events_300000.parquet".into()
                },
                TableRef { name: "titles".into(), table: "/data/titles".into() }
            ]
        );
        let self_join =
            rebuild(&join("LeftAnti", "spark_catalog.db.t", "spark_catalog.db.t", "a#1", "b#2"))
                .unwrap();
        assert_eq!(
            self_join.sql,
            "SELECT *\nFROM `t` l\nLEFT ANTI JOIN `t_2` r ON l.`a` = r.`b`\n"
        );
        assert_eq!(table_name("/x/2026-01.parquet", None), "t2026_01");
    }

    #[test]
    fn a_rebuilt_side_keeps_the_plans_filters_that_read_back_as_sql_and_names_the_rest() {
        let mut j = join(
            "Inner",
            "/data/plays.parquet",
            "/data/titles.parquet",
            "title_id#0",
            "title_id#9",
        );
        j.left_side = JoinSide {
            filters: vec![
                "((isnotnull(views#1) AND (views#1 >= 100)) AND (kind#2 = play))".into(),
                "StartsWith(kind#2, pl)".into(),
            ],
            through: vec![],
            columns: vec!["title_id#0".into(), "views#1".into(), "kind#2".into()],
            schema: "struct<title_id:string,views:int,kind:string>".into(),
        };
        j.right_side.through = vec!["HashAggregate".into()];
        let q = rebuild(&j).unwrap();
        assert_eq!(
            q.sql,
            "SELECT *\nFROM (SELECT * FROM `plays` WHERE `views` IS NOT NULL AND (`views` >= 100) AND (`kind` = 'play')) l\nJOIN `titles` r ON l.`title_id` = r.`title_id`\n"
        );
        assert_eq!(q.notes.len(), 3, "{:?}", q.notes);
        assert!(
            q.notes[1].starts_with("l: the plan's condition StartsWith(kind#2, pl) is left out"),
            "{}",
            q.notes[1]
        );
        assert!(
            q.notes[2].starts_with("r: the plan passes this side through HashAggregate"),
            "{}",
            q.notes[2]
        );
    }

    #[test]
    fn sql_text_is_taken_when_each_table_it_names_is_a_scan_of_the_plan() {
        let scans = vec![
            ScanInfo {
                name: Some("spark_catalog.sj.events".into()),
                location: Some("/w/sj.db/events".into()),
                ..ScanInfo::default()
            },
            ScanInfo {
                name: Some("spark_catalog.sj.titles".into()),
                location: Some("/w/sj.db/titles".into()),
                ..ScanInfo::default()
            },
        ];
        let q = query_of_text("SELECT * FROM sj.events e LEFT JOIN titles t ON e.k = t.k;", &scans)
            .unwrap();
        assert_eq!(q.source, "sql_text");
        assert_eq!(q.sql, "SELECT * FROM sj.events e LEFT JOIN titles t ON e.k = t.k\n");
        assert_eq!(
            q.tables.iter().map(|t| (t.name.as_str(), t.table.as_str())).collect::<Vec<_>>(),
            [("sj.events", "/w/sj.db/events"), ("titles", "/w/sj.db/titles")]
        );
        // A call site, a table the plan does not scan, or two statements: not the query.
        assert!(query_of_text("collect at <stdin>:1", &scans).is_none());
        assert!(query_of_text("SELECT * FROM events e JOIN other o ON e.k = o.k", &scans).is_none());
        assert!(query_of_text(
            "SELECT 1; SELECT * FROM events e JOIN titles t ON e.k = t.k",
            &scans
        )
        .is_none());
        assert!(!same_table("spark_catalog.sj.events", "other.events"));
    }

    #[test]
    fn a_computed_key_or_an_unnamed_side_is_refused() {
        let e = rebuild(&join("Inner", "/a", "/b", "upper(k#1)", "k#2")).unwrap_err();
        assert!(e.contains("upper(k#1) = k"), "{e}");
        let mut j = join("Inner", "/a", "/b", "k#1", "k#2");
        j.right_table = None;
        assert!(rebuild(&j).unwrap_err().contains("does not name the table"));
    }
}
