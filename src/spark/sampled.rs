//! A key's profile from a sample that Spark drew (`counter.py`'s `Sample`: whole files, or rows
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
                rows: u["rows"].as_u64().unwrap_or(0),
                table_rows: u["table_rows"].as_u64().unwrap_or(0),
                nulls: u["nulls"].as_u64().unwrap_or(0),
                counts,
            }
        })
        .collect()
}
