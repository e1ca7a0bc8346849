//! End-to-end tests of `skewjoin keys` on files written here, and on bad input.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, Date32Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use parquet::file::properties::WriterProperties;
use serde_json::{json, Value};

mod common;
use common::{write_batch, write_in_groups, write_row_groups};
use std::process::Command;

/// The binary under test: this build's, or $SKEWJOIN_BIN (scripts/same-output points it at a
/// stand-in that runs two builds and compares them).
fn skewjoin() -> Command {
    match std::env::var_os("SKEWJOIN_BIN") {
        Some(bin) => Command::new(bin),
        None => Command::new(env!("CARGO_BIN_EXE_skewjoin")),
    }
}

fn json(args: &[&str]) -> Value {
    let out = skewjoin().args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A failure as `--format json` gives it on stderr.
#[derive(Debug)]
struct Failure {
    code: String,
    kind: String,
    message: String,
}

/// Runs and expects the error contract: exit 2, one line of text, no panic; and with
/// `--format json`, the same message with its code and kind as one JSON line.
fn error(args: &[&str]) -> Failure {
    let out = skewjoin().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    let text = err.strip_prefix("skewjoin: error: ").unwrap_or_else(|| panic!("{err}"));
    assert_eq!(err.matches('\n').count(), 1, "not one line: {err}");
    assert!(!err.contains("panicked"));
    let out = skewjoin().args(args).args(["--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let j: Value = serde_json::from_slice(&out.stderr)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let field = |k: &str| j["error"][k].as_str().unwrap_or_else(|| panic!("{j}")).to_string();
    let failure = Failure { code: field("code"), kind: field("kind"), message: field("message") };
    // clap names the last repeated flag it rejects: the texts may differ only there.
    if failure.code != "usage" || !text.contains("--format") {
        assert_eq!(failure.message, text.trim_end(), "{j}");
    }
    failure
}

/// events: 1000 rows; title: 400 NULL, 200 'unknown', 150 'hot', the rest 250 distinct.
fn events(dir: &Path) -> PathBuf {
    let n = 1000;
    let title: Vec<Option<String>> = (0..n)
        .map(|i| match i % 20 {
            0..=7 => None,
            8..=11 => Some("unknown".to_string()),
            12..=14 => Some("hot".to_string()),
            _ => Some(format!("t{i}")),
        })
        .collect();
    let user: Vec<i64> = (0..n).map(|i| if i % 10 == 0 { -1 } else { i as i64 % 300 }).collect();
    let region: Vec<&str> = (0..n).map(|i| if i % 2 == 0 { "EU" } else { "US" }).collect();
    let p = dir.join("events.parquet");
    write_in_groups(
        &p,
        vec![
            ("title_id", Arc::new(StringArray::from(title)) as ArrayRef),
            ("user_id", Arc::new(Int64Array::from(user)) as ArrayRef),
            ("region", Arc::new(StringArray::from(region)) as ArrayRef),
            (
                "hours",
                Arc::new(Float64Array::from((0..n).map(|i| i as f64 / 10.0).collect::<Vec<_>>()))
                    as ArrayRef,
            ),
            (
                "day",
                Arc::new(Date32Array::from((0..n).map(|i| 20000 + (i % 3)).collect::<Vec<i32>>()))
                    as ArrayRef,
            ),
        ],
        128,
    );
    p
}

#[test]
fn counts_nulls_placeholders_and_hot_values() {
    let dir = tempfile::tempdir().unwrap();
    let p = events(dir.path());
    let j = json(&["keys", p.to_str().unwrap(), "--column", "title_id", "--top", "3"]);
    let c = &j["columns"][0];
    assert_eq!(c["rows"], 1000);
    assert_eq!(c["nulls"], 400);
    assert_eq!(c["distinct"], 252);
    assert_eq!(c["exact"], true);
    let top = c["top"].as_array().unwrap();
    assert_eq!(top[0]["value"], Value::Null);
    assert_eq!(top[0]["count"], 400);
    assert_eq!(top[0]["class"], "null");
    assert_eq!(top[0]["spark_partition"], 42);
    assert_eq!(top[1]["value"], "unknown");
    assert_eq!(top[1]["class"], "placeholder");
    assert_eq!(top[1]["share"], 0.2);
    assert_eq!(top[2]["value"], "hot");
    assert_eq!(top[2]["class"], "demand");
    // Spark's pmod(hash('hot'), 200), from the partition function checked against Spark.
    let h = skewjoin::hash::spark_partition(&[skewjoin::value::Value::Str("hot".into())], 200);
    assert_eq!(top[2]["spark_partition"], h);
    assert_eq!(c["verdict"]["hot"].as_array().unwrap().len(), 3);
}

#[test]
fn composite_keys_hash_chained_and_nulls_count() {
    let dir = tempfile::tempdir().unwrap();
    let p = events(dir.path());
    let j = json(&[
        "keys",
        p.to_str().unwrap(),
        "--column",
        "region,title_id",
        "--top",
        "2",
        "--shuffle-partitions",
        "64",
    ]);
    let c = &j["columns"][0];
    assert_eq!(c["column"], "region,title_id");
    assert_eq!(c["nulls"], 400);
    let top = c["top"].as_array().unwrap();
    assert_eq!(top[0]["value"], serde_json::json!(["EU", null]));
    assert_eq!(top[0]["count"], 200);
    assert_eq!(top[1]["value"], serde_json::json!(["US", null]));
    assert_eq!(top[0]["class"], "null");
    use skewjoin::value::Value as V;
    let want = skewjoin::hash::spark_partition(&[V::Str("EU".into()), V::Null], 64);
    assert_eq!(top[0]["spark_partition"], want);
    assert_eq!(top[0]["spark_hash"], skewjoin::hash::spark_hash(&[V::Str("EU".into())]));
}

#[test]
fn several_columns_and_types_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let p = events(dir.path());
    let j = json(&[
        "keys",
        p.to_str().unwrap(),
        "-c",
        "user_id",
        "-c",
        "day",
        "-c",
        "hours",
        "--top",
        "1",
    ]);
    let cols = j["columns"].as_array().unwrap();
    assert_eq!(cols.len(), 3);
    assert_eq!(cols[0]["top"][0]["value"], -1);
    assert_eq!(cols[0]["top"][0]["count"], 100);
    assert_eq!(cols[0]["top"][0]["class"], "placeholder");
    assert_eq!(cols[1]["top"][0]["value"], "2024-10-04");
    assert_eq!(cols[1]["distinct"], 3);
    assert_eq!(cols[2]["distinct"], 1000);
}

#[test]
fn hive_folders_globs_and_several_paths_are_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    for (day, n) in [("2026-01-01", 30), ("2026-01-02", 10), ("__HIVE_DEFAULT_PARTITION__", 5)] {
        let p = root.join(format!("day={day}")).join("part-00000.snappy.parquet");
        write_in_groups(&p, vec![("k", Arc::new(Int32Array::from(vec![7; n])) as ArrayRef)], 8);
    }
    std::fs::write(root.join("_SUCCESS"), "").unwrap();
    std::fs::write(root.join("day=2026-01-01").join(".part-00000.crc"), "x").unwrap();
    let j = json(&["keys", root.to_str().unwrap(), "-c", "day", "-c", "k"]);
    let day = &j["columns"][0];
    assert_eq!(day["types"][0], "date");
    assert_eq!(day["rows"], 45);
    assert_eq!(day["nulls"], 5);
    assert_eq!(day["top"][0]["value"], "2026-01-01");
    assert_eq!(day["top"][0]["count"], 30);
    assert_eq!(j["columns"][1]["top"][0]["count"], 45);
    // A glob, and two paths, read as one table.
    let g = format!("{}/day=2026-01-0*/*.parquet", root.display());
    let j = json(&["keys", &g, "-c", "k"]);
    assert_eq!(j["columns"][0]["rows"], 40);
    let a = root.join("day=2026-01-01");
    let b = root.join("day=2026-01-02");
    let j = json(&["keys", a.to_str().unwrap(), b.to_str().unwrap(), "-c", "K"]);
    assert_eq!(j["columns"][0]["rows"], 40);
}

#[test]
fn sample_reports_shares_with_error_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let n = 200_000;
    let k: Vec<Option<i64>> = (0..n)
        .map(|i| {
            if i % 10 < 3 {
                None
            } else if i % 10 == 3 {
                Some(1)
            } else {
                Some(i as i64)
            }
        })
        .collect();
    let p = dir.path().join("big.parquet");
    write_in_groups(&p, vec![("k", Arc::new(Int64Array::from(k)) as ArrayRef)], 4096);
    let j = json(&["keys", p.to_str().unwrap(), "-c", "k", "--sample", "0.1", "--top", "2"]);
    let c = &j["columns"][0];
    assert_eq!(c["exact"], false);
    assert_eq!(c["sample"]["method"], "whole row groups");
    let top = c["top"].as_array().unwrap();
    assert_eq!(top[0]["value"], Value::Null);
    assert_eq!(top[1]["value"], 1);
    for (t, truth) in top.iter().zip([0.3, 0.1]) {
        let share = t["share"].as_f64().unwrap();
        let err = t["share_error"].as_f64().unwrap();
        assert!(err > 0.0 && err < 0.05, "error {err}");
        assert!((share - truth).abs() <= err, "share {share} +- {err} misses {truth}");
    }
    // Few row groups: a row selection instead.
    let p2 = dir.path().join("few.parquet");
    write_in_groups(
        &p2,
        vec![(
            "k",
            Arc::new(Int64Array::from((0..50_000).map(|i| i % 4).collect::<Vec<i64>>()))
                as ArrayRef,
        )],
        50_000,
    );
    let j = json(&["keys", p2.to_str().unwrap(), "-c", "k", "--sample", "20%"]);
    assert!(j["columns"][0]["sample"]["method"].as_str().unwrap().starts_with("row selections"));
    // 20% of 50,000 rows: 20 of the 98 runs drawn (the last run has 336 rows), not a random
    // number of them.
    let rows = j["columns"][0]["sample"]["rows_read"].as_u64().unwrap();
    assert!(rows == 20 * 512 || rows == 19 * 512 + 336, "{rows}");
    // A few rows asked for still read 4 runs (it used to draw each run with probability
    // 10/50,000 and print an empty sample).
    let j = json(&["keys", p2.to_str().unwrap(), "-c", "k", "--sample", "10"]);
    let c = &j["columns"][0];
    let rows = c["sample"]["rows_read"].as_u64().unwrap();
    assert!(rows == 4 * 512 || rows == 3 * 512 + 336, "{rows}");
    assert_eq!(c["top"].as_array().unwrap().len(), 4);
    for t in c["top"].as_array().unwrap() {
        let (share, err) = (t["share"].as_f64().unwrap(), t["share_error"].as_f64().unwrap());
        assert!((share - 0.25).abs() <= err, "{t}");
    }
}

