//! Measuring a join: everything the decision needs, read from the two tables into one plain
//! value. The most frequent key values of each side (the hot candidates), then one exact pass
//! per side for the rows every shuffle partition receives and the rows of each candidate, and
//! the sides' sizes from their footers. `Measured` can also be built in memory from key counts
//! (`SideMeasure::from_counts`), which is how the planner's tests describe a join.

use crate::count::engine::WeightedSum;
use crate::count::filter::{self, Filtered};
use crate::count::{self, Engine, KeySpec, PartitionScan, ProfileOptions, TableSize};
use crate::error::{Error, Result};
use crate::hash::spark_partition;
use crate::table::Table;
use crate::value::{KeyType, Value};

use super::model::{PlanOptions, SideInput};

/// One side of the join as measured.
#[derive(Debug, Clone)]
pub struct SideMeasure {
    /// The name used in the emitted SQL and the report.
    pub name: String,
    /// The table as given (paths), for the report.
    pub table: String,
    pub keys: Vec<String>,
    pub key_types: Vec<KeyType>,
    /// Every column, in order (the select list of the emitted SQL).
    pub columns: Vec<String>,
    /// The columns Spark's `hash()` accepts, for a salt.
    pub hashable: Vec<String>,
    pub size: TableSize,
    /// Compressed bytes of the columns the query reads, from the footers: what each scan of the
    /// side decodes (a scan's time follows them more than its rows: docs/cost-model.md).
    pub read_bytes: u64,
    /// Rows per shuffle partition, NULL-keyed rows, and the rows of each candidate.
    pub scan: PartitionScan,
    /// The same, per map task of the shuffle that feeds the join.
    pub maps: MapOutputs,
    /// What its rows weigh in a shuffle, from a sample (None: not estimated; the decoded size
    /// per row stands in).
    pub shuffle: Option<count::shuffle_bytes::ShuffleBytes>,
    /// The conditions the counts applied, when the side has any.
    pub filter: Option<SideFilter>,
}

/// The conditions a side's counts applied (and the columns it groups by), and the rows before
/// and after them.
#[derive(Debug, Clone)]
pub struct SideFilter {
    /// The conditions, joined by AND; empty when the side only groups.
    pub conditions: String,
    /// The grouping columns, joined by `, `, when the side groups its rows.
    pub group_by: Option<String>,
    /// The joins before, as written, when the rows counted are theirs.
    pub joins: Option<String>,
    /// The table's rows.
    pub rows_in: u64,
    /// The rows that meet the conditions, or their groups.
    pub rows_out: u64,
    /// Of `rows_out`, the rows a left join before made with a NULL key (see `RowWeights`).
    pub outer_nulls: u64,
}

/// Where a side's shuffle rows come from, map task by map task: what bounds how finely AQE can
/// split a skewed partition.
#[derive(Debug, Clone)]
pub enum MapOutputs {
    /// Counted per map task: Spark's file splits of the table (`count::map_tasks`).
    Counted(Vec<PartitionScan>),
    /// Not counted (rows through earlier joins or an aggregate, a table Spark reads): taken as
    /// spread evenly over this many map tasks.
    Assumed(u32),
}

/// Both sides, measured for the same candidates and partition count.
#[derive(Debug, Clone)]
pub struct Measured {
    pub partitions: u32,
    /// The hot candidates, in the order `scan.key_rows` counts them: the most frequent
    /// non-NULL values of the left side, then the right side's not already listed.
    pub candidates: Vec<Vec<Value>>,
    pub left: SideMeasure,
    pub right: SideMeasure,
}

impl SideMeasure {
    pub fn bytes_per_row(&self) -> f64 {
        self.size.bytes_per_row()
    }

    /// What a scan of the side reads: every row of its table where conditions filter them
    /// (Spark reads them all to apply them), else the rows counted; and their bytes at the
    /// table's compressed bytes per row of the columns read.
    pub fn scan_size(&self) -> super::cost::Scan {
        let rows = self.filter.as_ref().map_or(self.scan.rows, |f| f.rows_in.max(self.scan.rows));
        let per_row = self.read_bytes as f64 / self.size.rows.max(1) as f64;
        let tasks = match &self.maps {
            // A split that starts no row group reads nothing: its task ends at once.
            MapOutputs::Counted(maps) => maps.iter().filter(|m| m.rows > 0).count() as u64,
            // Not counted: no bound (an engine that holds the table and the files here would
            // assume different numbers, and the decision must not depend on where it counts).
            MapOutputs::Assumed(_) => 0,
        };
        super::cost::Scan { rows, bytes: (rows as f64 * per_row) as u64, tasks }
    }

