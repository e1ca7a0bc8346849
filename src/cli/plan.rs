//! `skewjoin plan`: two tables and a join key in; the hot keys, the fix for each, the tasks
//! before and after, and the SQL.

use clap::{Args, ValueEnum};

use skewjoin::classify::Classifier;
use skewjoin::count::KeySpec;
use skewjoin::plan::{self, JoinType, SideInput};
use skewjoin::table::Table;
use skewjoin::window::{self, Shape};
use skewjoin::{Error, Result};

use skewjoin::plan::code::{self, CodeJoin};

use super::flags::{
    AlsoText, CountingArgs, EmitArgs, HtmlOut, PlannerArgs, Quiet, TextOrJson, Threads, WithCode,
};

/// Two tables and a join key: the hot keys, what they are, the fix, the tasks before and after, the
/// SQL
#[derive(Args)]
pub struct PlanArgs {
    /// Left table: Parquet file, folder or glob (with --engine spark, also a catalog name)
    #[arg(long, value_name = "TABLE", required_unless_present = "counts")]
    left: Vec<String>,
    /// Right table: Parquet file, folder or glob (with --engine spark, also a catalog name)
    #[arg(long, value_name = "TABLE", required_unless_present_any = ["partition_by", "counts"])]
    right: Vec<String>,
    /// Plan from the counts a Spark session made of two DataFrames (JSON, written by
    /// skewjoin.spark.skew_join) instead of reading tables; --on names their keys
    #[arg(long, value_name = "FILE", conflicts_with_all = ["left", "right", "partition_by"])]
    counts: Option<std::path::PathBuf>,
    /// Join key: `k` (same name on both sides) or `l=r`; repeat for a composite key
    #[arg(long = "on", value_name = "KEY", required_unless_present = "partition_by")]
    on: Vec<String>,
    /// Plan a window or GROUP BY over these columns of --left instead of a join (no --right):
    /// the rows per shuffle partition, the hot values, and whether a rewrite or Spark copes
    #[arg(long, value_name = "COL", conflicts_with_all = ["right", "on"])]
    partition_by: Vec<String>,
    /// With --partition-by, what runs over each partition: `whole` (aggregates OVER (PARTITION
    /// BY ..) with no ORDER BY), `ordered` (running sums, lag/lead, rankings), `top-N` (a ranking
    /// filtered to its first N rows), `group-by`, `group-by-lists` (collect_list, collect_set)
    #[arg(long, value_name = "SHAPE", default_value = "whole", value_parser = parse_shape, requires = "partition_by")]
    shape: Shape,
    /// Join type
    #[arg(long, value_enum, default_value = "inner")]
    how: How,
    /// Name of the left table in the emitted SQL (default: the folder or file stem)
    #[arg(long, value_name = "NAME")]
    left_name: Option<String>,
    /// Read Delta tables as of this version, Iceberg tables as of this snapshot id (default: the
    /// newest)
    #[arg(long, value_name = "VERSION")]
    as_of: Option<i64>,
    /// Name of the right table in the emitted SQL (default: the folder or file stem)
    #[arg(long, value_name = "NAME")]
    right_name: Option<String>,
    #[command(flatten)]
    planner: PlannerArgs,
    #[command(flatten)]
    counting: CountingArgs,
    #[command(flatten)]
    format: TextOrJson,
    #[command(flatten)]
    emit: EmitArgs,
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    quiet: Quiet,
    #[command(flatten)]
    html: HtmlOut,
    #[command(flatten)]
    also_text: AlsoText,
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
    let stats = a.planner.run_stats();
    let mut opts = a.planner.options(a.how.into(), &a.counting.spark, &a.quiet, &stats)?;
    let classifier = Classifier::with_file(a.planner.hot.rules.as_deref())?;
    if let Some(path) = &a.counts {
        let m = plan::counted::read(path, opts.partitions)?;
        let names = [m.left.name.clone(), m.right.name.clone()];
        let p = plan::decide(&m, &classifier, &opts)?;
        return report(&a, p, &opts, names, &stats);
    }
    let session = a.counting.session(a.planner.hot.sample.is_some(), &stats)?;
    opts.engine = CountingArgs::engine(session.as_ref());
    let lt = a.counting.open(session.as_ref(), &a.left, a.as_of, &stats)?;
    if !a.partition_by.is_empty() {
        return window_plan(&a, &lt, &classifier, &opts);
    }
    let rt = a.counting.open(session.as_ref(), &a.right, a.as_of, &stats)?;
    let (lkeys, rkeys) = join_keys(&a.on, &lt, &rt)?;
    let left =
        SideInput::new(&lt, lkeys, a.left_name.clone().unwrap_or_else(|| default_name(&a.left)));
    let mut right =
        SideInput::new(&rt, rkeys, a.right_name.clone().unwrap_or_else(|| default_name(&a.right)));
    if a.right_name.is_none() && right.name == left.name {
        right.name = format!("{}_2", right.name);
    }
    let p = plan::plan(&left, &right, &classifier, &opts)?;
    report(&a, p, &opts, [left.name.clone(), right.name.clone()], &stats)
}

