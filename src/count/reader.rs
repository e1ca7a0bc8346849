//! Reading one unit (a row group, or the rows drawn of it) into a worker thread's counts: its
//! string and binary key chunks straight from their pages where they allow it, then the other
//! key columns through Arrow, batch by batch, each batch cut where a cluster of the unit ends;
//! per cluster and key, the tally of what was read.

use std::fs::File;
use std::sync::atomic::Ordering;

use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use super::batch::{BatchSink, Pend};
use super::encode::{atom_of, Atoms};
use super::job::{Counter, Job, Part, Plan};
use super::local::Local;
use super::pages::{self, flat_leaf, ColumnChunk};
use super::tally::{keep_top, ChunkSink, DictTally, UnitTally};
use super::units::Unit;
use crate::error::{Error, Result};
use crate::progress::StepProgress;
use crate::table::{field_index, read_hint, DataFile, Table};

/// What every unit of a pass is read with.
pub(crate) struct UnitReader<'a> {
    table: &'a Table,
    /// Per file: its metadata (with the key columns' type hints) and the fields read from it.
    files: Vec<(ArrowReaderMetadata, Vec<usize>)>,
    jobs: &'a [Job],
    /// Sample mode: each cluster's frequent values are tallied.
    tally: bool,
    /// A sample of whole pages: the column whose pages were drawn.
    walked: Option<&'a str>,
    bar: &'a dyn StepProgress,
}

impl<'a> UnitReader<'a> {
    /// A reader of the top-level `fields` of `table` for `jobs`.
    pub(crate) fn new(
        table: &'a Table,
        fields: &[String],
        jobs: &'a [Job],
        tally: bool,
        walked: Option<&'a str>,
        bar: &'a dyn StepProgress,
    ) -> Self {
        let files = table
            .files
            .iter()
            .map(|f| {
                let idx: Vec<usize> = fields.iter().filter_map(|n| field_index(f, n)).collect();
                (hinted_meta(f, &idx), idx)
            })
            .collect();
        UnitReader { table, files, jobs, tally, walked, bar }
    }

    pub(crate) fn jobs(&self) -> &'a [Job] {
        self.jobs
    }

    /// The file `unit` is of.
    pub(crate) fn file(&self, unit: &Unit) -> &'a DataFile {
        &self.table.files[unit.file]
    }

    /// Count `unit` into `local`. Per cluster of the unit (see `Unit::clusters`), per job: its
    /// rows, NULL rows and frequent values. The NULL rows are added to the job's when the unit
    /// is done (a failed unit fails the whole count).
    pub(crate) fn read(&self, unit: &Unit, local: &mut Local) -> Result<Vec<Vec<UnitTally>>> {
        let mut read = UnitRead::new(self, unit);
        read.count_from_pages(local)?;
        read.count_rest(local)?;
        Ok(read.finish(local))
    }

    /// Tell the kernel which byte ranges are about to be read (the key columns' chunks of the
    /// units), so that the parts not in the page cache are read ahead while the first units
    /// are counted.
    pub(crate) fn advise(&self, units: &[Unit], stop: &std::sync::atomic::AtomicBool) {
        if self.is_remote() {
            return self.fetch_ahead(units, stop);
        }
        #[cfg(unix)]
        {
            let mut last: Option<(usize, File)> = None;
            for u in units {
                if last.as_ref().map(|l| l.0) != Some(u.file) {
                    let crate::table::blob::Location::Local(path) =
                        &self.table.files[u.file].location
                    else {
                        continue;
                    };
                    match File::open(path) {
                        Ok(f) => last = Some((u.file, f)),
                        Err(_) => continue,
                    }
                }
                let Some((_, f)) = &last else { continue };
                self.advise_unit(f, u);
            }
        }
    }

    /// Whether the table's files are in an object store.
    pub(crate) fn is_remote(&self) -> bool {
        self.table.in_store()
    }

    /// Have the store's client fetch the key columns' chunks of whole row groups, in the order
    /// of the units, a few ahead of the readers (see `store::fetch_ahead`); sampled pages are
    /// read as they are drawn.
    fn fetch_ahead(&self, units: &[Unit], stop: &std::sync::atomic::AtomicBool) {
        for u in units.iter().filter(|u| u.spans.is_empty() && u.selection.is_none()) {
            let crate::table::blob::Location::Remote(object) = &self.table.files[u.file].location
            else {
                continue;
            };
            for range in self.chunks_read(u) {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                crate::table::store::fetch_ahead(object, range, stop);
            }
        }
    }

    /// The byte ranges of the key columns' chunks of `u`'s row group (of every leaf of a
    /// nested field).
    fn chunks_read(&self, u: &Unit) -> Vec<std::ops::Range<u64>> {
        let (meta, idx) = &self.files[u.file];
        let rg = meta.metadata().row_group(u.row_group);
        let schema = meta.parquet_schema();
        let leaves = rg
            .columns()
            .iter()
            .enumerate()
            .filter(|(leaf, _)| idx.contains(&schema.get_column_root_idx(*leaf)));
        leaves.map(|(_, c)| crate::table::blob::chunk_range(c)).collect()
    }

    #[cfg(unix)]
    fn advise_unit(&self, f: &File, u: &Unit) {
        let will_need = |start: u64, len: u64| {
            if let Some(len) = std::num::NonZeroU64::new(len) {
                let _ = rustix::fs::fadvise(f, start, Some(len), rustix::fs::Advice::WillNeed);
            }
        };
        if !u.spans.is_empty() {
            // Whole pages: those of the first key column (the other columns' chunks are read
            // in part, where they are not known).
            for &(start, len) in &u.spans {
                will_need(start, len);
            }
            return;
        }
        for r in self.chunks_read(u) {
            will_need(r.start, r.end - r.start);
        }
    }
}

