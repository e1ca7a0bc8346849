//! One command run's statistics beside its answer, as a value the run makes (`RunStats::new`)
//! and passes to what opens and reads its tables: the tables' notes (a table format's version,
//! counts that are bounds), the requests and bytes fetched from object stores, the counted keys
//! spilled past `--memory`, the column chunks decoded (and the decoded columns it keeps: its
//! `cache::ColumnCache`), and the Spark session that counted. Each
//! table and each object it reads holds the run's `Arc<RunStats>`, so two runs in one process
//! (a library caller) keep their numbers apart. `footer.rs` renders them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

/// What one run has recorded so far.
#[derive(Debug, Default)]
pub struct RunStats {
    notes: Mutex<Vec<String>>,
    requests: AtomicU64,
    bytes: AtomicU64,
    spilled: AtomicU64,
    decoded: AtomicU64,
    decoded_again: AtomicU64,
    from_memory: AtomicU64,
    spark: Mutex<Option<SparkRun>>,
    /// The decoded columns the run keeps (none unless the run was made with a budget).
    pub columns: crate::cache::ColumnCache,
}

/// Requests made and bytes received from object stores in this run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Io {
    pub requests: u64,
    pub bytes: u64,
}

/// Column chunks the run read: decoded from their files, decoded again (decoded before and
/// not kept), and served from memory instead of the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChunkReads {
    pub decoded: u64,
    pub decoded_again: u64,
    pub from_memory: u64,
}

/// What the run asked of Spark (`--engine spark`), for the reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SparkRun {
    pub version: String,
    /// Spark's application id (None when a Connect server does not say).
    pub app_id: Option<String>,
    /// The master, or the Connect server's URL.
    pub master: String,
    /// Requests answered, and the milliseconds Spark spent on them.
    pub requests: u64,
    pub spark_ms: u64,
    /// Milliseconds from starting Python to the session being ready.
    pub start_ms: u64,
}

impl RunStats {
    pub fn new() -> Arc<RunStats> {
        Arc::new(RunStats::default())
    }

    /// A run that keeps decoded columns up to `bytes` (one that plans joins reads each key
    /// column several times).
    pub fn with_column_budget(bytes: usize) -> Arc<RunStats> {
        Arc::new(RunStats { columns: crate::cache::ColumnCache::new(bytes), ..RunStats::default() })
    }

    /// A note the reports must carry about a table, once.
    pub fn note(&self, note: String) {
        let mut n = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        if !n.contains(&note) {
            n.push(note);
        }
    }

    /// The notes, in the order the tables were opened.
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// One request to an object store, and the bytes of its answer.
    pub fn request(&self, bytes: u64) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A listing's requests (one per 1,000 keys returned).
    pub fn listed(&self, keys: usize) {
        self.requests.fetch_add(1 + keys as u64 / 1000, Ordering::Relaxed);
    }

    pub fn io(&self) -> Io {
        Io {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }

    /// Bytes of counted keys written to a temporary file past `--memory`.
    pub fn spill(&self, bytes: u64) {
        self.spilled.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn spilled(&self) -> u64 {
        self.spilled.load(Ordering::Relaxed)
    }

    /// `n` column chunks decoded from their files, `again` of them decoded before.
    pub fn decoded(&self, n: u64, again: u64) {
        self.decoded.fetch_add(n, Ordering::Relaxed);
        self.decoded_again.fetch_add(again, Ordering::Relaxed);
    }

    /// `n` column chunks served from memory.
    pub fn from_memory(&self, n: u64) {
        self.from_memory.fetch_add(n, Ordering::Relaxed);
    }

    pub fn chunk_reads(&self) -> ChunkReads {
        ChunkReads {
            decoded: self.decoded.load(Ordering::Relaxed),
            decoded_again: self.decoded_again.load(Ordering::Relaxed),
            from_memory: self.from_memory.load(Ordering::Relaxed),
        }
    }

    /// The Spark session's summary, as of its last request.
    pub fn set_spark(&self, s: SparkRun) {
        *self.spark.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }

    pub fn spark(&self) -> Option<SparkRun> {
        self.spark.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl SparkRun {
    /// `counted by Spark 4.0.1 (application local-1, master local[*]): 6 jobs' requests, 4.1 s;
    /// started in 9.8 s`
    pub fn line(&self) -> String {
        let app = self.app_id.as_deref().map(|a| format!("application {a}, ")).unwrap_or_default();
        format!(
            "counted by Spark {} ({app}{}): {} requests, {:.1} s in Spark; the session started in {:.1} s",
            self.version,
            if self.master.starts_with("sc://") { format!("Spark Connect {}", self.master) } else { format!("master {}", self.master) },
            self.requests,
            self.spark_ms as f64 / 1000.0,
            self.start_ms as f64 / 1000.0
        )
    }
}
