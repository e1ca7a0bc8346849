//! The `skewjoin` binary: parse arguments, call the library, print. Errors are one line on
//! stderr and exit code 2.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use skewjoin::classify::Classifier;
use skewjoin::count::{self, KeySpec, ProfileOptions, Sample};
use skewjoin::keys::{self, KeysOptions};
use skewjoin::plan::{self, JoinType, PlanOptions, SideInput};
use skewjoin::report::{self, Format};
use skewjoin::source::Table;
use skewjoin::{Error, Result};

#[derive(Parser)]
#[command(name = "skewjoin", version, about = "Find the hot keys that make a Spark join slow, and take them out of the shuffle")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Top key values of one or more columns: counts, NULLs, shares, classes and Spark partitions
    Keys(KeysArgs),
    /// Two tables and a join key: the hot keys, what they are, the fix, the tasks before and after, the SQL
    Plan(PlanArgs),
    /// A Spark SQL query in, the same query with its skewed joins rewritten out
    Rewrite(RewriteArgs),
    /// Run the original query and the rewrite side by side: same rows, and the largest task before and after
    Verify(VerifyArgs),
    /// A Spark event log in: the slow stage, its task summary, the cause, the fix and the next command
    Diagnose(DiagnoseArgs),
}

#[derive(Args)]
struct VerifyArgs {
    /// The original query (a file, or - for stdin; default stdin)
    #[arg(value_name = "QUERY_FILE")]
    query: Option<String>,
    /// A table the query names, and its Parquet data: NAME=TABLE (file, folder or glob); repeat
    #[arg(long = "table", value_name = "NAME=TABLE", required = true)]
    tables: Vec<String>,
    /// Check this rewrite (e.g. one edited by hand) instead of rewriting the query
    #[arg(long, value_name = "FILE")]
    rewritten: Option<PathBuf>,
    /// The engine that runs both queries (default: polars in a build with the `polars` feature,
    /// else spark). With polars, --sample also samples the tables the queries run on
    #[arg(long, value_enum)]
    engine: Option<Engine>,
    /// Python with pyspark, for the Spark engine (default: $SKEWJOIN_PYTHON, else python3)
    #[arg(long, value_name = "PYTHON")]
    python: Option<String>,
    /// Spark master for the Spark engine
    #[arg(long, default_value = "local[2]", value_name = "MASTER")]
    master: String,
    /// A Spark setting for both runs (repeat); the defaults are the planner's partitions and
    /// broadcast threshold, with AQE off so that the measured stage is the predicted one
    #[arg(long = "conf", value_name = "KEY=VALUE")]
    conf: Vec<String>,
    /// Relative tolerance when comparing floating-point values
    #[arg(long, default_value_t = 1e-9, value_name = "REL")]
    tolerance: f64,
    #[command(flatten)]
    planner: PlannerArgs,
    /// Output format
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    format: PlanFormat,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Engine {
    /// The user's Spark, through pyspark (local mode unless --master)
    Spark,
    /// Polars, in this process (a build with the `polars` cargo feature)
    Polars,
}

#[derive(Args)]
struct DiagnoseArgs {
    /// A Spark event log: a file (plain, zstd, lz4, snappy or lzf) or a rolling eventlog_v2_* folder
    #[arg(value_name = "EVENT_LOG")]
    event_log: PathBuf,
    /// An earlier run of the same job, to tell what changed (input growth)
    #[arg(long, value_name = "EVENT_LOG")]
    baseline: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    format: PlanFormat,
}

#[derive(Args)]
struct RewriteArgs {
    /// The query (a file, or - for stdin; default stdin)
    #[arg(value_name = "QUERY_FILE")]
    query: Option<String>,
    /// A table the query names, and its Parquet data: NAME=TABLE (file, folder or glob); repeat
    #[arg(long = "table", value_name = "NAME=TABLE", required = true)]
    tables: Vec<String>,
    #[command(flatten)]
    planner: PlannerArgs,
    /// Output: the SQL with explaining comments, or JSON {"sql", "changes", "unchanged_joins"}
    #[arg(long, value_enum, default_value_t = RewriteFormat::Sql)]
    format: RewriteFormat,
    /// Write the output to FILE instead of stdout
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Worker threads (default: all cores)
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RewriteFormat {
    Sql,
    Json,
}

#[derive(Args)]
struct PlanArgs {
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
    how: JoinType,
    /// Name of the left table in the emitted SQL (default: the folder or file stem)
    #[arg(long, value_name = "NAME")]
    left_name: Option<String>,
    /// Name of the right table in the emitted SQL (default: the folder or file stem)
    #[arg(long, value_name = "NAME")]
    right_name: Option<String>,
    #[command(flatten)]
    planner: PlannerArgs,
    /// Output format
    #[arg(long, value_enum, default_value_t = PlanFormat::Text)]
    format: PlanFormat,
    /// Worker threads (default: all cores)
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
}

/// The planner's options, shared by `plan` and `rewrite`.
#[derive(Args)]
struct PlannerArgs {
    /// Shuffle partitions of the join (spark.sql.shuffle.partitions)
    #[arg(long, default_value_t = 200, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    shuffle_partitions: u32,
    /// Largest slice or side to broadcast (spark.sql.autoBroadcastJoinThreshold): 64KB, 10MB, 1GB or bytes
    #[arg(long, default_value = "10MB", value_name = "SIZE", value_parser = parse_size)]
    broadcast_threshold: u64,
    /// Size of a salted piece to aim for when it is larger than the median task
    #[arg(long, default_value = "128MB", value_name = "SIZE", value_parser = parse_size)]
    target_task_size: u64,
    /// A key is hot when its rows in one task exceed F times the median task (as AQE's skew factor)
    #[arg(long, default_value_t = 5.0, value_name = "F")]
    hot_factor: f64,
    /// Find hot candidates from a sample (fraction, percentage or rows); their counts stay exact
    #[arg(long, value_name = "FRACTION|ROWS")]
    sample: Option<Sample>,
    /// Seed of the sample
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Remove junk-class keys (test, QA, bot accounts) before the join: the result changes
    #[arg(long)]
    drop_junk: bool,
    /// Most frequent values per side to consider
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,
    /// Classification rules (TOML or JSON) that extend or replace the built-in ones
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
}

impl PlannerArgs {
    fn options(&self, how: JoinType, quiet: bool) -> Result<PlanOptions> {
        if !(self.hot_factor > 0.0) {
            return Err(Error::Usage("--hot-factor must be above 0".into()));
        }
        Ok(PlanOptions {
            how,
            partitions: self.shuffle_partitions,
            broadcast_threshold: self.broadcast_threshold,
            target_task_size: self.target_task_size,
            hot_factor: self.hot_factor,
            sample: self.sample,
            seed: self.seed,
            drop_junk: self.drop_junk,
            top: self.top,
            memory: 2 << 30,
            progress: !quiet,
            extra_predicates: false,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PlanFormat {
    Text,
    Json,
}

#[derive(Args)]
struct KeysArgs {
    /// Parquet file, folder (recursive, Hive k=v folders understood) or glob; several are read as one table
    #[arg(required = true, value_name = "TABLE")]
    tables: Vec<String>,
    /// Key column to count; `a,b` counts the composite key (a, b). Repeat for several keys
    #[arg(short, long = "column", value_name = "COL", required = true)]
    columns: Vec<String>,
    /// How many of the most frequent values to show (0: all)
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,
    /// Shuffle partitions for the partition of each value (spark.sql.shuffle.partitions)
    #[arg(long, default_value_t = 200, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    shuffle_partitions: u32,
    /// A value is hot when its rows exceed F times an even task (rows / shuffle partitions)
    #[arg(long, default_value_t = 5.0, value_name = "F")]
    hot_factor: f64,
    /// Count a sample instead of every row: a fraction (0.05), a percentage (5%) or a row count
    #[arg(long, value_name = "FRACTION|ROWS")]
    sample: Option<Sample>,
    /// Seed of the sample
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Memory for the counting tables; past it, counts become bounded lower bounds (said in the output)
    #[arg(long, default_value = "2GB", value_name = "SIZE", value_parser = parse_size)]
    memory: u64,
    /// Count the distinct values exactly. Without it, a string key with many distinct values
    /// gets exact top counts and an estimated distinct count (HyperLogLog, said in the
    /// output), which is much faster
    #[arg(long)]
    exact_distinct: bool,
    /// Classification rules (TOML or JSON) that extend or replace the built-in ones
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Worker threads (default: all cores)
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
}

fn parse_size(s: &str) -> std::result::Result<u64, String> {
    skewjoin::size::parse_size(s)
}

/// glibc's malloc maps each buffer above 128 KB on its own and unmaps it when freed, grows its
/// heaps a little at a time and gives freed memory back: each of those takes the process's
/// memory-map lock for writing, and two threads reading footers or column chunks then wait on
/// each other's page faults. Grow in large steps (address space only: pages are still touched
/// one at a time) and keep freed memory for reuse. Opening 10 footers of 310 row groups: 8.4-9.1
/// ms -> 5.7-6.3 ms; peak memory +15 MB with --exact-distinct (45 -> 60 MB), about +1 MB otherwise.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any thread is started.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
        // Buffers under 4 MB (column chunks, dictionaries, footers) from the heap, not each
        // from its own mapping; larger tables still come zeroed from the kernel.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
    }
}

fn main() -> ExitCode {
    tune_malloc();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { ExitCode::from(2) } else { ExitCode::SUCCESS };
            }
            eprintln!("skewjoin: error: {}", one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    // Ok((output, true)); verify's Ok((output, false)) is a difference found: exit code 1.
    let result = match cli.command {
        Command::Keys(a) => run_keys(a).map(|o| (o, true)),
        Command::Plan(a) => run_plan(a).map(|o| (o, true)),
        Command::Rewrite(a) => run_rewrite(a).map(|o| (o, true)),
        Command::Verify(a) => run_verify(a),
        Command::Diagnose(a) => run_diagnose(a).map(|o| (o, true)),
    };
    match result {
        Ok((out, same)) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error.
            let _ = stdout.write_all(out.as_bytes());
            if same {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("skewjoin: error: {}", one_line(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// Clap's multi-line message as one line: no usage block, no "For more information".
fn one_line(msg: &str) -> String {
    msg.lines()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join(" ")
}

fn run_keys(a: KeysArgs) -> Result<String> {
    if let Some(n) = a.threads {
        let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
    }
    if !(a.hot_factor > 0.0) {
        return Err(Error::Usage("--hot-factor must be above 0".into()));
    }
    // The rules compile while the footers are read, and the built-in ones (which cannot fail)
    // while the keys are counted too; a --rules file is checked before the count starts.
    std::thread::scope(|scope| {
        let handle = scope.spawn(|| Classifier::with_file(a.rules.as_deref()));
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<Classifier>>| {
            h.join().unwrap_or_else(|_| Err(Error::Internal("the rules could not be compiled".into())))
        };
        let table = Table::open(&a.tables);
        enum Rules<C, H> {
            Ready(C),
            Compiling(H),
        }
        let rules = if a.rules.is_some() || table.is_err() { Rules::Ready(join(handle)?) } else { Rules::Compiling(handle) };
        let table = table?;
        let profiles = count_keys(&a, &table);
        // Joined on every path: a scope re-raises the panic of a thread nobody joined.
        let classifier = match rules {
            Rules::Ready(c) => Ok(c),
            Rules::Compiling(h) => join(h),
        };
        let (profiles, classifier) = (profiles?, classifier?);
        let rep = keys::report(profiles, &classifier, &KeysOptions { partitions: a.shuffle_partitions, hot_factor: a.hot_factor });
        Ok(report::keys(&rep, a.format))
    })
}

/// The key columns of `keys`, counted.
fn count_keys(a: &KeysArgs, table: &Table) -> Result<Vec<count::ColumnProfile>> {
    let specs = a
        .columns
        .iter()
        .map(|c| {
            let names: Vec<&str> = c.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            if names.is_empty() {
                return Err(Error::Usage(format!("empty --column {c:?}")));
            }
            let columns = names.iter().map(|n| table.resolve(n)).collect::<Result<Vec<_>>>()?;
            Ok(KeySpec { columns })
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = ProfileOptions { top: a.top, sample: a.sample, seed: a.seed, memory: a.memory as usize, progress: !a.quiet, exact_distinct: a.exact_distinct };
    count::profile(table, &specs, &opts)
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

fn run_plan(a: PlanArgs) -> Result<String> {
    if let Some(n) = a.threads {
        let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
    }
    let opts = a.planner.options(a.how, a.quiet)?;
    let classifier = Classifier::with_file(a.planner.rules.as_deref())?;
    let lt = Table::open(&a.left)?;
    let rt = Table::open(&a.right)?;
    let mut lcols = Vec::new();
    let mut rcols = Vec::new();
    for on in &a.on {
        for part in on.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (l, r) = match part.split_once('=') {
                Some((l, r)) => (l.trim(), r.trim()),
                None => (part, part),
            };
            lcols.push(lt.resolve(l)?);
            rcols.push(rt.resolve(r)?);
        }
    }
    if lcols.is_empty() {
        return Err(Error::Usage("--on: give a key column".into()));
    }
    let left = SideInput { table: &lt, keys: KeySpec { columns: lcols }, name: a.left_name.clone().unwrap_or_else(|| default_name(&a.left)) };
    let mut right = SideInput { table: &rt, keys: KeySpec { columns: rcols }, name: a.right_name.clone().unwrap_or_else(|| default_name(&a.right)) };
    if a.right_name.is_none() && right.name == left.name {
        right.name = format!("{}_2", right.name);
    }
    let p = plan::plan(&left, &right, &classifier, &opts)?;
    Ok(match a.format {
        PlanFormat::Text => plan::text(&p),
        PlanFormat::Json => plan::json(&p),
    })
}

fn read_query(q: Option<&str>) -> Result<String> {
    use std::io::Read;
    match q {
        None | Some("-") => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| Error::Usage(format!("cannot read the query from stdin: {e}")))?;
            Ok(s)
        }
        Some(path) => std::fs::read_to_string(path).map_err(|e| Error::Io { path: path.into(), source: e }),
    }
}

/// `--table NAME=TABLE` arguments: (name in lower case, path).
fn table_args(args: &[String]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for t in args {
        let (name, path) = t.split_once('=').ok_or_else(|| Error::Usage(format!("--table {t:?}: write NAME=TABLE, e.g. events=data/events/")))?;
        let name = name.trim().trim_matches('`').to_ascii_lowercase();
        if name.is_empty() {
            return Err(Error::Usage(format!("--table {t:?}: empty table name")));
        }
        out.push((name, path.trim().to_string()));
    }
    Ok(out)
}

fn run_verify(a: VerifyArgs) -> Result<(String, bool)> {
    let engine = a.engine.unwrap_or(if cfg!(feature = "polars") { Engine::Polars } else { Engine::Spark });
    if engine == Engine::Polars && !cfg!(feature = "polars") {
        return Err(Error::Usage(
            "this skewjoin was built without the polars engine: use --engine spark (pyspark), or build with `cargo build --release --features polars`".into(),
        ));
    }
    if !(a.tolerance > 0.0 && a.tolerance < 1.0) {
        return Err(Error::Usage("--tolerance must be between 0 and 1".into()));
    }
    let opts = a.planner.options(JoinType::Inner, a.quiet)?;
    let sql = read_query(a.query.as_deref())?;
    let named = table_args(&a.tables)?;
    let mut tables = std::collections::HashMap::new();
    for (name, path) in &named {
        tables.insert(name.clone(), Table::open(std::slice::from_ref(path))?);
    }
    let classifier = Classifier::with_file(a.planner.rules.as_deref())?;
    let r = skewjoin::rewrite::rewrite(&sql, &tables, &classifier, &opts)?;
    let rewritten = match &a.rewritten {
        Some(p) => std::fs::read_to_string(p).map_err(|e| Error::Io { path: p.clone(), source: e })?,
        None => r.sql.clone(),
    };
    let planned = if a.rewritten.is_some() { None } else { Some(&r) };
    let v = match engine {
        Engine::Polars => verify_polars(&sql, &rewritten, planned, &named, &tables, &a)?,
        Engine::Spark => {
            let mut conf: Vec<(String, String)> = vec![
                ("spark.sql.shuffle.partitions".into(), a.planner.shuffle_partitions.to_string()),
                ("spark.sql.autoBroadcastJoinThreshold".into(), a.planner.broadcast_threshold.to_string()),
                ("spark.sql.adaptive.enabled".into(), "false".into()),
            ];
            for c in &a.conf {
                let (k, v) = c.split_once('=').ok_or_else(|| Error::Usage(format!("--conf {c:?}: write KEY=VALUE")))?;
                conf.retain(|(x, _)| x != k.trim());
                conf.push((k.trim().to_string(), v.trim().to_string()));
            }
            let python = a.python.clone().or_else(|| std::env::var("SKEWJOIN_PYTHON").ok()).unwrap_or_else(|| "python3".into());
            let sopts = skewjoin::verify::SparkOptions { python, master: a.master.clone(), tolerance: a.tolerance, conf };
            let mut v = skewjoin::verify::spark(&sql, &rewritten, planned, &named, &sopts)?;
            if a.planner.sample.is_some() {
                v.notes.push("--sample: the planner counted a sample; the Spark engine ran both queries on the full tables".into());
            }
            v
        }
    };
    let out = match a.format {
        PlanFormat::Text => skewjoin::verify::text(&v),
        PlanFormat::Json => skewjoin::verify::json(&v),
    };
    Ok((out, v.identical))
}

#[cfg(feature = "polars")]
fn verify_polars(
    sql: &str,
    rewritten: &str,
    planned: Option<&skewjoin::rewrite::Rewritten>,
    named: &[(String, String)],
    tables: &std::collections::HashMap<String, Table>,
    a: &VerifyArgs,
) -> Result<skewjoin::verify::Verification> {
    let list: Vec<(String, &Table)> = named.iter().filter_map(|(n, _)| tables.get(n).map(|t| (n.clone(), t))).collect();
    skewjoin::verify::polars(sql, rewritten, planned, &list, a.planner.sample, a.tolerance)
}

#[cfg(not(feature = "polars"))]
fn verify_polars(
    _sql: &str,
    _rewritten: &str,
    _planned: Option<&skewjoin::rewrite::Rewritten>,
    _named: &[(String, String)],
    _tables: &std::collections::HashMap<String, Table>,
    _a: &VerifyArgs,
) -> Result<skewjoin::verify::Verification> {
    Err(Error::Usage("this skewjoin was built without the polars engine".into()))
}

fn run_diagnose(a: DiagnoseArgs) -> Result<String> {
    let d = skewjoin::diagnose::diagnose(&a.event_log, a.baseline.as_deref())?;
    Ok(match a.format {
        PlanFormat::Text => skewjoin::diagnose::report::text(&d),
        PlanFormat::Json => skewjoin::diagnose::report::json(&d),
    })
}

fn run_rewrite(a: RewriteArgs) -> Result<String> {
    if let Some(n) = a.threads {
        let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
    }
    let opts = a.planner.options(JoinType::Inner, a.quiet)?;
    let sql = read_query(a.query.as_deref())?;
    let classifier = Classifier::with_file(a.planner.rules.as_deref())?;
    let mut tables = std::collections::HashMap::new();
    for (name, path) in table_args(&a.tables)? {
        tables.insert(name, Table::open(&[path])?);
    }
    let r = skewjoin::rewrite::rewrite(&sql, &tables, &classifier, &opts)?;
    let out = match a.format {
        RewriteFormat::Json => serde_json::to_string_pretty(&r).unwrap_or_default() + "\n",
        RewriteFormat::Sql => skewjoin::rewrite::sql_with_comments(&r),
    };
    match a.output {
        Some(path) => {
            std::fs::write(&path, &out).map_err(|e| Error::Io { path: path.clone(), source: e })?;
            Ok(String::new())
        }
        None => Ok(out),
    }
}