#[test]
fn small_samples_read_at_least_four_whole_row_groups() {
    // 40 row groups of 1,000 rows: 1% is 400 rows, less than one row group. It reads 4 whole
    // row groups (not every row group in 512-row runs, which costs more than the exact count).
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("forty.parquet");
    let k: Vec<Option<&str>> = (0..40_000)
        .map(|i| {
            if i % 3 == 0 {
                None
            } else if i % 3 == 1 {
                Some("hot")
            } else {
                Some("cold")
            }
        })
        .collect();
    write_in_groups(&p, vec![("k", Arc::new(StringArray::from(k)) as ArrayRef)], 1000);
    for sample in ["0.01", "400", "3000"] {
        let j = json(&["keys", p.to_str().unwrap(), "-c", "k", "--sample", sample]);
        let info = &j["columns"][0]["sample"];
        assert_eq!(info["method"], "whole row groups", "{sample}");
        assert_eq!(info["row_groups_read"], 4, "{sample}");
        assert_eq!(info["rows_read"], 4000, "{sample}");
        assert!((info["fraction"].as_f64().unwrap() - 0.1).abs() < 1e-12);
    }
    // 5,000 rows need 5 row groups.
    let j = json(&["keys", p.to_str().unwrap(), "-c", "k", "--sample", "5000"]);
    assert_eq!(j["columns"][0]["sample"]["row_groups_read"], 5);
}

#[test]
fn clustered_nulls_get_the_spread_of_the_row_groups() {
    // The NULLs fill 20 of 64 row groups (a client release that dropped the key): a sample of
    // whole row groups estimates their share from how many of those it drew, so the interval
    // must be as wide as that spread, not the binomial one of independent rows (+-0.7%).
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("clustered.parquet");
    let k: Vec<Option<i64>> =
        (0..64_000).map(|i| if i < 20_000 { None } else { Some(i % 7) }).collect();
    write_in_groups(&p, vec![("k", Arc::new(Int64Array::from(k)) as ArrayRef)], 1000);
    let truth = 20.0 / 64.0;
    let mut inside = 0;
    for seed in 0..20 {
        let j = json(&[
            "keys",
            p.to_str().unwrap(),
            "-c",
            "k",
            "--sample",
            "0.25",
            "--seed",
            &seed.to_string(),
        ]);
        let c = &j["columns"][0];
        assert_eq!(c["sample"]["row_groups_read"], 16);
        // A draw of no NULL row group has no NULL row: share 0, a miss.
        let Some(null) = c["top"].as_array().unwrap().iter().find(|t| t["value"].is_null()) else {
            continue;
        };
        let (share, err) = (null["share"].as_f64().unwrap(), null["share_error"].as_f64().unwrap());
        assert!(err > 0.1 || share == 1.0, "seed {seed}: NULL share {share} +- {err}");
        inside += ((share - truth).abs() <= err) as usize;
    }
    // About 93% coverage for this layout (19 of these 20 seeds); the binomial interval held 0.
    assert!(inside >= 16, "{inside} of 20 intervals hold the NULL share");
}

#[test]
fn uneven_row_groups_are_sampled_in_row_runs() {
    // 39 row groups of 1,000 rows and one of 100,000: four drawn whole row groups would miss
    // the big one nine times in ten, so the sample takes 512-row runs of the row groups.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("uneven.parquet");
    let batch = |n: usize, v: &str| {
        RecordBatch::try_from_iter([("k", Arc::new(StringArray::from(vec![v; n])) as ArrayRef)])
            .unwrap()
    };
    let props = WriterProperties::builder().set_max_row_group_row_count(Some(200_000)).build();
    let mut batches: Vec<RecordBatch> = (0..39).map(|_| batch(1000, "small")).collect();
    batches.push(batch(100_000, "big"));
    write_row_groups(&p, &batches, props);
    let j = json(&["keys", p.to_str().unwrap(), "-c", "k", "--sample", "0.05"]);
    let c = &j["columns"][0];
    assert!(
        c["sample"]["method"].as_str().unwrap().starts_with("row selections"),
        "{}",
        c["sample"]
    );
    assert_eq!(c["sample"]["row_groups_total"], 40);
    assert_eq!(c["top"][0]["value"], "big");
    let share = c["top"][0]["share"].as_f64().unwrap();
    assert!(
        (share - 100.0 / 139.0).abs() <= c["top"][0]["share_error"].as_f64().unwrap(),
        "{}",
        c["top"][0]
    );
}

