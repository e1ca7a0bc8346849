//! Error bounds of a share estimated from a sample: the half-width of its 95% interval, from
//! the spread of the value's share across the sampled units (row groups, pages, or the Spark
//! engine's files: cluster sampling, with Student's t and the finite population correction),
//! never below the binomial one.

use super::encode::tally_key;
use super::tally::UnitTally;
use super::SampleInfo;
use crate::value::{KeyType, Value};

/// Half-width of the 95% interval of `share`, the share of `key` among the `n` rows of a
/// sample read in the units `tallies`: cluster sampling for whole row groups or pages; for row
/// selections, the larger of the stratified one within row groups and the spread between the
/// row groups read.
pub(crate) fn share_error(
    key: &[Value],
    types: &[KeyType],
    tallies: &[&UnitTally],
    share: f64,
    info: &SampleInfo,
    n: u64,
) -> f64 {
    let enc = tally_key(key, types);
    // A single-column NULL is tallied apart, as each unit's NULL rows.
    let count_in = |t: &UnitTally| -> f64 {
        match &enc {
            Some(k) => t.counts.get(k).copied().unwrap_or(0) as f64,
            None => t.nulls as f64,
        }
    };
    let spread = Spread { count_in: &count_in, share, n: n.max(1) as f64 };
    if info.method.starts_with("whole") {
        spread.whole_units(tallies, info)
    } else {
        spread.row_runs(tallies, info)
    }
}

/// One value's share of a sample of `n` rows, and its rows in each sampled unit.
struct Spread<'a> {
    count_in: &'a dyn Fn(&UnitTally) -> f64,
    share: f64,
    n: f64,
}

impl Spread<'_> {
    /// The standard error as if the rows had been drawn one by one.
    fn binomial(&self) -> f64 {
        (self.share * (1.0 - self.share) / self.n).sqrt()
    }

    /// The half-width from the spread of the share over `units` taken as clusters (0 under
    /// two): Student's t with m - 1 degrees of freedom for m of them, `fpc` the finite
    /// population correction.
    fn cluster(&self, units: &[&UnitTally], fpc: f64) -> f64 {
        let m = units.len();
        if m < 2 {
            return 0.0;
        }
        let nbar = self.n / m as f64;
        let ss: f64 =
            units.iter().map(|t| ((self.count_in)(t) - self.share * t.rows as f64).powi(2)).sum();
        t975(m - 1) * (fpc.max(0.0) * ss / (m as f64 - 1.0) / (m as f64 * nbar * nbar)).sqrt()
    }

    /// Whole row groups or whole pages: the units are the clusters.
    fn whole_units(&self, tallies: &[&UnitTally], info: &SampleInfo) -> f64 {
        let (read, all) =
            match (info.pages_read, info.pages_total, info.files_read, info.files_total) {
                (Some(r), Some(a), _, _) => (r, a),
                (_, _, Some(r), Some(a)) => (r, a),
                _ => (info.row_groups_read, info.row_groups_total),
            };
        let fpc = 1.0 - read as f64 / all.max(1) as f64;
        let t = if tallies.len() < 2 { 1.96 } else { t975(tallies.len() - 1) };
        self.cluster(tallies, fpc).max(t * self.binomial())
    }

    /// Random runs of the row groups: stratified by row group, and the row groups read as
    /// clusters.
    fn row_runs(&self, tallies: &[&UnitTally], info: &SampleInfo) -> f64 {
        let se = {
            let total: f64 = tallies.iter().map(|t| t.table_rows as f64).sum::<f64>().max(1.0);
            let var: f64 = tallies
                .iter()
                .filter(|t| t.rows > 0)
                .map(|t| {
                    let w = t.table_rows as f64 / total;
                    let ph = (self.count_in)(t) / t.rows as f64;
                    let f = t.rows as f64 / t.table_rows.max(1) as f64;
                    w * w * ph * (1.0 - ph) / t.rows as f64 * (1.0 - f)
                })
                .sum();
            var.sqrt().max(self.binomial())
        };
        // The runs fall at random across the row groups, and a run's rows are often alike (sorted
        // or clustered data): besides the spread within each row group, the spread between the
        // row groups read (each the cluster of its drawn runs) bounds the error. The larger is
        // used.
        let read: Vec<&UnitTally> = tallies.iter().copied().filter(|t| t.rows > 0).collect();
        (1.96 * se).max(self.cluster(&read, 1.0 - info.fraction))
    }
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom (the half-width of a 95%
/// interval in standard errors): a table to 30, then the Cornish-Fisher expansion (within
/// 0.001 of the exact value there).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        _ => {
            let (z, d) = (1.959964f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * d)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::t975;

    #[test]
    fn student_t_quantiles() {
        // Exact values (R's qt(0.975, df)) and the normal limit.
        for (df, want) in [
            (1, 12.7062),
            (3, 3.1824),
            (9, 2.2622),
            (30, 2.0423),
            (31, 2.0395),
            (40, 2.0211),
            (60, 2.0003),
            (120, 1.9799),
            (1000, 1.9623),
        ] {
            assert!((t975(df) - want).abs() < 1e-3, "df {df}: {} vs {want}", t975(df));
        }
        assert!(t975(0).is_infinite());
        assert!((t975(1_000_000) - 1.95997).abs() < 1e-4);
        // Never below the normal quantile, and falling with df.
        for df in 1..500 {
            assert!(t975(df + 1) < t975(df) && t975(df + 1) > 1.959);
        }
    }
}
