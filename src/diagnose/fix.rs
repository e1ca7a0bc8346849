//! `skewjoin fix`: from the diagnosis of a slow job to the query that fixes it. The slow
//! stage's join becomes a SQL query over the tables its scans read (rebuilt from the log's
//! physical plan); its rewrite is predicted under the job's own settings, the prediction of
//! the stage as written is set against what the log measured, and both queries can be run.

use std::collections::HashMap;
use std::ops::ControlFlow;

use serde::Serialize;
use sqlparser::ast::{visit_relations, Statement};

use super::model::{App, Job, SqlExecution};
use super::plan::{attr_name, scans, JoinInfo, JoinSide, ScanInfo};
use super::spark_expr;
use super::{Diagnosis, Kind};
use crate::plan::TaskStats;
use crate::rewrite::Rewritten;
use crate::verify::Verification;

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
fn execution_of(app: &App, stage_id: i64) -> Option<&SqlExecution> {
    app.sql.get(&job_of(app, stage_id)?.sql?)
}

/// The catalog name the plan gives each table of `q` (`spark_catalog.db.t`), where it gives
/// one: what Spark reads the table by when it counts it.
pub fn catalog_names(app: &App, stage_id: i64, q: &FixQuery) -> Vec<Option<String>> {
    let all = stage_scans(app, stage_id);
    q.tables.iter().map(|t| all.iter().find(|s| reads(s, t))?.name.clone()).collect()
}

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

/// The scans of the stage's SQL execution (none when the log has no plan for it).
fn stage_scans(app: &App, stage_id: i64) -> Vec<ScanInfo> {
    execution_of(app, stage_id).and_then(|e| e.plan.as_ref()).map(scans).unwrap_or_default()
}

/// Whether `scan` reads the query's table `t` (by its location, or its catalog name).
fn reads(scan: &ScanInfo, t: &TableRef) -> bool {
    scan.location.as_deref() == Some(t.table.as_str())
        || scan.name.as_deref() == Some(t.table.as_str())
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

/// The stage as the log measured it and as the planner predicts it.
#[derive(Debug, Clone, Serialize)]
pub struct StageCheck {
    pub stage_id: i64,
    /// The largest task's shuffle-read records, as the log measured them.
    pub measured_max_task_records: i64,
    pub measured_median_task_records: i64,
    /// The planner's stage as written and rewritten (rows per task).
    pub predicted_before: Option<TaskStats>,
    pub predicted_after: Option<TaskStats>,
    /// predicted / measured - 1 for the largest task as written.
    pub before_gap: Option<f64>,
    /// Whether the join is rewritten (else `predicted_after` is the stage as written).
    pub rewritten: bool,
    /// What a gap over 5% may mean (the tables changed since the run, the query is not the
    /// job's); empty when the prediction is within 5% of the log.
    pub notes: Vec<String>,
}

impl StageCheck {
    /// The stage `stage_id` of `d` against the rewrite's first join.
    pub fn new(d: &Diagnosis, stage_id: i64, r: &Rewritten) -> StageCheck {
        let summary = d
            .stages
            .iter()
            .find(|s| s.stage_id == stage_id)
            .map(|s| &s.task_summary.shuffle_read_records);
        let measured = summary.map_or(0, |q| q.max);
        let join =
            d.findings.iter().find(|f| f.stage_id == Some(stage_id)).and_then(|f| f.join.as_ref());
        let (before, after, rewritten) = stage_join(r, join);
        let before_gap = before
            .as_ref()
            .filter(|_| measured > 0)
            .map(|b| b.max_task_rows as f64 / measured as f64 - 1.0);
        let notes = match before_gap {
            Some(g) if g.abs() > 0.05 => vec![format!(
                "the largest task as written is predicted {:+.1}% off what the log measured: the tables may have changed since the run, or the query is not all the job did (a rebuilt query has none of its filters); the predicted tasks after are as far off",
                g * 100.0
            )],
            None => vec!["the log measured no shuffle read in this stage: the prediction cannot be checked against it".to_string()],
            _ => vec![],
        };
        StageCheck {
            stage_id,
            measured_max_task_records: measured,
            measured_median_task_records: summary.map_or(0, |q| q.median),
            predicted_before: before,
            predicted_after: after,
            before_gap,
            rewritten,
            notes,
        }
    }
}

/// The stage's join in the rewrite (the first join whose keys are the stage join's columns;
/// the first join when none is): its tasks before and after, and whether it was rewritten.
fn stage_join(
    r: &Rewritten,
    join: Option<&JoinInfo>,
) -> (Option<TaskStats>, Option<TaskStats>, bool) {
    let is_it = |text: &str| join.is_some_and(|j| names_keys(text, j));
    let change = r.changes.iter().find(|c| is_it(&c.keys.join(" ")));
    let unchanged = r.unchanged_joins.iter().find(|u| is_it(&u.join));
    match (change, unchanged, r.changes.first(), r.unchanged_joins.first()) {
        (Some(c), ..) => (Some(c.before.clone()), Some(c.after.clone()), true),
        (None, Some(u), ..) => (u.before.clone(), u.before.clone(), false),
        (None, None, Some(c), _) => (Some(c.before.clone()), Some(c.after.clone()), true),
        (None, None, None, Some(u)) => (u.before.clone(), u.before.clone(), false),
        _ => (None, None, false),
    }
}

/// Whether the join text names every key column of `join` (as a whole word).
fn names_keys(text: &str, join: &JoinInfo) -> bool {
    let text = text.to_ascii_lowercase();
    let word = |w: &str| {
        text.match_indices(w).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + w.len()..].chars().next();
            let edge = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
            edge(before) && edge(after)
        })
    };
    join.left_keys.iter().chain(&join.right_keys).all(|k| word(&attr_name(k).to_ascii_lowercase()))
}

