//! Count a flat string or binary column chunk straight from its pages: the dictionary page is
//! split into values, and each data page's dictionary indices (Parquet's RLE / bit-packed
//! hybrid) are counted without building any Arrow array. A run of N equal indices is one
//! addition, and a page's NULLs are a popcount of its definition levels. Pages written without
//! the dictionary (PLAIN, after a writer's fallback) are counted value by value.
//!
//! The chunk is read with one positioned read into a buffer the thread reuses, its page
//! headers are decoded here (`thrift`), and each page is decompressed into another reused
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
        if h.kind == thrift::DICTIONARY_PAGE {
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
            thrift::DATA_PAGE => u64::try_from(h.v1?.0).ok()?,
            thrift::DATA_PAGE_V2 => u64::try_from(h.v2?.num_values).ok()?,
            thrift::DICTIONARY_PAGE | thrift::INDEX_PAGE => 0,
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
) -> Option<(thrift::Header, usize)> {
    let left = end.checked_sub(pos)?;
    let mut want = 256u64;
    loop {
        let n = want.min(left) as usize;
        buf.clear();
        buf.resize(n, 0);
        read_at(file, buf, pos)?;
        match thrift::page_header(buf) {
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
            let (h, header_len) = thrift::page_header(&chunk[pos..])?;
            let body_start = pos + header_len;
            let body = chunk
                .get(body_start..body_start.checked_add(usize::try_from(h.compressed).ok()?)?)?;
            pos = body_start + body.len();
            let size = usize::try_from(h.uncompressed).ok()?;
            if size > MAX_PAGE {
                return None;
            }
            match h.kind {
                thrift::DICTIONARY_PAGE => {
                    let (n, encoding) = h.dict?;
                    let mut dict = std::mem::take(&mut s.dict);
                    let ok = decompress(codec, body, size, &mut dict);
                    s.dict = dict;
                    s.dict_len = size;
                    ok?;
                    c.dictionary(s, usize::try_from(n).ok()?, encoding)?;
                }
                thrift::DATA_PAGE => {
                    let (n, encoding, def_encoding) = h.v1?;
                    let buf = inflate(codec, body, size, &mut page)?;
                    values_read += n as i64;
                    c.data_v1(buf, usize::try_from(n).ok()?, encoding, def_encoding, s)?;
                }
                thrift::DATA_PAGE_V2 => {
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
                thrift::INDEX_PAGE => {}
                _ => return None,
            }
        }
        Some(())
    })();
    s.page = page;
    r
}

/// The page body decompressed into `out` (or the body itself when stored uncompressed).
fn inflate<'a>(
    codec: Compression,
    body: &'a [u8],
    size: usize,
    out: &'a mut Vec<u8>,
) -> Option<&'a [u8]> {
    if matches!(codec, Compression::UNCOMPRESSED) {
        return (body.len() == size).then_some(body);
    }
    decompress(codec, body, size, out)?;
    Some(&out[..size])
}

