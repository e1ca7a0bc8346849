//! One line of an event log, parsed into what the application model takes from it. Lines are
//! parsed in parallel, then taken into the model in order (`App::take`).
//!
//! Most of a log's bytes are task-end events; they are read straight into a `Task` by a typed
//! reader that skips what it does not need (the accumulables' names and values, the peak
//! memory metrics) without building a JSON tree. The few other kinds the model uses (jobs,
//! stages, SQL executions with their plans) are kept as JSON values; every other kind (task
//! starts, block managers, metric updates) is only checked to be JSON and read for its time.

use serde::de::{Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::model::Task;

/// What one line holds. Not boxed: nearly every line is a task end, and a box would cost an
/// allocation per task.
#[allow(clippy::large_enum_variant)]
pub enum Line {
    /// A finished task: its stage and attempt, its metrics, the accumulators it updated.
    TaskEnd { stage: (i64, i64), task: Task, accums: Vec<i64> },
    /// An event the model reads from its JSON.
    Event(Value),
    /// An event the model does not read, with its latest timestamp.
    Other { time: Option<i64> },
    /// JSON that is not an event (no "Event" field).
    NotEvent,
    /// Not JSON (a line cut short, or garbage): the parser's message.
    Bad(String),
}

/// The event kinds the model reads (`App::apply`), by the last part of their class name.
const READ: [&str; 15] = [
    "SparkListenerLogStart",
    "SparkListenerApplicationStart",
    "SparkListenerApplicationEnd",
    "SparkListenerEnvironmentUpdate",
    "SparkListenerExecutorAdded",
    "SparkListenerExecutorRemoved",
    "SparkListenerJobStart",
    "SparkListenerJobEnd",
    "SparkListenerStageSubmitted",
    "SparkListenerStageCompleted",
    "SparkListenerTaskEnd",
    "SparkListenerSQLExecutionStart",
    "SparkListenerSQLAdaptiveExecutionUpdate",
    "SparkListenerSQLExecutionEnd",
    "SparkListenerDriverAccumUpdates",
];

/// The last part of an event's class name (`SparkListenerTaskEnd`, also for the SQL events
/// that Spark names with their package).
pub fn kind_of(event: &str) -> &str {
    event.rsplit('.').next().unwrap_or(event)
}

/// The event name of a line that starts the way Spark writes every event (`{"Event":"..."`),
/// found without parsing the line.
fn leading_kind(line: &[u8]) -> Option<&str> {
    let rest = line.strip_prefix(b"{\"Event\":\"")?;
    let end = rest.iter().position(|&b| b == b'"')?;
    std::str::from_utf8(&rest[..end]).ok().map(kind_of)
}

/// Parse one non-empty line.
pub fn parse(line: &[u8]) -> Line {
    match leading_kind(line) {
        Some("SparkListenerTaskEnd") => match serde_json::from_slice::<TaskEndEvent>(line) {
            Ok(e) => e.into_line(),
            Err(e) => Line::Bad(e.to_string()),
        },
        Some(k) if !READ.contains(&k) => match serde_json::from_slice::<Times>(line) {
            Ok(t) => Line::Other { time: t.latest() },
            Err(e) => Line::Bad(e.to_string()),
        },
        _ => match serde_json::from_slice::<Value>(line) {
            Ok(v) => of_value(v),
            Err(e) => Line::Bad(e.to_string()),
        },
    }
}

/// A line parsed as a whole JSON value (an event the model reads, or one not written the way
/// Spark writes them).
fn of_value(v: Value) -> Line {
    let Some(kind) = v.get("Event").and_then(|e| e.as_str()).map(kind_of) else {
        return Line::NotEvent;
    };
    if kind == "SparkListenerTaskEnd" {
        return match TaskEndEvent::deserialize(&v) {
            Ok(e) => e.into_line(),
            Err(e) => Line::Bad(e.to_string()),
        };
    }
    if READ.contains(&kind) {
        return Line::Event(v);
    }
    Line::Other { time: Times::deserialize(&v).ok().and_then(|t| t.latest()) }
}

/// A number as Spark writes it (an integer; a float, null or anything else read leniently:
/// a metric the model cannot read is 0, not a reason to drop the task).
#[derive(Default, Clone, Copy)]
struct Num(i64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v.min(i64::MAX as u64) as i64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v as i64))
            }
            fn visit_str<E>(self, _: &str) -> Result<Num, E> {
                Ok(Num(0))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Num, E> {
                Ok(Num(0))
            }
            fn visit_unit<E>(self) -> Result<Num, E> {
                Ok(Num(0))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Num, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Num(0))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Num, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Num(0))
            }
        }
        d.deserialize_any(V)
    }
}