/// One unit being read.
struct UnitRead<'r, 'a> {
    reader: &'r UnitReader<'a>,
    unit: &'r Unit,
    file: &'a DataFile,
    meta: &'r ArrowReaderMetadata,
    /// The fields of the file that the keys read.
    idx: &'r [usize],
    clusters: Vec<u64>,
    /// Per cluster, per job.
    tallies: Vec<Vec<UnitTally>>,
    /// Per job: counted from its pages already.
    done: Vec<bool>,
    pends: Vec<Pend>,
    dicts: Vec<DictTally>,
}

/// Rows of one batch (None: a unit of partition columns only), all of one cluster.
struct Piece<'b> {
    cluster: usize,
    rows: usize,
    batch: Option<&'b RecordBatch>,
    /// The cluster ends with these rows.
    last: bool,
}

impl<'r, 'a> UnitRead<'r, 'a> {
    fn new(reader: &'r UnitReader<'a>, unit: &'r Unit) -> Self {
        let jobs = reader.jobs;
        let clusters = unit.clusters();
        let table_rows = |rows: u64| if clusters.len() == 1 { unit.rows } else { rows };
        let tallies = clusters
            .iter()
            .map(|&rows| jobs.iter().map(|_| UnitTally::new(rows, table_rows(rows))).collect())
            .collect();
        let pends = jobs
            .iter()
            .map(|j| match &j.counter {
                Counter::Wide(c) => Pend::Wide(c.pending()),
                Counter::Int(_) | Counter::Bytes(_) => Pend::Local,
            })
            .collect();
        let dicts = jobs
            .iter()
            .map(|_| DictTally::new(unit.rows_read() / 5000, reader.tally && clusters.len() > 1))
            .collect();
        let (meta, idx) = &reader.files[unit.file];
        UnitRead {
            reader,
            unit,
            file: reader.file(unit),
            meta,
            idx,
            clusters,
            tallies,
            done: vec![false; jobs.len()],
            pends,
            dicts,
        }
    }

    /// String and binary keys straight from their pages where the chunk allows it (see
    /// `pages`). A unit of whole pages has them of one column only (`walked`); other units
    /// all pages.
    fn count_from_pages(&mut self, local: &mut Local) -> Result<()> {
        let paged = !self.unit.spans.is_empty();
        if !(self.unit.selection.is_none() || paged)
            || std::env::var_os("SKEWJOIN_ARROW_ONLY").is_some()
        {
            return Ok(());
        }
        for (j, job) in self.reader.jobs.iter().enumerate() {
            let Plan::Bytes { field } = &job.plan else { continue };
            if paged && self.reader.walked != Some(field.as_str()) {
                continue;
            }
            self.done[j] = self.chunk_from_pages(local, j, field, paged)?;
        }
        Ok(())
    }

