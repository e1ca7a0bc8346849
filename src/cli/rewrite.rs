//! `skewjoin rewrite`: a Spark SQL query in, the same query with its skewed joins rewritten out.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use skewjoin::classify::Classifier;
use skewjoin::plan::JoinType;
use skewjoin::rewrite;
use skewjoin::{Error, Result};

use super::flags::{
    query_tables, AlsoText, CountingArgs, EmitArgs, PlannerArgs, QueryArgs, Quiet, Threads,
    WithCode,
};

/// A Spark SQL query in, the same query with its skewed joins rewritten out
#[derive(Args)]
pub struct RewriteArgs {
    #[command(flatten)]
    query: QueryArgs,
    #[command(flatten)]
    planner: PlannerArgs,
    #[command(flatten)]
    counting: CountingArgs,
    /// Output: the SQL with explaining comments, or JSON {"sql", "changes", "unchanged_joins"}
    #[arg(long, value_enum, default_value_t = RewriteFormat::Sql)]
    format: RewriteFormat,
    /// Write the output to FILE instead of stdout
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    emit: EmitArgs,
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    quiet: Quiet,
    #[command(flatten)]
    also_text: AlsoText,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RewriteFormat {
    Sql,
    Json,
}

/// Lines as SQL comments.
fn sql_comments(lines: &str) -> String {
    lines.lines().map(|l| format!("-- skewjoin: {l}\n")).collect()
}

pub fn run(a: RewriteArgs) -> Result<String> {
    a.threads.apply();
    let stats = a.planner.run_stats();
    let mut opts = a.planner.options(JoinType::Inner, &a.counting.spark, &a.quiet, &stats)?;
    let sql = a.query.read()?;
    let classifier = Classifier::with_file(a.planner.hot.rules.as_deref())?;
    let session = a.counting.session(a.planner.hot.sample.is_some(), &stats)?;
    opts.engine = CountingArgs::engine(session.as_ref());
    let tables = query_tables(&a.query, &sql, session.as_ref(), &a.quiet, &stats)?;
    let r = rewrite::rewrite(&sql, &tables, &classifier, &opts)?;
    let text = || {
        rewrite::sql_with_comments(&r)
            + &sql_comments(&(skewjoin::footer::table_notes(&stats) + &a.quiet.io_line(&stats)))
    };
    let code = a.emit.language().map(|lang| code_text(&r, lang));
    a.also_text.write(text)?;
    let out = match (a.format, &code) {
        (RewriteFormat::Json, _) => {
            let code = code.clone().map(|c| a.emit.out(c, !r.changes.is_empty()));
            skewjoin::footer::json(&WithCode { report: &r, code }, &stats)
        }
        (RewriteFormat::Sql, Some(code)) => code.clone(),
        (RewriteFormat::Sql, None) => text(),
    };
    match a.output {
        Some(path) => {
            std::fs::write(&path, &out).map_err(|e| Error::Io { path: path.clone(), source: e })?;
            Ok(String::new())
        }
        None => Ok(out),
    }
}

/// Each rewritten join as DataFrame code over its two inputs, in the order of the query; the
/// rest of the query stays the user's.
pub fn code_text(r: &rewrite::Rewritten, lang: skewjoin::plan::code::Language) -> String {
    use skewjoin::plan::code::{today, Language};
    let c = if lang == Language::PySpark { "#" } else { "//" };
    if r.changes.is_empty() {
        return format!(
            "{c} skewjoin: no join of the query is rewritten: keep the code as it is\n"
        );
    }
    let day = today();
    r.changes
        .iter()
        .filter_map(|ch| {
            let at = ch.at.map(|at| format!(" ({at} of the query)")).unwrap_or_default();
            let code = ch.code.as_ref()?.emit(lang, &day, None);
            Some(format!("{c} skewjoin: in place of {}{at}\n{code}", ch.join))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
