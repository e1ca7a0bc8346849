//! The Spark settings a prediction assumes, each with where it came from.
//!
//! A job's tasks depend on its settings: the shuffle partitions, the broadcast threshold, and
//! whether adaptive query execution (AQE) coalesces small partitions and splits skewed ones. The
//! settings start as the defaults of the Spark line the user runs (`--spark-version`), then a
//! `spark-defaults.conf` (`--spark-defaults`), then the job's event log (`--settings-from`),
//! then each `--conf KEY=VALUE`, then the planner's own flags (`--shuffle-partitions`,
//! `--broadcast-threshold`, `--cores`): a later source wins.
//! Every report lists the settings it assumed with their source ([`SparkSettings::listed`]).
//! Keys this module does not model are kept and passed on to the Spark that runs a query.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::size::parse_size;

/// The Spark line whose defaults apply: their AQE defaults are the same; 4.x turns ANSI SQL on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum SparkLine {
    #[serde(rename = "3.5")]
    V3_5,
    #[default]
    #[serde(rename = "4.x")]
    V4,
}

impl SparkLine {
    /// `3.5`, `3`, `4`, `4.0`, `4.1`, `4.x`: the line; anything else is refused.
    pub fn parse(s: &str) -> Result<SparkLine> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "3.5" | "3" | "3.5.x" => Ok(SparkLine::V3_5),
            _ if t == "4" || t.starts_with("4.") => Ok(SparkLine::V4),
            _ => Err(Error::Usage(format!("--spark-version {s:?}: give 3.5 or 4.x (the defaults of other lines are not modelled)"))),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            SparkLine::V3_5 => "3.5",
            SparkLine::V4 => "4.x",
        }
    }
}

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The default of the Spark line.
    Default,
    /// A line of a `spark-defaults.conf`.
    SparkDefaults,
    /// A Spark property of the job's event log (its environment).
    EventLog,
    /// `--conf KEY=VALUE`.
    Conf,
    /// One of the planner's own flags (named in `Setting::flag`).
    Flag,
}

/// One setting as assumed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    pub key: String,
    pub value: String,
    pub origin: Origin,
    /// The file (for `spark_defaults`) or the flag (for `flag`) it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// The keys the model reads, and their defaults (the same on 3.5 and 4.x: Spark's SQLConf).
const DEFAULTS: &[(&str, &str)] = &[
    (SHUFFLE_PARTITIONS, "200"),
    (BROADCAST_THRESHOLD, "10485760"),
    (AQE_ENABLED, "true"),
    (COALESCE_ENABLED, "true"),
    (PARALLELISM_FIRST, "true"),
    (MIN_PARTITION_SIZE, "1048576"),
    (ADVISORY_SIZE, "67108864"),
    (SKEW_ENABLED, "true"),
    (SKEW_FACTOR, "5.0"),
    (SKEW_THRESHOLD, "268435456"),
];

pub const SHUFFLE_PARTITIONS: &str = "spark.sql.shuffle.partitions";
pub const BROADCAST_THRESHOLD: &str = "spark.sql.autoBroadcastJoinThreshold";
pub const AQE_ENABLED: &str = "spark.sql.adaptive.enabled";
pub const COALESCE_ENABLED: &str = "spark.sql.adaptive.coalescePartitions.enabled";
pub const PARALLELISM_FIRST: &str = "spark.sql.adaptive.coalescePartitions.parallelismFirst";
pub const MIN_PARTITION_SIZE: &str = "spark.sql.adaptive.coalescePartitions.minPartitionSize";
pub const INITIAL_PARTITIONS: &str = "spark.sql.adaptive.coalescePartitions.initialPartitionNum";
pub const ADVISORY_SIZE: &str = "spark.sql.adaptive.advisoryPartitionSizeInBytes";
pub const SKEW_ENABLED: &str = "spark.sql.adaptive.skewJoin.enabled";
pub const SKEW_FACTOR: &str = "spark.sql.adaptive.skewJoin.skewedPartitionFactor";
pub const SKEW_THRESHOLD: &str = "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes";
pub const ADAPTIVE_BROADCAST_THRESHOLD: &str = "spark.sql.adaptive.autoBroadcastJoinThreshold";
pub const DEFAULT_PARALLELISM: &str = "spark.default.parallelism";
pub const EXECUTOR_INSTANCES: &str = "spark.executor.instances";
pub const EXECUTOR_CORES: &str = "spark.executor.cores";
pub const MASTER: &str = "spark.master";
pub const MAX_PARTITION_BYTES: &str = "spark.sql.files.maxPartitionBytes";
pub const OPEN_COST: &str = "spark.sql.files.openCostInBytes";
pub const FILES_MIN_PARTITIONS: &str = "spark.sql.files.minPartitionNum";
pub const LEAF_PARALLELISM: &str = "spark.sql.leafNodeDefaultParallelism";

