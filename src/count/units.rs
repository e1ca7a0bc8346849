//! The units a pass reads: every row group of the table, or for a sample the sampling units
//! drawn (whole row groups, whole pages of the first key column, or random 512-row runs), each
//! row group with the row selection that reads only the rows drawn.

use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rayon::prelude::*;

use super::pages::{self, PageSpan};
use super::{ProfileOptions, Sample, SampleInfo};
use crate::table::Table;

/// One row group of one file, maybe with a row selection.
#[derive(Clone)]
pub(crate) struct Unit {
    pub(crate) file: usize,
    pub(crate) row_group: usize,
    pub(crate) rows: u64,
    pub(crate) selection: Option<(RowSelection, u64)>,
    /// A sample of whole pages: the rows of each page selected, in order (each is a sampling
    /// unit of its own), and the byte ranges of those pages. Empty otherwise.
    pub(crate) pages: Vec<u64>,
    pub(crate) spans: Vec<(u64, u64)>,
}

impl Unit {
    pub(crate) fn rows_read(&self) -> u64 {
        self.selection.as_ref().map(|s| s.1).unwrap_or(self.rows)
    }
    /// The rows of each cluster of the unit, in the order they are read: its pages, or the
    /// whole unit as one.
    pub(crate) fn clusters(&self) -> Vec<u64> {
        if self.pages.is_empty() {
            vec![self.rows_read()]
        } else {
            self.pages.clone()
        }
    }
}

/// Whole row groups are drawn when there are at least 32 of roughly even size, at least
/// this many of them: so that their spread gives an error bound, even when fewer would hold
/// the rows asked for (the fraction read is reported).
const MIN_GROUPS: u64 = 4;
/// Whole pages are drawn when there are at least 32 of roughly even size, at least this many
/// of them: a page is cheap, and with fewer a kind of page that is rare (NULL in every row,
/// say) is too often missed, and with it the spread that its absence hides.
const MIN_PAGES: u64 = 30;
/// Otherwise runs of this many rows, at least `MIN_RUNS` of them.
const RUN: u64 = 512;
const MIN_RUNS: u64 = 4;

/// The row groups to read, whole or in part, and how they were sampled. `walk`: the first key
/// column read from the files, whose pages can be the sampling units.
pub(crate) fn choose_units(
    table: &Table,
    opts: &ProfileOptions,
    walk: Option<&str>,
) -> (Vec<Unit>, Option<SampleInfo>) {
    let mut all = every_row_group(table);
    let total: u64 = all.iter().map(|u| u.rows).sum();
    let target = match opts.sample {
        None => return (all, None),
        Some(Sample::Fraction(f)) => (total as f64 * f).ceil() as u64,
        Some(Sample::Rows(n)) => n,
    };
    if target >= total || total == 0 {
        return (all, None);
    }
    let mut rng = SmallRng::seed_from_u64(opts.seed);
    // Empty row groups hold nothing to sample (and must not count as sampled units).
    all.retain(|u| u.rows > 0);
    // Whole row groups are cheap: the others are never read. Otherwise random 512-row runs,
    // whose row groups' pages are still all read and decompressed: with uneven row groups, a
    // few drawn ones could miss most of the rows.
    // In an object store, listing pages without an offset index takes each chunk whole, as
    // the exact count does: 8 row groups are enough to draw whole ones there.
    let enough = if remote(table) { 2 * MIN_GROUPS as usize } else { 32 };
    if all.len() >= enough && even(all.iter().map(|u| u.rows).collect()) {
        return whole_row_groups(&all, target, total, &mut rng);
    }
    // Fewer or uneven row groups: whole pages of the first key column, when there are enough
    // of roughly even size (their headers say where they are and how many rows each holds).
    // The reader skips the other pages without decompressing them; each page read is a
    // sampling unit, as a row group is above.
    if let Some(picked) =
        walk.and_then(|name| whole_pages(table, &all, name, target, total, &mut rng))
    {
        return picked;
    }
    row_runs(&all, target, total, &mut rng)
}

