//! The application an event log describes: executors, jobs, stages with every task's
//! metrics, and the SQL executions with their physical plans.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::events::{kind_of, Line};

/// One finished task attempt, its times in milliseconds and sizes in bytes.
#[derive(Debug, Clone, Default)]
pub struct Task {
    pub launch: i64,
    pub finish: i64,
    pub duration: i64,
    pub run: i64,
    pub cpu_ms: i64,
    pub deserialize: i64,
    pub result_ser: i64,
    pub getting_result: i64,
    pub gc: i64,
    pub scheduler_delay: i64,
    pub shuffle_read_bytes: i64,
    pub shuffle_read_records: i64,
    pub fetch_wait: i64,
    pub shuffle_write_bytes: i64,
    pub shuffle_write_records: i64,
    pub input_bytes: i64,
    pub input_records: i64,
    pub output_bytes: i64,
    pub output_records: i64,
    pub memory_spill: i64,
    pub disk_spill: i64,
    pub result_size: i64,
    pub index: i64,
    pub executor: String,
    pub host: String,
    pub success: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Stage {
    pub id: i64,
    pub attempt: i64,
    /// Spark's short call site: `collect at job.py:42`, `count at Job.scala:17`.
    pub name: String,
    /// Its long call site: the stack of the call that submitted it (JVM frames).
    pub details: String,
    pub num_tasks: i64,
    pub submitted: Option<i64>,
    pub completed: Option<i64>,
    pub failure: Option<String>,
    pub tasks: Vec<Task>,
    /// Accumulators (SQL metrics among them) this stage updated.
    pub accums: HashSet<i64>,
    pub job: Option<i64>,
}

impl Stage {
    /// Wall-clock time from submission to completion, or over its tasks if the log lacks them.
    pub fn span(&self) -> Option<(i64, i64)> {
        let first = self.tasks.iter().map(|t| t.launch).min();
        let last = self.tasks.iter().map(|t| t.finish).max();
        let start = self.submitted.or(first)?;
        let end = self.completed.or(last)?;
        Some((start, end.max(start)))
    }