/// The timestamps an event may carry (the model's application clock runs to the latest).
#[derive(Deserialize, Default)]
struct Times {
    #[serde(rename = "Timestamp")]
    timestamp: Option<Num>,
    time: Option<Num>,
    #[serde(rename = "Completion Time")]
    completion: Option<Num>,
    #[serde(rename = "Submission Time")]
    submission: Option<Num>,
}

impl Times {
    fn latest(&self) -> Option<i64> {
        [self.timestamp, self.time, self.completion, self.submission]
            .into_iter()
            .flatten()
            .map(|n| n.0)
            .max()
    }
}

#[derive(Deserialize)]
struct TaskEndEvent {
    #[serde(rename = "Stage ID", default)]
    stage: Num,
    #[serde(rename = "Stage Attempt ID", default)]
    attempt: Num,
    #[serde(rename = "Task End Reason", default)]
    reason: EndReason,
    #[serde(rename = "Task Info")]
    info: Option<TaskInfo>,
    #[serde(rename = "Task Metrics")]
    metrics: Option<Metrics>,
}

/// A task's end reason: none written counts as success (old logs), anything written but
/// `{"Reason": "Success"}` as a failure.
#[derive(Default)]
enum EndReason {
    #[default]
    Unsaid,
    Said(bool),
}

impl<'de> Deserialize<'de> for EndReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EndReason, D::Error> {
        let said = Lenient::<Reason>::deserialize(d)?.0;
        Ok(EndReason::Said(said.is_some_and(|r| r.reason.0 == "Success")))
    }
}

#[derive(Deserialize)]
struct Reason {
    #[serde(rename = "Reason", default)]
    reason: Text,
}

#[derive(Deserialize)]
struct TaskInfo {
    #[serde(rename = "Launch Time", default)]
    launch: Num,
    #[serde(rename = "Finish Time", default)]
    finish: Num,
    #[serde(rename = "Getting Result Time", default)]
    getting_result: Num,
    #[serde(rename = "Index", default)]
    index: Num,
    #[serde(rename = "Executor ID", default)]
    executor: Text,
    #[serde(rename = "Host", default)]
    host: Text,
    #[serde(rename = "Failed", default)]
    failed: Lenient<bool>,
    #[serde(rename = "Accumulables", default)]
    accumulables: AccumIds,
}

/// The IDs of a task's accumulables, read without building them (they are most of a task-end
/// event's bytes): each element's "ID", other keys skipped; anything not a list of objects
/// gives no IDs.
#[derive(Default)]
struct AccumIds(Vec<i64>);

