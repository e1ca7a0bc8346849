//! Count a flat string or binary column chunk straight from its pages: the dictionary page is
//! split into values, and each data page's dictionary indices (Parquet's RLE / bit-packed
//! hybrid) are counted without building any Arrow array. A run of N equal indices is one
//! addition, and a page's NULLs are a popcount of its definition levels. Pages written without
//! the dictionary (PLAIN, after a writer's fallback) are counted value by value.
//!
//! The chunk is read with one positioned read into a buffer the thread reuses, its page
//! headers are decoded by `crate::page::header`, and each page is decompressed into another reused
//! buffer: no allocation per page. Codecs other than none, Snappy, ZSTD and LZ4_RAW go through
//! the parquet crate's page reader instead, into the same counting code. Anything else (other
//! encodings, nested columns, a malformed page) makes `count_chunk` return `None` before it
//! has reported a single value, and the caller reads the chunk through Arrow instead.
//!
//! For a sample of whole pages, `data_pages` lists a chunk's data pages (rows, place) from
//! their headers alone, and `count_pages` reads only the dictionary page and the pages drawn,
//! with each page's frequent values and NULLs reported apart for the sample's error bounds.

use std::sync::Arc;

use hashbrown::HashMap;

use crate::page::codec::{decompress, inflate};
use crate::page::header;
use crate::page::hybrid::{count_indices, count_ones, FIXED_MAX};
use crate::page::plain::split_plain;
use crate::table::blob::Blob;
use crate::table::DataFile;
use parquet::basic::{Compression, Encoding, Type as PhysicalType};
use parquet::column::page::Page;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::serialized_reader::SerializedPageReader;
use parquet::schema::types::{ColumnDescriptor, SchemaDescriptor};

/// Parquet's encoding numbers (parquet.thrift), as page headers carry them.
mod enc {
    pub const PLAIN: i32 = 0;
    pub const PLAIN_DICTIONARY: i32 = 2;
    pub const RLE: i32 = 3;
    pub const RLE_DICTIONARY: i32 = 8;
}

fn enc_number(e: Encoding) -> i32 {
    match e {
        Encoding::PLAIN => enc::PLAIN,
        Encoding::PLAIN_DICTIONARY => enc::PLAIN_DICTIONARY,
        Encoding::RLE => enc::RLE,
        Encoding::RLE_DICTIONARY => enc::RLE_DICTIONARY,
        _ => -1,
    }
}

/// Buffers a worker thread reuses from chunk to chunk.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The chunk as stored (compressed pages and their headers).
    chunk: Vec<u8>,
    /// The current data page, decompressed.
    page: Vec<u8>,
    /// The chunk's dictionary page, decompressed (it outlives the data pages): its first
    /// `dict_len` bytes.
    dict: Vec<u8>,
    dict_len: usize,
    /// (start, end) of each dictionary value in `dict`.
    offs: Vec<(u32, u32)>,
    /// Rows per dictionary index.
    counts: Vec<u32>,
    /// Values of pages written without the dictionary.
    plain: HashMap<Vec<u8>, u64>,
    /// `count_pages`: rows per dictionary index and plain values of the pages read so far
    /// (`counts` and `plain` then hold the current page's), and the pages' tallies.
    unit_counts: Vec<u64>,
    unit_plain: HashMap<Vec<u8>, u64>,
    tally: Vec<PageTally>,
    tally_bytes: Vec<u8>,
}

/// A value's rows in one page, for `Sink::tally`.
struct PageTally {
    page: u32,
    /// A dictionary index, or the (start, end) of a plain value in `tally_bytes`.
    value: TallyValue,
    rows: u64,
}

enum TallyValue {
    Dict(u32),
    Plain(u32, u32),
}

/// The file a thread read last, kept open with its length: a file's row groups come in a run,
/// so a thread mostly reads the same file again.
#[derive(Default)]
pub(crate) struct LastFile(Option<(usize, Arc<Blob>, u64)>);