    /// Bytes per row as the shuffle writes them (compressed): of the rows of values that are
    /// not frequent, and of a hot value's; and before compression. The sample's estimate, else
    /// the decoded size for all three.
    pub fn shuffle_rates(&self) -> (f64, f64, f64) {
        match self.shuffle {
            Some(s) => (s.block_bytes, s.hot_block_bytes, s.row_bytes),
            None => (self.bytes_per_row(), self.bytes_per_row(), self.bytes_per_row()),
        }
    }

    /// A side described by its key counts (a NULL in any key column makes a NULL-keyed row):
    /// its partitions are Spark's for those values, its size `bytes_per_row` for each row on
    /// disk and in memory, and its columns the key columns and one value column `v`.
    pub fn from_counts(
        name: &str,
        keys: &[(&str, KeyType)],
        counts: &[(Vec<Value>, u64)],
        candidates: &[Vec<Value>],
        partitions: u32,
        bytes_per_row: u64,
    ) -> SideMeasure {
        let scan = scan_counts(counts, partitions, candidates);
        let columns: Vec<String> =
            keys.iter().map(|k| k.0.to_string()).chain(std::iter::once("v".to_string())).collect();
        let bytes = scan.rows * bytes_per_row;
        SideMeasure {
            name: name.into(),
            table: format!("{name}.parquet"),
            keys: keys.iter().map(|k| k.0.to_string()).collect(),
            key_types: keys.iter().map(|k| k.1).collect(),
            hashable: columns.clone(),
            columns,
            size: TableSize { rows: scan.rows, disk_bytes: bytes, memory_bytes: bytes },
            read_bytes: bytes,
            scan,
            maps: MapOutputs::Assumed(1),
            shuffle: None,
            filter: None,
        }
    }
}

impl Measured {
    /// One side.
    pub fn side(&self, side: super::model::Side) -> &SideMeasure {
        match side {
            super::model::Side::Left => &self.left,
            super::model::Side::Right => &self.right,
        }
    }

    /// Both sides from their key counts, the candidates chosen as `measure` chooses them from
    /// each side's `top` most frequent values.
    pub fn from_counts(
        left: (&str, &[(Vec<Value>, u64)]),
        right: (&str, &[(Vec<Value>, u64)]),
        key_type: KeyType,
        partitions: u32,
        top: usize,
    ) -> Measured {
        let most = |c: &[(Vec<Value>, u64)]| -> Vec<Vec<Value>> {
            let mut c: Vec<&(Vec<Value>, u64)> = c.iter().collect();
            c.sort_by_key(|x| std::cmp::Reverse(x.1));
            c.into_iter().take(top).map(|x| x.0.clone()).collect()
        };
        let cands = candidates(&most(left.1), &most(right.1));
        let keys = [("k", key_type)];
        Measured {
            partitions: partitions.max(1),
            left: SideMeasure::from_counts(left.0, &keys, left.1, &cands, partitions, 20),
            right: SideMeasure::from_counts(right.0, &keys, right.1, &cands, partitions, 20),
            candidates: cands,
        }
    }
}

/// How the candidate step counts a side's keys: the plan's top, sample and seed, with the
/// staged keys' memory at most the counting default (past it they spill).
fn profile_options(opts: &PlanOptions) -> ProfileOptions {
    ProfileOptions {
        top: opts.top.max(1),
        sample: opts.sample,
        seed: opts.seed,
        memory: opts.memory.min(crate::count::STAGE_MEMORY),
        progress: opts.progress.clone(),
        exact_distinct: false,
    }
}

/// Read both tables: candidates from each side's most frequent values, then each side's exact
/// partition scan for them, and the sizes.
pub fn measure(left: &SideInput, right: &SideInput, opts: &PlanOptions) -> Result<Measured> {
    check_keys(left, right)?;
    let parts = opts.partitions.max(1);
    let popts = profile_options(opts);
    let (l, r) =
        (Counted::of(left, &popts, &*opts.engine)?, Counted::of(right, &popts, &*opts.engine)?);
    let cands = candidates(&l.top, &r.top);
    let (lscan, rscan) = (l.scan(left, parts, &cands, opts)?, r.scan(right, parts, &cands, opts)?);
    let aqe = opts.aqe.enabled;
    Ok(Measured {
        partitions: parts,
        left: side(left, lscan, l.rows, aqe),
        right: side(right, rscan, r.rows, aqe),
        candidates: cands,
    })
}

