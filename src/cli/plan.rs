//! `skewjoin plan`: two tables and a join key in; the hot keys, the fix for each, the tasks
//! before and after, and the SQL.

use clap::{Args, ValueEnum};

use skewjoin::classify::Classifier;
use skewjoin::count::KeySpec;
use skewjoin::plan::{self, JoinType, SideInput};
use skewjoin::source::Table;
use skewjoin::{Error, Result};

use super::flags::{HtmlOut, PlannerArgs, Quiet, TextOrJson, Threads};

/// Two tables and a join key: the hot keys, what they are, the fix, the tasks before and after, the SQL
#[derive(Args)]
pub struct PlanArgs {
    /// Left table: Parquet file, folder or glob
    #[arg(long, value_name = "TABLE", required = true)]
    left: Vec<String>,
    /// Right table: Parquet file, folder or glob
    #[arg(long, value_name = "TABLE", required = true)]
    right: Vec<String>,
    /// Join key: `k` (same name on both sides) or `l=r`; repeat for a composite key
    #[arg(long = "on", value_name = "KEY", required = true)]
    on: Vec<String>,
    /// Join type
    #[arg(long, value_enum, default_value = "inner")]
    how: How,
    /// Name of the left table in the emitted SQL (default: the folder or file stem)
    #[arg(long, value_name = "NAME")]
    left_name: Option<String>,
    /// Read Delta tables as of this version, Iceberg tables as of this snapshot id (default: the newest)
    #[arg(long, value_name = "VERSION")]
    as_of: Option<i64>,
    /// Name of the right table in the emitted SQL (default: the folder or file stem)
    #[arg(long, value_name = "NAME")]
    right_name: Option<String>,
    #[command(flatten)]
    planner: PlannerArgs,
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    quiet: Quiet,
    #[command(flatten)]
    html: HtmlOut,
}

/// `--how`: the join type.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum How {
    Inner,
    Left,
    Right,
    Full,
    Semi,
    Anti,
}

impl From<How> for JoinType {
    fn from(h: How) -> JoinType {
        match h {
            How::Inner => JoinType::Inner,
            How::Left => JoinType::Left,
            How::Right => JoinType::Right,
            How::Full => JoinType::Full,
            How::Semi => JoinType::Semi,
            How::Anti => JoinType::Anti,
        }
    }
}

pub fn run(a: PlanArgs) -> Result<String> {
    a.threads.apply();
    let opts = a.planner.options(a.how.into(), &a.quiet)?;
    let classifier = Classifier::with_file(a.planner.hot.rules.as_deref())?;
    let lt = Table::open_at(&a.left, a.as_of)?;
    let rt = Table::open_at(&a.right, a.as_of)?;
    let (lkeys, rkeys) = join_keys(&a.on, &lt, &rt)?;
    let left = SideInput { table: &lt, keys: lkeys, name: a.left_name.clone().unwrap_or_else(|| default_name(&a.left)), filter: None, group_by: None };
    let mut right = SideInput { table: &rt, keys: rkeys, name: a.right_name.clone().unwrap_or_else(|| default_name(&a.right)), filter: None, group_by: None };
    if a.right_name.is_none() && right.name == left.name {
        right.name = format!("{}_2", right.name);
    }
    let p = plan::plan(&left, &right, &classifier, &opts)?;
    a.html.write(&p, plan::html)?;
    let io = if a.format.is_text() { skewjoin::report::table_notes() + &a.quiet.io_line() } else { String::new() };
    Ok(a.format.render(&p, plan::text, plan::json) + &io)
}

/// The `--on` keys: `k` or `l=r`, comma-separated or repeated, resolved on each side.
fn join_keys(on: &[String], lt: &Table, rt: &Table) -> Result<(KeySpec, KeySpec)> {
    let mut lcols = Vec::new();
    let mut rcols = Vec::new();
    for part in on.iter().flat_map(|o| o.split(',')).map(str::trim).filter(|p| !p.is_empty()) {
        let (l, r) = match part.split_once('=') {
            Some((l, r)) => (l.trim(), r.trim()),
            None => (part, part),
        };
        lcols.push(lt.resolve(l)?);
        rcols.push(rt.resolve(r)?);
    }
    if lcols.is_empty() {
        return Err(Error::Usage("--on: give a key column".into()));
    }
    Ok((KeySpec { columns: lcols }, KeySpec { columns: rcols }))
}

/// The name a table goes by in SQL: the file stem, or the folder name.
fn default_name(paths: &[String]) -> String {
    let p = std::path::Path::new(paths[0].trim_end_matches('/'));
    let stem = if p.is_dir() { p.file_name() } else { p.file_stem() };
    let s = stem.map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "t".into());
    // A glob's stem is not a name.
    let s: String = s.chars().map(|c| if c.is_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() {
        "t".into()
    } else {
        s
    }
}