/// `fix`'s report: the diagnosis (locate, measure, diagnose), then the fix and its proof.
#[derive(Debug, Serialize)]
pub struct FixReport {
    pub diagnosis: Diagnosis,
    /// Why there is nothing to rewrite (then the fields below are null).
    pub no_query: Option<String>,
    pub query: Option<FixQuery>,
    pub rewrite: Option<Rewritten>,
    pub stage: Option<StageCheck>,
    /// Each table as the job read it and as it is now.
    pub tables: Vec<TableCheck>,
    pub verification: Option<Verification>,
    /// Where the slow stage's job is in the user's code, as the log records it.
    pub call_site: Option<super::call_site::CallSite>,
    /// Why the log gives no call site for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_site_note: Option<String>,
}

/// The slow stage's call site (of its last attempt), or why the log has none.
pub fn call_site(app: &App, stage_id: i64) -> Result<super::call_site::CallSite, String> {
    let stage =
        app.stages.iter().filter(|((id, _), _)| *id == stage_id).map(|(_, s)| s).next_back();
    match stage {
        Some(s) => super::call_site::of_stage(s),
        None => Err(format!("the log has no stage {stage_id}")),
    }
}

/// The rewrite's change of the stage's join (as `StageCheck` finds it), if it was rewritten.
pub fn stage_change<'a>(
    d: &Diagnosis,
    stage_id: i64,
    r: &'a Rewritten,
) -> Option<&'a crate::rewrite::Change> {
    let join =
        d.findings.iter().find(|f| f.stage_id == Some(stage_id)).and_then(|f| f.join.as_ref());
    r.changes
        .iter()
        .find(|c| join.is_some_and(|j| names_keys(&c.keys.join(" "), j)))
        .or(r.changes.first())
}

