//! `skewjoin keys`: the profile of key columns, classified, with Spark's partition of each
//! top value and a verdict on which values are hot.

pub mod report;

use serde::Serialize;
use serde_json::Value as Json;

use crate::classify::Classifier;
use crate::count::{ColumnProfile, SampleInfo};
use crate::format::{fmt_count, fmt_share};
use crate::hash::{pmod, spark_hash};
use crate::value::Value;

#[derive(Debug, Serialize)]
pub struct KeysReport {
    pub columns: Vec<ColumnReport>,
}

#[derive(Debug, Serialize)]
pub struct ColumnReport {
    pub column: String,
    /// Spark SQL type of each key column.
    pub types: Vec<String>,
    pub rows: u64,
    pub rows_read: u64,
    pub nulls: u64,
    pub distinct: u64,
    /// True when every count and the distinct count are exact (no sample, no memory bound hit).
    pub exact: bool,
    pub distinct_exact: bool,
    /// True when the distinct count is a HyperLogLog estimate (of the sample, with a sample).
    pub distinct_estimate: bool,
    /// True when every count is exact (the distinct count may still be an estimate).
    pub counts_exact: bool,
    /// Counts may be up to this many rows below the truth (0 when exact).
    pub count_error: u64,
    pub shuffle_partitions: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleInfo>,
    pub top: Vec<TopValue>,
    pub verdict: Verdict,
}

#[derive(Debug, Serialize)]
pub struct TopValue {
    /// Native JSON: null, number, string (dates, timestamps, decimals, hex binary), or an array
    /// for a composite key.
    pub value: Json,
    pub count: u64,
    pub share: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_error: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_count: Option<u64>,
    pub class: String,
    pub reason: String,
    pub spark_hash: i32,
    pub spark_partition: u32,
    #[serde(skip)]
    pub display: String,
    #[serde(skip)]
    pub hot: bool,
}

#[derive(Debug, Serialize)]
pub struct Verdict {
    /// Rows an evenly spread shuffle gives each task: rows / shuffle partitions.
    pub even_task_rows: f64,
    /// A value is hot when its rows exceed this many even tasks.
    pub hot_factor: f64,
    pub hot: Vec<Json>,
    /// One line: how many values are hot and the rule, or why none is.
    pub text: String,
    /// One line per hot value (and per task that several hot values share), with its numbers.
    pub details: Vec<String>,
}

pub struct KeysOptions {
    pub partitions: u32,
    pub hot_factor: f64,
}

pub fn report(
    profiles: Vec<ColumnProfile>,
    classifier: &Classifier,
    opts: &KeysOptions,
) -> KeysReport {
    let columns = profiles.into_iter().map(|p| column_report(p, classifier, opts)).collect();
    KeysReport { columns }
}

fn key_json(key: &[Value], types: &[crate::value::KeyType]) -> Json {
    if key.len() == 1 {
        key[0].to_json(types[0])
    } else {
        Json::Array(key.iter().zip(types).map(|(v, t)| v.to_json(*t)).collect())
    }
}

fn key_display(key: &[Value], types: &[crate::value::KeyType]) -> String {
    if key.len() == 1 {
        key[0].display(types[0])
    } else {
        format!(
            "({})",
            key.iter().zip(types).map(|(v, t)| v.display(*t)).collect::<Vec<_>>().join(", ")
        )
    }
}

fn column_report(p: ColumnProfile, classifier: &Classifier, opts: &KeysOptions) -> ColumnReport {
    let types = p.spec.types();
    let names = p.spec.names();
    let even = p.rows as f64 / opts.partitions.max(1) as f64;
    let threshold = opts.hot_factor * even;
    let top: Vec<TopValue> = p
        .top
        .iter()
        .map(|kc| {
            let c = classifier.classify_key(&kc.key, &types, &names);
            let h = spark_hash(&kc.key);
            TopValue {
                value: key_json(&kc.key, &types),
                count: kc.count,
                share: kc.share,
                share_error: kc.share_error,
                sample_count: kc.sample_count,
                class: c.class.as_str().into(),
                reason: c.reason,
                spark_hash: h,
                spark_partition: pmod(h, opts.partitions),
                display: key_display(&kc.key, &types),
                hot: kc.count > 0 && kc.count as f64 > threshold,
            }
        })
        .collect();
    let verdict = verdict(&top, &p, even, opts);
    ColumnReport {
        column: p.spec.name(),
        types: types.iter().map(|t| t.spark_name()).collect(),
        rows: p.rows,
        rows_read: p.rows_read,
        nulls: p.nulls,
        distinct: p.distinct,
        exact: p.counts_exact && p.distinct_exact,
        counts_exact: p.counts_exact,
        distinct_exact: p.distinct_exact,
        distinct_estimate: p.distinct_estimate,
        count_error: p.count_error,
        shuffle_partitions: opts.partitions,
        sample: p.sample.clone(),
        top,
        verdict,
    }
}

fn verdict(top: &[TopValue], p: &ColumnProfile, even: f64, opts: &KeysOptions) -> Verdict {
    let hot: Vec<&TopValue> = top.iter().filter(|t| t.hot).collect();
    let rule = format!(
        "hot = more than {}x the {} rows an even task gets: {} rows over {} shuffle partitions",
        opts.hot_factor,
        fmt_count(even.round() as u64),
        fmt_count(p.rows),
        opts.partitions
    );
    let mut details = Vec::new();
    if p.rows == 0 {
        return Verdict {
            even_task_rows: 0.0,
            hot_factor: opts.hot_factor,
            hot: vec![],
            text: "empty table: nothing to count".into(),
            details,
        };
    }
    let text = if hot.is_empty() {
        match top.first() {
            Some(first) => format!(
                "no hot key: the most frequent value {} has {} rows ({}), {:.1}x an even task ({rule})",
                first.display,
                fmt_count(first.count),
                fmt_share(first.share),
                first.count as f64 / even.max(1.0),
            ),
            None => format!("no hot key: no values ({rule})"),
        }
    } else {
        for t in &hot {
            let mut s = format!(
                "{}: {} rows ({}), {:.0}x an even task, class {}, Spark partition {}",
                t.display,
                fmt_count(t.count),
                fmt_share(t.share),
                t.count as f64 / even.max(1.0),
                t.class,
                t.spark_partition
            );
            if t.class == "null" {
                s.push_str("; Spark drops NULL keys before inner and semi joins, but on the kept side of an outer join all of them land in one task");
            }
            details.push(s);
        }
        // Hot values that Spark would send to the same task add up.
        let mut by_part: std::collections::BTreeMap<u32, (u64, Vec<&str>)> = Default::default();
        for t in &hot {
            let e = by_part.entry(t.spark_partition).or_default();
            e.0 += t.count;
            e.1.push(&t.display);
        }
        for (part, (rows, vals)) in by_part {
            if vals.len() > 1 {
                details.push(format!(
                    "{} share Spark partition {part}: {} rows in one task",
                    vals.join(" and "),
                    fmt_count(rows)
                ));
            }
        }
        format!("{} hot value{} ({rule})", hot.len(), if hot.len() == 1 { "" } else { "s" })
    };
    Verdict {
        even_task_rows: even,
        hot_factor: opts.hot_factor,
        hot: hot.iter().map(|t| t.value.clone()).collect(),
        text,
        details,
    }
}