/// One side's counts: of its table (or of the rows that pass its conditions, written out by
/// `filter::filtered_keys`), or, through the joins before it, each key value's rows in them.
struct Counted {
    source: Source,
    top: Vec<Vec<Value>>,
    /// (rows read, rows counted) when the counts are not of the whole table.
    rows: Option<(u64, u64)>,
}

enum Source {
    Table(Option<Filtered>),
    Weighted(Vec<(Vec<Value>, u64)>),
}

impl Counted {
    fn of(s: &SideInput, popts: &ProfileOptions, engine: &dyn Engine) -> Result<Counted> {
        if let Some(w) = &s.through {
            return Self::weighted(s, w, popts, engine);
        }
        // A side with conditions is counted on its passing rows' keys; sizes stay the table's,
        // as Spark's estimate for a filtered relation (without statistics) is the relation's.
        let f = filtered(s, engine)?;
        let (t, k) = f_src(s, &f);
        let top = engine
            .profile(t, std::slice::from_ref(k), popts)?
            .remove(0)
            .top
            .into_iter()
            .map(|kc| kc.key)
            .collect();
        let rows = f.as_ref().map(|f| (f.rows_in, f.rows_out));
        Ok(Counted { source: Source::Table(f), top, rows })
    }

    /// Each key value's rows in the joins before, from the key table's rows and their weights.
    fn weighted(
        s: &SideInput,
        w: &crate::count::weights::RowWeights,
        popts: &ProfileOptions,
        engine: &dyn Engine,
    ) -> Result<Counted> {
        let names = s.keys.names();
        let types = s.keys.types();
        let everything = filter::RowFilter::default();
        let sum = WeightedSum {
            by: &names,
            types: &types,
            filter: s.filter.as_ref().unwrap_or(&everything),
            weights: w,
            nulls: true,
        };
        let (sums, rows_in) = engine.weighted_sums(s.table, &sum)?;
        let sums = sums.into_matches();
        // Each value held costs about as much as one the counter holds.
        if sums.len().saturating_mul(64) > popts.memory {
            return Err(Error::Usage(format!(
                "{}: {} key values, more than --memory holds, to count through the joins before",
                s.name,
                sums.len()
            )));
        }
        // In the keys' byte order, so that ties in the top values are broken the same each run.
        let mut sums: Vec<(Vec<u8>, u64)> = sums.into_iter().collect();
        sums.sort_unstable();
        let mut counts: Vec<(Vec<Value>, u64)> =
            sums.into_iter().map(|(k, n)| (count::decode_key(&k, &types), n)).collect();
        if w.null_rows > 0 {
            let nulls = vec![Value::Null; types.len()];
            match counts.iter_mut().find(|(k, _)| *k == nulls) {
                Some((_, n)) => *n += w.null_rows,
                None => counts.push((nulls, w.null_rows)),
            }
        }
        let mut most: Vec<&(Vec<Value>, u64)> =
            counts.iter().filter(|(k, _)| !k.iter().any(Value::is_null)).collect();
        most.sort_by_key(|b| std::cmp::Reverse(b.1));
        let top = most.into_iter().take(popts.top.max(1)).map(|(k, _)| k.clone()).collect();
        let rows_out = counts.iter().map(|c| c.1).sum();
        Ok(Counted { source: Source::Weighted(counts), top, rows: Some((rows_in, rows_out)) })
    }

    /// Rows per shuffle partition, NULL-keyed rows and the candidates' rows, in all and, with
    /// AQE on, per map task.
    fn scan(
        &self,
        s: &SideInput,
        parts: u32,
        cands: &[Vec<Value>],
        opts: &PlanOptions,
    ) -> Result<(PartitionScan, MapOutputs)> {
        match &self.source {
            Source::Table(f) => {
                let (t, k) = f_src(s, f);
                if t.is_held() && s.group_by.is_none() && opts.aqe.enabled {
                    // A table Spark reads: its map tasks as that Spark cuts its files.
                    if let Some((scan, per_map)) =
                        opts.engine.scan_by_map_tasks(t, k, parts, cands)?
                    {
                        return Ok((scan, MapOutputs::Counted(per_map)));
                    }
                }
                if t.is_held() || s.group_by.is_some() || !opts.aqe.enabled {
                    // A table whose files are not known here: as many map tasks as partitions
                    // (an aggregate's output comes from that many tasks too).
                    let assumed = if t.is_held() || s.group_by.is_some() {
                        parts
                    } else {
                        t.files.len().max(1) as u32
                    };
                    return Ok((
                        opts.engine.scan(t, k, parts, cands)?,
                        MapOutputs::Assumed(assumed),
                    ));
                }
                let tasks =
                    map_tasks_of(s.table, f.as_ref().map(|f| &f.table), &opts.file_splits());
                let (scan, per_map) = count::scan_by_map(t, k, parts, cands, &tasks)?;
                Ok((scan, MapOutputs::Counted(per_map)))
            }
            // The rows of the joins before come out of their reduce tasks: as many as partitions.
            Source::Weighted(counts) => {
                Ok((scan_counts(counts, parts, cands), MapOutputs::Assumed(parts)))
            }
        }
    }
}