/// The plan as text or JSON (and HTML), with the fix as code when asked; `names` are what the
/// code calls the two inputs.
fn report(
    a: &PlanArgs,
    mut p: plan::Plan,
    opts: &plan::PlanOptions,
    names: [String; 2],
    stats: &skewjoin::stats::RunStats,
) -> Result<String> {
    p.settings = opts.settings.listed();
    a.html.write(&p, plan::html)?;
    let names = [
        a.left_name.clone().unwrap_or(names[0].clone()),
        a.right_name.clone().unwrap_or(names[1].clone()),
    ];
    let code = a.emit.language().map(|lang| {
        let mut j = CodeJoin::new(&p, names, code::today());
        j.using = using(&a.on);
        code::emit(&j, lang)
    });
    let text = |p: &plan::Plan| plan::text_with(p, code.as_deref());
    let io = || skewjoin::footer::table_notes(stats) + &a.quiet.io_line(stats);
    a.also_text.write(|| text(&p) + &io())?;
    let json = |p: &plan::Plan| {
        let code = code.clone().map(|c| a.emit.out(c, p.acts()));
        skewjoin::footer::json(&WithCode { report: p, code }, stats)
    };
    Ok(a.format.render(&p, text, json) + &if a.format.is_text() { io() } else { String::new() })
}

/// The keys were given as names (`--on k`), as a USING join or `on="k"` names them, rather
/// than as equalities (`--on a=b`): the code writes them so.
fn using(on: &[String]) -> bool {
    on.iter().flat_map(|o| o.split(',')).all(|k| !k.contains('='))
}

/// `--partition-by`: the window or GROUP BY stage over those columns of the left table.
fn window_plan(
    a: &PlanArgs,
    t: &Table,
    classifier: &Classifier,
    opts: &plan::PlanOptions,
) -> Result<String> {
    if a.html.is_set() {
        return Err(Error::Usage(
            "--html draws a join's plan; with --partition-by, use the text or JSON output".into(),
        ));
    }
    let columns = a
        .partition_by
        .iter()
        .flat_map(|c| c.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| t.resolve(c))
        .collect::<Result<Vec<_>>>()?;
    let input = SideInput::new(
        t,
        KeySpec { columns },
        a.left_name.clone().unwrap_or_else(|| default_name(&a.left)),
    );
    let p = window::plan(&input, a.shape, &[], classifier, opts)?;
    let stats = &t.stats;
    let io = || skewjoin::footer::table_notes(stats) + &a.quiet.io_line(stats);
    a.also_text.write(|| window::text(&p) + &io())?;
    Ok(a.format.render(&p, window::text, |p| skewjoin::footer::json(p, stats))
        + &if a.format.is_text() { io() } else { String::new() })
}

/// `--shape`: whole, ordered, top-N, group-by, group-by-lists.
fn parse_shape(s: &str) -> std::result::Result<Shape, String> {
    match s {
        "whole" => Ok(Shape::WholePartition),
        "ordered" => Ok(Shape::Ordered),
        "group-by" => Ok(Shape::Aggregate { lists: false }),
        "group-by-lists" => Ok(Shape::Aggregate { lists: true }),
        _ => match s.strip_prefix("top-").map(str::parse::<u64>) {
            Some(Ok(n)) if n > 0 => Ok(Shape::TopN { n }),
            _ => Err(format!(
                "unknown shape {s:?}: whole, ordered, top-N (N from 1), group-by or group-by-lists"
            )),
        },
    }
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
    let s: String =
        s.chars().map(|c| if c.is_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() {
        "t".into()
    } else {
        s
    }
}