/// `spark.sql.files.maxPartitionBytes` by default: the largest split.
pub const DEFAULT_MAX_PARTITION_BYTES: u64 = 128 << 20;
/// `spark.sql.files.openCostInBytes` by default: what opening a file costs, in bytes, when
/// splits are packed.
pub const DEFAULT_OPEN_COST: u64 = 4 << 20;

/// How Spark cuts a table's files into map tasks: its settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileSplits {
    /// `spark.sql.files.maxPartitionBytes`.
    pub max_partition_bytes: u64,
    /// `spark.sql.files.openCostInBytes`.
    pub open_cost: u64,
    /// The fewest splits Spark aims at: `spark.sql.files.minPartitionNum`, else the cluster's
    /// parallelism (None: large, so the splits are `max_partition_bytes`).
    pub min_partitions: Option<u32>,
}

impl FileSplits {
    /// Spark's defaults on a cluster of `cores`.
    pub fn with_cores(cores: Option<u32>) -> FileSplits {
        FileSplits {
            max_partition_bytes: DEFAULT_MAX_PARTITION_BYTES,
            open_cost: DEFAULT_OPEN_COST,
            min_partitions: cores,
        }
    }
}

impl Default for FileSplits {
    fn default() -> Self {
        FileSplits::with_cores(None)
    }
}

/// The settings of one run, in the order they were first set.
#[derive(Debug, Clone, PartialEq)]
pub struct SparkSettings {
    pub line: SparkLine,
    entries: BTreeMap<String, Setting>,
}

impl Default for SparkSettings {
    fn default() -> Self {
        SparkSettings::defaults(SparkLine::default())
    }
}

impl SparkSettings {
    /// The defaults of `line`.
    pub fn defaults(line: SparkLine) -> SparkSettings {
        let mut s = SparkSettings { line, entries: BTreeMap::new() };
        for (k, v) in DEFAULTS {
            s.set(k, v, Origin::Default, None);
        }
        s
    }

    /// The defaults with AQE off: Spark as the planner modelled it before AQE was (the unit
    /// tests' and `PlanOptions::default`'s).
    pub fn without_aqe() -> SparkSettings {
        let mut s = SparkSettings::default();
        s.set(AQE_ENABLED, "false", Origin::Default, None);
        s
    }

    /// Set `key` (Spark's keys are case-sensitive; surrounding blanks go).
    pub fn set(&mut self, key: &str, value: &str, origin: Origin, from: Option<String>) {
        let (key, value) = (key.trim().to_string(), value.trim().to_string());
        self.entries.insert(key.clone(), Setting { key, value, origin, from });
    }

    /// `KEY=VALUE`, as `--conf` gives it.
    pub fn set_conf(&mut self, kv: &str) -> Result<()> {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--conf {kv:?}: write KEY=VALUE")))?;
        if k.trim().is_empty() {
            return Err(Error::Usage(format!("--conf {kv:?}: empty key")));
        }
        self.set(k, v, Origin::Conf, None);
        Ok(())
    }

