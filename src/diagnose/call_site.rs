//! Where a stage's job is in the user's code, as the event log records it: Spark names each
//! stage by its call site, `count at Job.scala:42` (the first frame outside Spark of the call
//! that ran the job), and keeps the whole stack as its details. A PySpark action that sets the
//! call site itself (`collect`, `toLocalIterator`) records the Python line, `collect at
//! job.py:42`; the others go through py4j, and Spark records the JVM's reflection frame
//! (`count at NativeMethodAccessorImpl.java:0`): then the stack is searched for a frame of the
//! user's JVM code, and a PySpark job has none, which the report says.

use serde::Serialize;

use super::model::{App, Stage};

/// The place in the user's code whose call ran the stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallSite {
    /// The action (or method) called there: `collect`, `count`, `main`.
    pub action: String,
    pub file: String,
    pub line: u32,
    /// Where the log says it: `stage_name` or `stack`.
    pub from: &'static str,
}

impl std::fmt::Display for CallSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}:{}", self.action, self.file, self.line)
    }
}

impl CallSite {
    /// `file:line`, as the code's comment gives it.
    pub fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// JVM packages that are Spark's or the runtime's, never the user's.
const NOT_USER: [&str; 9] = [
    "org.apache.spark.",
    "scala.",
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "py4j.",
    "com.sun.",
    "$line",
];

/// The call site of stage `stage_id` (of its last attempt), or why the log has none.
pub fn of_stage_id(app: &App, stage_id: i64) -> Result<CallSite, String> {
    let stage =
        app.stages.iter().filter(|((id, _), _)| *id == stage_id).map(|(_, s)| s).next_back();
    match stage {
        Some(s) => of_stage(s),
        None => Err(format!("the log has no stage {stage_id}")),
    }
}

/// The stage's call site, or why the log does not give one.
pub fn of_stage(stage: &Stage) -> Result<CallSite, String> {
    if let Some(site) = short_form(&stage.name).filter(|s| !internal(s)) {
        return Ok(site);
    }
    if let Some(site) = stage.details.lines().find_map(user_frame) {
        return Ok(site);
    }
    if stage.name.contains("NativeMethodAccessorImpl") {
        return Err(format!(
            "Spark recorded `{}`: a PySpark action through py4j (count, write, ...) leaves no Python line in the log; `collect` does",
            stage.name
        ));
    }
    Err(format!("the log names the stage `{}`, with no line of the job's code", stage.name))
}

/// `count at Job.scala:42` as its parts.
fn short_form(name: &str) -> Option<CallSite> {
    let (action, place) = name.split_once(" at ")?;
    let (file, line) = place.trim().rsplit_once(':')?;
    Some(CallSite {
        action: action.trim().to_string(),
        file: file.to_string(),
        line: line.parse().ok()?,
        from: "stage_name",
    })
}

/// A call site that is the JVM's or Spark's own (a py4j call lands on reflection, line 0).
fn internal(s: &CallSite) -> bool {
    s.line == 0 || s.file.starts_with("NativeMethodAccessorImpl") || s.file.starts_with("<")
}

/// `com.acme.Job$.main(Job.scala:42)`: the frame of the user's code, when it is one.
fn user_frame(frame: &str) -> Option<CallSite> {
    let frame = frame.trim().trim_start_matches("at ");
    let (method, place) = frame.split_once('(')?;
    let method = method.rsplit('/').next()?;
    if NOT_USER.iter().any(|p| method.starts_with(p)) {
        return None;
    }
    let (file, line) = place.trim_end_matches(')').rsplit_once(':')?;
    let action = method.rsplit('.').next().unwrap_or(method).to_string();
    Some(CallSite { action, file: file.to_string(), line: line.parse().ok()?, from: "stack" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(name: &str, details: &str) -> Stage {
        Stage { name: name.into(), details: details.into(), ..Default::default() }
    }

    #[test]
    fn a_pyspark_collect_names_its_python_line() {
        let s = of_stage(&stage("collect at /jobs/daily.py:42", "")).unwrap();
        assert_eq!(
            (s.action.as_str(), s.place(), s.from),
            ("collect", "/jobs/daily.py:42".into(), "stage_name")
        );
    }

    #[test]
    fn a_scala_job_is_found_in_the_stack_when_the_name_is_sparks() {
        let details = "org.apache.spark.sql.Dataset.count(Dataset.scala:3616)\ncom.acme.DailyJob$.main(DailyJob.scala:57)\ncom.acme.DailyJob.main(DailyJob.scala)";
        let s = of_stage(&stage("count at NativeMethodAccessorImpl.java:0", details)).unwrap();
        assert_eq!((s.to_string(), s.from), ("main at DailyJob.scala:57".into(), "stack"));
        let s = of_stage(&stage("count at DailyJob.scala:57", details)).unwrap();
        assert_eq!(s.to_string(), "count at DailyJob.scala:57");
    }

    #[test]
    fn a_pyspark_count_has_no_line_and_says_so() {
        let details = "org.apache.spark.sql.Dataset.count(Dataset.scala:3616)\njava.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\npy4j.Gateway.invoke(Gateway.java:282)";
        let why =
            of_stage(&stage("count at NativeMethodAccessorImpl.java:0", details)).unwrap_err();
        assert!(why.contains("no Python line"), "{why}");
    }
}