impl LastFile {
    /// File number `index`, `file`, and its length: the one kept if it is that file, else
    /// opened (and kept instead).
    pub(crate) fn open(
        &mut self,
        index: usize,
        file: &DataFile,
    ) -> crate::Result<(Arc<Blob>, u64)> {
        if let Some((i, f, len)) = &self.0 {
            if *i == index {
                return Ok((f.clone(), *len));
            }
        }
        let f = Arc::new(file.open()?);
        let len = f.len();
        self.0 = Some((index, f.clone(), len));
        Ok((f, len))
    }
}

/// A chunk's dictionary and the rows of each of its values (0 for a value not used).
pub(crate) struct Dict<'a> {
    bytes: &'a [u8],
    offs: &'a [(u32, u32)],
    counts: &'a [u32],
}

impl<'a> Dict<'a> {
    /// Values in the dictionary, used or not.
    pub(crate) fn len(&self) -> usize {
        self.offs.len()
    }
    /// Value `i` of the dictionary.
    #[inline]
    pub(crate) fn value(&self, i: usize) -> &'a [u8] {
        let (a, b) = self.offs[i];
        &self.bytes[a as usize..b as usize]
    }
    /// Rows of value `i`.
    #[inline]
    pub(crate) fn rows(&self, i: usize) -> u32 {
        self.counts[i]
    }
    /// The values used, with their rows.
    pub(crate) fn used(&self) -> impl Iterator<Item = (&'a [u8], u32)> + '_ {
        self.offs
            .iter()
            .zip(self.counts)
            .filter(|(_, n)| **n > 0)
            .map(|(&(a, b), &n)| (&self.bytes[a as usize..b as usize], n))
    }
}

/// Where a chunk's counts go once it has been read whole.
pub(crate) trait Sink {
    /// The chunk's dictionary values and their rows.
    fn dict(&mut self, dict: &Dict);
    /// One value of the pages written without the dictionary.
    fn one(&mut self, value: &[u8], rows: u64);
    /// `count_pages`: a value's rows in page `page` (of those asked for), when at least the
    /// minimum asked for.
    fn tally(&mut self, _page: usize, _value: &[u8], _rows: u64) {}
    /// `count_pages`: the NULL rows of page `page`.
    fn page_nulls(&mut self, _page: usize, _nulls: u64) {}
}

/// Whether this path can read the column at all (flat BYTE_ARRAY, optional or required).
pub(crate) fn eligible(descr: &ColumnDescriptor) -> bool {
    descr.physical_type() == PhysicalType::BYTE_ARRAY
        && descr.max_rep_level() == 0
        && descr.max_def_level() <= 1
}

/// The leaf of the top-level column `name` if it is flat (a leaf of its own, not nested).
pub(crate) fn flat_leaf(schema: &SchemaDescriptor, name: &str) -> Option<usize> {
    schema.columns().iter().position(|c| c.path().parts().len() == 1 && c.path().parts()[0] == name)
}

/// What `count_chunk` read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Counted {
    pub(crate) nulls: u64,
    /// Read by this module's own page walk (false: through the parquet crate's page reader).
    pub(crate) walked: bool,
}

/// A column chunk to count: its file (and the file's length), its metadata and its column.
#[derive(Clone, Copy)]
pub(crate) struct ColumnChunk<'a> {
    pub(crate) file: &'a Arc<Blob>,
    pub(crate) file_len: u64,
    pub(crate) meta: &'a ColumnChunkMetaData,
    pub(crate) descr: &'a ColumnDescriptor,
}