/// 4 row groups of 50,000 rows in pages of 1,000: `k` is 'hot' in 20% of the rows, NULL in
/// every row of 20 whole pages (10%), else one of 500 values; `n` is k's number.
fn paged_table(dir: &Path) -> PathBuf {
    let p = dir.join("paged.parquet");
    write_paged(&p, &paged_batch(0, 200_000, ""), paged_props());
    p
}

fn paged_props() -> parquet::file::properties::WriterPropertiesBuilder {
    WriterProperties::builder()
        .set_max_row_group_row_count(Some(50_000))
        .set_data_page_row_count_limit(1000)
        .set_write_batch_size(1000)
}

fn write_paged(
    p: &Path,
    batch: &RecordBatch,
    props: parquet::file::properties::WriterPropertiesBuilder,
) {
    write_batch(p, batch, props.build());
}

/// Rows `from..to` of the paged table; each value of `k` has `pad` after it.
fn paged_batch(from: usize, to: usize, pad: &str) -> RecordBatch {
    let mut next = lcg(7);
    let k: Vec<Option<String>> = (0..to)
        .map(|i| {
            if (i / 1000) % 10 == 3 {
                None
            } else if next().is_multiple_of(5) {
                Some(format!("hot{pad}"))
            } else {
                Some(format!("v{}{pad}", next() % 500))
            }
        })
        .skip(from)
        .collect();
    let n: Vec<Option<i64>> = k
        .iter()
        .map(|v| v.as_ref().map(|s| s.len() as i64 * 1000 + s.bytes().map(i64::from).sum::<i64>()))
        .collect();
    RecordBatch::try_from_iter([
        ("k", Arc::new(StringArray::from(k)) as ArrayRef),
        ("n", Arc::new(Int64Array::from(n)) as ArrayRef),
    ])
    .unwrap()
}

/// `keys` JSON of `args` by the fast page reader and by Arrow's reader alone: the same column
/// profiles, or the test fails.
fn same_both_ways(args: &[&str]) -> Value {
    let fast = json(args);
    let out = skewjoin()
        .env("SKEWJOIN_ARROW_ONLY", "1")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let arrow: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (a, b) in
        fast["columns"].as_array().unwrap().iter().zip(arrow["columns"].as_array().unwrap())
    {
        assert_eq!(
            (&a["top"], &a["nulls"], &a["rows_read"], &a["sample"]),
            (&b["top"], &b["nulls"], &b["rows_read"], &b["sample"]),
            "{args:?}"
        );
    }
    fast
}

#[test]
fn page_samples_of_other_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let check = |p: &Path, what: &str| {
        let j = same_both_ways(&[
            "keys",
            p.to_str().unwrap(),
            "-c",
            "k",
            "--sample",
            "0.05",
            "--top",
            "3",
        ]);
        let c = &j["columns"][0];
        assert_eq!(
            (c["sample"]["method"].as_str(), c["sample"]["pages_total"].as_u64()),
            (Some("whole pages"), Some(200)),
            "{what}: {}",
            c["sample"]
        );
        let hot = c["top"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["value"].as_str().is_some_and(|v| v.starts_with("hot")))
            .unwrap();
        let share = hot["share"].as_f64().unwrap();
        assert!((share - 0.18).abs() < 0.05, "{what}: {hot}");
        j
    };
    // Data pages v2, and a dictionary so small that each chunk falls back to PLAIN pages.
    let p = d.join("v2.parquet");
    write_paged(
        &p,
        &paged_batch(0, 200_000, ""),
        paged_props().set_writer_version(parquet::file::properties::WriterVersion::PARQUET_2_0),
    );
    check(&p, "v2");
    let p = d.join("plain.parquet");
    write_paged(
        &p,
        &paged_batch(0, 200_000, ""),
        paged_props().set_dictionary_page_size_limit(1024),
    );
    check(&p, "plain");
    // Page headers of over 256 bytes (untruncated statistics of long values): read again.
    let p = d.join("long.parquet");
    let pad = "x".repeat(400);
    write_paged(
        &p,
        &paged_batch(0, 200_000, &pad),
        paged_props()
            .set_statistics_enabled(parquet::file::properties::EnabledStatistics::Page)
            .set_write_page_header_statistics(true)
            .set_statistics_truncate_length(None),
    );
    check(&p, "long headers");
    // Two files of two row groups each, read as one table.
    let t = d.join("two");
    std::fs::create_dir_all(&t).unwrap();
    write_paged(&t.join("a.parquet"), &paged_batch(0, 100_000, ""), paged_props());
    write_paged(&t.join("b.parquet"), &paged_batch(100_000, 200_000, ""), paged_props());
    let j = check(&t, "two files");
    assert_eq!(j["columns"][0]["sample"]["row_groups_total"], 4);
    // Two keys: the pages drawn are of the first one; the other is read through Arrow on the
    // same rows (the columns' pages start at the same rows here), so it counts as it does alone.
    let p = paged_table(d);
    let alone = json(&["keys", p.to_str().unwrap(), "-c", "k", "--sample", "0.05", "--top", "5"]);
    for cols in [["-c", "n", "-c", "k"], ["-c", "k", "-c", "n"]] {
        let mut args = vec!["keys", p.to_str().unwrap(), "--sample", "0.05", "--top", "5"];
        args.extend(cols);
        let j = same_both_ways(&args);
        let k = j["columns"].as_array().unwrap().iter().find(|c| c["column"] == "k").unwrap();
        assert_eq!(
            (&k["top"], &k["nulls"]),
            (&alone["columns"][0]["top"], &alone["columns"][0]["nulls"]),
            "{cols:?}"
        );
        assert_eq!(k["sample"]["pages_column"], cols[1], "{cols:?}");
    }
}

fn lcg(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 33
    }
}

