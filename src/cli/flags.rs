//! The flags that two or more commands share, each defined once with one meaning, as groups the
//! commands flatten: how hot keys are found (`keys` and the planner's commands), the planner's
//! own options (`plan`, `rewrite`, `verify`), the query and its `--table`s (`rewrite`, `verify`),
//! `--threads`, `--quiet`, and `--format text|json` (`plan`, `verify`, `diagnose`). A flag only
//! one command has lives in that command's file.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};

use skewjoin::cluster::{self, ClusterSize};
use skewjoin::count::Sample;
use skewjoin::diagnose::job_log::JobLog;
use skewjoin::plan::{JoinType, PlanOptions};
use skewjoin::settings::{self, Origin, SparkLine, SparkSettings};
use skewjoin::spark::{Purpose, Session, SparkOptions};
use skewjoin::stats::RunStats;
use skewjoin::table::Table;
use skewjoin::{Error, Result};

/// How the frequent values are found and which of them are hot: `keys`, `plan`, `rewrite`,
/// `verify`.
#[derive(Args)]
pub struct HotKeyArgs {
    /// Shuffle partitions of the join (spark.sql.shuffle.partitions): they give each value its
    /// Spark partition and the join its tasks (default: the settings', 200)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub shuffle_partitions: Option<u32>,
    /// A key is hot when its rows exceed F times a typical shuffle task: the join's median task
    /// where both sides' partitions are scanned (plan, rewrite, verify: AQE's
    /// skewedPartitionFactor), or an even share, rows / shuffle partitions, where one table is
    /// counted (keys). The planner also takes out a key with twice the median's rows from a task
    /// over that line
    #[arg(long, default_value_t = 5.0, value_name = "F")]
    pub hot_factor: f64,
    /// Find the frequent values in a sample instead of every row: a fraction (0.05), a percentage
    /// (5%) or a row count. keys scales the sample's counts to the table; plan, rewrite and verify
    /// then count those candidates exactly
    #[arg(long, value_name = "FRACTION|ROWS")]
    pub sample: Option<Sample>,
    /// Seed of the sample
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Most frequent values per key column: the ones keys shows (0: all), the hot candidates of
    /// each side for plan, rewrite and verify
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// Classification rules (TOML or JSON) that extend or replace the built-in ones
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
}

impl HotKeyArgs {
    /// `--hot-factor`, checked (NaN is not above 0 either).
    pub fn hot_factor(&self) -> Result<f64> {
        if self.hot_factor > 0.0 {
            Ok(self.hot_factor)
        } else {
            Err(Error::Usage("--hot-factor must be above 0".into()))
        }
    }
}

/// The planner's options: `plan`, `rewrite`, `verify`.
#[derive(Args)]
pub struct PlannerArgs {
    #[command(flatten)]
    pub hot: HotKeyArgs,
    /// Largest slice or side to broadcast (spark.sql.autoBroadcastJoinThreshold): 64KB, 10MB,
    /// 1GB or bytes (default: the settings', 10MB)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub broadcast_threshold: Option<u64>,
    /// Size of a salted piece to aim for when it is larger than the median task
    #[arg(long, default_value = "128MB", value_name = "SIZE", value_parser = parse_size)]
    pub target_task_size: u64,
    /// Remove junk-class keys (test, QA, bot accounts) before the join: the result changes
    #[arg(long)]
    pub drop_junk: bool,
    /// Memory the planner may use: staging the counted keys, and (a quarter of it) the decoded
    /// key columns kept for the run, which a chain of joins reads several times
    #[arg(long, default_value = "2GB", value_name = "SIZE", value_parser = parse_size)]
    pub memory: u64,
    /// The cluster's cores, which the decision is made for: a stage takes at least its largest
    /// task, and its work over the cores; also spark.default.parallelism (how Spark splits a
    /// table under cores x 128 MiB into map tasks, the fewest tasks AQE coalesces a shuffle
    /// into). Default: the job's event log's executors (--settings-from, fix's log), else the
    /// settings' executors x cores, dynamic allocation's most executors, spark.cores.max,
    /// local[N] or spark.default.parallelism; else assumed as many as the shuffle partitions
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub cores: Option<u32>,
    /// Where --cores was read, for the reports (the Python API gives its live session's
    /// default parallelism as --cores, and says so here)
    #[arg(long, value_name = "WHAT", requires = "cores")]
    pub cores_from: Option<String>,
    /// Rewrite a join only when the rewrite is predicted to save this share of its time (0.2
    /// or 20%): a join whose hot task AQE splits, or is too short to matter, or whose rewrite
    /// reads more than it saves, is left as written, with the reason. `off`: rewrite whenever a
    /// hot key can be moved
    #[arg(long, default_value = "0.2", value_name = "SHARE|off", value_parser = parse_gain)]
    pub min_gain: Gain,
    /// The Spark line whose defaults the predictions assume: 3.5 or 4.x (AQE on in both)
    #[arg(long, default_value = "4.x", value_name = "VERSION")]
    pub spark_version: String,
    /// The job's spark-defaults.conf: its settings are assumed (a --conf or a flag wins)
    #[arg(long, value_name = "FILE")]
    pub spark_defaults: Option<PathBuf>,
    /// The job's event log (a file, a rolling folder, an object) or its History Server URL
    /// with the application id: its SQL settings and cluster size are assumed (after
    /// --spark-defaults; a --conf or a flag wins)
    #[arg(long, value_name = "LOG|URL")]
    pub settings_from: Option<String>,
}