/// Whether any file of the table is in an object store.
fn remote(table: &Table) -> bool {
    table.files.iter().any(|f| matches!(f.location, crate::table::blob::Location::Remote(_)))
}

/// Every row group of the table, whole.
fn every_row_group(table: &Table) -> Vec<Unit> {
    let mut all = Vec::new();
    for (fi, f) in table.files.iter().enumerate() {
        for (ri, rg) in f.meta.metadata().row_groups().iter().enumerate() {
            all.push(Unit {
                file: fi,
                row_group: ri,
                rows: rg.num_rows().max(0) as u64,
                selection: None,
                pages: Vec::new(),
                spans: Vec::new(),
            });
        }
    }
    all
}

/// Clusters of roughly even size: none more than 4 times the median.
fn even(mut sizes: Vec<u64>) -> bool {
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mid = sizes.len() / 2;
    let median = if sizes.is_empty() { 0 } else { *sizes.select_nth_unstable(mid).1 };
    max <= median.saturating_mul(4)
}

/// Whole row groups of `all` drawn at random: as many as hold `target` rows, at least
/// `MIN_GROUPS`.
fn whole_row_groups(
    all: &[Unit],
    target: u64,
    total: u64,
    rng: &mut SmallRng,
) -> (Vec<Unit>, Option<SampleInfo>) {
    let sizes: Vec<u64> = all.iter().map(|u| u.rows).collect();
    let (take, rows) = draw_clusters(&sizes, target, MIN_GROUPS, rng);
    let picked: Vec<Unit> =
        all.iter().zip(&take).filter(|(_, &t)| t).map(|(u, _)| u.clone()).collect();
    let info = SampleInfo {
        method: "whole row groups".into(),
        rows_read: rows,
        fraction: rows as f64 / total as f64,
        row_groups_read: picked.len(),
        row_groups_total: all.len(),
        pages_read: None,
        pages_total: None,
        pages_column: None,
        files_read: None,
        files_total: None,
    };
    (picked, Some(info))
}

/// Whole pages of column `name` drawn at random from the units `all`: as many as hold `target`
/// rows, at least `MIN_PAGES`; None unless there are at least 32 pages of roughly even size.
fn whole_pages(
    table: &Table,
    all: &[Unit],
    name: &str,
    target: u64,
    total: u64,
    rng: &mut SmallRng,
) -> Option<(Vec<Unit>, Option<SampleInfo>)> {
    let pages = table_pages(table, all, name)?;
    let sizes: Vec<u64> = pages.iter().flatten().map(|p| p.rows).collect();
    if sizes.len() < 32 || !even(sizes.clone()) {
        return None;
    }
    let (take, rows) = draw_clusters(&sizes, target, MIN_PAGES, rng);
    let n = take.iter().filter(|&&t| t).count();
    let mut picked = Vec::new();
    let mut next = 0usize;
    for (u, unit_pages) in all.iter().zip(&pages) {
        let mut selectors: Vec<RowSelector> = Vec::new();
        let (mut rows_of, mut spans) = (Vec::new(), Vec::new());
        for p in unit_pages {
            let keep = take[next];
            next += 1;
            if keep {
                rows_of.push(p.rows);
                spans.push((p.offset, p.len));
            }
            push_selector(&mut selectors, keep, p.rows as usize);
        }
        if !rows_of.is_empty() {
            let selected = rows_of.iter().sum();
            picked.push(Unit {
                selection: Some((RowSelection::from(selectors), selected)),
                pages: rows_of,
                spans,
                ..u.clone()
            });
        }
    }
    let info = SampleInfo {
        method: "whole pages".into(),
        rows_read: rows,
        fraction: rows as f64 / total as f64,
        row_groups_read: picked.len(),
        row_groups_total: all.len(),
        pages_read: Some(n),
        pages_total: Some(sizes.len()),
        pages_column: Some(name.to_string()),
        files_read: None,
        files_total: None,
    };
    Some((picked, Some(info)))
}

