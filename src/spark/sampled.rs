//! A key's profile from a sample that Spark drew (the driver's `Sample`: whole files, or rows
//! at random): the counts scaled to the table, and each share's 95% interval computed from the
//! units read (the files, or the one pool of random rows) by the embedded engine's own
//! statistics (`count::share_error`), so that both engines state their errors alike.

use hashbrown::HashMap;
use serde_json::Value as Json;

use crate::count::{share, share_error, tally_key, ColumnProfile, SampleInfo, UnitTally};

/// `counted` (the sample's counts, as Spark answered them: the top keys' rows, NULL rows and
/// distinct keys among the rows read, and the table's rows) as the table's estimate, with the
/// sample `drawn` described.
pub fn profile(counted: ColumnProfile, drawn: &Json) -> ColumnProfile {
    let rows_read = drawn["rows_read"].as_u64().unwrap_or(0);
    let rows = counted.rows;
    let scale = if rows_read == 0 { 1.0 } else { rows as f64 / rows_read as f64 };
    let info = SampleInfo {
        method: drawn["method"].as_str().unwrap_or("a sample").to_string(),
        rows_read,
        fraction: share(rows_read, rows),
        row_groups_read: 0,
        row_groups_total: 0,
        pages_read: None,
        pages_total: None,
        pages_column: None,
        files_read: drawn["units_read"].as_u64().map(|n| n as usize),
        files_total: drawn["units_total"].as_u64().map(|n| n as usize),
    };
    let types = counted.spec.types();
    let tallies = unit_tallies(drawn, &counted, &types);
    let tallied: Vec<&UnitTally> = tallies.iter().collect();
    let top = counted
        .top
        .into_iter()
        .map(|mut k| {
            let n = k.count;
            k.share = share(n, rows_read);
            k.share_error = Some(share_error(&k.key, &types, &tallied, k.share, &info, rows_read));
            k.sample_count = Some(n);
            k.count = (n as f64 * scale).round() as u64;
            k
        })
        .collect();
    ColumnProfile {
        rows_read,
        nulls: (counted.nulls as f64 * scale).round() as u64,
        // The sample's distinct values: a lower bound of the table's, not an estimate of it.
        distinct_exact: false,
        distinct_estimate: false,
        counts_exact: false,
        top,
        sample: Some(info),
        ..counted
    }
}

/// The units read, as the embedded sampler tallies its own: rows, NULL rows, and the rows of
/// each top key (in the order of `counted.top`).
fn unit_tallies(
    drawn: &Json,
    counted: &ColumnProfile,
    types: &[crate::value::KeyType],
) -> Vec<UnitTally> {
    let keys: Vec<Option<Vec<u8>>> = counted.top.iter().map(|k| tally_key(&k.key, types)).collect();
    drawn["units"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|u| {
            let mut counts = HashMap::new();
            let per_key = u["counts"].as_array().into_iter().flatten();
            for (key, n) in keys.iter().zip(per_key) {
                if let Some(k) = key {
                    *counts.entry(k.clone()).or_insert(0) += n.as_u64().unwrap_or(0);
                }
            }
            UnitTally {
                nulls: u["nulls"].as_u64().unwrap_or(0),
                counts,
                ..UnitTally::new(
                    u["rows"].as_u64().unwrap_or(0),
                    u["table_rows"].as_u64().unwrap_or(0),
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::{KeyCount, KeySpec};
    use crate::table::{ColumnSource, ResolvedColumn};
    use crate::value::{KeyType, Value};
    use serde_json::json;

    /// 4 of 40 files of 1,000 rows: value 7 in 200, 260, 180 and 240 of their rows.
    fn drawn() -> (ColumnProfile, Json) {
        let spec = KeySpec {
            columns: vec![ResolvedColumn {
                name: "k".into(),
                key_type: KeyType::BigInt,
                source: ColumnSource::Data { index: 0 },
            }],
        };
        let top = vec![KeyCount {
            key: vec![Value::Long(7)],
            count: 880,
            sample_count: None,
            share: 0.0,
            share_error: None,
        }];
        let counted = ColumnProfile {
            spec,
            rows: 40_000,
            rows_read: 40_000,
            nulls: 40,
            distinct: 500,
            distinct_exact: true,
            distinct_estimate: false,
            counts_exact: true,
            count_error: 0,
            top,
            sample: None,
        };
        let unit = |n: u64| json!({"rows": 1000, "table_rows": 1000, "nulls": 10, "counts": [n]});
        let units = vec![unit(200), unit(260), unit(180), unit(240)];
        let drawn = json!({"method": "whole files", "rows_read": 4000, "units_read": 4,
                           "units_total": 40, "units": units});
        (counted, drawn)
    }

    #[test]
    fn a_sample_of_whole_files_is_scaled_with_its_interval() {
        let (counted, drawn) = drawn();
        let p = profile(counted, &drawn);
        let s = p.sample.as_ref().unwrap();
        assert_eq!((s.files_read, s.files_total, s.rows_read), (Some(4), Some(40), 4000));
        assert!((s.fraction - 0.1).abs() < 1e-12);
        let k = &p.top[0];
        assert_eq!((k.count, k.sample_count), (8_800, Some(880)));
        assert!((k.share - 0.22).abs() < 1e-12);
        // The files' shares spread 0.18-0.26: Student's t with 3 degrees of freedom over them.
        let err = k.share_error.unwrap();
        assert!(err > 0.04 && err < 0.07, "{err}");
        assert_eq!(p.nulls, 400);
        assert!(!p.counts_exact && !p.distinct_exact && p.distinct == 500);
    }

    #[test]
    fn a_row_sample_has_the_binomial_interval() {
        let (counted, _) = drawn();
        let drawn = json!({"method": "rows drawn at random", "rows_read": 4000,
                           "units": [{"rows": 4000, "table_rows": 40000, "nulls": 40, "counts": [880]}]});
        let p = profile(counted, &drawn);
        let err = p.top[0].share_error.unwrap();
        // Never below the binomial half-width (the finite population correction aside).
        let binomial = 1.96 * (0.22f64 * 0.78 / 4000.0).sqrt();
        assert!((err - binomial).abs() < 1e-9, "{err} vs {binomial}");
        assert_eq!(p.sample.unwrap().files_read, None);
    }
}
