//! `diagnose` output: the five moves as text (locate, measure, diagnose, fix, verify), or the
//! whole diagnosis as JSON.

use comfy_table::presets::NOTHING;
use comfy_table::{CellAlignment, Table};

use super::measures::{pct, Quantiles, TaskSummary};
use super::Diagnosis;
use crate::format::{fmt_ms, human_i64, one_line};

pub fn json(d: &Diagnosis) -> String {
    serde_json::to_string_pretty(d).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(NOTHING);
    t.set_header(header.to_vec());
    for i in 1..header.len() {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

fn indent(s: &str, by: &str) -> String {
    s.lines().map(|l| format!("{by}{}", l.trim_end())).collect::<Vec<_>>().join("\n")
}

pub fn text(d: &Diagnosis) -> String {
    let mut o = String::new();
    push_headline(&mut o, d);
    push_locate(&mut o, d);
    push_measure(&mut o, d);
    push_diagnose(&mut o, d);
    push_fix(&mut o, d);
    push_verify(&mut o, d);
    o
}

/// The application in one line, then the log's warnings.
fn push_headline(o: &mut String, d: &Diagnosis) {
    let a = &d.app;
    o.push_str(&format!(
        "skewjoin diagnose: {} ({}){}: {} wall clock, {} job(s), {} stage(s), {} tasks, {} executor cores\n",
        if a.name.is_empty() { "?" } else { &a.name },
        if a.id.is_empty() { "?" } else { &a.id },
        a.spark_version.as_deref().map(|v| format!(", Spark {v}")).unwrap_or_default(),
        fmt_ms(a.duration_ms),
        a.jobs,
        a.stages,
        a.tasks,
        a.slots
    ));
    for w in &d.warnings {
        o.push_str(&format!("warning: {w}\n"));
    }
}

/// 1. Where the time went, and the longest stages.
fn push_locate(o: &mut String, d: &Diagnosis) {
    o.push_str("\n1. Locate\n");
    o.push_str(&format!("   {}\n", d.locate));
    let mut t = table(&[
        "stage",
        "duration",
        "share",
        "tasks",
        "waves",
        "shuffle read",
        "input",
        "spill (disk)",
        "name",
    ]);
    for s in d.stages.iter().take(6) {
        t.add_row(vec![
            format!(
                "{}{}",
                s.stage_id,
                if s.attempt > 0 { format!(".{}", s.attempt) } else { String::new() }
            ),
            fmt_ms(s.duration_ms),
            pct(s.share),
            s.tasks.to_string(),
            format!("{:.1}", s.waves),
            human_i64(s.totals.shuffle_read_bytes),
            human_i64(s.totals.input_bytes),
            human_i64(s.totals.disk_spill_bytes),
            s.name.chars().take(40).collect(),
        ]);
    }
    o.push_str(&indent(&t.to_string(), "  "));
    o.push('\n');
}

/// The stages the measure step shows: those with a finding, else the longest.
fn measured_stages(d: &Diagnosis) -> Vec<i64> {
    let mut v: Vec<i64> = d.findings.iter().filter_map(|f| f.stage_id).collect();
    if v.is_empty() {
        v.extend(d.stages.first().map(|s| s.stage_id));
    }
    v.dedup();
    v
}

/// 2. Each measured stage's tasks, cores and waves, and its per-task quantiles.
fn push_measure(o: &mut String, d: &Diagnosis) {
    let top = measured_stages(d);
    o.push_str("\n2. Measure\n");
    for s in d.stages.iter().filter(|s| top.contains(&s.stage_id)) {
        o.push_str(&format!(
            "   stage {}: {} tasks{} on {} cores ({:.1} waves), {}\n",
            s.stage_id,
            s.tasks,
            if s.failed_tasks > 0 {
                format!(" (+{} failed)", s.failed_tasks)
            } else {
                String::new()
            },
            s.slots,
            s.waves,
            fmt_ms(s.duration_ms)
        ));
        o.push_str(&indent(&quantile_table(&s.task_summary).to_string(), "  "));
        o.push('\n');
        if let Some(line) = task_line(d, s.stage_id) {
            o.push_str(&line);
        }
    }
}

/// On a terminal: the stage's tasks in index order as one line of bars, by what they read.
fn task_line(d: &Diagnosis, stage_id: i64) -> Option<String> {
    use std::io::IsTerminal;
    let super::SlowStage { stage_id: id, reads: what, tasks } = d.picture.slow.as_ref()?;
    if *id != stage_id || tasks.len() < 2 || !std::io::stdout().is_terminal() {
        return None;
    }
    let reads: Vec<u64> = tasks.iter().map(|t| t.1).collect();
    Some(format!(
        "   {what} per task, task 0 to {}: {}\n",
        tasks.len() - 1,
        crate::html::sparkline(&reads, 60)
    ))
}

/// The Spark UI's summary metrics table: one row per metric, min to max.
fn quantile_table(ts: &TaskSummary) -> Table {
    let mut t = table(&["per task", "min", "25th", "median", "75th", "max"]);
    let row = |name: &str, q: &Quantiles, f: &dyn Fn(i64) -> String| {
        vec![name.to_string(), f(q.min), f(q.p25), f(q.median), f(q.p75), f(q.max)]
    };
    let n = |v: i64| crate::format::fmt_count(v.max(0) as u64);
    t.add_row(row("duration", &ts.duration_ms, &fmt_ms));
    t.add_row(row("run time", &ts.run_ms, &fmt_ms));
    t.add_row(row("shuffle read", &ts.shuffle_read_bytes, &human_i64));
    t.add_row(row("shuffle records", &ts.shuffle_read_records, &n));
    t.add_row(row("input", &ts.input_bytes, &human_i64));
    t.add_row(row("spill (memory)", &ts.memory_spill_bytes, &human_i64));
    t.add_row(row("spill (disk)", &ts.disk_spill_bytes, &human_i64));
    t.add_row(row("GC time", &ts.gc_ms, &fmt_ms));
    t.add_row(row("scheduler delay", &ts.scheduler_delay_ms, &fmt_ms));
    t
}

/// 3. Every suspect checked, confirmed or not, with its numbers.
fn push_diagnose(o: &mut String, d: &Diagnosis) {
    o.push_str("\n3. Diagnose (suspects in the order they are cheapest to check)\n");
    for c in &d.checks {
        o.push_str(&format!(
            "   [{}] {}: {}\n",
            if c.confirmed { "x" } else { " " },
            c.kind.as_str(),
            c.numbers
        ));
    }
    if d.findings.is_empty() {
        o.push_str("   none of the usual suspects is confirmed by the numbers above\n");
    }
}

/// 4. Each finding's fix, its cost, the join and the next commands; then "just add memory?".
fn push_fix(o: &mut String, d: &Diagnosis) {
    o.push_str("\n4. Fix\n");
    for f in &d.findings {
        o.push_str(&format!(
            "   {}{}: {}\n",
            f.kind.as_str(),
            f.stage_id.map(|s| format!(" (stage {s})")).unwrap_or_default(),
            f.fix
        ));
        o.push_str(&format!("     cost: {}\n", f.cost));
        if let Some(j) = &f.join {
            o.push_str(&format!(
                "     join: {} {} [{}] = [{}], left {}, right {}\n",
                j.operator,
                j.join_type,
                j.left_keys.join(", "),
                j.right_keys.join(", "),
                j.left_table.as_deref().unwrap_or("(not named in the plan)"),
                j.right_table.as_deref().unwrap_or("(not named in the plan)")
            ));
        }
        for c in &f.next_commands {
            o.push_str(&format!("     next: {c}\n"));
        }
    }
    if let Some(m) = &d.memory {
        o.push_str(&format!("   just add memory? {m}\n"));
    }
}

/// 5. The measurement that proves each fix.
fn push_verify(o: &mut String, d: &Diagnosis) {
    o.push_str("\n5. Verify\n");
    for f in &d.findings {
        o.push_str(&format!("   {}: {}\n", f.kind.as_str(), f.verify));
    }
    if d.findings.is_empty() {
        o.push_str("   re-run with the event log on and compare the stage table above\n");
    }
}

/// A History Server's applications, newest first, each with its slowest stage.
pub fn listing_text(l: &super::history::Listing) -> String {
    let mut o =
        format!("skewjoin diagnose {}: {} application(s)\n", l.server, l.applications.len());
    let mut t = table(&["application", "attempt", "name", "duration", "slowest stage"]);
    for a in &l.applications {
        let attempt = match (&a.attempt, a.attempts) {
            (Some(x), n) if n > 1 => format!("{x} of {n}"),
            (Some(x), _) => x.clone(),
            (None, _) => "-".into(),
        };
        let slowest = a
            .slowest_stage
            .as_ref()
            .map(|s| {
                format!(
                    "stage {} ({}): {}",
                    s.stage_id,
                    one_line(&s.name, 40),
                    fmt_ms(s.duration_ms)
                )
            })
            .unwrap_or_else(|| "-".into());
        let duration = if a.completed { fmt_ms(a.duration_ms) } else { "running".into() };
        t.add_row(vec![a.id.clone(), attempt, one_line(&a.name, 40), duration, slowest]);
    }
    if let Some(c) = t.column_mut(2) {
        c.set_cell_alignment(CellAlignment::Left);
    }
    o.push_str(&indent(&t.to_string(), "  "));
    o.push('\n');
    if let Some(a) = l.applications.first() {
        o.push_str(&format!("next: skewjoin diagnose {} --app {}\n", l.server, a.id));
    }
    o
}

pub fn listing_json(l: &super::history::Listing) -> String {
    serde_json::to_string_pretty(l).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The diagnosis as one self-contained HTML page: the application, the stage timeline, the
/// slow stage's tasks (what each read, the duration histogram, the summary table), the
/// findings and the checks.
pub fn html(d: &Diagnosis) -> crate::html::Page {
    use crate::html::{histogram, timeline, Bars, Page, Span};
    let a = &d.app;
    let mut p = Page::new(&format!(
        "skewjoin diagnose: {} ({})",
        if a.name.is_empty() { "?" } else { &a.name },
        a.id
    ));
    p.para(&format!(
        "{} wall clock, {} job(s), {} stage(s), {} tasks, {} executor cores{}",
        fmt_ms(a.duration_ms),
        a.jobs,
        a.stages,
        a.tasks,
        a.slots,
        a.spark_version.as_deref().map(|v| format!(", Spark {v}")).unwrap_or_default()
    ));
    for w in &d.warnings {
        p.note(true, "warning", std::slice::from_ref(w));
    }
    p.heading("1. Locate");
    p.para(&d.locate);
    let slow_id = d.picture.slow.as_ref().map(|s| s.stage_id);
    let spans: Vec<Span> = d
        .picture
        .stages
        .iter()
        .map(|(id, attempt, name, a, b)| Span {
            label: format!(
                "stage {id}{}: {name}",
                if *attempt > 0 { format!(".{attempt}") } else { String::new() }
            ),
            start_ms: *a,
            end_ms: *b,
            marked: Some(*id) == slow_id,
        })
        .collect();
    p.svg(timeline("stages over the wall clock (the slow stage red)", &spans, d.picture.app_ms));
    if let Some(super::SlowStage { stage_id: id, reads: what, tasks }) = &d.picture.slow {
        p.heading(&format!("2. Measure: stage {id}"));
        let reads: Vec<u64> = tasks.iter().map(|t| t.1).collect();
        let durations: Vec<i64> = tasks.iter().map(|t| t.0).collect();
        let max_at = reads.iter().enumerate().max_by_key(|x| x.1).map(|x| x.0);
        let marks = max_at
            .filter(|&i| reads[i] > 0)
            .map(|i| vec![(i, "the largest".to_string())])
            .unwrap_or_default();
        p.svg(
            Bars {
                title: &format!("{what} per task of stage {id}, in task index order"),
                item: "task",
                unit: what,
                values: &reads,
                marks,
                top: None,
            }
            .svg(),
        );
        p.svg(histogram(&format!("task durations of stage {id}"), &durations));
        if let Some(s) = d.stages.iter().find(|s| s.stage_id == *id) {
            p.comfy(&quantile_table(&s.task_summary));
        }
    }
    p.heading("3. Findings");
    if d.findings.is_empty() {
        p.para("no finding: no cause was confirmed on a stage that matters");
    }
    for f in &d.findings {
        let title = format!(
            "{}{}",
            f.kind.as_str(),
            f.stage_id.map(|s| format!(" (stage {s})")).unwrap_or_default()
        );
        p.note(
            true,
            &title,
            &[
                f.evidence.clone(),
                format!("fix: {}", f.fix),
                format!("cost: {}", f.cost),
                format!("verify: {}", f.verify),
            ],
        );
        for c in &f.next_commands {
            p.pre(c);
        }
    }
    p.heading("Every check");
    for c in &d.checks {
        p.note(
            c.confirmed,
            &format!(
                "{}{}",
                c.kind.as_str(),
                c.stage_id.map(|s| format!(" (stage {s})")).unwrap_or_default()
            ),
            std::slice::from_ref(&c.numbers),
        );
    }
    p
}
