//! What a job's event log says of the job's settings and cluster: its Spark properties, and the
//! cores its executors gave (over the slow stage's span, or at their peak). The planner's
//! predictions assume them (`--settings-from`, and `fix` with the log it diagnoses).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::model::App;
use super::{eventlog, history};
use crate::cluster::ClusterSize;
use crate::error::{Error, Result};
use crate::stats::RunStats;

/// What a job's event log says of the job's settings and cluster.
pub struct JobLog {
    /// Its Spark properties.
    pub properties: HashMap<String, String>,
    /// The log, as the reports name it.
    pub name: String,
    /// The cluster its executors made (None: the log recorded none).
    pub executors: Option<ClusterSize>,
}

impl JobLog {
    /// The job of an application read from `name`; `stage`: the slow stage, whose span the
    /// cores are averaged over (else the executors' peak is the size).
    pub fn of(app: &App, name: &str, stage: Option<i64>) -> JobLog {
        let span = stage.and_then(|id| {
            let st =
                app.stages.iter().filter(|((s, _), _)| *s == id).map(|(_, st)| st).next_back()?;
            st.span()
        });
        let executors =
            app.logged_executors(span, &format!("stage {}", stage.unwrap_or_default())).size(name);
        JobLog { properties: app.properties.clone(), name: name.to_string(), executors }
    }

    /// The job of the event log `log` (a file, a rolling folder, an object) or of a History
    /// Server's application (its URL with the application's id).
    pub fn read(log: &str, stats: &Arc<RunStats>) -> Result<JobLog> {
        let dir = tempfile::tempdir()
            .map_err(|source| Error::Io { path: std::env::temp_dir(), source })?;
        let path = if history::is_server(log) {
            let t = history::target(log, None, None)?;
            if t.app.is_none() {
                return Err(Error::Usage(format!("--settings-from {log}: give the application's URL (its id after /history/ or /applications/)")));
            }
            history::fetch_log(&t, dir.path())?
        } else {
            PathBuf::from(log)
        };
        Ok(JobLog::of(
            &eventlog::read(&path, &*crate::progress::ProgressRef::none(), stats)?.app,
            log,
            None,
        ))
    }
}