    /// A `spark-defaults.conf` (Java properties: `key value`, `key=value` or `key: value`;
    /// `#` and `!` start comments).
    pub fn read_defaults_file(&mut self, path: &std::path::Path) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.into(), source: e })?;
        for line in text.lines() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') || t.starts_with('!') {
                continue;
            }
            let cut =
                t.find(|c: char| c == '=' || c == ':' || c.is_whitespace()).unwrap_or(t.len());
            let (k, rest) = t.split_at(cut);
            let v = rest
                .trim_start_matches(|c: char| c.is_whitespace())
                .trim_start_matches(['=', ':'])
                .trim();
            self.set(k, v, Origin::SparkDefaults, Some(path.display().to_string()));
        }
        Ok(())
    }

    /// A job's Spark properties, as its event log records them: the SQL settings and the
    /// cluster's size. Where its tables, catalogs, extensions and warehouse are, and the rest of
    /// its environment (master, driver, event log), are the job's own and stay out.
    pub fn set_job_properties<'a>(
        &mut self,
        props: impl IntoIterator<Item = (&'a String, &'a String)>,
        from: &str,
    ) {
        let mut props: Vec<(&String, &String)> =
            props.into_iter().filter(|(k, _)| job_setting(k)).collect();
        props.sort();
        for (k, v) in props {
            self.set(k, v, Origin::EventLog, Some(from.to_string()));
        }
    }

    /// The setting of `key`, with where it came from, if set.
    pub fn setting(&self, key: &str) -> Option<&Setting> {
        self.entries.get(key)
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(|s| s.value.as_str())
    }

    /// Every setting, by key.
    pub fn listed(&self) -> Vec<Setting> {
        self.entries.values().cloned().collect()
    }

    /// Every setting as `key=value`, for a Spark session that must run as predicted.
    pub fn all(&self) -> Vec<(String, String)> {
        self.entries.values().map(|s| (s.key.clone(), s.value.clone())).collect()
    }

    fn parsed<T>(
        &self,
        key: &str,
        what: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>> {
        match self.entries.get(key) {
            None => Ok(None),
            Some(s) => parse(&s.value).map(Some).ok_or_else(|| {
                Error::Usage(format!("{key}={}: not {what} ({})", s.value, s.describe_origin()))
            }),
        }
    }

    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        self.parsed(key, "true or false", |v| match v.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        })
    }

    /// A byte size as Spark reads one (`10m`, `64KB`, `1048576`); -1 is None's sentinel, kept
    /// as `Some(None)`.
    pub fn bytes(&self, key: &str) -> Result<Option<Option<u64>>> {
        self.parsed(key, "a size such as 10m, 64KB or 1048576", |v| {
            if v.trim() == "-1" {
                Some(None)
            } else {
                parse_size(v).ok().map(Some)
            }
        })
    }

    pub fn count(&self, key: &str) -> Result<Option<u32>> {
        self.parsed(key, "a positive whole number", |v| v.parse::<u32>().ok().filter(|n| *n > 0))
    }

    pub fn float(&self, key: &str) -> Result<Option<f64>> {
        self.parsed(key, "a number", |v| {
            v.parse::<f64>().ok().filter(|f| f.is_finite() && *f > 0.0)
        })
    }

    /// The shuffle partitions of a join stage: AQE's initial partition number when AQE
    /// coalesces and it is set, else `spark.sql.shuffle.partitions`.
    pub fn shuffle_partitions(&self) -> Result<u32> {
        let aqe = self.aqe()?;
        if aqe.enabled && aqe.coalesce {
            if let Some(n) = self.count(INITIAL_PARTITIONS)? {
                return Ok(n);
            }
        }
        Ok(self.count(SHUFFLE_PARTITIONS)?.unwrap_or(200))
    }

    /// The broadcast threshold in bytes; -1 (no broadcast) is 0.
    pub fn broadcast_threshold(&self) -> Result<u64> {
        Ok(self.bytes(BROADCAST_THRESHOLD)?.unwrap_or(Some(10 << 20)).unwrap_or(0))
    }

    /// How Spark cuts a table's files into map tasks (the cluster's cores, when none of these
    /// is set, are added by the planner).
    pub fn file_splits(&self) -> Result<FileSplits> {
        let size = |k: &str, d: u64| -> Result<u64> {
            Ok(self.bytes(k)?.map(|s| s.unwrap_or(d)).unwrap_or(d))
        };
        Ok(FileSplits {
            max_partition_bytes: size(MAX_PARTITION_BYTES, DEFAULT_MAX_PARTITION_BYTES)?,
            open_cost: size(OPEN_COST, DEFAULT_OPEN_COST)?,
            min_partitions: self.count(FILES_MIN_PARTITIONS)?.or(self.count(LEAF_PARALLELISM)?),
        })
    }

    /// The AQE settings, checked.
    pub fn aqe(&self) -> Result<Aqe> {
        let flag = |k: &str, d: bool| -> Result<bool> { Ok(self.bool(k)?.unwrap_or(d)) };
        let size = |k: &str, d: u64| -> Result<u64> {
            Ok(self.bytes(k)?.map(|s| s.unwrap_or(0)).unwrap_or(d))
        };
        let broadcast = match self.bytes(ADAPTIVE_BROADCAST_THRESHOLD)? {
            Some(b) => b.unwrap_or(0),
            None => self.broadcast_threshold()?,
        };
        Ok(Aqe {
            enabled: flag(AQE_ENABLED, true)?,
            coalesce: flag(COALESCE_ENABLED, true)?,
            parallelism_first: flag(PARALLELISM_FIRST, true)?,
            min_partition_size: size(MIN_PARTITION_SIZE, 1 << 20)?,
            advisory_size: size(ADVISORY_SIZE, 64 << 20)?.max(1),
            skew_join: flag(SKEW_ENABLED, true)?,
            skew_factor: self.float(SKEW_FACTOR)?.unwrap_or(5.0),
            skew_threshold: size(SKEW_THRESHOLD, 256 << 20)?,
            broadcast_threshold: broadcast,
        })
    }
}