    pub fn duration(&self) -> i64 {
        self.span().map(|(a, b)| b - a).unwrap_or(0)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Job {
    pub id: i64,
    pub submitted: Option<i64>,
    pub completed: Option<i64>,
    pub stages: Vec<i64>,
    pub sql: Option<i64>,
    pub succeeded: Option<bool>,
    /// `spark.job.description`: what the job's code or the Thrift server set (often the SQL).
    pub description: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct SqlExecution {
    pub id: i64,
    pub description: String,
    /// The last physical plan (`sparkPlanInfo`), after adaptive updates.
    pub plan: Option<Value>,
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// The SQL metrics the driver set (accumulator ID -> value): a file scan's files and bytes
    /// read among them.
    pub driver_metrics: HashMap<i64, i64>,
}

#[derive(Debug, Clone, Default)]
pub struct Executor {
    pub id: String,
    pub cores: i64,
    pub added: i64,
    pub removed: Option<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct App {
    pub name: String,
    pub id: String,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub spark_version: Option<String>,
    pub properties: HashMap<String, String>,
    pub executors: Vec<Executor>,
    pub jobs: BTreeMap<i64, Job>,
    pub stages: BTreeMap<(i64, i64), Stage>,
    pub sql: BTreeMap<i64, SqlExecution>,
    /// The last timestamp seen in the log.
    pub last_time: Option<i64>,
    pub events: usize,
    /// Stage ID to job, from the job starts: for stages whose own events do not say.
    stage_job: HashMap<i64, i64>,
}

fn i(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(|x| x.as_i64().or_else(|| x.as_f64().map(|f| f as i64))).unwrap_or(0)
}

fn oi(v: &Value, k: &str) -> Option<i64> {
    v.get(k).and_then(|x| x.as_i64())
}

fn s(v: &Value, k: &str) -> String {
    v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string()
}

fn accum_ids(v: &Value) -> impl Iterator<Item = i64> + '_ {
    v.get("Accumulables")
        .and_then(|a| a.as_array())
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("ID").and_then(|x| x.as_i64()))
}

/// A property map: Spark writes `Properties` and `Spark Properties` as JSON objects (older
/// versions as lists of [key, value]).
fn props(v: Option<&Value>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    match v {
        Some(Value::Object(m)) => {
            for (k, x) in m {
                out.insert(
                    k.clone(),
                    x.as_str().map(str::to_string).unwrap_or_else(|| x.to_string()),
                );
            }
        }
        Some(Value::Array(a)) => {
            for p in a {
                if let Some([k, x]) = p.as_array().map(|v| v.as_slice()) {
                    out.insert(
                        k.as_str().unwrap_or("").to_string(),
                        x.as_str().unwrap_or("").to_string(),
                    );
                }
            }
        }
        _ => {}
    }
    out
}

fn stage_entry<'a>(app: &'a mut App, info: &Value) -> &'a mut Stage {
    let id = i(info, "Stage ID");
    let attempt = i(info, "Stage Attempt ID");
    let st = app.stages.entry((id, attempt)).or_default();
    st.id = id;
    st.attempt = attempt;
    if let Some(n) = info.get("Stage Name").and_then(|x| x.as_str()) {
        st.name = n.to_string();
    }
    if let Some(d) = info.get("Details").and_then(|x| x.as_str()) {
        st.details = d.to_string();
    }
    if let Some(n) = oi(info, "Number of Tasks") {
        st.num_tasks = n;
    }
    st
}

impl App {
    /// Take one line of the log into the application.
    pub fn take(&mut self, line: Line) {
        match line {
            Line::TaskEnd { stage, task, accums } => self.task_end(stage, task, accums),
            Line::Event(e) => {
                self.events += 1;
                self.note_time(&e);
                self.apply(&e);
            }
            Line::Other { time } => {
                self.events += 1;
                self.last_time = self.last_time.max(time);
            }
            Line::NotEvent | Line::Bad(_) => {}
        }
    }

    /// After the last line: stages whose own events did not name their job get it from the
    /// job starts.
    pub fn finish(&mut self) {
        for st in self.stages.values_mut() {
            if st.job.is_none() {
                st.job = self.stage_job.get(&st.id).copied();
            }
        }
    }

    /// Move `last_time` to the latest of the event's timestamps.
    fn note_time(&mut self, e: &Value) {
        for k in ["Timestamp", "time", "Completion Time", "Submission Time"] {
            if let Some(t) = oi(e, k) {
                self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
            }
        }
    }

    /// Take one event into the application; events of other kinds are ignored.
    fn apply(&mut self, e: &Value) {
        match kind_of(e.get("Event").and_then(|x| x.as_str()).unwrap_or("")) {
            "SparkListenerLogStart" => {
                self.spark_version =
                    e.get("Spark Version").and_then(|x| x.as_str()).map(str::to_string)
            }
            "SparkListenerApplicationStart" => {
                self.name = s(e, "App Name");
                self.id = s(e, "App ID");
                self.start = oi(e, "Timestamp");
            }
            "SparkListenerApplicationEnd" => self.end = oi(e, "Timestamp"),
            "SparkListenerEnvironmentUpdate" => {
                self.properties.extend(props(e.get("Spark Properties")))
            }
            "SparkListenerExecutorAdded" => self.executor_added(e),
            "SparkListenerExecutorRemoved" => self.executor_removed(e),
            "SparkListenerJobStart" => self.job_start(e),
            "SparkListenerJobEnd" => self.job_end(e),
            "SparkListenerStageSubmitted" => self.stage_submitted(e),
            "SparkListenerStageCompleted" => self.stage_completed(e),
            "SparkListenerSQLExecutionStart" => self.sql_start(e),
            "SparkListenerSQLAdaptiveExecutionUpdate" => self.sql_adaptive_update(e),
            "SparkListenerSQLExecutionEnd" => self.sql_end(e),
            "SparkListenerDriverAccumUpdates" => self.driver_accum_updates(e),
            _ => {}
        }
    }