/// Decompress `body` into `out[..size]`; for an uncompressed page, copy it.
fn decompress(codec: Compression, body: &[u8], size: usize, out: &mut Vec<u8>) -> Option<()> {
    // A size the body cannot have is refused before anything is allocated: Snappy and ZSTD
    // state their length, LZ4 expands at most 255 times.
    let plausible = match codec {
        Compression::UNCOMPRESSED => body.len() == size,
        Compression::SNAPPY => snap::raw::decompress_len(body).ok()? == size,
        Compression::ZSTD(_) => match zstd::zstd_safe::get_frame_content_size(body) {
            Ok(Some(n)) => n == size as u64,
            _ => size <= body.len().saturating_mul(64).max(1 << 20),
        },
        Compression::LZ4_RAW => size <= body.len().saturating_mul(255).saturating_add(16),
        _ => false,
    };
    if !plausible {
        return None;
    }
    if out.len() < size {
        out.resize(size, 0);
    }
    let dst = &mut out[..size];
    let got = match codec {
        Compression::UNCOMPRESSED => {
            dst.copy_from_slice(body);
            size
        }
        Compression::SNAPPY => snap::raw::Decoder::new().decompress(body, dst).ok()?,
        Compression::ZSTD(_) => zstd::bulk::decompress_to_buffer(body, dst).ok()?,
        Compression::LZ4_RAW => lz4_flex::block::decompress_into(body, dst).ok()?,
        _ => return None,
    };
    (got == size || size == 0).then_some(())
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

/// PLAIN byte arrays: a 4-byte little-endian length before each value.
fn split_plain(buf: &[u8], n: usize, out: &mut Vec<(u32, u32)>) -> Option<()> {
    out.clear();
    if buf.len() > u32::MAX as usize || n > buf.len() / 4 + 1 {
        return None;
    }
    out.reserve(n);
    if n == 0 {
        return Some(());
    }
    // Keys of one length are common (ids, codes, UUIDs): guess that every value has the first
    // one's length and check all the length fields at once (independent loads, where walking
    // value by value waits on each length to find the next).
    let first = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let stride = first + 4;
    if n.checked_mul(stride).is_some_and(|t| t <= buf.len())
        && (0..n).all(|i| buf[i * stride..i * stride + 4] == buf[..4])
    {
        out.extend((0..n).map(|i| ((i * stride + 4) as u32, (i * stride + stride) as u32)));
        return Some(());
    }
    let mut pos = 0usize;
    for _ in 0..n {
        let len = u32::from_le_bytes(buf.get(pos..pos + 4)?.try_into().ok()?) as usize;
        let start = pos + 4;
        let end = start.checked_add(len)?;
        if end > buf.len() {
            return None;
        }
        out.push((start as u32, end as u32));
        pos = end;
    }
    Some(())
}

/// One run header of the RLE / bit-packed hybrid: (header, bytes it took).
#[inline]
fn uleb(data: &[u8], mut pos: usize) -> Option<(u64, usize)> {
    let mut header: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *data.get(pos)?;
        pos += 1;
        header |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some((header, pos));
        }
        shift += 7;
        if shift > 56 {
            return None;
        }
    }
}

/// The ones among `n` definition levels of bit width 1 (the non-null values of a flat
/// optional column): RLE runs are counted whole, bit-packed groups by popcount.
fn count_ones(data: &[u8], n: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has POPCNT, the one feature the function is compiled with.
            return unsafe { count_ones_popcnt(data, n) };
        }
    }
    count_ones_any(data, n)
}

/// `count_ones` compiled with the POPCNT instruction (x86_64's baseline lacks it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn count_ones_popcnt(data: &[u8], n: usize) -> Option<usize> {
    count_ones_any(data, n)
}

#[inline(always)]
fn count_ones_any(data: &[u8], n: usize) -> Option<usize> {
    let mut pos = 0usize;
    let mut left = n;
    let mut ones = 0usize;
    while left > 0 {
        let (header, p) = uleb(data, pos)?;
        pos = p;
        if header & 1 == 0 {
            let count = ((header >> 1) as usize).min(left);
            let v = *data.get(pos)?;
            pos += 1;
            if count == 0 || v > 1 {
                return None;
            }
            ones += count * v as usize;
            left -= count;
        } else {
            let groups = (header >> 1) as usize;
            if groups == 0 {
                return None;
            }
            let chunk = data.get(pos..pos.checked_add(groups)?)?;
            pos += groups;
            let take = groups.checked_mul(8)?.min(left);
            let full = take / 8;
            let words = chunk[..full].chunks_exact(8);
            let rest = words.remainder();
            ones += words
                .map(|w| {
                    u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
                        .count_ones() as usize
                })
                .sum::<usize>();
            let mut tail = [0u8; 8];
            tail[..rest.len()].copy_from_slice(rest);
            ones += u64::from_le_bytes(tail).count_ones() as usize;
            if take % 8 != 0 {
                ones += (chunk[full] & ((1u8 << (take % 8)) - 1)).count_ones() as usize;
            }
            left -= take;
        }
    }
    Some(ones)
}