#[test]
fn few_row_groups_are_sampled_in_whole_pages() {
    // Four row groups are too few to sample whole (their spread says little), so the sample
    // takes whole pages of the key column: the headers list 200 of them, 1,000 rows each. The
    // 5% asked for is 10 pages; at least 30 are read.
    let dir = tempfile::tempdir().unwrap();
    let p = paged_table(dir.path());
    let exact = json(&["keys", p.to_str().unwrap(), "-c", "k", "--top", "1000"]);
    let truth = |v: &Value| {
        exact["columns"][0]["top"].as_array().unwrap().iter().find(|t| &t["value"] == v).unwrap()
            ["share"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(exact["columns"][0]["nulls"], 20_000);
    let (mut inside, mut total) = (0, 0);
    for seed in 0..10 {
        let j = json(&[
            "keys",
            p.to_str().unwrap(),
            "-c",
            "k",
            "--sample",
            "0.05",
            "--top",
            "3",
            "--seed",
            &seed.to_string(),
        ]);
        let c = &j["columns"][0];
        let s = &c["sample"];
        assert_eq!(s["method"], "whole pages", "{s}");
        assert_eq!(
            (s["pages_total"].as_u64(), s["pages_read"].as_u64(), s["rows_read"].as_u64()),
            (Some(200), Some(30), Some(30_000)),
            "{s}"
        );
        assert_eq!(s["pages_column"], "k");
        for t in c["top"].as_array().unwrap() {
            let err = t["share_error"].as_f64().unwrap();
            assert!(err > 0.0, "{t}");
            // A value of the 500 near-equal ones is listed for being the luckiest in the sample
            // (its share is biased up): only 'hot' and NULL are checked.
            if t["value"] != "hot" && !t["value"].is_null() {
                continue;
            }
            total += 1;
            if (t["share"].as_f64().unwrap() - truth(&t["value"])).abs() <= err {
                inside += 1;
            }
        }
        // NULLs fill whole pages: one page in ten is NULL (none of the 30 drawn about one time
        // in 25), and the interval must say so.
        if let Some(null) = c["top"].as_array().unwrap().iter().find(|t| t["value"].is_null()) {
            assert!(null["share_error"].as_f64().unwrap() > 0.05, "{null}");
        }
        // The fast page reader and Arrow's reader (whose other pages are skipped) agree.
        let args = [
            "keys",
            p.to_str().unwrap(),
            "-c",
            "k",
            "--sample",
            "0.05",
            "--top",
            "3",
            "--seed",
            &seed.to_string(),
            "--format",
            "json",
        ];
        let arrow = skewjoin().env("SKEWJOIN_ARROW_ONLY", "1").args(args).output().unwrap();
        let arrow: Value = serde_json::from_slice(&arrow.stdout).unwrap();
        assert_eq!(arrow["columns"][0]["top"], c["top"], "seed {seed}");
        assert_eq!(arrow["columns"][0]["nulls"], c["nulls"], "seed {seed}");
    }
    assert!(inside * 10 >= total * 8, "{inside} of {total} shares inside their interval");
    // An int key (read through Arrow) and a composite one sample the same pages.
    for col in ["n", "k,n"] {
        let j = json(&["keys", p.to_str().unwrap(), "-c", col, "--sample", "0.05", "--top", "3"]);
        let c = &j["columns"][0];
        assert_eq!(
            (c["sample"]["method"].as_str(), c["sample"]["pages_read"].as_u64()),
            (Some("whole pages"), Some(30)),
            "{col}: {}",
            c["sample"]
        );
        assert_eq!(c["rows_read"], 30_000);
    }
}

/// Past --memory the staged keys spill to a temporary file: the counts and the distinct count
/// stay exact, and the run says how much spilled.
#[test]
fn keys_past_memory_spill_and_stay_exact() {
    let dir = tempfile::tempdir().unwrap();
    let n = 300_000i64;
    // Spread over a range far wider than the rows: staged by hash, not counted by value.
    let k: Vec<i64> = (0..n).map(|i| if i % 4 == 0 { 42 } else { i * 1000 }).collect();
    let p = dir.path().join("wide.parquet");
    write_in_groups(&p, vec![("k", Arc::new(Int64Array::from(k)) as ArrayRef)], 65536);
    let j = json(&["keys", p.to_str().unwrap(), "-c", "k", "--memory", "1MB", "--top", "2"]);
    let c = &j["columns"][0];
    assert_eq!(c["exact"], true);
    assert_eq!(c["count_error"], 0);
    assert_eq!(c["top"][0]["value"], 42);
    assert_eq!(c["top"][0]["count"], 75_000);
    assert_eq!(c["top"][1]["count"], 1);
    assert_eq!(c["distinct"], 225_001);
    let spilled = j["spilled_bytes"].as_u64().unwrap();
    assert!(spilled > 1 << 20, "{spilled}");
    // Within the default memory nothing spills.
    let j = json(&["keys", p.to_str().unwrap(), "-c", "k", "--top", "1"]);
    assert!(j.get("spilled_bytes").is_none());
    // --verbose says it in the text output.
    let out = skewjoin()
        .args(["keys", p.to_str().unwrap(), "-c", "k", "--memory", "1MB", "--verbose"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("spilled to a temporary file and read back"), "{text}");
    // A temporary folder that cannot take the spill: one line, exit 2.
    let out = skewjoin()
        .args(["keys", p.to_str().unwrap(), "-c", "k", "--memory", "1MB"])
        .env("TMPDIR", dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("missing: cannot spill counted keys to a temporary file")
            && err.contains("TMPDIR"),
        "{err}"
    );
}

/// An integer key whose values fill a narrow range (from the footer's statistics) is counted
/// by value: exact, and in 1 MB where the same rows staged by hash would spill.
#[test]
fn a_narrow_integer_key_is_counted_by_value_without_spilling() {
    let dir = tempfile::tempdir().unwrap();
    let n = 300_000i64;
    let k: Vec<Option<i64>> = (0..n)
        .map(|i| {
            if i % 11 == 0 {
                None
            } else if i % 3 == 0 {
                Some(-7)
            } else {
                Some((i * 7) % 5000 - 2500)
            }
        })
        .collect();
    let mut want: std::collections::HashMap<i64, u64> = Default::default();
    k.iter().flatten().for_each(|&v| *want.entry(v).or_default() += 1);
    let mut top: Vec<(i64, u64)> = want.iter().map(|(&v, &c)| (v, c)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let p = dir.path().join("narrow.parquet");
    write_in_groups(&p, vec![("k", Arc::new(Int64Array::from(k)) as ArrayRef)], 65536);
    let j = json(&["keys", p.to_str().unwrap(), "-c", "k", "--memory", "1MB", "--top", "4"]);
    let c = &j["columns"][0];
    assert!(j.get("spilled_bytes").is_none(), "{j}");
    assert_eq!(
        (c["exact"].as_bool(), c["distinct"].as_u64(), c["nulls"].as_u64()),
        (Some(true), Some(want.len() as u64), Some(27_273))
    );
    let got: Vec<(Option<i64>, u64)> = c["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["value"].as_i64(), t["count"].as_u64().unwrap()))
        .collect();
    // NULL is the second most frequent value, ranked with the others.
    let top: Vec<(Option<i64>, u64)> = top.into_iter().map(|(v, c)| (Some(v), c)).collect();
    assert_eq!(got, [top[0], (None, 27_273), top[1], top[2]]);
}

#[test]
fn csv_and_table_formats() {
    let dir = tempfile::tempdir().unwrap();
    let p = events(dir.path());
    let out = skewjoin()
        .args(["keys", p.to_str().unwrap(), "-c", "title_id", "--top", "3", "--format", "csv"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "column,rank,value,count,share,share_error,class,hot,spark_partition,spark_hash,reason"
    );
    assert!(lines[1].starts_with("title_id,1,,400,0.400000,,null,true,42,42,"), "{}", lines[1]);
    let out = skewjoin()
        .args(["keys", p.to_str().unwrap(), "-c", "title_id", "--top", "3"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("'unknown'")
            && text.contains("placeholder HOT")
            && text.contains("verdict: 3 hot values")
            && text.contains("  - NULL: 400 rows"),
        "{text}"
    );
}

#[test]
fn user_rules_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = events(dir.path());
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, "mode = \"extend\"\n[[rule]]\nname = \"house-title\"\nclass = \"junk\"\nreason = \"our own test title\"\nstrings = [\"hot\"]\n")
        .unwrap();
    let j = json(&[
        "keys",
        p.to_str().unwrap(),
        "-c",
        "title_id",
        "--top",
        "3",
        "--rules",
        rules.to_str().unwrap(),
    ]);
    let t = &j["columns"][0]["top"][2];
    assert_eq!(t["class"], "junk");
    assert!(t["reason"].as_str().unwrap().starts_with("rule house-title: our own test title"));
    std::fs::write(&rules, "[[rule]]\nname = 1\n").unwrap();
    let e =
        error(&["keys", p.to_str().unwrap(), "-c", "title_id", "--rules", rules.to_str().unwrap()]);
    assert_eq!((e.code.as_str(), e.kind.as_str()), ("usage", "usage"), "{e:?}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = events(dir.path());
    let ps = p.to_str().unwrap();
    let code = |args: &[&str]| {
        let e = error(args);
        (e.code, e.kind)
    };
    let is = |c: &str, k: &str| (c.to_string(), k.to_string());
    let missing = error(&["keys", "/no/such/file.parquet", "-c", "x"]);
    assert_eq!((missing.code.as_str(), missing.kind.as_str()), ("not_found", "usage"));
    // The path is what the user looks for in the message.
    assert!(missing.message.starts_with("/no/such/file.parquet:"), "{missing:?}");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_eq!(code(&["keys", empty.to_str().unwrap(), "-c", "x"]), is("no_parquet", "usage"));
    let text = dir.path().join("notes.parquet");
    std::fs::write(&text, "this is not parquet at all, just text").unwrap();
    assert_eq!(code(&["keys", text.to_str().unwrap(), "-c", "x"]), is("bad_file", "data"));
    let trunc = dir.path().join("trunc.parquet");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&trunc, &bytes[..bytes.len() / 2]).unwrap();
    let e = error(&["keys", trunc.to_str().unwrap(), "-c", "title_id"]);
    assert_eq!((e.code.as_str(), e.kind.as_str()), ("bad_file", "data"));
    assert!(e.message.starts_with(trunc.to_str().unwrap()), "{e:?}");
    let e = error(&["keys", ps, "-c", "nope"]);
    assert_eq!((e.code.as_str(), e.kind.as_str()), ("no_column", "usage"));
    // The columns there are, for the user to pick from.
    assert!(e.message.ends_with("available: title_id, user_id, region, hours, day"), "{e:?}");
    for bad in [
        &["keys", ps, "-c", "title_id", "--frobnicate"][..],
        &["keys", ps],
        &["keys", ps, "-c", "title_id", "--sample", "2.5"],
        &["keys", ps, "-c", "title_id", "--memory", "lots"],
        &["keys", ps, "-c", "title_id", "--shuffle-partitions", "0"],
    ] {
        assert_eq!(code(bad), is("usage", "usage"), "{bad:?}");
    }
    // A column whose type differs between the files of one table.
    let other = dir.path().join("t2");
    write_in_groups(
        &other.join("a.parquet"),
        vec![("k", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef)],
        8,
    );
    write_in_groups(
        &other.join("b.parquet"),
        vec![("k", Arc::new(StringArray::from(vec!["1"])) as ArrayRef)],
        8,
    );
    let e = error(&["keys", other.to_str().unwrap(), "-c", "k"]);
    assert_eq!((e.code.as_str(), e.kind.as_str()), ("bad_file", "data"), "{e:?}");
}

/// Output cut short by its reader (`| head`) ends the run quietly with exit code 0: no
/// "Broken pipe" message and no panic. The report lists 20,000 values, far more than a pipe
/// buffers, so the writes after `head` exits do fail.
#[test]
fn a_closed_pipe_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("many.parquet");
    let keys: Vec<String> = (0..20_000).map(|i| format!("key-{i:06}")).collect();
    write_in_groups(&p, vec![("k", Arc::new(StringArray::from(keys)) as ArrayRef)], 4096);
    let script = format!(
        "{} keys {} -c k --top 0 | head -c 10 >/dev/null; echo ${{PIPESTATUS[0]}}",
        env!("CARGO_BIN_EXE_skewjoin"),
        p.display()
    );
    let out = std::process::Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "the exit code of skewjoin");
    assert!(
        String::from_utf8_lossy(&out.stderr).is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The page reader (dictionary indices counted straight from the pages) must count exactly
/// what the Arrow reader counts: v1 and v2 data pages, dictionary pages that overflow into
/// plain pages, NULLs, required columns, tiny pages. (That the page reader itself takes these
/// chunks is checked in src/count/page_reader_tests.rs.)
#[test]
fn page_reader_counts_what_arrow_counts() {
    use parquet::file::properties::WriterVersion;
    let dir = tempfile::tempdir().unwrap();
    let n = 60_000;
    let opt: Vec<Option<String>> = (0..n)
        .map(|i| {
            if i % 7 == 0 {
                None
            } else {
                Some(format!("k{}", (i * 7919) % (if i < 30_000 { 50 } else { 20_000 })))
            }
        })
        .collect();
    let req: Vec<String> = (0..n).map(|i| format!("r{}", i % 300)).collect();
    use parquet::basic::{Compression, ZstdLevel};
    let cases = [
        ("v1.parquet", WriterVersion::PARQUET_1_0, 1 << 20, Compression::UNCOMPRESSED),
        ("v2.parquet", WriterVersion::PARQUET_2_0, 1 << 20, Compression::UNCOMPRESSED),
        ("fallback.parquet", WriterVersion::PARQUET_1_0, 2048, Compression::UNCOMPRESSED),
        ("fallback2.parquet", WriterVersion::PARQUET_2_0, 2048, Compression::UNCOMPRESSED),
        ("snappy1.parquet", WriterVersion::PARQUET_1_0, 1 << 20, Compression::SNAPPY),
        ("snappy2.parquet", WriterVersion::PARQUET_2_0, 1 << 20, Compression::SNAPPY),
        ("zstd.parquet", WriterVersion::PARQUET_2_0, 2048, Compression::ZSTD(ZstdLevel::default())),
        ("lz4raw.parquet", WriterVersion::PARQUET_1_0, 1 << 20, Compression::LZ4_RAW),
        (
            "gzip.parquet",
            WriterVersion::PARQUET_1_0,
            1 << 20,
            Compression::GZIP(Default::default()),
        ),
    ];
    for (name, version, dict_limit, codec) in cases {
        let p = dir.path().join(name);
        let batch = RecordBatch::try_from_iter(vec![
            ("opt", Arc::new(StringArray::from(opt.clone())) as ArrayRef),
            ("req", Arc::new(StringArray::from(req.clone())) as ArrayRef),
        ])
        .unwrap();
        let schema = Arc::new(arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("opt", arrow_schema::DataType::Utf8, true),
            arrow_schema::Field::new("req", arrow_schema::DataType::Utf8, false),
        ]));
        let batch = batch.with_schema(schema.clone()).unwrap();
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_dictionary_page_size_limit(dict_limit)
            .set_data_page_row_count_limit(1000)
            .set_max_row_group_row_count(Some(25_000))
            .set_compression(codec)
            .build();
        write_batch(&p, &batch, props);
        let args = [
            "keys",
            p.to_str().unwrap(),
            "-c",
            "opt",
            "-c",
            "req",
            "--top",
            "0",
            "--format",
            "json",
        ];
        let fast = skewjoin().args(args).output().unwrap();
        let slow = skewjoin().args(args).env("SKEWJOIN_ARROW_ONLY", "1").output().unwrap();
        assert!(fast.status.success() && slow.status.success());
        assert_eq!(
            String::from_utf8_lossy(&fast.stdout),
            String::from_utf8_lossy(&slow.stdout),
            "{name}"
        );
        let j: Value = serde_json::from_slice(&fast.stdout).unwrap();
        assert_eq!(j["columns"][0]["nulls"], (n + 6) / 7);
        assert_eq!(j["columns"][1]["distinct"], 300);
    }
}

/// A seeded xorshift64 generator: the tests' data is random but the same on every run.
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// A string key of 30 row groups of 20,000 rows: 30% of each row group spread over 200,000
/// cold values (about 5,900 distinct per row group, so a thread's table passes the 16,384 at
/// which dictionary chunks start to be split), the rest over 60 hot values h00..h59 with
/// weights 1/(i+1). Where `light_hot(rg)`, the hot values have one row each and 100 filler
/// values take their place: there the hot values are light, and no bound can see past that.
fn split_case(path: &Path, groups: usize, cold: u64, light_hot: impl Fn(usize) -> bool) {
    let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
    let weights: Vec<f64> = (0..60).map(|i| 1.0 / (i as f64 + 1.0)).collect();
    let total: f64 = weights.iter().sum();
    let mut vals: Vec<String> = Vec::new();
    for rg in 0..groups {
        for r in 0..20_000 {
            let u = (rnd() % 1_000_000) as f64 / 1_000_000.0;
            if u < 0.3 {
                vals.push(format!("cold-{:06}", rnd() % cold));
            } else if light_hot(rg) {
                vals.push(if r < 60 {
                    format!("h{r:02}")
                } else {
                    format!("filler-{}", rnd() % 100)
                });
            } else {
                let mut x = (u - 0.3) / 0.7 * total;
                let mut i = 0;
                while i < 59 && x >= weights[i] {
                    x -= weights[i];
                    i += 1;
                }
                vals.push(format!("h{i:02}"));
            }
        }
    }
    write_in_groups(path, vec![("k", Arc::new(StringArray::from(vals)) as ArrayRef)], 20_000);
}

fn top_counts(c: &Value) -> Vec<(Value, u64)> {
    c["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["value"].clone(), t["count"].as_u64().unwrap()))
        .collect()
}

#[test]
fn split_counts_give_the_exact_top_and_an_estimated_distinct() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("skewed.parquet");
    split_case(&p, 30, 200_000, |_| false);
    let p = p.to_str().unwrap();
    for threads in ["1", "2"] {
        let fast = json(&["keys", p, "-c", "k", "--threads", threads]);
        let exact = json(&["keys", p, "-c", "k", "--threads", threads, "--exact-distinct"]);
        let (f, e) = (&fast["columns"][0], &exact["columns"][0]);
        assert_eq!(top_counts(f), top_counts(e), "threads {threads}");
        assert_eq!(
            (f["distinct_exact"].as_bool(), f["counts_exact"].as_bool(), f["exact"].as_bool()),
            (Some(false), Some(true), Some(false))
        );
        assert_eq!(
            (e["distinct_exact"].as_bool(), e["counts_exact"].as_bool(), e["exact"].as_bool()),
            (Some(true), Some(true), Some(true))
        );
        let (fd, ed) = (f["distinct"].as_f64().unwrap(), e["distinct"].as_f64().unwrap());
        assert!((fd - ed).abs() / ed < 0.03, "distinct estimate {fd} against {ed}");
        assert_eq!(f["count_error"], 0);
    }
    // The text output says the distinct count is an estimate.
    let out = skewjoin().args(["keys", p, "-c", "k"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().next().unwrap().contains("distinct (estimate"), "{text}");
}

#[test]
fn split_counts_that_cannot_prove_their_top_count_again_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // The hot values are rare in every third row group: where they are light, what they miss
    // is unknown, so the split count cannot be trusted and the column is counted again.
    let p = dir.path().join("gaps.parquet");
    split_case(&p, 30, 200_000, |rg| rg % 3 == 1);
    let p = p.to_str().unwrap();
    for threads in ["1", "2"] {
        let fast = json(&["keys", p, "-c", "k", "--threads", threads]);
        let exact = json(&["keys", p, "-c", "k", "--threads", threads, "--exact-distinct"]);
        assert_eq!(fast, exact, "threads {threads}");
        assert_eq!(fast["columns"][0]["distinct_exact"], true);
    }
}

/// A sample splits its dictionary chunks from the first row group on (see `split`): its
/// sampled counts, scaled counts, shares and error bounds are those of the sample counted
/// with every value exact; where the split cannot prove its top, the sample is counted again.
/// The cold values come from a pool of 2,000, so a thread's exact table never reaches the
/// 16,384 values after which a full count starts splitting: the estimate shows the split ran.
#[test]
fn sampled_split_counts_equal_the_exact_sample() {
    let dir = tempfile::tempdir().unwrap();
    for (name, light_hot) in
        [("skewed", (|_| false) as fn(usize) -> bool), ("gaps", |rg| rg % 3 == 1)]
    {
        let p = dir.path().join(format!("{name}.parquet"));
        // 40 row groups: a sample of 25% reads 10 of them whole.
        split_case(&p, 40, 2_000, light_hot);
        let p = p.to_str().unwrap();
        for threads in ["1", "2"] {
            let args =
                ["keys", p, "-c", "k", "--threads", threads, "--sample", "0.25", "--seed", "7"];
            let fast = json(&args);
            let exact = json(&[&args[..], &["--exact-distinct"]].concat());
            let (f, e) = (&fast["columns"][0], &exact["columns"][0]);
            assert_eq!(f["sample"]["method"], "whole row groups", "{name}");
            assert_eq!(f["sample"]["row_groups_read"], 10, "{name}");
            assert_eq!(e["distinct_estimate"], false, "{name}");
            if name == "skewed" {
                assert_eq!(
                    f["distinct_estimate"], true,
                    "{name}, threads {threads}: the sample was split"
                );
            } else {
                // Hot values light in some sampled row groups: counted again, every value exact.
                assert_eq!(fast, exact, "{name}, threads {threads}");
            }
            assert_eq!(f["top"], e["top"], "{name}, threads {threads}");
            assert_eq!(
                (f["rows"].clone(), f["nulls"].clone(), f["sample"].clone()),
                (e["rows"].clone(), e["nulls"].clone(), e["sample"].clone())
            );
            let (fd, ed) = (f["distinct"].as_f64().unwrap(), e["distinct"].as_f64().unwrap());
            assert!((fd - ed).abs() / ed < 0.03, "{name}: distinct {fd} against {ed}");
        }
    }
    // The text says the sample's distinct count is an estimate.
    let p = dir.path().join("skewed.parquet");
    let out = skewjoin()
        .args(["keys", p.to_str().unwrap(), "-c", "k", "--sample", "0.25", "--seed", "7"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().next().unwrap().ends_with("distinct in the sample (estimate)"), "{text}");
}

/// Like `split_case`, with names of one length (`hot-000000`, `cld-000000`, 10 bytes) and
/// `extra(rg)` rows added to each row group; written uncompressed, so that a dictionary value
/// can be renamed in place.
fn dup_case(
    path: &Path,
    extra: impl Fn(usize) -> Vec<(&'static str, usize)>,
) -> std::collections::HashMap<String, u64> {
    let mut rnd = xorshift(0x853c_49e6_748f_ea9b);
    let mut vals: Vec<String> = Vec::new();
    let mut rgs = Vec::new();
    for rg in 0..30 {
        let start = vals.len();
        for _ in 0..20_000 {
            let u = rnd() % 1000;
            // Hot values skewed toward hot-000000: the index is 60 x^3 for x uniform in [0, 1).
            let x = (rnd() % 1_000_000) as f64 / 1e6;
            // hot-000002 comes only from `extra`.
            let i = match (60.0 * x * x * x) as u64 {
                2 => 3,
                i => i,
            };
            vals.push(if u < 300 {
                format!("cld-{:06}", 100 + rnd() % 200_000)
            } else {
                format!("hot-{i:06}")
            });
        }
        for (v, n) in extra(rg) {
            vals.extend(std::iter::repeat_n(v.to_string(), n));
        }
        rgs.push(vals.len() - start);
    }
    let mut counts = std::collections::HashMap::new();
    for v in &vals {
        *counts.entry(v.clone()).or_insert(0) += 1;
    }
    // Row groups of exactly the rows written for each (`extra` varies their size).
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "k",
        arrow_schema::DataType::Utf8,
        false,
    )]));
    let props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::UNCOMPRESSED)
        .set_max_row_group_row_count(Some(1 << 20))
        .build();
    let mut at = 0;
    let mut batches = Vec::new();
    for n in rgs {
        batches.push(
            RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(StringArray::from(vals[at..at + n].to_vec())) as ArrayRef],
            )
            .unwrap(),
        );
        at += n;
    }
    write_row_groups(path, &batches, props);
    counts
}