/// `fix --html`: the diagnosis's page, then the query, the stage predicted against the log's
/// measurement, the rewritten SQL and the verification.
pub fn html(r: &FixReport) -> crate::html::Page {
    let mut p = super::report::html(&r.diagnosis);
    p.heading("Fix");
    if let Some(why) = &r.no_query {
        p.para(why);
        return p;
    }
    let (Some(q), Some(rw), Some(st)) = (&r.query, &r.rewrite, &r.stage) else { return p };
    p.para(&format!(
        "the query ({}), over {}",
        q.source.replace('_', " "),
        q.tables.iter().map(|t| format!("{} = {}", t.name, t.table)).collect::<Vec<_>>().join(", ")
    ));
    p.pre(&q.sql);
    if !r.tables.is_empty() {
        let rows: Vec<Vec<String>> = r
            .tables
            .iter()
            .map(|t| {
                let verdict = if t.pruned {
                    "some partitions read"
                } else if t.changed {
                    "changed since the run"
                } else {
                    "the same files"
                };
                vec![t.name.clone(), t.read_text(), t.now_text(), verdict.to_string()]
            })
            .collect();
        p.table(&["table", "the job read", "now", ""], &rows);
    }
    let rows = |t: &Option<TaskStats>| {
        t.as_ref().map(|t| crate::format::fmt_count(t.max_task_rows)).unwrap_or_else(|| "-".into())
    };
    let gap = st.before_gap.map(|g| format!("{:+.1}%", g * 100.0)).unwrap_or_else(|| "-".into());
    p.table(
        &[
            "stage",
            "largest task, measured (records)",
            "as written, predicted (rows)",
            "gap",
            "rewritten, predicted (rows)",
        ],
        &[vec![
            st.stage_id.to_string(),
            crate::format::fmt_count(st.measured_max_task_records.max(0) as u64),
            rows(&st.predicted_before),
            gap,
            if st.rewritten { rows(&st.predicted_after) } else { "left as written".into() },
        ]],
    );
    p.pre(&crate::rewrite::sql_with_comments(rw));
    p.heading("Verify");
    match &r.verification {
        Some(v) => crate::verify::html_section(&mut p, v),
        None => {
            p.para("not run: add --verify to run both queries and compare their rows and tasks")
        }
    }
    p
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
    fn a_prediction_off_the_log_says_what_that_may_mean() {
        let d = empty_diagnosis(7, 1000);
        let r = rewritten_with_before(1200);
        let st = StageCheck::new(&d, 7, &r);
        assert_eq!(st.before_gap.map(|g| (g * 1000.0).round()), Some(200.0));
        assert!(
            st.notes[0].starts_with("the largest task as written is predicted +20.0% off"),
            "{:?}",
            st.notes
        );
        let close = StageCheck::new(&d, 7, &rewritten_with_before(1030));
        assert!(close.notes.is_empty());
    }

    fn empty_diagnosis(stage_id: i64, max_records: i64) -> Diagnosis {
        let q = super::super::Quantiles { max: max_records, ..Default::default() };
        let summary = super::super::TaskSummary { shuffle_read_records: q, ..Default::default() };
        Diagnosis {
            app: super::super::AppSummary {
                name: String::new(),
                id: String::new(),
                spark_version: None,
                duration_ms: 0,
                jobs: 0,
                stages: 1,
                tasks: 0,
                slots: 0,
                shuffle_partitions: None,
                codec: String::new(),
                files: 1,
            },
            locate: String::new(),
            stages: vec![super::super::StageReport {
                stage_id,
                attempt: 0,
                name: String::new(),
                job_id: None,
                duration_ms: 0,
                share: 0.0,
                active_share: 0.0,
                tasks: 0,
                failed_tasks: 0,
                slots: 0,
                waves: 0.0,
                task_summary: summary,
                totals: Default::default(),
            }],
            checks: vec![],
            findings: vec![],
            memory: None,
            baseline: None,
            warnings: vec![],
            picture: Default::default(),
        }
    }

    fn rewritten_with_before(rows: u64) -> Rewritten {
        let stats = TaskStats {
            tasks: 1,
            max_task_rows: rows,
            median_task_rows: rows,
            max_task_bytes: 0,
            median_task_bytes: 0,
            shuffled_rows: rows,
        };
        Rewritten {
            sql: String::new(),
            joins: vec![],
            changes: vec![],
            unchanged_joins: vec![crate::rewrite::Unchanged {
                before: Some(stats),
                ..crate::rewrite::Unchanged::new(
                    String::new(),
                    None,
                    crate::rewrite::LeftAlone::CrossJoin,
                )
            }],
            windows: vec![],
            settings: vec![],
            cluster: crate::cluster::ClusterSize::assumed(200),
        }
    }

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

    #[test]
    fn a_computed_key_or_an_unnamed_side_is_refused() {
        let e = rebuild(&join("Inner", "/a", "/b", "upper(k#1)", "k#2")).unwrap_err();
        assert!(e.contains("upper(k#1) = k"), "{e}");
        let mut j = join("Inner", "/a", "/b", "k#1", "k#2");
        j.right_table = None;
        assert!(rebuild(&j).unwrap_err().contains("does not name the table"));
    }
}