    /// Job `j`'s chunk (column `field`) counted from its pages: false if it must be read
    /// through Arrow instead.
    fn chunk_from_pages(
        &mut self,
        local: &mut Local,
        j: usize,
        field: &str,
        paged: bool,
    ) -> Result<bool> {
        let (unit, file, meta) = (self.unit, self.file, self.meta);
        let schema = meta.parquet_schema();
        let Some(leaf) = flat_leaf(schema, field) else { return Ok(false) };
        let descr = schema.column(leaf);
        if !pages::eligible(&descr) {
            return Ok(false);
        }
        let (f, file_len) = local.open.open(unit.file, file)?;
        let chunk = ColumnChunk {
            file: &f,
            file_len,
            meta: meta.metadata().row_group(unit.row_group).column(leaf),
            descr: &descr,
        };
        let mut scratch = std::mem::take(&mut local.scratch);
        let min = unit.rows / 5000;
        let mut sink = ChunkSink {
            local: &mut *local,
            j,
            file: unit.file,
            tallies: &mut self.tallies[..],
            tally: self.reader.tally,
            paged,
            min,
        };
        let counted = if paged {
            // A page's values of at least its rows / 5000 are tallied, as Arrow's path does.
            let mins: Vec<u64> = unit.pages.iter().map(|r| r / 5000).collect();
            pages::count_pages(chunk, &unit.spans, &mins, &mut scratch, &mut sink)
        } else {
            pages::count_chunk(chunk, unit.rows as usize, &mut scratch, &mut sink)
        };
        local.scratch = scratch;
        let Some(counted) = counted else { return Ok(false) };
        // Paged: each page's NULLs are in its tally already.
        if !paged {
            self.tallies[0][j].nulls += counted.nulls;
        }
        local.settle(j);
        Ok(true)
    }

    /// The keys not counted from their pages: through Arrow, or from the partition values
    /// alone when no field is left to read.
    fn count_rest(&mut self, local: &mut Local) -> Result<()> {
        let rest = self.fields_left();
        if rest.is_empty() {
            // Only partition columns, or keys already counted from their pages: nothing to read.
            for c in 0..self.clusters.len() {
                let piece =
                    Piece { cluster: c, rows: self.clusters[c] as usize, batch: None, last: true };
                self.count_piece(local, &piece)?;
            }
            self.reader.bar.advance(self.unit.rows_read());
            return Ok(());
        }
        let (file, unit) = (self.file, self.unit);
        // The rows come in the order of the clusters: a batch is cut where one ends.
        let (mut c, mut left) = (0usize, self.clusters[0]);
        for batch in self.batches(&rest)? {
            let batch = batch?;
            let mut at = 0usize;
            while at < batch.num_rows() {
                if left == 0 {
                    if c + 1 >= self.clusters.len() {
                        return Err(Error::bad_file(
                            &file.path,
                            format!("row group {}: more rows than selected", unit.row_group),
                        ));
                    }
                    c += 1;
                    left = self.clusters[c];
                    continue;
                }
                let take = (batch.num_rows() - at).min(usize::try_from(left).unwrap_or(usize::MAX));
                let part =
                    if take == batch.num_rows() { batch.clone() } else { batch.slice(at, take) };
                left -= take as u64;
                self.count_piece(
                    local,
                    &Piece { cluster: c, rows: take, batch: Some(&part), last: left == 0 },
                )?;
                at += take;
            }
            self.reader.bar.advance(batch.num_rows() as u64);
        }
        Ok(())
    }

    /// The fields the keys not yet counted need.
    fn fields_left(&self) -> Vec<usize> {
        let schema = self.meta.schema();
        self.idx
            .iter()
            .copied()
            .filter(|&i| {
                let name = schema.field(i).name();
                self.reader.jobs.iter().zip(&self.done).any(|(job, d)| {
                    !*d && match &job.plan {
                        Plan::Int { field, .. } | Plan::Wide { field } | Plan::Bytes { field } => {
                            field == name
                        }
                        Plan::Encoded { parts } => {
                            parts.iter().any(|p| matches!(p, Part::Field(f, _) if f == name))
                        }
                    }
                })
            })
            .collect()
    }

    /// The unit's rows of the fields `rest`, in batches.
    fn batches(&self, rest: &[usize]) -> Result<crate::table::columns::Batches> {
        let file = self.file;
        let Some((sel, _)) = &self.unit.selection else {
            return crate::table::columns::row_group(file, self.meta, self.unit.row_group, rest);
        };
        let f = file.open()?;
        let mask = ProjectionMask::roots(self.meta.parquet_schema(), rest.iter().copied());
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(f, self.meta.clone())
            .with_projection(mask)
            .with_row_groups(vec![self.unit.row_group])
            .with_row_selection(sel.clone())
            .with_batch_size(crate::table::columns::BATCH)
            .build()
            .map_err(|e| Error::bad_file(&file.path, e))?;
        let (path, g) = (file.path.clone(), self.unit.row_group);
        Ok(Box::new(
            reader
                .map(move |b| b.map_err(|e| Error::bad_file(&path, format!("row group {g}: {e}")))),
        ))
    }