/// Rename every `from` in the file's bytes to `to` (same length): a dictionary holding `to`
/// twice, as no common writer writes one.
fn rename_in_place(path: &Path, from: &str, to: &str) {
    let mut b = std::fs::read(path).unwrap();
    let (f, t) = (from.as_bytes(), to.as_bytes());
    let mut i = 0;
    let mut n = 0;
    while i + f.len() <= b.len() {
        if &b[i..i + f.len()] == f {
            b[i..i + f.len()].copy_from_slice(t);
            n += 1;
        }
        i += 1;
    }
    assert!(n > 0);
    std::fs::write(path, b).unwrap();
}

#[test]
fn split_counts_see_a_value_repeated_in_a_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    // A value with one row (light) in every row group renamed to a hot one: every dictionary
    // repeats it (the first split dictionary of the file is checked). And hot-000002 heavy in
    // row groups 0-19, light (one row) in 20-29, and repeated in 10-19 by a renamed value with
    // 500 rows: heavy twice there, which would credit it for the row groups where it is light.
    type Extra = fn(usize) -> Vec<(&'static str, usize)>;
    let cases: [(&str, Extra, &str, &str); 2] = [
        (
            "light.parquet",
            |_| vec![("cld-000007", 1), ("hot-000002", 500)],
            "cld-000007",
            "hot-000001",
        ),
        (
            "heavy.parquet",
            |rg| match rg {
                0..10 => vec![("hot-000002", 500)],
                10..20 => vec![("hot-000002", 500), ("cld-000008", 500)],
                _ => vec![("hot-000002", 1)],
            },
            "cld-000008",
            "hot-000002",
        ),
    ];
    for (name, extra, from, to) in cases {
        let p = dir.path().join(name);
        let counts = dup_case(&p, extra);
        rename_in_place(&p, from, to);
        let want = counts[from] + counts[to];
        let p = p.to_str().unwrap();
        for threads in ["1", "2"] {
            let exact = json(&["keys", p, "-c", "k", "--threads", threads, "--exact-distinct"]);
            let fast = json(&["keys", p, "-c", "k", "--threads", threads]);
            let got = exact["columns"][0]["top"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["value"] == to)
                .map(|t| t["count"].as_u64().unwrap());
            assert_eq!(got, Some(want), "{name}: exact count of {to}");
            assert_eq!(
                top_counts(&fast["columns"][0]),
                top_counts(&exact["columns"][0]),
                "{name} threads {threads}"
            );
        }
    }
}