impl PlannerArgs {
    /// The Spark settings of the job: the line's defaults, then `--spark-defaults`, then the
    /// job's log (`--settings-from`, else `job`: a log's properties already read, and its
    /// name), then each `--conf` (of `spark`), then the planner's own flags.
    pub fn settings_with_job(
        &self,
        spark: &SparkArgs,
        job: Option<&JobLog>,
        stats: &Arc<RunStats>,
    ) -> Result<(SparkSettings, ClusterSize)> {
        let mut s = SparkSettings::defaults(SparkLine::parse(&self.spark_version)?);
        if let Some(f) = &self.spark_defaults {
            s.read_defaults_file(f)?;
        }
        let read;
        let job = match (&self.settings_from, job) {
            (Some(log), _) => {
                read = JobLog::read(log, stats)?;
                Some(&read)
            }
            (None, job) => job,
        };
        if let Some(j) = job {
            s.set_job_properties(&j.properties, &j.name);
        }
        for c in &spark.conf {
            s.set_conf(c)?;
        }
        let flag = |name: &str| Some(name.to_string());
        if let Some(n) = self.hot.shuffle_partitions {
            s.set(
                settings::SHUFFLE_PARTITIONS,
                &n.to_string(),
                Origin::Flag,
                flag("--shuffle-partitions"),
            );
        }
        if let Some(b) = self.broadcast_threshold {
            s.set(
                settings::BROADCAST_THRESHOLD,
                &b.to_string(),
                Origin::Flag,
                flag("--broadcast-threshold"),
            );
        }
        if let Some(c) = self.cores {
            s.set(settings::DEFAULT_PARALLELISM, &c.to_string(), Origin::Flag, flag("--cores"));
        }
        let logged = job.and_then(|j| j.executors.clone());
        let size = cluster::resolve(self.cores, self.cores_from.as_deref(), logged, &s)?;
        Ok((s, size))
    }

    /// The statistics of a run that plans joins: it reads each key column several times
    /// (counts, partitions, the weights of later joins), so it keeps decoded columns for the
    /// run, within a quarter of `--memory` (see `skewjoin::cache`).
    pub fn run_stats(&self) -> Arc<RunStats> {
        RunStats::with_column_budget((self.memory / 4) as usize)
    }

    /// The options of a run that plans joins.
    pub fn options(
        &self,
        how: JoinType,
        spark: &SparkArgs,
        quiet: &Quiet,
        stats: &Arc<RunStats>,
    ) -> Result<PlanOptions> {
        self.options_with_job(how, spark, quiet, None, stats)
    }

    /// `options`, with the settings of `settings_with_job`.
    pub fn options_with_job(
        &self,
        how: JoinType,
        spark: &SparkArgs,
        quiet: &Quiet,
        job: Option<&JobLog>,
        stats: &Arc<RunStats>,
    ) -> Result<PlanOptions> {
        let memory = self.memory as usize;
        let (settings, cluster) = self.settings_with_job(spark, job, stats)?;
        let files = settings.file_splits()?;
        Ok(PlanOptions {
            how,
            partitions: settings.shuffle_partitions()?,
            broadcast_threshold: settings.broadcast_threshold()?,
            target_task_size: self.target_task_size,
            hot_factor: self.hot.hot_factor()?,
            sample: self.hot.sample,
            seed: self.hot.seed,
            drop_junk: self.drop_junk,
            top: self.hot.top,
            memory,
            progress: quiet.bars(stats),
            extra_predicates: false,
            extras_one_side: false,
            cores: settings.count(settings::DEFAULT_PARALLELISM)?.or(cluster.known()),
            cluster,
            shuffle_hint: None,
            aqe: settings.aqe()?,
            settings,
            min_gain: self.min_gain.0,
            files,
            engine: Default::default(),
        })
    }
}