/// Count one column chunk of `rows` rows into `sink`, and return its NULL rows. The sink is
/// fed only once the whole chunk has been read, so a `None` (the caller falls back to Arrow)
/// never leaves a partial count behind.
pub(crate) fn count_chunk(
    chunk: ColumnChunk,
    rows: usize,
    s: &mut Scratch,
    sink: &mut dyn Sink,
) -> Option<Counted> {
    let ColumnChunk { file, file_len, meta, descr } = chunk;
    if !eligible(descr) || rows > u32::MAX as usize {
        return None;
    }
    s.offs.clear();
    s.counts.clear();
    s.plain.clear();
    let mut c =
        Counting { has_def: descr.max_def_level() == 1, have_dict: false, nulls: 0, seen: 0 };
    let direct = matches!(
        meta.compression(),
        Compression::UNCOMPRESSED
            | Compression::SNAPPY
            | Compression::ZSTD(_)
            | Compression::LZ4_RAW
    );
    let walked = direct && walk_chunk(file, file_len, meta, s, &mut c).is_some();
    if !walked {
        // The parquet crate's page reader: every codec it was built with.
        s.offs.clear();
        s.counts.clear();
        s.plain.clear();
        c = Counting { has_def: c.has_def, have_dict: false, nulls: 0, seen: 0 };
        read_pages(file, meta, rows, s, &mut c)?;
    }
    if c.seen != rows as u64 {
        return None;
    }
    // Indices past the dictionary were counted into the padding of `counts`: a corrupt chunk.
    if s.counts.get(s.offs.len()..).is_some_and(|pad| pad.iter().any(|&n| n != 0)) {
        return None;
    }
    if !s.offs.is_empty() {
        sink.dict(&Dict {
            bytes: &s.dict[..s.dict_len],
            offs: &s.offs,
            counts: &s.counts[..s.offs.len()],
        });
    }
    for (v, n) in s.plain.drain() {
        sink.one(&v, n);
    }
    Some(Counted { nulls: c.nulls, walked })
}

/// Count the data pages at `spans` (byte ranges from `data_pages`, in order) of one column chunk,
/// and its dictionary page: like `count_chunk`, and besides, each page's values of at least
/// `mins[page]` rows and its NULL rows go to `Sink::tally` and `Sink::page_nulls`. Only the pages
/// asked for are read. The sink is fed once all of them have been read; None (nothing fed)
/// for a codec or page this module does not read itself.
pub(crate) fn count_pages(
    chunk: ColumnChunk,
    spans: &[(u64, u64)],
    mins: &[u64],
    s: &mut Scratch,
    sink: &mut dyn Sink,
) -> Option<Counted> {
    let ColumnChunk { file, file_len, meta, descr } = chunk;
    if !eligible(descr) || spans.len() > u32::MAX as usize || mins.len() != spans.len() {
        return None;
    }
    if !matches!(
        meta.compression(),
        Compression::UNCOMPRESSED
            | Compression::SNAPPY
            | Compression::ZSTD(_)
            | Compression::LZ4_RAW
    ) {
        return None;
    }
    s.offs.clear();
    s.counts.clear();
    s.plain.clear();
    s.unit_counts.clear();
    s.unit_plain.clear();
    s.tally.clear();
    s.tally_bytes.clear();
    let mut c =
        Counting { has_def: descr.max_def_level() == 1, have_dict: false, nulls: 0, seen: 0 };
    let (start, len) = chunk_range(meta, file_len)?;
    let chunk = ChunkAt { file, codec: meta.compression(), start, len };
    let mut buf = std::mem::take(&mut s.chunk);
    let r = chunk.read_pages(spans, mins, &mut buf, s, &mut c);
    s.chunk = buf;
    let page_nulls = r?;
    if c.seen > u32::MAX as u64 {
        return None;
    }
    feed_pages(s, &page_nulls, sink);
    Some(Counted { nulls: c.nulls, walked: true })
}

/// Where a column chunk is in its file, and its codec.
struct ChunkAt<'f> {
    file: &'f Blob,
    codec: Compression,
    start: u64,
    len: u64,
}

