//! The cluster a decision is made for: its cores, read, not guessed, and where they were read.
//!
//! On a cluster of N cores a join stage takes at least its largest task, so whether a rewrite
//! pays turns on N. The sources, the first that says winning:
//! 1. `--cores N` (a flag; the Python API sets it from its live session, and says so);
//! 2. a live session: its default parallelism and executors;
//! 3. an event log: the executors the application had and their cores, over time;
//! 4. the settings: `spark.executor.instances` x `spark.executor.cores`, dynamic allocation's
//!    most executors x their cores, `spark.cores.max`, `local[N]`, `spark.default.parallelism`;
//! 5. none: assumed as large as the shuffle's partitions (every task at once), said so, with
//!    how to set it.

use serde::Serialize;

use crate::error::Result;
use crate::settings::{self, SparkSettings};

/// Where the cluster's size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeSource {
    /// `--cores`.
    Flag,
    /// A Spark session that was running (its default parallelism, its executors).
    Session,
    /// The executors an event log recorded.
    EventLog,
    /// The job's settings (spark-defaults.conf, --conf, the event log's properties).
    Settings,
    /// Nothing said: as many cores as shuffle partitions.
    Assumed,
}

/// The cluster's cores, where they came from, and how they were read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterSize {
    pub cores: u32,
    pub source: SizeSource,
    /// How the size was read, for the reports: `16 executors x 4 cores (spark-defaults.conf)`.
    pub detail: String,
}

impl ClusterSize {
    /// The size when nothing says: every shuffle partition a core of its own.
    pub fn assumed(partitions: u32) -> ClusterSize {
        ClusterSize {
            cores: partitions.max(1),
            source: SizeSource::Assumed,
            detail: "assumed: a core per shuffle partition; give --cores N, or spark.executor.instances and spark.executor.cores".into(),
        }
    }

    /// `--cores N`, read by `from`.
    pub fn flag(cores: u32, from: Option<&str>) -> ClusterSize {
        match from {
            Some(f) => {
                ClusterSize { cores, source: SizeSource::Session, detail: format!("{f} (--cores)") }
            }
            None => ClusterSize { cores, source: SizeSource::Flag, detail: "--cores".into() },
        }
    }

    /// The cores, when read from somewhere (None when assumed): how Spark splits files into
    /// map tasks and the fewest tasks AQE coalesces a shuffle into follow them.
    pub fn known(&self) -> Option<u32> {
        (self.source != SizeSource::Assumed).then_some(self.cores)
    }

    /// `64 cores (16 executors x 4 cores: spark-defaults.conf)`, for the text reports.
    pub fn describe(&self) -> String {
        format!("{} core{} ({})", self.cores, if self.cores == 1 { "" } else { "s" }, self.detail)
    }
}

/// The executors an event log recorded: the most cores alive at once, and the cores alive on
/// average over a span (the slow stage's).
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedExecutors {
    pub executors_at_peak: u32,
    pub peak_cores: u32,
    /// Over the span asked about, when there was one.
    pub average_cores: Option<f64>,
    pub span: Option<String>,
}

impl LoggedExecutors {
    /// The size: the average while the stage ran when known (what the stage had), else the peak.
    pub fn size(&self, log: &str) -> Option<ClusterSize> {
        if self.peak_cores == 0 {
            return None;
        }
        let peak = format!(
            "{} executor{} with {} cores at the peak",
            self.executors_at_peak,
            if self.executors_at_peak == 1 { "" } else { "s" },
            self.peak_cores
        );
        Some(match (self.average_cores, &self.span) {
            (Some(avg), Some(span)) if avg >= 1.0 => ClusterSize {
                cores: avg.round() as u32,
                source: SizeSource::EventLog,
                detail: format!(
                    "the event log {log}: {avg:.1} cores on average while {span} ran; {peak}"
                ),
            },
            _ => ClusterSize {
                cores: self.peak_cores,
                source: SizeSource::EventLog,
                detail: format!("the event log {log}: {peak}"),
            },
        })
    }
}

/// The size the settings give, if any: the executors times their cores (or dynamic
/// allocation's most), `spark.cores.max`, `local[N]`, then `spark.default.parallelism`.
pub fn from_settings(s: &SparkSettings) -> Result<Option<ClusterSize>> {
    let origin = |keys: &[&str]| -> String {
        let from: Vec<String> =
            keys.iter().filter_map(|k| s.setting(k)).map(|x| x.describe_origin()).collect();
        let mut from = from;
        from.dedup();
        from.join(", ")
    };
    let cores = s.count(settings::EXECUTOR_CORES)?;
    let dynamic = s.bool(DYNAMIC_ALLOCATION)?.unwrap_or(false);
    if let (Some(e), Some(c), false) = (s.count(settings::EXECUTOR_INSTANCES)?, cores, dynamic) {
        return Ok(Some(ClusterSize {
            cores: e.saturating_mul(c),
            source: SizeSource::Settings,
            detail: format!(
                "{e} executors x {c} cores: {}",
                origin(&[settings::EXECUTOR_INSTANCES, settings::EXECUTOR_CORES])
            ),
        }));
    }
    if let (Some(e), Some(c), true) = (s.count(MAX_EXECUTORS)?, cores, dynamic) {
        return Ok(Some(ClusterSize {
            cores: e.saturating_mul(c),
            source: SizeSource::Settings,
            detail: format!(
                "dynamic allocation, at most {e} executors x {c} cores: {}",
                origin(&[MAX_EXECUTORS, settings::EXECUTOR_CORES])
            ),
        }));
    }
    if let Some(n) = s.count(CORES_MAX)? {
        let detail = format!("{CORES_MAX}={n}: {}", origin(&[CORES_MAX]));
        return Ok(Some(ClusterSize { cores: n, source: SizeSource::Settings, detail }));
    }
    if let Some(n) = s.get(settings::MASTER).and_then(local_cores) {
        let master = s.get(settings::MASTER).unwrap_or_default();
        let detail = format!("{master}: {}", origin(&[settings::MASTER]));
        return Ok(Some(ClusterSize { cores: n, source: SizeSource::Settings, detail }));
    }
    if let Some(n) = s.count(settings::DEFAULT_PARALLELISM)? {
        let detail = format!(
            "{}={n}: {}",
            settings::DEFAULT_PARALLELISM,
            origin(&[settings::DEFAULT_PARALLELISM])
        );
        return Ok(Some(ClusterSize { cores: n, source: SizeSource::Settings, detail }));
    }
    Ok(None)
}