/// `plan`'s pass over every row (rows per Spark partition, NULL rows, the hot values' rows)
/// reads a string key from its pages; it must give what the Arrow reader gives, on v1 and v2
/// pages, dictionaries that fall back to plain pages, NULLs and several row groups.
#[test]
fn plan_pass_from_pages_equals_the_arrow_pass() {
    use parquet::file::properties::WriterVersion;
    let dir = tempfile::tempdir().unwrap();
    let n = 40_000;
    let keys: Vec<Option<String>> = (0..n)
        .map(|i| match i % 10 {
            0..=2 => None,
            3 | 4 => Some("hot".to_string()),
            5 => Some("unknown".to_string()),
            _ => Some(format!("k{}", (i * 7919) % if i < 20_000 { 300 } else { 9000 })),
        })
        .collect();
    let right: Vec<Option<String>> =
        (0..300).map(|i| Some(format!("k{i}"))).chain([Some("hot".to_string()), None]).collect();
    let r = dir.path().join("right.parquet");
    write_in_groups(&r, vec![("k", Arc::new(StringArray::from(right)) as ArrayRef)], 1000);
    for (name, version, dict_limit) in [
        ("v1.parquet", WriterVersion::PARQUET_1_0, 1 << 20),
        ("v2.parquet", WriterVersion::PARQUET_2_0, 1 << 20),
        ("plain.parquet", WriterVersion::PARQUET_1_0, 4096),
    ] {
        let p = dir.path().join(name);
        let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "k",
            arrow_schema::DataType::Utf8,
            true,
        )]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(StringArray::from(keys.clone())) as ArrayRef],
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_dictionary_page_size_limit(dict_limit)
            .set_data_page_row_count_limit(2000)
            .set_max_row_group_row_count(Some(15_000))
            .build();
        write_batch(&p, &batch, props);
        for how in ["left", "inner", "full"] {
            let args = [
                "plan",
                "--left",
                p.to_str().unwrap(),
                "--right",
                r.to_str().unwrap(),
                "--on",
                "k",
                "--how",
                how,
                "--shuffle-partitions",
                "16",
                "--format",
                "json",
            ];
            let pages = skewjoin().args(args).output().unwrap();
            let arrow = skewjoin().args(args).env("SKEWJOIN_ARROW_ONLY", "1").output().unwrap();
            assert!(pages.status.success(), "{}", String::from_utf8_lossy(&pages.stderr));
            // The same report; only the column chunks each path decoded differ.
            let report = |out: &[u8]| -> Value {
                let mut j: Value = serde_json::from_slice(out).unwrap();
                j.as_object_mut().unwrap().remove("column_chunks");
                j
            };
            assert_eq!(report(&pages.stdout), report(&arrow.stdout), "{name} {how}");
            let j: Value = serde_json::from_slice(&pages.stdout).unwrap();
            assert!(
                j["hot_keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|h| h["display"] == "'hot'" || h["value"] == "hot"),
                "{name} {how}: {}",
                j["hot_keys"]
            );
        }
    }
}

