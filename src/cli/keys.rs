//! `skewjoin keys`: the top values of one or more key columns of one table, counted.

use clap::{Args, ValueEnum};

use skewjoin::classify::Classifier;
use skewjoin::count::{ColumnProfile, KeySpec, ProfileOptions};
use skewjoin::keys::report;
use skewjoin::keys::{self, KeysOptions};
use skewjoin::stats::RunStats;
use skewjoin::table::Table;
use skewjoin::{Error, Result};

use super::flags::{parse_size, AlsoText, CountingArgs, HotKeyArgs, Quiet, Threads};

/// Top key values of one or more columns: counts, NULLs, shares, classes and Spark partitions
#[derive(Args)]
pub struct KeysArgs {
    /// Parquet file, folder (recursive, Hive k=v folders understood) or glob; several are read as
    /// one table. With --engine spark, one path or catalog name
    #[arg(required = true, value_name = "TABLE")]
    tables: Vec<String>,
    /// Key column to count; `a,b` counts the composite key (a, b). Repeat for several keys
    #[arg(short, long = "column", value_name = "COL", required = true)]
    columns: Vec<String>,
    #[command(flatten)]
    hot: HotKeyArgs,
    #[command(flatten)]
    counting: CountingArgs,
    /// Memory for the staged keys; past it they spill to a temporary file (in TMPDIR) and are
    /// read back, so the counts stay exact (--verbose says how much spilled)
    #[arg(long, default_value = "96MB", value_name = "SIZE", value_parser = parse_size)]
    memory: u64,
    /// Count the distinct values exactly. Without it, a string key with many distinct values
    /// gets exact top counts and an estimated distinct count (HyperLogLog, said in the
    /// output), which is much faster
    #[arg(long)]
    exact_distinct: bool,
    /// Read a Delta table as of this version, an Iceberg table as of this snapshot id (default: the
    /// newest)
    #[arg(long, value_name = "VERSION")]
    as_of: Option<i64>,
    /// Output format
    #[arg(long, value_enum, default_value_t = KeysFormat::Table)]
    format: KeysFormat,
    #[command(flatten)]
    threads: Threads,
    #[command(flatten)]
    quiet: Quiet,
    #[command(flatten)]
    also_text: AlsoText,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum KeysFormat {
    Table,
    Json,
    Csv,
}

pub fn run(a: KeysArgs) -> Result<String> {
    a.threads.apply();
    let hot_factor = a.hot.hot_factor()?;
    // The rules compile while the footers are read, and the built-in ones (which cannot fail)
    // while the keys are counted too; a --rules file is checked before the count starts.
    std::thread::scope(|scope| {
        let handle = scope.spawn(|| Classifier::with_file(a.hot.rules.as_deref()));
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<Classifier>>| {
            h.join()
                .unwrap_or_else(|_| Err(Error::Internal("the rules could not be compiled".into())))
        };
        let stats = RunStats::new();
        let (table, session) = match a.counting.session(a.hot.sample.is_some(), &stats) {
            Ok(s) => (a.counting.open(s.as_ref(), &a.tables, a.as_of, &stats), s),
            Err(e) => (Err(e), None),
        };
        enum Rules<C, H> {
            Ready(C),
            Compiling(H),
        }
        let rules = if a.hot.rules.is_some() || table.is_err() {
            Rules::Ready(join(handle)?)
        } else {
            Rules::Compiling(handle)
        };
        let table = table?;
        let profiles = count_keys(&a, &table, &CountingArgs::engine(session.as_ref()));
        // Joined on every path: a scope re-raises the panic of a thread nobody joined.
        let classifier = match rules {
            Rules::Ready(c) => Ok(c),
            Rules::Compiling(h) => join(h),
        };
        let (profiles, classifier) = (profiles?, classifier?);
        let rep = keys::report(
            profiles,
            &classifier,
            &KeysOptions { partitions: a.hot.shuffle_partitions.unwrap_or(200), hot_factor },
        );
        let text = || {
            report::table(&rep) + &skewjoin::footer::table_notes(&stats) + &a.quiet.io_line(&stats)
        };
        a.also_text.write(text)?;
        Ok(match a.format {
            KeysFormat::Table => text(),
            KeysFormat::Json => skewjoin::footer::json(&rep, &stats),
            KeysFormat::Csv => report::csv(&rep),
        })
    })
}

/// The key columns, counted.
fn count_keys(
    a: &KeysArgs,
    table: &Table,
    engine: &skewjoin::count::EngineRef,
) -> Result<Vec<ColumnProfile>> {
    let specs = a
        .columns
        .iter()
        .map(|c| {
            let names: Vec<&str> = c.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            if names.is_empty() {
                return Err(Error::Usage(format!("empty --column {c:?}")));
            }
            let columns = names.iter().map(|n| table.resolve(n)).collect::<Result<Vec<_>>>()?;
            Ok(KeySpec { columns })
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = ProfileOptions {
        top: a.hot.top,
        sample: a.hot.sample,
        seed: a.hot.seed,
        memory: a.memory as usize,
        progress: a.quiet.bars(&table.stats),
        exact_distinct: a.exact_distinct,
    };
    engine.profile(table, &specs, &opts)
}