impl ChunkAt<'_> {
    /// The dictionary page and the data pages at `spans`, read into `buf`: each page's counts
    /// into the unit's, its values of at least `mins[page]` rows into its tally (see
    /// `page_into_unit`). The NULL rows of each page.
    fn read_pages(
        &self,
        spans: &[(u64, u64)],
        mins: &[u64],
        buf: &mut Vec<u8>,
        s: &mut Scratch,
        c: &mut Counting,
    ) -> Option<Vec<u64>> {
        self.dictionary_page(buf, s, c)?;
        s.unit_counts.resize(s.offs.len(), 0);
        let mut page_nulls = Vec::with_capacity(spans.len());
        for (page, &(at, n)) in spans.iter().enumerate() {
            let (seen, nulls) = (c.seen, c.nulls);
            self.data_page(at, n, buf, s, c)?;
            if c.seen == seen {
                return None;
            }
            page_nulls.push(c.nulls - nulls);
            page_into_unit(s, page as u32, mins[page])?;
        }
        Some(page_nulls)
    }

    /// The dictionary page: the chunk's first page if it is one (some writers leave out its
    /// offset and put it at the data page offset).
    fn dictionary_page(&self, buf: &mut Vec<u8>, s: &mut Scratch, c: &mut Counting) -> Option<()> {
        let (h, header_len) = read_header(self.file, self.start, self.start + self.len, buf)?;
        if h.kind == header::DICTIONARY_PAGE {
            let n = header_len
                .checked_add(usize::try_from(h.compressed).ok()?)
                .filter(|&n| n as u64 <= self.len && n <= MAX_PAGE)?;
            buf.resize(n.max(buf.len()), 0);
            read_at(self.file, &mut buf[..n], self.start)?;
            walk_pages(&buf[..n], self.codec, i64::MAX, s, c)?;
            if c.seen != 0 {
                return None;
            }
        }
        Some(())
    }

    /// The data page of `n` bytes (header included) at `at`, counted.
    fn data_page(
        &self,
        at: u64,
        n: u64,
        buf: &mut Vec<u8>,
        s: &mut Scratch,
        c: &mut Counting,
    ) -> Option<()> {
        if at < self.start || at.checked_add(n)? > self.start + self.len {
            return None;
        }
        let n = usize::try_from(n).ok().filter(|&n| n <= MAX_PAGE)?;
        buf.resize(n.max(buf.len()), 0);
        read_at(self.file, &mut buf[..n], at)?;
        walk_pages(&buf[..n], self.codec, i64::MAX, s, c)
    }
}

/// The counts of page `page` (in `s.counts` and `s.plain`) into the unit's, and its values of
/// at least `min` rows into its tally.
fn page_into_unit(s: &mut Scratch, page: u32, min: u64) -> Option<()> {
    if s.counts.get(s.offs.len()..).is_some_and(|pad| pad.iter().any(|&n| n != 0)) {
        return None;
    }
    for (i, n) in s.counts.iter_mut().enumerate().take(s.offs.len()) {
        if *n != 0 {
            s.unit_counts[i] += *n as u64;
            if *n as u64 >= min {
                s.tally.push(PageTally {
                    page,
                    value: TallyValue::Dict(i as u32),
                    rows: *n as u64,
                });
            }
            *n = 0;
        }
    }
    for (v, n) in s.plain.drain() {
        if n >= min {
            let a = u32::try_from(s.tally_bytes.len()).ok()?;
            s.tally_bytes.extend_from_slice(&v);
            let b = u32::try_from(s.tally_bytes.len()).ok()?;
            s.tally.push(PageTally { page, value: TallyValue::Plain(a, b), rows: n });
        }
        *s.unit_plain.entry(v).or_insert(0) += n;
    }
    Some(())
}

/// Feed the sink: the unit's counts as `count_chunk` does, then each page's tally and NULLs.
fn feed_pages(s: &mut Scratch, page_nulls: &[u64], sink: &mut dyn Sink) {
    if !s.offs.is_empty() {
        s.counts.clear();
        s.counts.extend(s.unit_counts.iter().map(|&n| u32::try_from(n).unwrap_or(u32::MAX)));
        sink.dict(&Dict {
            bytes: &s.dict[..s.dict_len],
            offs: &s.offs,
            counts: &s.counts[..s.offs.len()],
        });
    }
    for (v, n) in s.unit_plain.drain() {
        sink.one(&v, n);
    }
    for t in &s.tally {
        let value = match t.value {
            TallyValue::Dict(i) => {
                let (a, b) = s.offs[i as usize];
                &s.dict[a as usize..b as usize]
            }
            TallyValue::Plain(a, b) => &s.tally_bytes[a as usize..b as usize],
        };
        sink.tally(t.page as usize, value, t.rows);
    }
    for (page, &n) in page_nulls.iter().enumerate() {
        sink.page_nulls(page, n);
    }
}

/// The counting state of one chunk, fed page by page.
struct Counting {
    has_def: bool,
    have_dict: bool,
    nulls: u64,
    seen: u64,
}