/// The query and the tables it names: `rewrite`, `verify`.
#[derive(Args)]
pub struct QueryArgs {
    /// The query as written (a file, or - for stdin; default stdin)
    #[arg(value_name = "QUERY_FILE")]
    query: Option<String>,
    /// A table the query names, and its Parquet data: NAME=TABLE (file, folder or glob; with
    /// --engine spark also a catalog name); repeat. Wins over --tables. With --engine spark and
    /// neither --table nor --tables, the query's names are the catalog's
    #[arg(long = "table", value_name = "NAME=TABLE")]
    tables: Vec<String>,
    /// Find every table the query names under DIR (a folder or an object store URL):
    /// DIR/name, DIR/name.parquet, or Spark's warehouse layout DIR/db.db/name for db.name
    /// (names compared ignoring case)
    #[arg(long = "tables", value_name = "DIR")]
    tables_dir: Option<String>,
}

impl QueryArgs {
    /// The query's text, from its file or stdin.
    pub fn read(&self) -> Result<String> {
        use std::io::Read;
        match self.query.as_deref() {
            None | Some("-") => {
                let mut s = String::new();
                std::io::stdin()
                    .read_to_string(&mut s)
                    .map_err(|e| Error::Usage(format!("cannot read the query from stdin: {e}")))?;
                Ok(s)
            }
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| Error::Io { path: path.into(), source: e }),
        }
    }

    /// The tables of `sql`: each `--table NAME=TABLE` (name in lower case, path), then those
    /// found under `--tables DIR`. A name the query uses that is in neither is listed on stderr
    /// in one line (unless `quiet`).
    pub fn named(
        &self,
        sql: &str,
        quiet: &Quiet,
        stats: &RunStats,
    ) -> Result<Vec<(String, String)>> {
        if self.tables.is_empty() && self.tables_dir.is_none() {
            return Err(Error::Usage("give the query's tables: --table NAME=TABLE, --tables DIR, or --engine spark to take them from Spark's catalog".into()));
        }
        let mut out = self.listed()?;
        let Some(dir) = &self.tables_dir else { return Ok(out) };
        let wanted: Vec<String> = skewjoin::rewrite::table_names(sql)?
            .into_iter()
            .filter(|n| !out.iter().any(|(m, _)| m == n))
            .collect();
        let skewjoin::table::dir::Found { tables, missing } =
            skewjoin::table::dir::find(dir, &wanted, stats)?;
        out.extend(tables);
        if !missing.is_empty() && quiet.progress() {
            eprintln!("skewjoin: not under {dir} (nor given with --table): {}", missing.join(", "));
        }
        Ok(out)
    }

    /// With neither --table nor --tables: every table the query names, for the catalog.
    pub fn catalog_names(&self, sql: &str) -> Result<Option<Vec<String>>> {
        if !self.tables.is_empty() || self.tables_dir.is_some() {
            return Ok(None);
        }
        skewjoin::rewrite::table_names(sql).map(Some)
    }

    /// The `--table NAME=TABLE` arguments: (name in lower case, path).
    fn listed(&self) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for t in &self.tables {
            let (name, path) = t.split_once('=').ok_or_else(|| {
                Error::Usage(format!("--table {t:?}: write NAME=TABLE, e.g. events=data/events/"))
            })?;
            let name = name.trim().trim_matches('`').to_ascii_lowercase();
            if name.is_empty() {
                return Err(Error::Usage(format!("--table {t:?}: empty table name")));
            }
            out.push((name, path.trim().to_string()));
        }
        Ok(out)
    }
}