    /// `accumUpdates`: [[accumulator ID, value], ...] of the execution `executionId`.
    fn driver_accum_updates(&mut self, e: &Value) {
        let Some(id) = oi(e, "executionId") else { return };
        let exec = self.sql.entry(id).or_default();
        exec.id = id;
        for u in e.get("accumUpdates").and_then(|x| x.as_array()).into_iter().flatten() {
            if let Some([k, v]) = u.as_array().map(|x| x.as_slice()) {
                if let (Some(k), Some(v)) = (k.as_i64(), v.as_i64()) {
                    exec.driver_metrics.insert(k, v);
                }
            }
        }
    }

    fn executor_added(&mut self, e: &Value) {
        let info = e.get("Executor Info").cloned().unwrap_or_default();
        self.executors.push(Executor {
            id: s(e, "Executor ID"),
            cores: i(&info, "Total Cores"),
            added: i(e, "Timestamp"),
            removed: None,
        });
    }

    fn executor_removed(&mut self, e: &Value) {
        let id = s(e, "Executor ID");
        if let Some(x) = self.executors.iter_mut().rev().find(|x| x.id == id && x.removed.is_none())
        {
            x.removed = oi(e, "Timestamp");
        }
    }

    fn job_start(&mut self, e: &Value) {
        let id = i(e, "Job ID");
        let p = props(e.get("Properties"));
        let stages: Vec<i64> = e
            .get("Stage IDs")
            .and_then(|x| x.as_array())
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_i64())
            .collect();
        for &st in &stages {
            self.stage_job.insert(st, id);
        }
        for info in e.get("Stage Infos").and_then(|x| x.as_array()).into_iter().flatten() {
            let st = stage_entry(self, info);
            st.job = Some(id);
        }
        let job = self.jobs.entry(id).or_default();
        job.id = id;
        job.submitted = oi(e, "Submission Time");
        job.stages = stages;
        job.sql = p.get("spark.sql.execution.id").and_then(|x| x.parse().ok());
        job.description = p.get("spark.job.description").cloned();
    }

    fn job_end(&mut self, e: &Value) {
        let job = self.jobs.entry(i(e, "Job ID")).or_default();
        job.completed = oi(e, "Completion Time");
        job.succeeded = e.get("Job Result").map(|r| s(r, "Result") == "JobSucceeded");
    }

    fn stage_submitted(&mut self, e: &Value) {
        if let Some(info) = e.get("Stage Info") {
            let sub = oi(info, "Submission Time");
            let st = stage_entry(self, info);
            st.submitted = sub.or(st.submitted);
        }
    }

    fn stage_completed(&mut self, e: &Value) {
        if let Some(info) = e.get("Stage Info") {
            let ids: Vec<i64> = accum_ids(info).collect();
            let (sub, done) = (oi(info, "Submission Time"), oi(info, "Completion Time"));
            let failure = info
                .get("Failure Reason")
                .and_then(|x| x.as_str())
                .map(|x| x.lines().next().unwrap_or("").to_string());
            let st = stage_entry(self, info);
            st.submitted = sub.or(st.submitted);
            st.completed = done;
            st.failure = failure;
            st.accums.extend(ids);
        }
    }

    /// A finished task: added to its stage (created if the log has not named it yet).
    fn task_end(&mut self, key: (i64, i64), t: Task, accums: Vec<i64>) {
        self.events += 1;
        self.last_time = Some(self.last_time.map_or(t.finish, |l| l.max(t.finish)));
        let st = self.stages.entry(key).or_default();
        st.id = key.0;
        st.attempt = key.1;
        st.accums.extend(accums);
        st.tasks.push(t);
    }

    fn sql_start(&mut self, e: &Value) {
        let id = i(e, "executionId");
        let x = self.sql.entry(id).or_default();
        x.id = id;
        x.description = s(e, "description");
        x.start = oi(e, "time");
        x.plan = e.get("sparkPlanInfo").cloned();
    }

