//! The Spark counting engine (`--engine spark`): the counts of `keys`, `plan` and `rewrite` run
//! as Spark jobs on the user's Spark, for a table too big for this machine or known only by its
//! catalog name. Spark hashes the keys itself, so the rows per shuffle partition are Spark's by
//! construction.
//!
//! A `Session` is one Python process running the driver (`python/skewjoin/_spark_driver.py`, the
//! one pyspark program skewjoin has: the user's pyspark in local mode, a `--master`, or a Spark
//! Connect server with `--remote sc://HOST:PORT`), spoken to in JSON lines, each answer waited
//! for at most `timeout`. A session is started for counting or for verify's runs of both
//! queries (`Purpose`). A table opened through it (`table::open`) is a
//! `table::Table` the session holds (no files, a temporary view). `SparkEngine` (`count.rs`) is
//! the `count::Engine` a run passes to its measure steps: its counts are Spark's, and
//! everything after the counts (classifying, deciding, the SQL, the reports) is shared with the
//! embedded engine.

mod count;
mod sampled;
mod table;
pub(crate) mod wire;

pub use count::SparkEngine;
pub use table::{open, open_name};

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

use crate::error::{Error, Result};
use crate::stats::RunStats;

/// The driver, carried by the binary and written to a temporary file for the user's Python.
const DRIVER: &str = include_str!("../../python/skewjoin/_spark_driver.py");

/// How to reach Spark: counting's and verify's alike.
#[derive(Debug, Clone)]
pub struct SparkOptions {
    /// The Python with pyspark that runs the driver.
    pub python: String,
    /// `local[*]` or the user's master (ignored with `remote`).
    pub master: String,
    /// `sc://HOST:PORT` of a Spark Connect server.
    pub remote: Option<String>,
    /// The Connect server's UI, where verify reads the tasks (default: its host at
    /// spark.ui.port).
    pub spark_ui: Option<String>,
    /// Settings for the session.
    pub conf: Vec<(String, String)>,
    /// The longest one request (Spark's start included) may take.
    pub timeout: Duration,
}

/// What a session is started for: the counting jobs run adaptively whatever the job's setting;
/// verify's queries run with the job's settings, the UI keeping every task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Counting,
    Verify,
}

impl Purpose {
    fn name(self) -> &'static str {
        match self {
            Purpose::Counting => "counting",
            Purpose::Verify => "verify",
        }
    }
}

/// What the run asked of Spark, for the reports.
pub use crate::stats::SparkRun as Summary;

/// One pyspark process and its session.
pub struct Session {
    child: Mutex<Child>,
    stdin: Mutex<Option<ChildStdin>>,
    answers: Mutex<Receiver<std::io::Result<String>>>,
    log: tempfile::NamedTempFile,
    timeout: Duration,
    summary: Mutex<Summary>,
    /// The Connect URL as given (it may carry a token), to be kept out of messages.
    secret_url: Option<String>,
    /// The run it counts for: its summary is kept there for the reports.
    stats: Arc<RunStats>,
}