/// The tables of a query for `rewrite`: those given, or with the Spark engine and none given,
/// each name the query uses as Spark's catalog knows it.
pub fn query_tables(
    query: &QueryArgs,
    sql: &str,
    session: Option<&Arc<Session>>,
    quiet: &Quiet,
    stats: &Arc<RunStats>,
) -> Result<HashMap<String, Table>> {
    if let (Some(s), Some(names)) = (session, query.catalog_names(sql)?) {
        return names
            .into_iter()
            .map(|n| skewjoin::spark::open_name(s, &n).map(|t| (n, t)))
            .collect();
    }
    skewjoin::open::tables(&query.named(sql, quiet, stats)?, session, stats)
}

/// How to start the user's Spark through pyspark: `verify --engine spark`, and the counting of
/// `keys`, `plan` and `rewrite` with `--engine spark`.
#[derive(Args)]
pub struct SparkArgs {
    /// Python with pyspark, for the Spark engine (default: $SKEWJOIN_PYTHON, else python3)
    #[arg(long, value_name = "PYTHON")]
    pub python: Option<String>,
    /// Spark master for the Spark engine
    #[arg(long, default_value = "local[*]", value_name = "MASTER")]
    pub master: String,
    /// A Spark Connect server, sc://HOST:PORT (Spark 3.4 and later), instead of pyspark's own
    /// session; the Python needs pyspark's Connect client (pyspark[connect])
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// A Spark setting of the job (repeat): the predictions assume it, and the Spark that counts
    /// or runs the queries starts with it (spark.sql.adaptive.enabled=false: AQE off)
    #[arg(long = "conf", value_name = "KEY=VALUE")]
    pub conf: Vec<String>,
    /// The longest Spark's start, one counting job, or verify's runs of both queries may take,
    /// in seconds
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    pub spark_timeout: u64,
}

impl SparkArgs {
    pub fn python(&self) -> String {
        self.python
            .clone()
            .or_else(|| std::env::var("SKEWJOIN_PYTHON").ok())
            .unwrap_or_else(|| "python3".into())
    }

    /// The Spark these flags name, as counting and verify reach it (`spark_ui`: a Connect
    /// server's UI, where verify reads the tasks).
    pub fn options(&self, spark_ui: Option<String>) -> Result<SparkOptions> {
        Ok(SparkOptions {
            python: self.python(),
            master: self.master.clone(),
            remote: self.remote.clone(),
            spark_ui,
            conf: self.conf(Vec::new())?,
            timeout: std::time::Duration::from_secs(self.spark_timeout.max(1)),
        })
    }

    /// The Spark these flags name, started for counting.
    pub fn start_session(&self, stats: &Arc<RunStats>) -> Result<Arc<Session>> {
        Session::start(&self.options(None)?, Purpose::Counting, stats)
    }

    /// `--conf KEY=VALUE`s, each checked, after `defaults` (a key given again wins).
    pub fn conf(&self, defaults: Vec<(String, String)>) -> Result<Vec<(String, String)>> {
        let mut conf = defaults;
        for c in &self.conf {
            let (k, v) = c
                .split_once('=')
                .ok_or_else(|| Error::Usage(format!("--conf {c:?}: write KEY=VALUE")))?;
            conf.retain(|(x, _)| x != k.trim());
            conf.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(conf)
    }
}

/// Where `keys`, `plan` and `rewrite` count: in this process (the files are read here), or as
/// jobs on the user's Spark (`--engine spark`, local mode, a `--master`, or `--remote`).
#[derive(Args)]
pub struct CountingArgs {
    /// Where the counting runs: embedded (this process reads the Parquet files) or spark (Spark
    /// jobs on the user's Spark, which hashes the keys itself; a TABLE may then be a catalog name)
    #[arg(long, value_enum, default_value_t = CountingEngine::Embedded)]
    engine: CountingEngine,
    #[command(flatten)]
    pub spark: SparkArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CountingEngine {
    Embedded,
    Spark,
}

impl CountingArgs {
    pub fn is_spark(&self) -> bool {
        self.engine == CountingEngine::Spark
    }

    /// The Spark session, started, with --engine spark; None for the embedded engine (a Spark
    /// flag given without --engine spark is refused rather than ignored). Both engines sample
    /// (`_sample`: whether the run samples, no longer refused).
    pub fn session(&self, _sample: bool, stats: &Arc<RunStats>) -> Result<Option<Arc<Session>>> {
        if !self.is_spark() {
            if self.spark.remote.is_some() || self.spark.python.is_some() {
                return Err(Error::Usage(
                    "--remote and --python choose the Spark that counts: add --engine spark".into(),
                ));
            }
            return Ok(None);
        }
        self.spark.start_session(stats).map(Some)
    }