impl Setting {
    /// `the default of Spark 4.x`, `--conf`, `spark-defaults.conf (path)`, `--flag`.
    pub fn describe_origin(&self) -> String {
        match (&self.origin, &self.from) {
            (Origin::Default, _) => "default".into(),
            (Origin::Conf, _) => "--conf".into(),
            (Origin::SparkDefaults, Some(p)) => format!("from {p}"),
            (Origin::SparkDefaults, None) => "spark-defaults.conf".into(),
            (Origin::EventLog, Some(p)) => format!("the event log {p}"),
            (Origin::EventLog, None) => "the event log".into(),
            (Origin::Flag, Some(f)) => f.clone(),
            (Origin::Flag, None) => "a flag".into(),
        }
    }
}

/// The settings as one line of a text report: the defaults in a word, every other setting with
/// where it came from.
pub fn line(settings: &[Setting]) -> String {
    let given: Vec<String> = settings
        .iter()
        .filter(|s| s.origin != Origin::Default)
        .map(|s| format!("{}={} ({})", s.key, s.value, s.describe_origin()))
        .collect();
    let aqe = settings.iter().find(|s| s.key == AQE_ENABLED).map_or("true", |s| s.value.as_str());
    let on = if aqe.eq_ignore_ascii_case("true") { "on" } else { "off" };
    if given.is_empty() {
        format!("settings: Spark's defaults (AQE {on})")
    } else {
        format!("settings: Spark's defaults (AQE {on}) but {}", given.join(", "))
    }
}

/// A property of a job's environment that says how its queries run here: `spark.sql.*` but
/// where tables and code come from, and the cluster's size.
fn job_setting(key: &str) -> bool {
    const OWN: [&str; 6] = [
        "spark.sql.warehouse.dir",
        "spark.sql.extensions",
        "spark.sql.catalog.",
        "spark.sql.catalogImplementation",
        "spark.sql.hive.",
        "spark.sql.streaming.",
    ];
    let sql = key.starts_with("spark.sql.") && !OWN.iter().any(|o| key.starts_with(o));
    let size = [
        DEFAULT_PARALLELISM,
        EXECUTOR_INSTANCES,
        EXECUTOR_CORES,
        crate::cluster::DYNAMIC_ALLOCATION,
        crate::cluster::MAX_EXECUTORS,
        crate::cluster::CORES_MAX,
    ];
    sql || size.contains(&key)
}

/// What adaptive query execution does, as the settings have it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Aqe {
    pub enabled: bool,
    /// Small partitions are coalesced into tasks of about the advisory size.
    pub coalesce: bool,
    /// The coalesced tasks are at least as many as the cluster's cores (each still at least
    /// the minimum partition size).
    pub parallelism_first: bool,
    pub min_partition_size: u64,
    pub advisory_size: u64,
    /// Skewed partitions of a sort-merge join are split.
    pub skew_join: bool,
    pub skew_factor: f64,
    pub skew_threshold: u64,
    /// The threshold under which AQE switches a join to broadcast at run time.
    pub broadcast_threshold: u64,
}