    /// `piece` counted for every job not counted from its pages.
    fn count_piece(&mut self, local: &mut Local, piece: &Piece) -> Result<()> {
        for j in 0..self.reader.jobs.len() {
            if !self.done[j] {
                self.count_job(local, j, piece)?;
            }
        }
        Ok(())
    }

    /// Job `j`'s rows of `piece`, by the job's plan.
    fn count_job(&mut self, local: &mut Local, j: usize, piece: &Piece) -> Result<()> {
        let (job, file) = (&self.reader.jobs[j], self.file);
        let bad =
            |name: &str, m: String| Error::bad_file(&file.path, format!("column {name}: {m}"));
        let sink = BatchSink::new(local, j, &mut self.tallies[piece.cluster][j], self.reader.tally);
        match (&job.plan, &job.counter, &mut self.pends[j]) {
            (Plan::Int { field, ty }, Counter::Int(_), _) => sink
                .ints(column(piece.batch, field, file)?, *ty, piece.rows)
                .map_err(|m| bad(field, m)),
            (Plan::Wide { field }, Counter::Wide(c), Pend::Wide(p)) => {
                sink.wide(column(piece.batch, field, file)?, c, p).map_err(|m| bad(field, m))
            }
            (Plan::Bytes { field }, Counter::Bytes(_), _) => sink
                .strings(column(piece.batch, field, file)?, &mut self.dicts[j], piece.last)
                .map_err(|m| bad(field, m)),
            (Plan::Encoded { parts }, Counter::Bytes(_), _) => {
                let mut cols: Vec<Atoms> = Vec::new();
                for part in parts {
                    cols.push(match part {
                        Part::Field(name, ty) => {
                            Atoms::from_array(column(piece.batch, name, file)?, *ty)
                                .map_err(|m| bad(name, m))?
                        }
                        Part::Partition(i, ty) => {
                            Atoms::Const(atom_of(&file.partition_values[*i], *ty))
                        }
                    });
                }
                sink.encoded(&cols, piece.rows);
                Ok(())
            }
            _ => Err(Error::Internal(format!("no counter for key {}", job.spec.name()))),
        }
    }

    /// The unit done: the buffers flushed, the NULL rows added to the jobs', the tallies cut
    /// to their most frequent values.
    fn finish(mut self, local: &mut Local) -> Vec<Vec<UnitTally>> {
        let tally = self.reader.tally;
        for (j, job) in self.reader.jobs.iter().enumerate() {
            match (&job.counter, &mut self.pends[j]) {
                (Counter::Wide(c), Pend::Wide(p)) => c.flush(p),
                (Counter::Int(_) | Counter::Wide(_), _) => {}
                (Counter::Bytes(_), _) => {
                    // Whatever is left belongs to the last cluster.
                    let Some(UnitTally { counts, nulls, .. }) =
                        self.tallies.last_mut().map(|t| &mut t[j])
                    else {
                        continue;
                    };
                    self.dicts[j].flush(local, j, nulls, if tally { Some(counts) } else { None });
                }
            }
        }
        for (j, job) in self.reader.jobs.iter().enumerate() {
            job.nulls.fetch_add(self.tallies.iter().map(|t| t[j].nulls).sum(), Ordering::Relaxed);
        }
        if tally {
            for t in self.tallies.iter_mut().flatten() {
                t.fold_ints(2000);
                keep_top(&mut t.counts, 2000);
            }
        }
        self.tallies
    }
}

/// Column `name` of `batch`.
fn column<'b>(batch: Option<&'b RecordBatch>, name: &str, file: &DataFile) -> Result<&'b ArrayRef> {
    batch
        .and_then(|b| b.column_by_name(name))
        .ok_or_else(|| Error::bad_file(&file.path, format!("column {name} missing")))
}

/// The metadata of `file` with the type hints of its columns `fields` (see `read_hint`).
pub(crate) fn hinted_meta(file: &DataFile, fields: &[usize]) -> ArrowReaderMetadata {
    read_hint(&file.meta, fields)
        .and_then(|schema| {
            ArrowReaderMetadata::try_new(
                file.meta.metadata().clone(),
                ArrowReaderOptions::new().with_schema(schema),
            )
            .ok()
        })
        .unwrap_or_else(|| file.meta.clone())
}