/// The cores of a local master: `local` is 1, `local[N]` and `local[N, retries]` N,
/// `local[*]` this machine's; None for any other master.
pub fn local_cores(master: &str) -> Option<u32> {
    let master = master.trim();
    if master == "local" {
        return Some(1);
    }
    let n = master.strip_prefix("local[")?.split([']', ',']).next()?.trim();
    match n {
        "*" => std::thread::available_parallelism().ok().map(|n| n.get() as u32),
        n => n.parse::<u32>().ok().filter(|n| *n > 0),
    }
}

pub const DYNAMIC_ALLOCATION: &str = "spark.dynamicAllocation.enabled";
pub const MAX_EXECUTORS: &str = "spark.dynamicAllocation.maxExecutors";
pub const CORES_MAX: &str = "spark.cores.max";

/// The size of a run: `--cores` (or the session that set it), else an event log's executors,
/// else the settings, else assumed from the shuffle partitions.
pub fn resolve(
    flag: Option<u32>,
    flag_from: Option<&str>,
    logged: Option<ClusterSize>,
    s: &SparkSettings,
) -> Result<ClusterSize> {
    if let Some(n) = flag {
        return Ok(ClusterSize::flag(n, flag_from));
    }
    if let Some(l) = logged {
        return Ok(l);
    }
    if let Some(c) = from_settings(s)? {
        return Ok(c);
    }
    Ok(ClusterSize::assumed(s.shuffle_partitions()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Origin;

    fn with(pairs: &[(&str, &str)]) -> SparkSettings {
        let mut s = SparkSettings::default();
        for (k, v) in pairs {
            s.set(k, v, Origin::SparkDefaults, Some("spark-defaults.conf".into()));
        }
        s
    }

    #[test]
    fn executors_times_their_cores_win_over_the_parallelism() {
        let s = with(&[
            ("spark.executor.instances", "16"),
            ("spark.executor.cores", "4"),
            ("spark.default.parallelism", "8"),
        ]);
        let c = from_settings(&s).unwrap().unwrap();
        assert_eq!((c.cores, c.source), (64, SizeSource::Settings));
    }

    #[test]
    fn dynamic_allocation_takes_its_most_executors() {
        let s = with(&[
            ("spark.dynamicAllocation.enabled", "true"),
            ("spark.dynamicAllocation.maxExecutors", "50"),
            ("spark.executor.instances", "2"),
            ("spark.executor.cores", "4"),
        ]);
        assert_eq!(from_settings(&s).unwrap().unwrap().cores, 200);
    }

    #[test]
    fn cores_max_then_local_then_parallelism() {
        assert_eq!(from_settings(&with(&[("spark.cores.max", "96")])).unwrap().unwrap().cores, 96);
        assert_eq!(
            from_settings(&with(&[("spark.master", "local[3]")])).unwrap().unwrap().cores,
            3
        );
        assert_eq!(from_settings(&with(&[("spark.master", "local")])).unwrap().unwrap().cores, 1);
        let p = from_settings(&with(&[("spark.default.parallelism", "12")])).unwrap().unwrap();
        assert_eq!(p.cores, 12);
        assert_eq!(from_settings(&with(&[])).unwrap(), None);
    }

    #[test]
    fn the_flag_wins_then_the_log_then_the_settings_else_assumed() {
        let s = with(&[("spark.executor.instances", "2"), ("spark.executor.cores", "2")]);
        let log = LoggedExecutors {
            executors_at_peak: 3,
            peak_cores: 12,
            average_cores: Some(7.6),
            span: Some("stage 4".into()),
        }
        .size("app-1");
        assert_eq!(resolve(Some(8), None, log.clone(), &s).unwrap().source, SizeSource::Flag);
        let from_session = resolve(Some(8), Some("the session"), None, &s).unwrap();
        assert_eq!(from_session.source, SizeSource::Session);
        let l = resolve(None, None, log, &s).unwrap();
        assert_eq!((l.cores, l.source), (8, SizeSource::EventLog));
        assert_eq!(resolve(None, None, None, &s).unwrap().cores, 4);
        let none = resolve(None, None, None, &with(&[])).unwrap();
        assert_eq!((none.cores, none.source, none.known()), (200, SizeSource::Assumed, None));
    }

    #[test]
    fn a_log_without_a_span_gives_its_peak() {
        let l = LoggedExecutors {
            executors_at_peak: 2,
            peak_cores: 2,
            average_cores: None,
            span: None,
        };
        assert_eq!(l.size("log").unwrap().cores, 2);
        let none = LoggedExecutors {
            executors_at_peak: 0,
            peak_cores: 0,
            average_cores: None,
            span: None,
        };
        assert_eq!(none.size("log"), None);
    }
}