    /// Where the counts are made: by the Spark session that opened the tables, or here.
    pub fn engine(session: Option<&Arc<Session>>) -> skewjoin::count::EngineRef {
        skewjoin::open::engine(session)
    }

    /// Open a table: its files here, or in Spark (a path or a catalog name).
    pub fn open(
        &self,
        session: Option<&Arc<Session>>,
        paths: &[String],
        as_of: Option<i64>,
        stats: &Arc<RunStats>,
    ) -> Result<Table> {
        match session {
            None => Table::open_in(paths, as_of, stats),
            Some(s) => {
                if as_of.is_some() {
                    return Err(Error::Usage(
                        "--as-of is for the embedded engine; with --engine spark, name the version in the table (Spark's own syntax is not read yet)".into(),
                    ));
                }
                if paths.len() != 1 {
                    return Err(Error::Usage(
                        "--engine spark reads one path or catalog name per table".into(),
                    ));
                }
                skewjoin::spark::open(s, &paths[0])
            }
        }
    }
}

/// `--threads`: `keys`, `plan`, `rewrite`.
#[derive(Args)]
pub struct Threads {
    /// Worker threads (default: all cores)
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
}

impl Threads {
    /// Sizes rayon's global pool, when `--threads` is given.
    pub fn apply(&self) {
        if let Some(n) = self.threads {
            let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
        }
    }
}

/// How verify runs the two queries: `verify` and `fix --verify`.
#[derive(Args)]
pub struct Runs {
    /// Run each query this many times, alternating, the original first (1-9). The first run gives
    /// the rows; with more, it warms up and the others are timed: the median is shown, the noise
    /// is the larger spread of one query's timed runs, and the rewrite is slower (exit code 1)
    /// only past it
    #[arg(long, default_value_t = 3, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=9))]
    runs: u8,
}

impl Runs {
    pub fn count(&self) -> usize {
        self.runs as usize
    }
}

/// `--quiet` and `--verbose`: `keys`, `plan`, `rewrite`, `verify`, `diagnose`.
#[derive(Args)]
pub struct Quiet {
    /// No progress bar
    #[arg(short, long)]
    quiet: bool,
    /// Also say what was fetched from object stores (requests, bytes), in the text output
    #[arg(short, long)]
    verbose: bool,
}

impl Quiet {
    pub fn progress(&self) -> bool {
        !self.quiet
    }

    /// Where a run's steps report their progress: bars on a terminal, or nothing with --quiet.
    pub fn bars(&self, stats: &Arc<RunStats>) -> skewjoin::progress::ProgressRef {
        if self.quiet {
            return skewjoin::progress::ProgressRef::none();
        }
        skewjoin::progress::ProgressRef::new(super::progress::Bars { stats: stats.clone() })
    }

    /// With --verbose, the line of what the run fetched from object stores; else nothing.
    pub fn io_line(&self, stats: &RunStats) -> String {
        let line = if self.verbose { skewjoin::footer::io_line(stats) } else { None };
        line.unwrap_or_default()
    }
}

/// `--format text|json`: `plan`, `verify`, `diagnose`.
#[derive(Args)]
pub struct TextOrJson {
    /// Output format
    #[arg(long, value_enum, default_value_t = TextOrJsonFormat::Text)]
    format: TextOrJsonFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TextOrJsonFormat {
    Text,
    Json,
}

impl TextOrJson {
    /// `value` rendered by the renderer of the chosen format.
    pub fn is_text(&self) -> bool {
        self.format == TextOrJsonFormat::Text
    }

    pub fn render<T>(
        &self,
        value: &T,
        text: impl Fn(&T) -> String,
        json: impl Fn(&T) -> String,
    ) -> String {
        match self.format {
            TextOrJsonFormat::Text => text(value),
            TextOrJsonFormat::Json => json(value),
        }
    }
}

/// `--min-gain`: a share of the join's time, or None for `off`.
#[derive(Clone, Copy, Debug)]
pub struct Gain(pub Option<f64>);

/// `0.2`, `20%`, or `off`.
pub fn parse_gain(s: &str) -> std::result::Result<Gain, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("off") {
        return Ok(Gain(None));
    }
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    };
    match v {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(Gain(Some(x))),
        _ => Err(format!("{s:?}: give a share from 0 to 0.99 (0.2 or 20%), or off")),
    }
}

/// A size flag: 64KB, 10MB, 1GB or bytes.
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    skewjoin::size::parse_size(s)
}