/// Spark's map tasks over `table`, as row groups of `filtered` (the passing rows' keys written
/// one file per file of `table`) when the counts are of those: each row group of a filtered
/// file goes to the task of the row group at the same place in its original file.
fn map_tasks_of(
    table: &Table,
    filtered: Option<&Table>,
    files: &crate::settings::FileSplits,
) -> Vec<count::map_tasks::MapTask> {
    let tasks = count::map_tasks::map_tasks(table, files);
    let Some(f) = filtered else { return tasks };
    let task_of: std::collections::HashMap<(usize, usize), usize> =
        tasks.iter().enumerate().flat_map(|(t, rgs)| rgs.iter().map(move |u| (*u, t))).collect();
    let mut out = vec![Vec::new(); tasks.len()];
    for (fi, file) in f.files.iter().enumerate().filter(|(fi, _)| *fi < table.files.len()) {
        let (n, orig) = (
            file.meta.metadata().num_row_groups(),
            table.files[fi].meta.metadata().num_row_groups(),
        );
        for g in 0..n {
            let at = (fi, (g * orig) / n.max(1));
            if let Some(&t) = task_of.get(&at) {
                out[t].push((fi, g));
            }
        }
    }
    out
}

/// The partition scan of keys given with their rows (a NULL in any key column makes a
/// NULL-keyed row, sent where Spark's hash of the other columns sends it).
fn scan_counts(
    counts: &[(Vec<Value>, u64)],
    partitions: u32,
    candidates: &[Vec<Value>],
) -> PartitionScan {
    let n = partitions.max(1) as usize;
    let mut scan = PartitionScan {
        rows: 0,
        null_rows: 0,
        null_partition_rows: vec![0; n],
        partition_rows: vec![0; n],
        key_rows: vec![0; candidates.len()],
    };
    for (key, rows) in counts {
        let part = spark_partition(key, n as u32) as usize;
        scan.rows += rows;
        if key.iter().any(Value::is_null) {
            scan.null_rows += rows;
            scan.null_partition_rows[part] += rows;
            continue;
        }
        scan.partition_rows[part] += rows;
        if let Some(i) = candidates.iter().position(|c| c == key) {
            scan.key_rows[i] += rows;
        }
    }
    scan
}

/// Read one table for a window or an aggregate over its keys (or the rows of the joins it is
/// in, `input.through`): the candidates from its most frequent values, its exact partition
/// scan for them, and its sizes.
pub fn measure_one(
    input: &SideInput,
    opts: &PlanOptions,
) -> Result<(Vec<Vec<Value>>, SideMeasure)> {
    let parts = opts.partitions.max(1);
    let popts = profile_options(opts);
    let c = Counted::of(input, &popts, &*opts.engine)?;
    let cands = candidates(&c.top, &[]);
    let scan = c.scan(input, parts, &cands, opts)?;
    Ok((cands, side(input, scan, c.rows, false)))
}

/// The side's passing rows (or their groups), when it has conditions or groups.
fn filtered(s: &SideInput, engine: &dyn Engine) -> Result<Option<Filtered>> {
    if s.filter.is_none() && s.group_by.is_none() {
        return Ok(None);
    }
    let everything = filter::RowFilter::default();
    engine
        .filtered_keys(
            s.table,
            &s.keys,
            s.filter.as_ref().unwrap_or(&everything),
            s.group_by.as_ref(),
        )
        .map(Some)
}

/// The table and keys to count: the filtered ones, or the side's own.
fn f_src<'a>(s: &'a SideInput, f: &'a Option<Filtered>) -> (&'a Table, &'a KeySpec) {
    match f {
        Some(f) => (&f.table, &f.keys),
        None => (s.table, &s.keys),
    }
}