    fn sql_adaptive_update(&mut self, e: &Value) {
        let id = i(e, "executionId");
        let x = self.sql.entry(id).or_default();
        x.id = id;
        if let Some(p) = e.get("sparkPlanInfo") {
            x.plan = Some(p.clone());
        }
    }

    fn sql_end(&mut self, e: &Value) {
        let x = self.sql.entry(i(e, "executionId")).or_default();
        x.end = oi(e, "time");
    }

    /// Executor cores (task slots) alive at time `t`; all executors when the log has no times.
    pub fn slots_at(&self, t: i64) -> i64 {
        let n: i64 = self
            .executors
            .iter()
            .filter(|e| e.added <= t && e.removed.is_none_or(|r| r >= t))
            .map(|e| e.cores)
            .sum();
        if n > 0 {
            n
        } else {
            self.executors.iter().map(|e| e.cores).max().unwrap_or(0)
        }
    }

    /// The executors the application had: the most cores alive at once (and how many
    /// executors held them), and the cores alive on average over `span` (a stage's, named
    /// `label`).
    pub fn logged_executors(
        &self,
        span: Option<(i64, i64)>,
        label: &str,
    ) -> crate::cluster::LoggedExecutors {
        // Each add and removal as a step of the cores alive, in time order (adds first at a tie).
        let mut steps: Vec<(i64, i64, i64)> = Vec::new();
        for e in &self.executors {
            steps.push((e.added, 0, e.cores));
            if let Some(r) = e.removed {
                steps.push((r, 1, -e.cores));
            }
        }
        steps.sort_unstable();
        let (mut alive, mut count, mut peak, mut at_peak) = (0i64, 0i64, 0i64, 0i64);
        for &(_, _, d) in &steps {
            alive += d;
            count += d.signum();
            if alive > peak {
                (peak, at_peak) = (alive, count);
            }
        }
        let average = span.filter(|(a, b)| b > a).map(|(a, b)| {
            let mut area = 0.0;
            let (mut alive, mut t) = (0i64, a);
            for &(when, _, d) in &steps {
                let when = when.clamp(a, b);
                area += alive as f64 * (when - t) as f64;
                (alive, t) = (alive + d, when);
            }
            area += alive as f64 * (b - t) as f64;
            area / (b - a) as f64
        });
        crate::cluster::LoggedExecutors {
            executors_at_peak: at_peak.max(0) as u32,
            peak_cores: peak.max(0) as u32,
            average_cores: average,
            span: average.map(|_| label.to_string()),
        }
    }

    /// The wall clock of the application.
    pub fn span(&self) -> Option<(i64, i64)> {
        let first_task = self.stages.values().flat_map(|s| s.tasks.iter().map(|t| t.launch)).min();
        let start = self.start.or(first_task)?;
        let end = self.end.or(self.last_time)?;
        Some((start, end.max(start)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executors_give_their_peak_and_the_average_over_a_span() {
        let ex =
            |id: &str, cores, added, removed| Executor { id: id.into(), cores, added, removed };
        let app = App {
            executors: vec![ex("1", 4, 0, None), ex("2", 4, 100, Some(300)), ex("3", 4, 200, None)],
            ..App::default()
        };
        let l = app.logged_executors(Some((100, 500)), "stage 2");
        assert_eq!((l.executors_at_peak, l.peak_cores), (3, 12));
        // 100-200: 8 cores, 200-300: 12, 300-500: 8 -> (800 + 1,200 + 1,600) / 400 = 9.
        assert_eq!(l.average_cores, Some(9.0));
        assert_eq!(app.logged_executors(None, "x").average_cores, None);
    }

    #[test]
    fn the_drivers_sql_metrics_are_kept_by_execution() {
        let mut app = App::default();
        let line = br#"{"Event":"org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates","executionId":6,"accumUpdates":[[477,1],[479,724111]]}"#;
        app.take(super::super::events::parse(line));
        assert_eq!(app.sql[&6].driver_metrics, HashMap::from([(477, 1), (479, 724_111)]));
    }
}