/// `--tables DIR`: the query's tables found by name (case ignored, `name.parquet`, Spark's
/// `db.db/name`); `--table` wins; a table not found is listed on stderr in one line.
#[test]
fn tables_found_under_a_folder() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("media.db")).unwrap();
    std::fs::copy("samples/titles.parquet", d.path().join("media.db/titles.parquet")).unwrap();
    std::fs::copy("samples/events.parquet", d.path().join("EVENTS.parquet")).unwrap();
    let q = d.path().join("q.sql");
    std::fs::write(&q, "SELECT t.genre, count(*) FROM events e, media.titles t, nope n WHERE e.title_id = t.title_id AND n.x = e.user_id GROUP BY 1").unwrap();
    let dir = d.path().to_str().unwrap();
    let out = skewjoin()
        .args([
            "rewrite",
            q.to_str().unwrap(),
            "--tables",
            dir,
            "--broadcast-threshold",
            "256KB",
            "--min-gain",
            "off",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().any(|l| l.ends_with("(nor given with --table): nope")), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The join of events and titles is planned; the one with the missing table is left alone.
    assert_eq!(v["changes"].as_array().unwrap().len(), 1, "{v}");
    assert!(
        v["unchanged_joins"].to_string().contains("table n was not given")
            || v["unchanged_joins"].to_string().contains("nope"),
        "{v}"
    );
    // Neither flag: one line naming both.
    let e = error(&["rewrite", q.to_str().unwrap()]);
    assert_eq!(e.code, "usage", "{e:?}");
}

/// Cargo has no wildcard for per-package profiles, so every polars crate needs its own
/// `[profile.dev.package.NAME] opt-level = 0` (see Cargo.toml). One went missing once and the
/// test build took 17 minutes longer: every `polars*` package of Cargo.lock must have one.
#[test]
fn every_polars_crate_is_built_without_optimisation_in_debug() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Table =
        std::fs::read_to_string(root.join("Cargo.toml")).unwrap().parse().unwrap();
    let lock: toml::Table =
        std::fs::read_to_string(root.join("Cargo.lock")).unwrap().parse().unwrap();
    let overrides = &manifest["profile"]["dev"]["package"];
    let missing: Vec<&str> = lock["package"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .filter(|n| *n == "polars" || n.starts_with("polars-"))
        .filter(|n| {
            overrides.get(*n).and_then(|o| o.get("opt-level")).and_then(|l| l.as_integer())
                != Some(0)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "Cargo.toml lacks [profile.dev.package.NAME] opt-level = 0 for {missing:?}"
    );
}

/// With the job's settings (AQE on, sizes scaled to the samples), the sample query's join is
/// left as written: AQE broadcasts titles at run time. The reason has its code and times, the
/// settings are listed with where each came from, and `--min-gain off` rewrites it anyway.
#[test]
fn the_sample_join_is_left_to_aqe_under_the_jobs_settings() {
    let base = [
        "rewrite",
        "samples/query.sql",
        "--table",
        "events=samples/events.parquet",
        "--table",
        "titles=samples/titles.parquet",
        "--spark-defaults",
        "samples/scaled-down.conf",
        "--cores",
        "2",
        "--format",
        "json",
        "-q",
    ];
    let out = skewjoin().args(base).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["changes"].as_array().unwrap().len(), 0, "{v}");
    assert_eq!(v["unchanged_joins"][0]["decision"]["code"], "aqe_broadcasts_it", "{v}");
    let settings = v["settings"].as_array().unwrap();
    let threshold =
        settings.iter().find(|s| s["key"] == "spark.sql.autoBroadcastJoinThreshold").unwrap();
    assert_eq!(
        (&threshold["value"], &threshold["origin"], &threshold["from"]),
        (&json!("256k"), &json!("spark_defaults"), &json!("samples/scaled-down.conf"))
    );
    let forced = skewjoin().args(base).args(["--min-gain", "off"]).output().unwrap();
    let f: Value = serde_json::from_slice(&forced.stdout).unwrap();
    assert_eq!(f["changes"][0]["decision"]["code"], "rewrite", "{f}");
    assert_eq!(f["changes"][0]["decision"]["margin_off"], true, "{f}");
    assert!(f["changes"][0]["aqe"]["before"]["broadcast"] == "right", "{f}");
    // A setting Spark would not read is one line naming it and where it came from.
    let e = error(&[
        "plan",
        "--left",
        "samples/events.parquet",
        "--right",
        "samples/titles.parquet",
        "--on",
        "title_id",
        "--conf",
        "spark.sql.adaptive.enabled=yes",
    ]);
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        ("usage", "spark.sql.adaptive.enabled=yes: not true or false (--conf)")
    );
}