impl Counting {
    /// The dictionary page, already in `s.dict`.
    fn dictionary(&mut self, s: &mut Scratch, num_values: usize, encoding: i32) -> Option<()> {
        if !matches!(encoding, enc::PLAIN | enc::PLAIN_DICTIONARY) || self.have_dict {
            return None;
        }
        split_plain(s.dict.get(..s.dict_len)?, num_values, &mut s.offs)?;
        s.counts.clear();
        s.counts.resize(s.offs.len(), 0);
        self.have_dict = true;
        Some(())
    }

    /// A v1 data page: definition levels (RLE, with a 4-byte length) then the values.
    fn data_v1(
        &mut self,
        buf: &[u8],
        n: usize,
        encoding: i32,
        def_encoding: i32,
        s: &mut Scratch,
    ) -> Option<()> {
        let (non_null, values) = if self.has_def {
            if def_encoding != enc::RLE || buf.len() < 4 {
                return None;
            }
            let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
            let levels = buf.get(4..4usize.checked_add(len)?)?;
            (count_ones(levels, n)?, buf.get(4 + len..)?)
        } else {
            (n, buf)
        };
        self.nulls += (n - non_null) as u64;
        self.seen += n as u64;
        values_of(values, encoding, non_null, s)
    }

    /// A v2 data page: the NULL count is in the header, `values` follows the levels.
    fn data_v2(
        &mut self,
        values: &[u8],
        n: usize,
        nulls: usize,
        encoding: i32,
        s: &mut Scratch,
    ) -> Option<()> {
        if nulls > n {
            return None;
        }
        self.nulls += nulls as u64;
        self.seen += n as u64;
        values_of(values, encoding, n - nulls, s)
    }
}

/// The parquet crate's page reader over the chunk, into the same counting.
fn read_pages(
    file: &Arc<Blob>,
    meta: &ColumnChunkMetaData,
    rows: usize,
    s: &mut Scratch,
    c: &mut Counting,
) -> Option<()> {
    let reader = SerializedPageReader::new(file.clone(), meta, rows, None).ok()?;
    for page in reader {
        match page.ok()? {
            Page::DictionaryPage { buf, num_values, encoding, .. } => {
                s.dict.clear();
                s.dict.extend_from_slice(&buf);
                s.dict_len = buf.len();
                c.dictionary(s, num_values as usize, enc_number(encoding))?;
            }
            Page::DataPage { buf, num_values, encoding, def_level_encoding, .. } => {
                c.data_v1(
                    &buf,
                    num_values as usize,
                    enc_number(encoding),
                    enc_number(def_level_encoding),
                    s,
                )?;
            }
            Page::DataPageV2 {
                buf,
                num_values,
                encoding,
                num_nulls,
                def_levels_byte_len,
                rep_levels_byte_len,
                ..
            } => {
                if rep_levels_byte_len != 0 {
                    return None;
                }
                let values = buf.get(def_levels_byte_len as usize..)?;
                c.data_v2(
                    values,
                    num_values as usize,
                    num_nulls as usize,
                    enc_number(encoding),
                    s,
                )?;
            }
        }
    }
    Some(())
}

/// Pages larger than this are left to the parquet crate (and its checks).
const MAX_PAGE: usize = 1 << 30;

/// Read the chunk with one positioned read and walk its pages.
fn walk_chunk(
    file: &Blob,
    file_len: u64,
    meta: &ColumnChunkMetaData,
    s: &mut Scratch,
    c: &mut Counting,
) -> Option<()> {
    let (start, len) = chunk_range(meta, file_len)?;
    if len > MAX_PAGE as u64 {
        return None;
    }
    let len = len as usize;
    let mut chunk = std::mem::take(&mut s.chunk);
    let r = (|| {
        if chunk.len() < len {
            chunk.resize(len, 0);
        }
        read_at(file, &mut chunk[..len], start)?;
        walk_pages(&chunk[..len], meta.compression(), meta.num_values(), s, c)
    })();
    s.chunk = chunk;
    r
}

/// The byte range of a column chunk in its file: (start, length), or None when it lies
/// outside the file.
fn chunk_range(meta: &ColumnChunkMetaData, file_len: u64) -> Option<(u64, u64)> {
    // Where the chunk starts, as Arrow C++ reads it: a dictionary page offset of 0, or one past
    // the first data page, is a writer's mistake for "no separate offset".
    let data = u64::try_from(meta.data_page_offset()).ok()?;
    let start = match meta.dictionary_page_offset() {
        Some(d) if d > 0 && (d as u64) < data => d as u64,
        _ => data,
    };
    let len = u64::try_from(meta.compressed_size()).ok()?;
    (start.checked_add(len)? <= file_len).then_some((start, len))
}

