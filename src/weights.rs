//! How many rows of a chain of joins each row of one of its tables makes: the weight of a row
//! is a product of factors, one per join that table takes part in, each looked up by the row's
//! values of that join's columns in the matching rows the other side brings (which are in turn
//! weighted by the joins beyond it). For `A JOIN B ON a.x = b.x`, a row of B with x = v appears
//! in as many rows of the join as A has rows with x = v; the rows of the join with b.y = w are
//! then the sum of those weights over B's rows with y = w, exactly.
//!
//! The maps come from `filter::sum_by` over the other tables; `filter::filtered_keys` applies
//! the weights to the counted table by writing each row as many times as it appears.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};

use crate::value::KeyType;

/// Matching rows per join-column value (encoded by `count::group_keys`).
pub type Matches = hashbrown::HashMap<Vec<u8>, u64>;

/// What a join does to a row of the side whose weight this factor is part of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactorKind {
    /// An inner join: the row appears once per matching row, not at all without one.
    Inner,
    /// A left join keeping this row: once per matching row, once without one.
    KeepUnmatched,
    /// A semi join: once if some row matches.
    Semi,
    /// An anti join: once if no row matches (a NULL matches nothing).
    Anti,
}

/// One join's factor: the row's values of `columns` looked up in `matches`.
#[derive(Clone, Debug)]
pub struct Factor {
    /// The columns of the weighted table, as its files name them.
    pub columns: Vec<String>,
    pub types: Vec<KeyType>,
    pub matches: Arc<Matches>,
    pub kind: FactorKind,
}

impl Factor {
    /// The factor of a row with `m` matching rows (0 when a join column is NULL).
    fn of(&self, m: u64) -> u64 {
        match self.kind {
            FactorKind::Inner => m,
            FactorKind::KeepUnmatched => m.max(1),
            FactorKind::Semi => u64::from(m > 0),
            FactorKind::Anti => u64::from(m == 0),
        }
    }
}

/// The weight of each row of one table in the joins before a join.
#[derive(Clone, Debug, Default)]
pub struct RowWeights {
    pub factors: Vec<Factor>,
    /// The joins as written, for the reports.
    pub joins: String,
}

impl RowWeights {
    /// The columns the factors read, each once (lower case).
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in self.factors.iter().flat_map(|f| f.columns.iter()) {
            let c = c.to_ascii_lowercase();
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }

    /// The weight of each row of `batch`, which holds the factors' columns (by name, case
    /// ignored).
    pub fn of_batch(&self, batch: &RecordBatch) -> std::result::Result<Vec<u64>, String> {
        let mut w = vec![1u64; batch.num_rows()];
        for f in &self.factors {
            let cols: Vec<ArrayRef> = f.columns.iter().map(|c| column(batch, c)).collect::<std::result::Result<_, _>>()?;
            crate::count::each_group_key(&cols, &f.types, |row, key| {
                let null = cols.iter().any(|a| a.is_null(row));
                let m = if null { 0 } else { f.matches.get(key).copied().unwrap_or(0) };
                w[row] = w[row].saturating_mul(f.of(m));
            })?;
        }
        Ok(w)
    }
}

fn column(batch: &RecordBatch, name: &str) -> std::result::Result<ArrayRef, String> {
    let schema = batch.schema();
    let i = schema.fields().iter().position(|f| f.name().eq_ignore_ascii_case(name)).ok_or_else(|| format!("no column {name}"))?;
    Ok(batch.column(i).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field, Schema};

    fn matches(pairs: &[(i64, u64)]) -> Arc<Matches> {
        let arr: ArrayRef = Arc::new(Int64Array::from(pairs.iter().map(|p| p.0).collect::<Vec<_>>()));
        let keys = crate::count::group_keys(&[arr], &[KeyType::BigInt]).unwrap();
        Arc::new(keys.into_iter().zip(pairs.iter().map(|p| p.1)).collect())
    }

    #[test]
    fn each_kind_of_join_weighs_a_row_as_spark_joins_it() {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        let x: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(3)]));
        let batch = RecordBatch::try_new(schema, vec![x]).unwrap();
        let m = matches(&[(1, 3), (2, 1)]);
        let weigh = |kind| {
            let f = Factor { columns: vec!["X".into()], types: vec![KeyType::BigInt], matches: m.clone(), kind };
            RowWeights { factors: vec![f], joins: String::new() }.of_batch(&batch).unwrap()
        };
        assert_eq!(weigh(FactorKind::Inner), vec![3, 1, 0, 0]);
        assert_eq!(weigh(FactorKind::KeepUnmatched), vec![3, 1, 1, 1]);
        assert_eq!(weigh(FactorKind::Semi), vec![1, 1, 0, 0]);
        assert_eq!(weigh(FactorKind::Anti), vec![0, 0, 1, 1]);
        let two = RowWeights {
            factors: vec![
                Factor { columns: vec!["x".into()], types: vec![KeyType::BigInt], matches: m.clone(), kind: FactorKind::Inner },
                Factor { columns: vec!["x".into()], types: vec![KeyType::BigInt], matches: m.clone(), kind: FactorKind::KeepUnmatched },
            ],
            joins: String::new(),
        };
        assert_eq!(two.of_batch(&batch).unwrap(), vec![9, 1, 0, 0]);
    }
}