/// Ignore whatever a visitor meets that is not the shape it reads: the default value.
macro_rules! otherwise_default {
    ($t:ty) => {
        fn visit_bool<E>(self, _: bool) -> Result<$t, E> {
            Ok(<$t>::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<$t, E> {
            Ok(<$t>::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<$t, E> {
            Ok(<$t>::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<$t, E> {
            Ok(<$t>::default())
        }
        fn visit_str<E>(self, _: &str) -> Result<$t, E> {
            Ok(<$t>::default())
        }
        fn visit_unit<E>(self) -> Result<$t, E> {
            Ok(<$t>::default())
        }
    };
}

impl<'de> Deserialize<'de> for AccumIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AccumIds, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AccumIds;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of accumulables")
            }
            otherwise_default!(AccumIds);
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<AccumIds, A::Error> {
                let mut ids = Vec::new();
                while let Some(AccumId(id)) = a.next_element::<AccumId>()? {
                    ids.extend(id);
                }
                Ok(AccumIds(ids))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<AccumIds, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(AccumIds::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// One accumulable's "ID".
#[derive(Default)]
struct AccumId(Option<i64>);

impl<'de> Deserialize<'de> for AccumId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AccumId, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AccumId;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an accumulable")
            }
            otherwise_default!(AccumId);
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<AccumId, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(AccumId::default())
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<AccumId, A::Error> {
                let mut id = None;
                while let Some(IsId(is)) = a.next_key::<IsId>()? {
                    if is {
                        id = Some(a.next_value::<Num>()?.0);
                    } else {
                        a.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(AccumId(id))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a key is "ID", without keeping the key.
struct IsId(bool);

impl<'de> Deserialize<'de> for IsId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<IsId, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IsId;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E>(self, k: &str) -> Result<IsId, E> {
                Ok(IsId(k == "ID"))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string as Spark writes it; a number is read as its digits, anything else as empty.
#[derive(Default)]
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        Ok(Text(match serde_json::Value::deserialize(d)? {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            _ => String::new(),
        }))
    }
}

/// A value of the expected shape, or nothing when the log wrote another (null, a string where
/// an object belongs): a field the model cannot read is left out, not a reason to drop the
/// task.
struct Lenient<T>(Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Lenient<T>, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(Lenient(T::deserialize(v).ok()))
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metrics {
    #[serde(rename = "Executor Run Time")]
    run: Num,
    #[serde(rename = "Executor CPU Time")]
    cpu_ns: Num,
    #[serde(rename = "Executor Deserialize Time")]
    deserialize: Num,
    #[serde(rename = "Result Serialization Time")]
    result_ser: Num,
    #[serde(rename = "JVM GC Time")]
    gc: Num,
    #[serde(rename = "Memory Bytes Spilled")]
    memory_spill: Num,
    #[serde(rename = "Disk Bytes Spilled")]
    disk_spill: Num,
    #[serde(rename = "Result Size")]
    result_size: Num,
    #[serde(rename = "Shuffle Read Metrics", deserialize_with = "or_default")]
    shuffle_read: ShuffleRead,
    #[serde(rename = "Shuffle Write Metrics", deserialize_with = "or_default")]
    shuffle_write: ShuffleWrite,
    #[serde(rename = "Input Metrics", deserialize_with = "or_default")]
    input: InOut,
    #[serde(rename = "Output Metrics", deserialize_with = "or_default")]
    output: OutMetrics,
}

/// A metrics object, or its zeros when the log wrote null.
fn or_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(
    d: D,
) -> Result<T, D::Error> {
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ShuffleRead {
    #[serde(rename = "Remote Bytes Read")]
    remote_bytes: Num,
    #[serde(rename = "Local Bytes Read")]
    local_bytes: Num,
    #[serde(rename = "Total Records Read")]
    records: Num,
    #[serde(rename = "Fetch Wait Time")]
    fetch_wait: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ShuffleWrite {
    #[serde(rename = "Shuffle Bytes Written")]
    bytes: Num,
    #[serde(rename = "Shuffle Records Written")]
    records: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct InOut {
    #[serde(rename = "Bytes Read")]
    bytes: Num,
    #[serde(rename = "Records Read")]
    records: Num,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct OutMetrics {
    #[serde(rename = "Bytes Written")]
    bytes: Num,
    #[serde(rename = "Records Written")]
    records: Num,
}

impl TaskEndEvent {
    /// The task, as the Spark UI computes its times; a task-end event without its info or
    /// metrics (a task lost with its executor, in old logs) is no task.
    fn into_line(self) -> Line {
        let (Some(info), Some(m)) = (self.info, self.metrics) else {
            return Line::Other { time: None };
        };
        let (launch, finish, getting) = (info.launch.0, info.finish.0, info.getting_result.0);
        let mut task = Task {
            launch,
            finish,
            duration: (finish - launch).max(0),
            run: m.run.0,
            cpu_ms: m.cpu_ns.0 / 1_000_000,
            deserialize: m.deserialize.0,
            result_ser: m.result_ser.0,
            getting_result: if getting > 0 { (finish - getting).max(0) } else { 0 },
            gc: m.gc.0,
            scheduler_delay: 0,
            shuffle_read_bytes: m.shuffle_read.remote_bytes.0 + m.shuffle_read.local_bytes.0,
            shuffle_read_records: m.shuffle_read.records.0,
            fetch_wait: m.shuffle_read.fetch_wait.0,
            shuffle_write_bytes: m.shuffle_write.bytes.0,
            shuffle_write_records: m.shuffle_write.records.0,
            input_bytes: m.input.bytes.0,
            input_records: m.input.records.0,
            output_bytes: m.output.bytes.0,
            output_records: m.output.records.0,
            memory_spill: m.memory_spill.0,
            disk_spill: m.disk_spill.0,
            result_size: m.result_size.0,
            index: info.index.0,
            executor: info.executor.0,
            host: info.host.0,
            success: !matches!(self.reason, EndReason::Said(false))
                && !info.failed.0.unwrap_or(false),
        };
        task.scheduler_delay =
            (task.duration - task.run - task.deserialize - task.result_ser - task.getting_result)
                .max(0);
        let accums = info.accumulables.0;
        Line::TaskEnd { stage: (self.stage.0, self.attempt.0), task, accums }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const END: &str = r#"{"Event":"SparkListenerTaskEnd","Stage ID":3,"Stage Attempt ID":1,"Task Type":"ResultTask","Task End Reason":{"Reason":"Success"},"Task Info":{"Task ID":9,"Index":4,"Launch Time":1000,"Executor ID":"2","Host":"h","Getting Result Time":0,"Finish Time":5000,"Failed":false,"Accumulables":[{"ID":7,"Name":"x","Update":"1","Value":"2"},{"ID":8}]},"Task Metrics":{"Executor Deserialize Time":100,"Executor Run Time":3500,"Executor CPU Time":2000000000,"Result Size":10,"JVM GC Time":50,"Result Serialization Time":1,"Memory Bytes Spilled":0,"Disk Bytes Spilled":0,"Shuffle Read Metrics":{"Remote Bytes Read":10,"Local Bytes Read":5,"Fetch Wait Time":2,"Total Records Read":3},"Shuffle Write Metrics":{"Shuffle Bytes Written":0,"Shuffle Records Written":0},"Input Metrics":{"Bytes Read":0,"Records Read":0},"Output Metrics":{"Bytes Written":0,"Records Written":0}}}"#;

    #[test]
    fn task_end_read_typed_and_from_a_value_alike() {
        let typed = parse(END.as_bytes());
        // The same event not written the way Spark writes it takes the JSON-value path.
        let spaced = END.replacen("{\"Event\":", "{ \"Event\" : ", 1);
        let reordered = parse(spaced.as_bytes());
        for l in [typed, reordered] {
            let Line::TaskEnd { stage, task, accums } = l else { panic!("not a task end") };
            assert_eq!(stage, (3, 1));
            assert_eq!(
                (
                    task.duration,
                    task.run,
                    task.cpu_ms,
                    task.shuffle_read_bytes,
                    task.shuffle_read_records
                ),
                (4000, 3500, 2000, 15, 3)
            );
            assert_eq!(task.scheduler_delay, 4000 - 3500 - 100 - 1);
            assert!(task.success);
            assert_eq!(accums, vec![7, 8]);
        }
    }

    #[test]
    fn other_kinds_keep_their_time_and_bad_lines_are_told() {
        let Line::Other { time } = parse(
            br#"{"Event":"SparkListenerTaskStart","Stage ID":1,"Task Info":{"Launch Time":5}}"#,
        ) else {
            panic!()
        };
        assert_eq!(time, None);
        let Line::Other { time } =
            parse(br#"{"Event":"SparkListenerBlockManagerAdded","Timestamp":77}"#)
        else {
            panic!()
        };
        assert_eq!(time, Some(77));
        assert!(matches!(
            parse(br#"{"Event":"SparkListenerTaskStart","Stage ID":1,"Task In"#),
            Line::Bad(_)
        ));
        assert!(matches!(parse(br#"{"a":1}"#), Line::NotEvent));
        assert!(matches!(parse(br#"{"Event":"SparkListenerJobEnd","Job ID":1}"#), Line::Event(_)));
        // Fields of an unexpected type are read leniently, not a reason to drop the task.
        for (from, to) in [
            (r#""JVM GC Time":50"#, r#""JVM GC Time":"50""#),
            (r#""Executor ID":"2""#, r#""Executor ID":2"#),
            (r#""Failed":false"#, r#""Failed":"false""#),
            (
                r#""Accumulables":[{"ID":7,"Name":"x","Update":"1","Value":"2"},{"ID":8}]"#,
                r#""Accumulables":null"#,
            ),
            (
                r#""Shuffle Write Metrics":{"Shuffle Bytes Written":0,"Shuffle Records Written":0}"#,
                r#""Shuffle Write Metrics":null"#,
            ),
        ] {
            let odd = END.replace(from, to);
            assert_ne!(odd, END);
            let Line::TaskEnd { task, .. } = parse(odd.as_bytes()) else { panic!("dropped: {to}") };
            assert!(task.success && task.run == 3500, "{to}");
        }
        // A reason written as null or a string is a failure, as Spark would not write it for a
        // success.
        for r in ["null", r#""Success""#, r#"{"Reason":"TaskKilled"}"#] {
            let odd = END.replace(
                r#""Task End Reason":{"Reason":"Success"}"#,
                &format!(r#""Task End Reason":{r}"#),
            );
            let Line::TaskEnd { task, .. } = parse(odd.as_bytes()) else { panic!() };
            assert!(!task.success, "{r}");
        }
    }
}