/// One data page of a column chunk: its rows, and where it is stored (header included).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PageSpan {
    pub(crate) rows: u64,
    pub(crate) offset: u64,
    pub(crate) len: u64,
}

/// The data pages of a flat column chunk, in order: from the chunk's offset index (one small
/// read, written by Spark's Parquet writer and others), else from the page headers alone (one
/// small positioned read per page; the page bodies are not read). None when the chunk is not
/// flat, a header does not decode, or the pages do not add up to the chunk's values (the
/// caller then samples otherwise).
pub(crate) fn data_pages(
    file: &Blob,
    file_len: u64,
    meta: &ColumnChunkMetaData,
    descr: &ColumnDescriptor,
) -> Option<Vec<PageSpan>> {
    if descr.max_rep_level() != 0 {
        return None;
    }
    let (start, len) = chunk_range(meta, file_len)?;
    if let Some(pages) = indexed_pages(file, meta, start..start + len) {
        return Some(pages);
    }
    let end = start.checked_add(len)?;
    let total = u64::try_from(meta.num_values()).ok()?;
    let mut pages = Vec::new();
    let mut buf = Vec::new();
    let (mut pos, mut values) = (start, 0u64);
    while pos < end && values < total {
        let (h, header_len) = read_header(file, pos, end, &mut buf)?;
        let page_end =
            pos.checked_add(header_len as u64)?.checked_add(u64::try_from(h.compressed).ok()?)?;
        if page_end > end {
            return None;
        }
        let rows = match h.kind {
            header::DATA_PAGE => u64::try_from(h.v1?.0).ok()?,
            header::DATA_PAGE_V2 => u64::try_from(h.v2?.num_values).ok()?,
            header::DICTIONARY_PAGE | header::INDEX_PAGE => 0,
            _ => return None,
        };
        if rows > 0 {
            pages.push(PageSpan { rows, offset: pos, len: page_end - pos });
            values += rows;
        }
        pos = page_end;
    }
    (values == total).then_some(pages)
}

/// The data pages of a chunk (at `chunk` in the file) from its offset index: each page's
/// place and its rows (the next page's first row, or the chunk's rows, less its own). None
/// without an index, or with one that does not fit the chunk.
fn indexed_pages(
    file: &Blob,
    meta: &ColumnChunkMetaData,
    chunk: std::ops::Range<u64>,
) -> Option<Vec<PageSpan>> {
    let (at, len) = (
        u64::try_from(meta.offset_index_offset()?).ok()?,
        usize::try_from(meta.offset_index_length()?).ok()?,
    );
    if len == 0 || len > 1 << 24 {
        return None;
    }
    let mut buf = vec![0u8; len];
    file.read_at(&mut buf, at).ok()?;
    let index = parquet::file::page_index::index_reader::decode_offset_index(&buf).ok()?;
    let locations = index.page_locations();
    let rows = u64::try_from(meta.num_values()).ok()?;
    let mut pages = Vec::with_capacity(locations.len());
    for (i, p) in locations.iter().enumerate() {
        let first = u64::try_from(p.first_row_index).ok()?;
        let next = match locations.get(i + 1) {
            Some(n) => u64::try_from(n.first_row_index).ok()?,
            None => rows,
        };
        let (offset, size) =
            (u64::try_from(p.offset).ok()?, u64::try_from(p.compressed_page_size).ok()?);
        if next <= first || offset < chunk.start || offset.checked_add(size)? > chunk.end {
            return None;
        }
        pages.push(PageSpan { rows: next - first, offset, len: size });
    }
    (pages.iter().map(|p| p.rows).sum::<u64>() == rows).then_some(pages)
}