/// Count `n` dictionary indices of bit width `bw` (RLE / bit-packed hybrid) into `counts`;
/// None on bad input or an index past the dictionary.
fn count_indices(data: &[u8], bw: u32, n: usize, counts: &mut [u32]) -> Option<()> {
    let mut pos = 0usize;
    let mut left = n;
    let value_bytes = bw.div_ceil(8) as usize;
    while left > 0 {
        let (header, p) = uleb(data, pos)?;
        pos = p;
        if header & 1 == 0 {
            let count = ((header >> 1) as usize).min(left);
            if count == 0 {
                return None;
            }
            let mut v: u32 = 0;
            for i in 0..value_bytes {
                v |= (*data.get(pos + i)? as u32) << (8 * i);
            }
            pos += value_bytes;
            let slot = counts.get_mut(v as usize)?;
            *slot = slot.wrapping_add(count as u32);
            left -= count;
        } else {
            let groups = (header >> 1) as usize;
            if groups == 0 {
                return None;
            }
            let bytes = groups.checked_mul(bw as usize)?;
            let chunk = data.get(pos..pos.checked_add(bytes)?)?;
            let take = groups.checked_mul(8)?.min(left);
            // The loads may read past the run into the rest of the page (never past the page).
            unpack_count(chunk, &data[pos..], bw, take, counts)?;
            pos += bytes;
            left -= take;
        }
    }
    Some(())
}

/// Widths up to this are counted by `unpack_fixed`, into a table of 2^width counts.
const FIXED_MAX: u32 = 24;

/// Count the first `take` values of bit-packed `chunk` (width `bw`, at most 32); `readable`
/// starts where `chunk` does and may go on past it (whole-word loads may read there, the
/// values come from `chunk` alone). For widths up to `FIXED_MAX`, `counts` must hold at least
/// 2^bw entries (an index past the dictionary then lands in the padding, which the caller
/// checks is still zero).
#[inline]
fn unpack_count(
    chunk: &[u8],
    readable: &[u8],
    bw: u32,
    take: usize,
    counts: &mut [u32],
) -> Option<()> {
    macro_rules! fixed {
        ($($w:literal)*) => {
            match bw {
                $($w => return unpack_fixed::<$w>(chunk, readable, take, counts),)*
                _ => {}
            }
        };
    }
    if counts.len() >= 1 << bw.min(FIXED_MAX + 1) {
        fixed!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24);
    }
    if bw == 0 {
        let slot = counts.get_mut(0)?;
        *slot = slot.wrapping_add(take as u32);
        return Some(());
    }
    unpack_tail(chunk, bw as usize, 0, take, counts)
}

/// Bit-packed values of a width known at compile time: each group of 8 values is `W` bytes,
/// and each value one unaligned 8-byte load with a constant offset, shift and mask.
#[inline(always)]
fn unpack_fixed<const W: usize>(
    chunk: &[u8],
    readable: &[u8],
    take: usize,
    counts: &mut [u32],
) -> Option<()> {
    let mask = (1usize << W) - 1;
    let c = counts.get_mut(..1 << W)?;
    // Whole groups whose last load (at byte W - 1 + 7 of the group at most) stays readable.
    let groups = (take / 8).min(readable.len().saturating_sub(7) / W);
    for g in 0..groups {
        let grp = &readable[g * W..g * W + W + 7];
        for i in 0..8 {
            let bit = i * W;
            let at = bit / 8;
            let w = u64::from_le_bytes([
                grp[at],
                grp[at + 1],
                grp[at + 2],
                grp[at + 3],
                grp[at + 4],
                grp[at + 5],
                grp[at + 6],
                grp[at + 7],
            ]);
            let v = (w >> (bit % 8)) as usize & mask;
            c[v] = c[v].wrapping_add(1);
        }
    }
    unpack_tail(chunk, W, groups * 8, take, c)
}