impl Aqe {
    /// AQE off (Spark's other defaults kept).
    pub fn off() -> Aqe {
        Aqe::OFF
    }
    const OFF: Aqe = Aqe {
        enabled: false,
        coalesce: false,
        parallelism_first: true,
        min_partition_size: 1 << 20,
        advisory_size: 64 << 20,
        skew_join: false,
        skew_factor: 5.0,
        skew_threshold: 256 << 20,
        broadcast_threshold: 10 << 20,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn later_sources_win_and_say_where_they_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("spark-defaults.conf");
        std::fs::write(
            &file,
            "# scaled down\nspark.sql.adaptive.advisoryPartitionSizeInBytes  64k\nspark.sql.shuffle.partitions=16\n! legacy comment\nspark.executor.cores: 4\n",
        )
        .unwrap();
        let mut s = SparkSettings::defaults(SparkLine::V3_5);
        s.read_defaults_file(&file).unwrap();
        s.set_conf("spark.sql.shuffle.partitions = 32").unwrap();
        s.set_conf("spark.executor.instances=3").unwrap();
        assert_eq!(s.shuffle_partitions().unwrap(), 32);
        assert_eq!(s.aqe().unwrap().advisory_size, 64 << 10);
        assert_eq!(crate::cluster::from_settings(&s).unwrap().unwrap().cores, 12);
        let listed = s.listed();
        let p = listed.iter().find(|x| x.key == SHUFFLE_PARTITIONS).unwrap();
        assert_eq!((p.value.as_str(), &p.origin), ("32", &Origin::Conf));
        let a = listed.iter().find(|x| x.key == ADVISORY_SIZE).unwrap();
        assert_eq!(a.origin, Origin::SparkDefaults);
        assert_eq!(listed.iter().find(|x| x.key == SKEW_FACTOR).unwrap().origin, Origin::Default);
    }

    #[test]
    fn bad_values_name_the_key_and_where_it_came_from() {
        let mut s = SparkSettings::default();
        s.set_conf("spark.sql.adaptive.enabled=yes").unwrap();
        let e = s.aqe().unwrap_err().to_string();
        assert_eq!(e, "spark.sql.adaptive.enabled=yes: not true or false (--conf)");
        assert!(s.set_conf("novalue").is_err());
        assert!(SparkLine::parse("2.4").is_err());
        assert_eq!(SparkLine::parse("4.1").unwrap(), SparkLine::V4);
    }

    #[test]
    fn a_jobs_properties_bring_its_sql_settings_and_size_only() {
        let props: HashMap<String, String> = [
            ("spark.sql.shuffle.partitions", "64"),
            ("spark.sql.adaptive.enabled", "false"),
            ("spark.sql.warehouse.dir", "hdfs:///warehouse"),
            ("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension"),
            ("spark.master", "yarn"),
            ("spark.executor.instances", "10"),
            ("spark.executor.cores", "4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut s = SparkSettings::default();
        s.set_job_properties(&props, "app.log");
        assert_eq!(s.shuffle_partitions().unwrap(), 64);
        assert!(!s.aqe().unwrap().enabled);
        assert_eq!(crate::cluster::from_settings(&s).unwrap().unwrap().cores, 40);
        assert_eq!(s.get("spark.master"), None);
        assert_eq!(s.get("spark.sql.warehouse.dir"), None);
        assert_eq!(s.get("spark.sql.extensions"), None);
        let p = s.listed().into_iter().find(|x| x.key == SHUFFLE_PARTITIONS).unwrap();
        assert_eq!(
            (p.origin.clone(), p.describe_origin()),
            (Origin::EventLog, "the event log app.log".to_string())
        );
    }

    #[test]
    fn minus_one_turns_broadcasting_off_and_local_n_gives_the_cores() {
        let mut s = SparkSettings::default();
        s.set_conf("spark.sql.autoBroadcastJoinThreshold=-1").unwrap();
        s.set_conf("spark.master=local[2]").unwrap();
        assert_eq!(s.broadcast_threshold().unwrap(), 0);
        assert_eq!(s.aqe().unwrap().broadcast_threshold, 0);
        assert_eq!(crate::cluster::from_settings(&s).unwrap().unwrap().cores, 2);
        s.set_conf("spark.sql.adaptive.coalescePartitions.initialPartitionNum=400").unwrap();
        assert_eq!(s.shuffle_partitions().unwrap(), 400);
    }
}