/// The page header at `pos` (of a chunk that ends at `end`), and its length. Most headers fit
/// in 256 bytes; one with large statistics is read again, longer.
fn read_header(
    file: &Blob,
    pos: u64,
    end: u64,
    buf: &mut Vec<u8>,
) -> Option<(header::Header, usize)> {
    let left = end.checked_sub(pos)?;
    let mut want = 256u64;
    loop {
        let n = want.min(left) as usize;
        buf.clear();
        buf.resize(n, 0);
        read_at(file, buf, pos)?;
        match header::page_header(buf) {
            Some(x) => return Some(x),
            None if want < left && want < 1 << 24 => want *= 16,
            None => return None,
        }
    }
}

fn read_at(file: &Blob, buf: &mut [u8], at: u64) -> Option<()> {
    file.read_at(buf, at).ok()
}

fn walk_pages(
    chunk: &[u8],
    codec: Compression,
    num_values: i64,
    s: &mut Scratch,
    c: &mut Counting,
) -> Option<()> {
    let mut pos = 0usize;
    let mut values_read = 0i64;
    let mut page = std::mem::take(&mut s.page);
    let r = (|| {
        while pos < chunk.len() && values_read < num_values {
            let (h, header_len) = header::page_header(&chunk[pos..])?;
            let body_start = pos + header_len;
            let body = chunk
                .get(body_start..body_start.checked_add(usize::try_from(h.compressed).ok()?)?)?;
            pos = body_start + body.len();
            let size = usize::try_from(h.uncompressed).ok()?;
            if size > MAX_PAGE {
                return None;
            }
            match h.kind {
                header::DICTIONARY_PAGE => {
                    let (n, encoding) = h.dict?;
                    let mut dict = std::mem::take(&mut s.dict);
                    let ok = decompress(codec, body, size, &mut dict);
                    s.dict = dict;
                    s.dict_len = size;
                    ok?;
                    c.dictionary(s, usize::try_from(n).ok()?, encoding)?;
                }
                header::DATA_PAGE => {
                    let (n, encoding, def_encoding) = h.v1?;
                    let buf = inflate(codec, body, size, &mut page)?;
                    values_read += n as i64;
                    c.data_v1(buf, usize::try_from(n).ok()?, encoding, def_encoding, s)?;
                }
                header::DATA_PAGE_V2 => {
                    let v = h.v2?;
                    let levels = usize::try_from(v.def_len)
                        .ok()?
                        .checked_add(usize::try_from(v.rep_len).ok()?)?;
                    if v.rep_len != 0 || levels > body.len() || levels > size {
                        return None;
                    }
                    let rest = &body[levels..];
                    let values = if v.is_compressed {
                        inflate(codec, rest, size - levels, &mut page)?
                    } else {
                        rest
                    };
                    values_read += v.num_values as i64;
                    c.data_v2(
                        values,
                        usize::try_from(v.num_values).ok()?,
                        usize::try_from(v.num_nulls).ok()?,
                        v.encoding,
                        s,
                    )?;
                }
                header::INDEX_PAGE => {}
                _ => return None,
            }
        }
        Some(())
    })();
    s.page = page;
    r
}

/// Count the `n` non-null values of a data page into dictionary counts or plain values.
fn values_of(values: &[u8], encoding: i32, n: usize, s: &mut Scratch) -> Option<()> {
    if n == 0 {
        return Some(());
    }
    match encoding {
        enc::RLE_DICTIONARY | enc::PLAIN_DICTIONARY => {
            let (&bw, data) = values.split_first()?;
            if bw > 32 || s.offs.is_empty() {
                return None;
            }
            let bw = bw as u32;
            // Padded to 2^width for the fixed-width loads, unless the width is far more than the
            // dictionary needs (then every index is checked instead).
            if bw <= FIXED_MAX
                && s.counts.len() < 1 << bw
                && (1usize << bw) <= (2 * s.offs.len()).max(1 << 12)
            {
                s.counts.resize(1 << bw, 0);
            }
            count_indices(data, bw, n, &mut s.counts)
        }
        enc::PLAIN => {
            let mut pos = 0usize;
            for _ in 0..n {
                let len = u32::from_le_bytes(values.get(pos..pos + 4)?.try_into().ok()?) as usize;
                let v = values.get(pos + 4..(pos + 4).checked_add(len)?)?;
                *s.plain.entry_ref(v).or_insert(0) += 1;
                pos += 4 + len;
            }
            Some(())
        }
        _ => None,
    }
}