/// Values `from..take` of bit-packed `chunk`, read byte by byte into an 8-byte window.
fn unpack_tail(
    chunk: &[u8],
    bw: usize,
    from: usize,
    take: usize,
    counts: &mut [u32],
) -> Option<()> {
    let mask: u64 = (1u64 << bw) - 1;
    let mut bit = from * bw;
    for _ in from..take {
        let at = bit >> 3;
        let mut w = [0u8; 8];
        let end = (at + 8).min(chunk.len());
        w[..end.checked_sub(at)?].copy_from_slice(&chunk[at..end]);
        let v = ((u64::from_le_bytes(w) >> (bit & 7)) & mask) as usize;
        let slot = counts.get_mut(v)?;
        *slot = slot.wrapping_add(1);
        bit += bw;
    }
    Some(())
}

/// The little of Thrift's compact protocol that a page header needs.
mod thrift {
    pub const DATA_PAGE: i32 = 0;
    pub const INDEX_PAGE: i32 = 1;
    pub const DICTIONARY_PAGE: i32 = 2;
    pub const DATA_PAGE_V2: i32 = 3;

    #[derive(Default)]
    pub struct Header {
        pub kind: i32,
        pub uncompressed: i32,
        pub compressed: i32,
        /// num_values, encoding, definition level encoding.
        pub v1: Option<(i32, i32, i32)>,
        /// num_values, encoding.
        pub dict: Option<(i32, i32)>,
        pub v2: Option<V2>,
    }

    #[derive(Default, Clone, Copy)]
    pub struct V2 {
        pub num_values: i32,
        pub num_nulls: i32,
        pub encoding: i32,
        pub def_len: i32,
        pub rep_len: i32,
        pub is_compressed: bool,
    }

