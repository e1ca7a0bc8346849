//! `fix`'s report as text and HTML (its JSON is the report's fields): the diagnosis, then the
//! query, the tables against the job's reads, the stage predicted against the log, the
//! rewritten query (or its code, `--emit pyspark|scala`) and the verification.

use std::path::Path;

use super::stage::StageCheck;
use super::tables::TableCheck;
use super::FixReport;
use crate::diagnose::report;
use crate::plan::code::Language;
use crate::plan::TaskStats;
use crate::{rewrite, verify};

/// The slow stage's join as DataFrame code, for the place the log's call site names.
pub fn code(r: &FixReport, lang: Language) -> Option<String> {
    let (rw, st) = (r.rewrite.as_ref()?, r.stage.as_ref()?);
    let change = super::stage::stage_change(&r.diagnosis, st.stage_id, rw)?;
    let site = r.call_site.as_ref().map(|s| s.place());
    let mut parts = (**change.code.as_ref()?).clone();
    let q = r.query.as_ref()?;
    if q.source == "rebuilt_from_plan" && q.tables.len() == 2 {
        // The job's DataFrames, called after their tables (the rebuilt SQL's aliases are `l`
        // and `r`); a DataFrame job names its keys in `on` when both sides' are alike.
        parts.names = [q.tables[0].name.clone(), q.tables[1].name.clone()];
        parts.using = parts.plan.left.keys.iter().zip(&parts.plan.right.keys).all(|(a, b)| a == b);
    }
    let day = crate::plan::code::today();
    let inputs = format!(
        "{} the inputs are the DataFrames the job joins, as it joins them (its filters applied)\n",
        if lang == Language::PySpark { "#" } else { "//" }
    );
    Some(inputs + &parts.emit(lang, &day, site.as_deref()))
}

/// Where the stage's job is in the user's code, as the text says it.
fn call_site_text(r: &FixReport, stage_id: i64) -> String {
    match (&r.call_site, &r.call_site_note) {
        (Some(site), _) => format!(
            "where: stage {stage_id} ran for `{site}` in the job's code: the join is in the DataFrame that call runs\n"
        ),
        (None, Some(why)) => format!("where: not recorded: {why}\n"),
        (None, None) => String::new(),
    }
}

/// The text report: the diagnosis, then the fix and the verification; the rewritten join as
/// `code` (`--emit pyspark|scala`) in place of the SQL.
pub fn text(r: &FixReport, written_to: Option<&Path>, code: Option<&str>) -> String {
    let mut o = report::text(&r.diagnosis);
    o.push_str("\n== fix\n");
    if let Some(why) = &r.no_query {
        o.push_str(&format!("{why}\n"));
        return o;
    }
    let (Some(q), Some(rw), Some(st)) = (&r.query, &r.rewrite, &r.stage) else {
        return o;
    };
    o.push_str(&format!("query ({}):\n", q.source.replace('_', " ")));
    o.extend(q.sql.lines().map(|l| format!("  {l}\n")));
    for t in &q.tables {
        o.push_str(&format!("  {} = {}\n", t.name, t.table));
    }
    o.extend(r.tables.iter().map(table_text));
    o.extend(q.notes.iter().map(|n| format!("  note: {n}\n")));
    o.push_str(&call_site_text(r, st.stage_id));
    o.push_str(&stage_text(st));
    match (written_to, code) {
        (Some(p), _) => o.push_str(&format!("rewritten query written to {}\n", p.display())),
        (None, Some(code)) => o.push_str(code),
        (None, None) => o.push_str(&rewrite::sql_with_comments(rw)),
    }
    o.push_str("\n== verify\n");
    match &r.verification {
        Some(v) => o.push_str(&verify::text(v)),
        None => o.push_str(
            "not run: add --verify to run both queries and compare their rows and tasks\n",
        ),
    }
    o
}

/// What the job read of a table against what is there now.
fn table_text(t: &TableCheck) -> String {
    let (then, now) = (t.read_text(), t.now_text());
    let verdict = if t.pruned {
        "the job read only some partitions"
    } else if t.changed {
        "the table changed since the run: the predictions are of today's files"
    } else {
        "the same files"
    };
    format!("  {}: the job read {then}; now {now}: {verdict}\n", t.name)
}

fn stage_text(st: &StageCheck) -> String {
    use crate::format::fmt_count as count;
    let mut o = String::new();
    if let Some(b) = &st.predicted_before {
        let gap =
            st.before_gap.map(|g| format!(" (predicted {:+.1}%)", g * 100.0)).unwrap_or_default();
        o.push_str(&format!(
            "stage {} as written: largest task {} rows predicted; the log measured {} records{gap}, median {}\n",
            st.stage_id,
            count(b.max_task_rows),
            count(st.measured_max_task_records.max(0) as u64),
            count(st.measured_median_task_records.max(0) as u64)
        ));
    }
    o.extend(st.notes.iter().map(|n| format!("  note: {n}\n")));
    if !st.rewritten {
        o.push_str(
            "the rewrite leaves the join as written (the reason is in the SQL's header below)\n",
        );
    } else if let Some(after) = &st.predicted_after {
        o.push_str(&format!(
            "after the rewrite: largest task {} rows predicted, median {}\n",
            count(after.max_task_rows),
            count(after.median_task_rows)
        ));
    }
    o
}

/// `fix --html`: the diagnosis's page, then the query, the stage predicted against the log's
/// measurement, the rewritten SQL and the verification.
pub fn html(r: &FixReport) -> crate::html::Page {
    let mut p = report::html(&r.diagnosis);
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
    p.pre(&rewrite::sql_with_comments(rw));
    p.heading("Verify");
    match &r.verification {
        Some(v) => verify::html_section(&mut p, v),
        None => {
            p.para("not run: add --verify to run both queries and compare their rows and tasks")
        }
    }
    p
}