impl Session {
    /// Start Python with the driver and wait for the session, for `purpose`.
    pub fn start(
        opts: &SparkOptions,
        purpose: Purpose,
        stats: &Arc<RunStats>,
    ) -> Result<Arc<Session>> {
        match &opts.remote {
            Some(url) => check_reachable(url)?,
            None => check_master(&opts.master)?,
        }
        let t0 = Instant::now();
        let dir = std::env::temp_dir();
        let script = tempfile::Builder::new()
            .prefix("skewjoin-driver-")
            .suffix(".py")
            .tempfile()
            .and_then(|mut f| f.write_all(DRIVER.as_bytes()).map(|_| f))
            .map_err(|e| Error::Io { path: dir.clone(), source: e })?;
        let log = tempfile::Builder::new()
            .prefix("skewjoin-spark-")
            .suffix(".log")
            .tempfile()
            .map_err(|e| Error::Io { path: dir.clone(), source: e })?;
        let stderr = log.reopen().map_err(|e| Error::Io { path: log.path().into(), source: e })?;
        let mut child = Command::new(&opts.python)
            .arg(script.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .env("PYSPARK_PYTHON", &opts.python)
            .spawn()
            .map_err(|e| Error::Usage(format!("cannot run {} for the Spark engine: {e} (pass --python with a Python that has pyspark)", opts.python)))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| Error::Internal("no stdin for the Spark engine".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::Internal("no stdout for the Spark engine".into()))?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let session = Session {
            child: Mutex::new(child),
            stdin: Mutex::new(Some(stdin)),
            answers: Mutex::new(rx),
            log,
            timeout: opts.timeout,
            summary: Mutex::new(Summary::default()),
            secret_url: opts.remote.clone(),
            stats: stats.clone(),
        };
        let conf: serde_json::Map<String, Json> =
            opts.conf.iter().map(|(k, v)| (k.clone(), Json::String(v.clone()))).collect();
        let hello = session.ask(
            &json!({"master": opts.master, "remote": opts.remote, "conf": conf, "for": purpose.name()}),
            "starting Spark",
            opts.timeout,
        )?;
        // The script is read by Python before it answers; it can go.
        drop(script);
        let mut s =
            session.summary.lock().map_err(|_| Error::Internal("Spark summary lock".into()))?;
        s.version = hello["version"].as_str().unwrap_or_default().to_string();
        s.app_id = hello["app_id"].as_str().map(str::to_string);
        s.master = match &opts.remote {
            Some(url) => redacted(url),
            None => {
                hello["master"].as_str().map(str::to_string).unwrap_or_else(|| opts.master.clone())
            }
        };
        s.start_ms = t0.elapsed().as_millis() as u64;
        drop(s);
        let session = Arc::new(session);
        session.publish();
        Ok(session)
    }

    /// One request, answered: the answer's fields, or Spark's error as one line.
    pub fn request(&self, req: &Json, what: &str) -> Result<Json> {
        self.request_within(req, what, 1)
    }

    /// One request that does the work of `parts` requests (verify's runs of both queries):
    /// given `parts` times the timeout, each part bounded as one request is.
    pub fn request_within(&self, req: &Json, what: &str, parts: u32) -> Result<Json> {
        let answer = self.ask(req, what, self.timeout * parts.max(1))?;
        if let Ok(mut s) = self.summary.lock() {
            s.requests += 1;
            s.spark_ms += answer["ms"].as_u64().unwrap_or(0);
        }
        self.publish();
        Ok(answer)
    }

    fn publish(&self) {
        if let Ok(s) = self.summary.lock() {
            self.stats.set_spark(s.clone());
        }
    }

    /// The run the session counts for.
    pub fn stats(&self) -> &Arc<RunStats> {
        &self.stats
    }

    fn ask(&self, req: &Json, what: &str, timeout: Duration) -> Result<Json> {
        let line = req.to_string() + "\n";
        {
            let mut stdin =
                self.stdin.lock().map_err(|_| Error::Internal("Spark engine stdin lock".into()))?;
            let Some(stdin) = stdin.as_mut() else { return Err(self.died(what)) };
            if stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush()).is_err() {
                return Err(self.died(what));
            }
        }
        let rx =
            self.answers.lock().map_err(|_| Error::Internal("Spark engine stdout lock".into()))?;
        let line = match rx.recv_timeout(timeout) {
            Ok(Ok(line)) => line,
            Ok(Err(_)) | Err(RecvTimeoutError::Disconnected) => return Err(self.died(what)),
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                let (limit, each) = (timeout.as_secs(), self.timeout.as_secs());
                let bound = match limit == each {
                    true => format!("--spark-timeout {each} s"),
                    false => format!("{limit} s (--spark-timeout {each} s for each part)"),
                };
                return Err(Error::Server(format!(
                    "Spark engine: {what} took longer than {bound}; stopped"
                )));
            }
        };
        let answer: Json = serde_json::from_str(&line)
            .map_err(|_| Error::Internal(format!("Spark engine: unreadable answer to {what}")))?;
        if answer["ok"].as_bool() == Some(true) {
            Ok(answer)
        } else {
            let msg = self.without_secret(format!(
                "Spark engine: {what}: {}",
                answer["error"].as_str().unwrap_or("failed")
            ));
            // The engine says whose fault it is: a query or path of the user's, or Spark's.
            Err(Error::from_engine(answer["kind"].as_str(), msg))
        }
    }

    /// The process ended: its last meaningful line of output says why.
    fn died(&self, what: &str) -> Error {
        self.kill();
        let log = std::fs::read_to_string(self.log.path()).unwrap_or_default();
        Error::Server(self.without_secret(format!(
            "Spark engine: {what}: the Python process ended: {}",
            last_error_line(&log)
        )))
    }

    /// `msg` with the Connect URL's parameters (a token among them) taken out.
    fn without_secret(&self, msg: String) -> String {
        match &self.secret_url {
            Some(url) => without_url_secret(&msg, url),
            None => msg,
        }
    }

    fn kill(&self) {
        if let Ok(mut c) = self.child.lock() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Session {
    /// Closing stdin ends the request loop: the script unpersists and stops the session (given
    /// 30 s before it is killed).
    fn drop(&mut self) {
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take();
        }
        let Ok(mut c) = self.child.lock() else { return };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// The line of a Python or Spark log that says what went wrong: the last `...Error:` or
/// `...Exception:` line, else the last line.
fn last_error_line(log: &str) -> String {
    let lines: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let hit = lines
        .iter()
        .rev()
        .find(|l| l.contains("Error:") || l.contains("Exception:") || l.contains("Error "))
        .or(lines.last());
    hit.map(|l| crate::format::one_line(&without_tokens(l), 500))
        .unwrap_or_else(|| "no output".into())
}

/// A Spark Connect URL as it may be shown: `sc://HOST:PORT`, without its `/;key=value`
/// parameters (`token=` is a secret).
pub fn redacted(url: &str) -> String {
    match url.strip_prefix("sc://") {
        Some(rest) => format!("sc://{}", rest.split(['/', ';']).next().unwrap_or_default()),
        None => "the --remote URL".into(),
    }
}

/// `msg` with every occurrence of `url` shown redacted, and any `;token=...` left (a URL cut
/// short) blanked.
pub fn without_url_secret(msg: &str, url: &str) -> String {
    let msg = if url.is_empty() { msg.to_string() } else { msg.replace(url, &redacted(url)) };
    without_tokens(&msg)
}

/// `;token=VALUE` blanked to `;token=...`, however the URL around it was cut.
fn without_tokens(msg: &str) -> String {
    let lower = msg.to_ascii_lowercase();
    let mut out = String::with_capacity(msg.len());
    let mut at = 0;
    while let Some(i) = lower[at..].find(";token=") {
        let start = at + i + ";token=".len();
        out.push_str(&msg[at..start]);
        out.push_str("...");
        at = msg[start..]
            .find(|c: char| c == ';' || c.is_whitespace())
            .map(|j| start + j)
            .unwrap_or(msg.len());
    }
    out.push_str(&msg[at..]);
    out
}

/// A Spark Connect URL's server answers on TCP within 10 s, or a one-line error.
pub fn check_reachable(url: &str) -> Result<()> {
    let shown = redacted(url);
    let rest = url
        .strip_prefix("sc://")
        .ok_or_else(|| Error::Usage(format!("--remote {shown}: write sc://HOST:PORT")))?;
    let hostport = rest.split(['/', ';']).next().unwrap_or_default();
    let hostport =
        if hostport.contains(':') { hostport.to_string() } else { format!("{hostport}:15002") };
    connect(&hostport).map_err(|e| {
        Error::Server(format!("Spark Connect server {hostport} is not reachable: {e}"))
    })
}

/// A standalone master (`spark://HOST:PORT`, or several for a standby: `spark://h1:p1,h2:p2`)
/// answers on TCP within 10 s, or a one-line error: pyspark would otherwise retry for a minute
/// and then leave a session with no executors, whose first job waits for ever. Other masters
/// (local, yarn, k8s://) are not checked here.
pub fn check_master(master: &str) -> Result<()> {
    let Some(list) = master.strip_prefix("spark://") else { return Ok(()) };
    let mut last = None;
    for hostport in list.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let hostport =
            if hostport.contains(':') { hostport.to_string() } else { format!("{hostport}:7077") };
        match connect(&hostport) {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(Error::Server(format!(
        "Spark master {master} is not reachable: {}",
        last.unwrap_or_else(|| "no HOST:PORT in it".into())
    )))
}

/// A TCP connection to `hostport` within 10 s, or why not.
fn connect(hostport: &str) -> std::result::Result<(), String> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = hostport
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {hostport}: {e}"))?
        .collect();
    let mut last = format!("{hostport} has no address");
    for a in addrs {
        match std::net::TcpStream::connect_timeout(&a, Duration::from_secs(10)) {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_line_of_a_log() {
        let log = "WARN something\nTraceback (most recent call last):\n  File x\nModuleNotFoundError: No module named 'pyspark'\n";
        assert_eq!(last_error_line(log), "ModuleNotFoundError: No module named 'pyspark'");
        assert_eq!(last_error_line(""), "no output");
    }

    #[test]
    fn a_closed_port_is_one_line() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let e = check_reachable(&format!("sc://127.0.0.1:{port}")).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("Spark Connect server 127.0.0.1:{port} is not reachable")),
            "{e}"
        );
        assert!(check_reachable("http://x").is_err());
        let e = check_master(&format!("spark://127.0.0.1:{port}")).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("Spark master spark://127.0.0.1:{port} is not reachable")),
            "{e}"
        );
        assert!(check_master("local[2]").is_ok() && check_master("yarn").is_ok());
    }

    #[test]
    fn a_connect_token_is_never_shown() {
        let url = "sc://spark.example:15002/;token=s3cret;user_id=me";
        assert_eq!(redacted(url), "sc://spark.example:15002");
        assert_eq!(
            without_url_secret(&format!("failed to reach {url}"), url),
            "failed to reach sc://spark.example:15002"
        );
        assert!(!check_reachable("sc://no-such-host.invalid:1/;token=s3cret")
            .unwrap_err()
            .to_string()
            .contains("s3cret"));
        assert_eq!(without_tokens("at sc://h:1/;token=s3cr"), "at sc://h:1/;token=...");
        assert_eq!(without_tokens("x;TOKEN=a;user_id=b y"), "x;TOKEN=...;user_id=b y");
    }
}