/// `--also-text FILE` writes the text report of the same run beside the JSON on stdout, on
/// every command: the text is what `--format text` (table, sql) prints.
#[test]
fn also_text_writes_the_text_report_of_the_same_run() {
    let d = tempfile::tempdir().unwrap();
    let ev = events(d.path());
    let ev = ev.to_str().unwrap();
    let text = d.path().join("report.txt");
    let text_arg = text.to_str().unwrap();
    let sql = d.path().join("q.sql");
    std::fs::write(&sql, "SELECT * FROM a JOIN b ON a.title_id = b.title_id").unwrap();
    let (a, b) = (format!("a={ev}"), format!("b={ev}"));
    let runs: [(&[&str], &[&str]); 3] = [
        (&["keys", ev, "-c", "title_id", "-q"], &["--format", "table"]),
        (&["plan", "--left", ev, "--right", ev, "--on", "title_id", "-q"], &["--format", "text"]),
        (
            &["rewrite", sql.to_str().unwrap(), "--table", &a, "--table", &b, "-q"],
            &["--format", "sql"],
        ),
    ];
    for (args, text_format) in runs {
        let out = skewjoin()
            .args(args)
            .args(["--format", "json", "--also-text", text_arg])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap();
        let plain = skewjoin().args(args).args(text_format).output().unwrap();
        assert_eq!(
            std::fs::read_to_string(&text).unwrap(),
            String::from_utf8_lossy(&plain.stdout),
            "{args:?}"
        );
    }
    let e = error(&["keys", ev, "-c", "title_id", "--also-text", "/nonexistent/dir/report.txt"]);
    assert!(e.message.starts_with("/nonexistent/dir/report.txt"), "{e:?}");
}

/// The layering of `src/`: no circle of imports between folders or inside `table/`, and
/// planning imports nothing of the keys command (`scripts/import-graph`, which says which).
#[test]
fn no_import_circles_between_folders() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3").arg(root.join("scripts/import-graph")).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
}

/// `plan --counts`: the counts a Spark session made (skewjoin.spark.skew_join's JSON) planned as
/// a join of tables is, with the fix as code; counts for other partitions, or a key with no
/// column, are one-line errors.
#[test]
fn plan_from_counts_made_on_spark_and_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let side = |name: &str, rows: [u64; 4], hot: u64| {
        json!({"name": name, "keys": ["k"], "columns": [["k", "string"], ["v", "bigint"]],
               "rows": rows.iter().sum::<u64>(), "size_bytes": 20 * rows.iter().sum::<u64>(),
               "map_tasks": 2, "partition_rows": rows, "null_partition_rows": [0, 0, 0, 0],
               "key_rows": [hot]})
    };
    let counts = json!({"partitions": 4, "candidates": [["hot"]],
                        "left": side("events", [900, 30, 40, 30], 880), "right": side("titles", [10, 10, 10, 10], 1)});
    let path = dir.path().join("counts.json");
    std::fs::write(&path, counts.to_string()).unwrap();
    let p = path.to_str().unwrap();
    let common = ["--on", "k", "--how", "left", "--shuffle-partitions", "4", "--min-gain", "off"];
    let out = json(&[&["plan", "--counts", p, "--emit", "pyspark"], &common[..]].concat());
    assert_eq!(out["hot_keys"][0]["value"], "hot", "{out}");
    assert_eq!(out["left"]["table"], "the DataFrame events");
    let code = out["code"]["text"].as_str().unwrap();
    assert!(out["code"]["rewrites"].as_bool().unwrap(), "{out}");
    assert!(
        code.contains("def events_join_titles(events: DataFrame, titles: DataFrame)"),
        "{code}"
    );
    assert!(code.contains("joined = events_join_titles(events, titles)"), "{code}");
    let err = error(&["plan", "--counts", p, "--on", "k", "--shuffle-partitions", "8"]);
    assert_eq!(err.code, "usage", "{err:?}");
    std::fs::write(
        &path,
        counts
            .to_string()
            .replace("[\"k\", \"string\"]", "[\"x\", \"string\"]")
            .replace("[\"k\",\"string\"]", "[\"x\",\"string\"]"),
    )
    .unwrap();
    let err = error(&[&["plan", "--counts", p], &common[..]].concat());
    assert_eq!(err.code, "usage", "{err:?}");
}