/// `--html FILE`: `diagnose`, `fix`, `plan`, `verify`.
#[derive(Args)]
pub struct HtmlOut {
    /// Also write the report as one self-contained HTML file (inline SVG charts of the tasks,
    /// nothing fetched), to attach to a ticket
    #[arg(long, value_name = "FILE")]
    html: Option<std::path::PathBuf>,
}

impl HtmlOut {
    pub fn is_set(&self) -> bool {
        self.html.is_some()
    }

    /// Write the page `make` builds, when --html is given.
    pub fn write<T>(
        &self,
        value: &T,
        make: fn(&T) -> skewjoin::html::Page,
    ) -> skewjoin::Result<()> {
        match &self.html {
            Some(path) => skewjoin::html::write(path, make(value)),
            None => Ok(()),
        }
    }
}

/// `--also-text FILE`: every command.
#[derive(Args)]
pub struct AlsoText {
    /// Also write the text report to FILE, whatever --format prints: the Python API reads the
    /// JSON and keeps the text to print, from one run
    #[arg(long, value_name = "FILE")]
    also_text: Option<std::path::PathBuf>,
}

impl AlsoText {
    /// Write the text report `text` builds, when --also-text is given.
    pub fn write(&self, text: impl FnOnce() -> String) -> skewjoin::Result<()> {
        match &self.also_text {
            Some(path) => std::fs::write(path, text())
                .map_err(|e| skewjoin::Error::Io { path: path.clone(), source: e }),
            None => Ok(()),
        }
    }
}

/// `--min-stage-seconds`: `diagnose`, `fix`.
#[derive(Args)]
pub struct MinStage {
    /// A stage shorter than this gets no finding (its checks are still listed): a cost of a few
    /// seconds is not worth a user's attention
    #[arg(long, value_name = "SECONDS", default_value_t = skewjoin::diagnose::MIN_STAGE_MS as f64 / 1000.0)]
    min_stage_seconds: f64,
}

impl MinStage {
    /// The threshold in milliseconds, checked.
    pub fn ms(&self) -> Result<i64> {
        if !(self.min_stage_seconds >= 0.0 && self.min_stage_seconds.is_finite()) {
            return Err(Error::Usage(format!(
                "--min-stage-seconds must be 0 or more, not {}",
                self.min_stage_seconds
            )));
        }
        Ok((self.min_stage_seconds * 1000.0).round() as i64)
    }
}

/// `--emit sql|pyspark|scala`: the language of the fix (`plan`, `rewrite`, `fix`).
#[derive(Args)]
pub struct EmitArgs {
    /// The fix as `sql` (the rewritten query), or as `pyspark` or `scala`: the rewritten join as
    /// DataFrame code over the two inputs by name, to paste in place of the join
    #[arg(long, value_enum, default_value_t = Emit::Sql, value_name = "LANGUAGE")]
    emit: Emit,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Emit {
    Sql,
    Pyspark,
    Scala,
}

/// The fix as code, in the JSON beside the report.
#[derive(serde::Serialize)]
pub struct CodeOut {
    pub language: &'static str,
    pub text: String,
    /// The code moves something (false: it is the join as written).
    pub rewrites: bool,
}

/// A report with the fix as code beside it (none with `--emit sql`).
#[derive(serde::Serialize)]
pub struct WithCode<'a, T: serde::Serialize> {
    #[serde(flatten)]
    pub report: &'a T,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeOut>,
}

impl EmitArgs {
    /// The code's language; None for SQL.
    pub fn language(&self) -> Option<skewjoin::plan::code::Language> {
        use skewjoin::plan::code::Language;
        match self.emit {
            Emit::Sql => None,
            Emit::Pyspark => Some(Language::PySpark),
            Emit::Scala => Some(Language::Scala),
        }
    }

    /// `code` as the JSON carries it.
    pub fn out(&self, text: String, rewrites: bool) -> CodeOut {
        let language = match self.emit {
            Emit::Sql => "sql",
            Emit::Pyspark => "pyspark",
            Emit::Scala => "scala",
        };
        CodeOut { language, text, rewrites }
    }
}