/// `rows`: (rows read, rows counted) when the counts are not of the whole table.
/// `aqe`: its shuffle bytes are wanted (AQE decides on them).
fn side(
    s: &SideInput,
    (scan, maps): (PartitionScan, MapOutputs),
    rows: Option<(u64, u64)>,
    aqe: bool,
) -> SideMeasure {
    SideMeasure {
        name: s.name.clone(),
        table: s.table.display.clone(),
        keys: s.keys.names(),
        key_types: s.keys.types(),
        columns: s.table.column_names(),
        hashable: hashable_columns(s.table),
        size: TableSize::of(s.table),
        read_bytes: TableSize::read_bytes(s.table, read_columns(s).as_deref()),
        scan,
        maps,
        shuffle: s.keys.columns.first().filter(|_| aqe).and_then(|k| {
            count::shuffle_bytes::shuffle_bytes(s.table, &k.name, s.shuffled.as_deref())
        }),
        filter: rows.map(|(rows_in, rows_out)| SideFilter {
            conditions: s.filter.as_ref().map(|c| c.text()).unwrap_or_default(),
            group_by: s.group_by.as_ref().map(|g| g.names().join(", ")),
            joins: s.through.as_ref().map(|w| w.joins.clone()),
            rows_in,
            rows_out,
            outer_nulls: s.through.as_ref().map_or(0, |w| w.null_rows),
        }),
    }
}

/// The columns a scan of the side reads: those the query needs above the join, its keys and
/// its conditions' (None: every column).
fn read_columns(s: &SideInput) -> Option<Vec<String>> {
    let mut cols = s.shuffled.clone()?;
    cols.extend(s.keys.names());
    cols.extend(s.filter.iter().flat_map(|f| f.columns()));
    Some(cols)
}

/// The hot candidates: the non-NULL values of `left` then `right`, each once, at most as many
/// as one scan can look for.
fn candidates(left: &[Vec<Value>], right: &[Vec<Value>]) -> Vec<Vec<Value>> {
    let mut cands: Vec<Vec<Value>> = Vec::new();
    for key in left.iter().chain(right) {
        if key.iter().any(Value::is_null) || cands.contains(key) {
            continue;
        }
        if cands.len() < count::MAX_LOOKUP {
            cands.push(key.clone());
        }
    }
    cands
}

/// Both sides have the same number of key columns, of types Spark hashes alike.
fn check_keys(left: &SideInput, right: &SideInput) -> Result<()> {
    if left.keys.columns.len() != right.keys.columns.len() || left.keys.columns.is_empty() {
        return Err(Error::Usage("give the same number of key columns on both sides".into()));
    }
    for (l, r) in left.keys.columns.iter().zip(&right.keys.columns) {
        if !same_hash_type(l.key_type, r.key_type) {
            return Err(Error::KeyTypes(format!(
                "join key types differ: {}.{} is {} but {}.{} is {}; Spark would cast one side and hash it differently: cast the key in the data first",
                left.name,
                l.name,
                l.key_type.spark_name(),
                right.name,
                r.name,
                r.key_type.spark_name()
            )));
        }
    }
    Ok(())
}

/// Spark hashes tinyint, smallint and int alike; every other type must match exactly, or
/// Spark casts one side and the hash (so the partition) changes.
fn same_hash_type(a: KeyType, b: KeyType) -> bool {
    let small = |t: KeyType| matches!(t, KeyType::TinyInt | KeyType::SmallInt | KeyType::Int);
    a == b || (small(a) && small(b))
}

/// Columns Spark's `hash()` accepts: everything but maps (and structs or arrays holding one).
pub fn hashable_columns(t: &Table) -> Vec<String> {
    fn has_map(dt: &arrow_schema::DataType) -> bool {
        use arrow_schema::DataType::*;
        match dt {
            Map(_, _) => true,
            List(f) | LargeList(f) | FixedSizeList(f, _) | ListView(f) | LargeListView(f) => {
                has_map(f.data_type())
            }
            Struct(fs) => fs.iter().any(|f| has_map(f.data_type())),
            Dictionary(_, v) => has_map(v),
            _ => false,
        }
    }
    let mut cols: Vec<String> = t
        .schema()
        .fields()
        .iter()
        .filter(|f| !has_map(f.data_type()))
        .map(|f| f.name().clone())
        .collect();
    cols.extend(t.partitions.iter().map(|p| p.name.clone()));
    cols
}