/// 512-row runs drawn without replacement from all the runs of the table: as many as hold
/// the rows asked for, and at least `MIN_RUNS`. Row groups none of whose runs were drawn are
/// not read.
fn row_runs(
    all: &[Unit],
    target: u64,
    total: u64,
    rng: &mut SmallRng,
) -> (Vec<Unit>, Option<SampleInfo>) {
    let runs_in: Vec<u64> = all.iter().map(|u| u.rows.div_ceil(RUN)).collect();
    let n_runs: u64 = runs_in.iter().sum();
    let want = target.div_ceil(RUN).max(MIN_RUNS).min(n_runs);
    let mut chosen = rand::seq::index::sample(rng, n_runs as usize, want as usize).into_vec();
    chosen.sort_unstable();
    let mut chosen = chosen.into_iter().peekable();
    let mut rows_read = 0;
    let mut first = 0u64;
    let mut picked = Vec::new();
    for (u, &runs) in all.iter().zip(&runs_in) {
        let mut selectors: Vec<RowSelector> = Vec::new();
        let mut selected = 0;
        for r in 0..runs {
            let take = chosen.next_if(|&c| c as u64 == first + r).is_some();
            let len = RUN.min(u.rows - r * RUN) as usize;
            if take {
                selected += len as u64;
            }
            push_selector(&mut selectors, take, len);
        }
        first += runs;
        if selected > 0 {
            rows_read += selected;
            picked.push(Unit {
                selection: Some((RowSelection::from(selectors), selected)),
                ..u.clone()
            });
        }
    }
    let info = SampleInfo {
        method: "row selections (random 512-row runs of the row groups)".into(),
        rows_read,
        fraction: rows_read as f64 / total as f64,
        row_groups_read: picked.len(),
        row_groups_total: all.len(),
        pages_read: None,
        pages_total: None,
        pages_column: None,
        files_read: None,
        files_total: None,
    };
    (picked, Some(info))
}

/// Clusters (row groups or pages) of `sizes` rows drawn at random without replacement: as
/// many as hold `target` rows, and at least `min`. Which were drawn, and their rows.
fn draw_clusters(sizes: &[u64], target: u64, min: u64, rng: &mut SmallRng) -> (Vec<bool>, u64) {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.shuffle(rng);
    let mut take = vec![false; sizes.len()];
    let (mut rows, mut n) = (0u64, 0u64);
    for i in order {
        if rows >= target && n >= min {
            break;
        }
        rows += sizes[i];
        n += 1;
        take[i] = true;
    }
    (take, rows)
}

/// `len` more rows, selected or skipped, at the end of `selectors`.
fn push_selector(selectors: &mut Vec<RowSelector>, select: bool, len: usize) {
    match selectors.last_mut() {
        Some(s) if s.skip != select => s.row_count += len,
        _ => selectors.push(if select { RowSelector::select(len) } else { RowSelector::skip(len) }),
    }
}

/// The data pages of column `name` in each of `units` (whole row groups), from the page
/// headers; None if any chunk's pages cannot be listed so.
fn table_pages(table: &Table, units: &[Unit], name: &str) -> Option<Vec<Vec<PageSpan>>> {
    units
        .par_iter()
        .map(|u| {
            let f = &table.files[u.file];
            let schema = f.meta.parquet_schema();
            let leaf = pages::flat_leaf(schema, name)?;
            let file = f.open().ok()?;
            let len = file.len();
            let chunk = f.meta.metadata().row_group(u.row_group).column(leaf);
            // In an object store, only an offset index lists pages for less than the chunk.
            if matches!(f.location, crate::table::blob::Location::Remote(_))
                && chunk.offset_index_offset().is_none()
            {
                return None;
            }
            let pages = pages::data_pages(&file, len, chunk, &schema.column(leaf))?;
            (pages.iter().map(|p| p.rows).sum::<u64>() == u.rows).then_some(pages)
        })
        .collect()
}