    struct R<'a> {
        b: &'a [u8],
        p: usize,
    }

    const BOOL_TRUE: u8 = 1;
    const BOOL_FALSE: u8 = 2;
    const I32: u8 = 5;
    const STRUCT: u8 = 12;

    impl<'a> R<'a> {
        fn byte(&mut self) -> Option<u8> {
            let b = *self.b.get(self.p)?;
            self.p += 1;
            Some(b)
        }
        fn varint(&mut self) -> Option<u64> {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let b = self.byte()?;
                v |= ((b & 0x7f) as u64) << shift;
                if b & 0x80 == 0 {
                    return Some(v);
                }
                shift += 7;
                if shift > 63 {
                    return None;
                }
            }
        }
        fn zigzag(&mut self) -> Option<i64> {
            let v = self.varint()?;
            Some((v >> 1) as i64 ^ -((v & 1) as i64))
        }
        fn i32(&mut self, ty: u8) -> Option<i32> {
            if ty != I32 {
                return None;
            }
            i32::try_from(self.zigzag()?).ok()
        }
        /// The next field's (id, type); type 0 is the end of the struct.
        fn field(&mut self, last: &mut i16) -> Option<(i16, u8)> {
            let b = self.byte()?;
            let ty = b & 0x0f;
            if ty == 0 {
                return Some((0, 0));
            }
            let delta = (b >> 4) as i16;
            let id = if delta == 0 {
                i16::try_from(self.zigzag()?).ok()?
            } else {
                last.checked_add(delta)?
            };
            *last = id;
            Some((id, ty))
        }
        fn skip(&mut self, ty: u8, depth: u32) -> Option<()> {
            if depth > 32 {
                return None;
            }
            match ty {
                BOOL_TRUE | BOOL_FALSE => {}
                3 => {
                    self.byte()?;
                }
                4..=6 => {
                    self.varint()?;
                }
                7 => self.advance(8)?,
                8 => {
                    let n = usize::try_from(self.varint()?).ok()?;
                    self.advance(n)?;
                }
                9 | 10 => {
                    let h = self.byte()?;
                    let n = if h >> 4 == 15 {
                        usize::try_from(self.varint()?).ok()?
                    } else {
                        (h >> 4) as usize
                    };
                    // Every element takes at least a byte: a longer list cannot be there.
                    if n > self.b.len() - self.p {
                        return None;
                    }
                    for _ in 0..n {
                        self.element(h & 0x0f, depth)?;
                    }
                }
                11 => {
                    let n = usize::try_from(self.varint()?).ok()?;
                    if n > (self.b.len() - self.p) / 2 {
                        return None;
                    }
                    if n > 0 {
                        let kv = self.byte()?;
                        for _ in 0..n {
                            self.element(kv >> 4, depth)?;
                            self.element(kv & 0x0f, depth)?;
                        }
                    }
                }
                STRUCT => {
                    let mut last = 0i16;
                    loop {
                        let (_, t) = self.field(&mut last)?;
                        if t == 0 {
                            break;
                        }
                        self.skip(t, depth + 1)?;
                    }
                }
                _ => return None,
            }
            Some(())
        }
        /// A list, set or map element: a boolean there is a byte of its own.
        fn element(&mut self, ty: u8, depth: u32) -> Option<()> {
            if ty == BOOL_TRUE || ty == BOOL_FALSE {
                self.byte().map(|_| ())
            } else {
                self.skip(ty, depth + 1)
            }
        }
        fn advance(&mut self, n: usize) -> Option<()> {
            let end = self.p.checked_add(n)?;
            if end > self.b.len() {
                return None;
            }
            self.p = end;
            Some(())
        }
        /// A struct's i32 fields by id (`want`, up to 8), the others skipped; booleans as 0/1.
        fn fields(&mut self, want: &mut [Option<i32>; 8]) -> Option<()> {
            let mut last = 0i16;
            loop {
                let (id, ty) = self.field(&mut last)?;
                if ty == 0 {
                    return Some(());
                }
                match (id, ty) {
                    (1..=8, BOOL_TRUE) => want[id as usize - 1] = Some(1),
                    (1..=8, BOOL_FALSE) => want[id as usize - 1] = Some(0),
                    (1..=8, I32) => want[id as usize - 1] = Some(self.i32(ty)?),
                    _ => self.skip(ty, 1)?,
                }
            }
        }
    }

    /// Decode a PageHeader at the start of `b`: the header and its length in bytes.
    pub fn page_header(b: &[u8]) -> Option<(Header, usize)> {
        let mut r = R { b, p: 0 };
        let mut h = Header { kind: -1, uncompressed: -1, compressed: -1, ..Default::default() };
        let mut last = 0i16;
        loop {
            let (id, ty) = r.field(&mut last)?;
            if ty == 0 {
                break;
            }
            match (id, ty) {
                (1, I32) => h.kind = r.i32(ty)?,
                (2, I32) => h.uncompressed = r.i32(ty)?,
                (3, I32) => h.compressed = r.i32(ty)?,
                (5, STRUCT) => {
                    let mut f = [None; 8];
                    r.fields(&mut f)?;
                    h.v1 = Some((f[0]?, f[1]?, f[2]?));
                }
                (7, STRUCT) => {
                    let mut f = [None; 8];
                    r.fields(&mut f)?;
                    h.dict = Some((f[0]?, f[1]?));
                }
                (8, STRUCT) => {
                    let mut f = [None; 8];
                    r.fields(&mut f)?;
                    h.v2 = Some(V2 {
                        num_values: f[0]?,
                        num_nulls: f[1]?,
                        encoding: f[3]?,
                        def_len: f[4]?,
                        rep_len: f[5]?,
                        is_compressed: f[6].unwrap_or(1) != 0,
                    });
                }
                _ => r.skip(ty, 1)?,
            }
        }
        if h.kind < 0 || h.uncompressed < 0 || h.compressed < 0 {
            return None;
        }
        Some((h, r.p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts of a dictionary of `len` values, padded as `values_of` pads them; None also for
    /// an index past the dictionary.
    fn counts_of(data: &[u8], bw: u32, n: usize, len: usize) -> Option<Vec<u32>> {
        let mut c = vec![0u32; if bw <= FIXED_MAX { len.max(1 << bw) } else { len }];
        count_indices(data, bw, n, &mut c)?;
        if c[len..].iter().any(|&x| x != 0) {
            return None;
        }
        c.truncate(len);
        Some(c)
    }

    #[test]
    fn hybrid_runs_and_bit_packed_groups() {
        // RLE run of 5 x value 3 (bw 2), then one bit-packed group of 8 values 0..=3,0..=3.
        let mut data = vec![5 << 1, 3];
        data.push((1 << 1) | 1);
        // 8 values with bw 2: 0,1,2,3,0,1,2,3 -> bits little-endian: 0b11100100 twice.
        data.extend_from_slice(&[0b1110_0100, 0b1110_0100]);
        assert_eq!(counts_of(&data, 2, 13, 4).unwrap(), [2, 2, 2, 7]);
        // Truncated input is refused, not read past; so is an index past the dictionary.
        assert!(counts_of(&data[..3], 2, 13, 4).is_none());
        assert!(counts_of(&data, 2, 13, 3).is_none());
    }

    #[test]
    fn bit_packed_widths_match_a_plain_unpacker() {
        // Every width 1..=32, 40 groups (320 values) of which 316 are taken, so the last group
        // is partly padding: the fixed-width loads, the tail path and bit-by-bit reads agree.
        for bw in 1..=32u32 {
            let groups = 40usize;
            let vals: Vec<u64> = (0..groups as u64 * 8)
                .map(|i| (i * 2_654_435_761 + (i >> 3)) & ((1u64 << bw) - 1))
                .collect();
            let mut bits = vec![0u8; groups * bw as usize];
            for (i, v) in vals.iter().enumerate() {
                for b in 0..bw as usize {
                    if v >> b & 1 == 1 {
                        let at = i * bw as usize + b;
                        bits[at / 8] |= 1 << (at % 8);
                    }
                }
            }
            let mut data = vec![((groups as u8) << 1) | 1];
            data.extend_from_slice(&bits);
            let take = groups * 8 - 4;
            let mut want: HashMap<u64, u32> = HashMap::new();
            for v in &vals[..take] {
                *want.entry(*v).or_insert(0) += 1;
            }
            let len = 1usize << bw.min(20);
            if bw <= 20 {
                let c = counts_of(&data, bw, take, len).unwrap();
                let got: HashMap<u64, u32> = c
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(i, n)| (i as u64, *n))
                    .collect();
                assert_eq!(got, want, "width {bw}");
            } else {
                // Indices past a dictionary of 2^20 values are refused.
                assert!(counts_of(&data, bw, take, len).is_none(), "width {bw}");
            }
        }
    }

    #[test]
    fn definition_levels_by_popcount() {
        // RLE run of 10 ones, a bit-packed group of 8 (0b1011_0001: 4 ones) of which 6 taken.
        let data = [10 << 1, 1, (1 << 1) | 1, 0b1011_0001];
        assert_eq!(count_ones(&data, 16), Some(10 + 3));
        assert_eq!(count_ones(&data, 18), Some(14));
        assert_eq!(count_ones(&data, 19), None);
        // A level above 1 is not a flat column's.
        assert_eq!(count_ones(&[4 << 1, 2], 4), None);
    }

    #[test]
    fn plain_byte_arrays() {
        let buf = [1, 0, 0, 0, b'a', 0, 0, 0, 0, 2, 0, 0, 0, b'b', b'c'];
        let mut v = Vec::new();
        split_plain(&buf, 3, &mut v).unwrap();
        assert_eq!(v, vec![(4, 5), (9, 9), (13, 15)]);
        assert!(split_plain(&buf, 4, &mut v).is_none());
        // Values of one length (checked all at once), and one that breaks the pattern late.
        let same: Vec<u8> = (0..50u8).flat_map(|i| [2, 0, 0, 0, b'x', i]).collect();
        split_plain(&same, 50, &mut v).unwrap();
        assert_eq!(v.len(), 50);
        assert_eq!((v[0], v[49]), ((4, 6), (49 * 6 + 4, 49 * 6 + 6)));
        assert!(split_plain(&same, 51, &mut v).is_none());
        // Value 40 one byte long: the guess fails there, and the walk finds every value.
        let odd: Vec<u8> = (0..50u8)
            .flat_map(|i| if i == 40 { vec![1, 0, 0, 0, b'y'] } else { vec![2, 0, 0, 0, b'x', i] })
            .collect();
        split_plain(&odd, 50, &mut v).unwrap();
        assert_eq!((v[39], v[40], v[41]), ((39 * 6 + 4, 39 * 6 + 6), (244, 245), (249, 251)));
        assert_eq!(v[49], (odd.len() as u32 - 2, odd.len() as u32));
    }

    #[test]
    fn page_headers_decode_and_bad_ones_are_refused() {
        // type=DATA_PAGE(0), uncompressed=100, compressed=50, data_page_header {num_values=7,
        // encoding=8, def=3, rep=3, statistics {max=binary "z"}}.
        let h = [
            0x15, 0x00, // field 1 i32: 0
            0x15, 0xc8, 0x01, // field 2 i32: 100
            0x15, 0x64, // field 3 i32: 50
            0x2c, // field 5 struct
            0x15, 0x0e, 0x15, 0x10, 0x15, 0x06, 0x15, 0x06, // 7, 8, 3, 3
            0x1c, 0x18, 0x01, b'z', 0x00, // statistics { 1: binary "z" }
            0x00, // end data_page_header
            0x00, // end PageHeader
        ];
        let (hd, len) = thrift::page_header(&h).unwrap();
        assert_eq!(len, h.len());
        assert_eq!((hd.kind, hd.uncompressed, hd.compressed), (0, 100, 50));
        assert_eq!(hd.v1, Some((7, 8, 3)));
        for cut in 0..h.len() {
            assert!(thrift::page_header(&h[..cut]).is_none(), "cut at {cut}");
        }
        // An unknown field holding a map of 2^63 boolean pairs, or a list of 2^31 booleans,
        // is refused at once (it cannot fit), not looped over.
        let mut m = h[..7].to_vec();
        m.extend_from_slice(&[
            0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x11, 0x00,
        ]);
        let t = std::time::Instant::now();
        assert!(thrift::page_header(&m).is_none());
        let mut l = h[..7].to_vec();
        l.extend_from_slice(&[0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00]);
        assert!(thrift::page_header(&l).is_none());
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn implausible_page_sizes_are_refused_before_allocating() {
        let mut out = Vec::new();
        assert!(decompress(Compression::UNCOMPRESSED, b"abc", 1 << 29, &mut out).is_none());
        assert!(decompress(Compression::LZ4_RAW, b"abc", 1 << 29, &mut out).is_none());
        assert!(
            decompress(Compression::SNAPPY, &[3, 8, b'a', b'b', b'c'], 1 << 29, &mut out).is_none()
        );
        assert!(out.capacity() < 1 << 20, "{} bytes allocated", out.capacity());
        assert!(decompress(Compression::UNCOMPRESSED, b"abc", 3, &mut out).is_some());
        assert_eq!(&out[..3], b"abc");
    }
}
