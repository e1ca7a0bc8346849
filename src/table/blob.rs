//! One Parquet file to read from, on local disk or in an object store, behind one type that
//! the page counter reads with `read_at` and the parquet crate with its `ChunkReader`.
//!
//! An object is fetched by byte ranges, never whole. The parquet crate's reads are widened to
//! what a reader needs next: the 64 KiB at the end of the object for the footer, and the whole
//! column chunk that holds the bytes asked for (one request per key column chunk, however
//! many pages it has). `read_at`, for the page counter, fetches exactly the bytes asked for
//! (whole chunks, sampled pages), but for reads under 64 KiB (page headers, offset indexes),
//! widened the same way. A few fetched ranges are kept per reader.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, Length};

use crate::error::Result;
use crate::table::store::{self, Object};

/// Where a table's file is.
#[derive(Debug, Clone)]
pub enum Location {
    Local(PathBuf),
    Remote(Arc<Object>),
}

/// An open file or object.
pub struct Blob {
    inner: Inner,
    len: u64,
}

enum Inner {
    Local(File),
    Remote(Remote),
}

struct Remote {
    object: Arc<Object>,
    /// Byte ranges of the file's column chunks, by start.
    chunks: Vec<Range<u64>>,
    /// Ranges fetched, newest last.
    kept: Mutex<Vec<(u64, Bytes)>>,
}

/// The end of an object fetched for its footer (most footers fit).
const TAIL: u64 = 64 << 10;
/// Reads shorter than this are widened as the parquet crate's are.
const SMALL: usize = 64 << 10;
/// Ranges a reader keeps (a row group's key columns, the footer).
const KEPT: usize = 8;

impl Blob {
    /// Open `at`; `meta`, when the footer is known, tells where its column chunks are.
    pub fn open(at: &Location, meta: Option<&ParquetMetaData>) -> std::io::Result<Blob> {
        match at {
            Location::Local(path) => {
                let f = File::open(path)?;
                let len = f.metadata()?.len();
                Ok(Blob { inner: Inner::Local(f), len })
            }
            Location::Remote(object) => {
                let mut chunks: Vec<Range<u64>> = meta.map(chunk_ranges).unwrap_or_default();
                chunks.sort_by_key(|r| r.start);
                let remote =
                    Remote { object: object.clone(), chunks, kept: Mutex::new(Vec::new()) };
                Ok(Blob { inner: Inner::Remote(remote), len: object.size })
            }
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fill `buf` from offset `at`, fetching exactly those bytes if they are not at hand.
    pub fn read_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<()> {
        match &self.inner {
            Inner::Local(f) => read_local(f, buf, at),
            Inner::Remote(r) => {
                let end = at.checked_add(buf.len() as u64).filter(|&e| e <= self.len).ok_or_else(
                    || {
                        std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            format!(
                                "{} bytes at {at} run past the end ({} bytes)",
                                buf.len(),
                                self.len
                            ),
                        )
                    },
                )?;
                // A small read (a page header, an index) would be a request of its own each:
                // it fetches the chunk that holds it instead, and the next ones are served
                // from there.
                let bytes = match r.kept(at..end) {
                    Some(b) => b,
                    None if buf.len() < SMALL => r.get(at..end, self.len)?,
                    None => r.fetch(at..end)?,
                };
                buf.copy_from_slice(&bytes);
                Ok(())
            }
        }
    }
}

#[cfg(unix)]
fn read_local(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.read_exact_at(buf, at)
}

#[cfg(not(unix))]
fn read_local(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut f = f.try_clone()?;
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(buf)
}

/// Every column chunk's byte range.
fn chunk_ranges(meta: &ParquetMetaData) -> Vec<Range<u64>> {
    meta.row_groups().iter().flat_map(|rg| rg.columns().iter().map(chunk_range)).collect()
}

/// A column chunk's byte range: from its dictionary page (or first data page) for its
/// compressed size. Unlike the parquet crate's `byte_range`, a corrupt footer's negative offset
/// or size never panics (it reads as 0).
pub(crate) fn chunk_range(c: &parquet::file::metadata::ColumnChunkMetaData) -> Range<u64> {
    let start =
        c.dictionary_page_offset().filter(|&d| d > 0).unwrap_or(c.data_page_offset()).max(0) as u64;
    start..start.saturating_add(c.compressed_size().max(0) as u64)
}

impl Remote {
    /// The bytes `want` if a kept range holds them.
    fn kept(&self, want: Range<u64>) -> Option<Bytes> {
        let len = (want.end - want.start) as usize;
        self.kept_from(want.start).filter(|b| b.len() >= len).map(|b| b.slice(..len))
    }

    /// The kept bytes from `start` to the end of the range that holds it.
    fn kept_from(&self, start: u64) -> Option<Bytes> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter()
            .rev()
            .find(|(at, b)| *at <= start && start < at + b.len() as u64)
            .map(|(at, b)| b.slice((start - at) as usize..))
    }

    /// Fetch `range` (or take it from what was fetched ahead) and keep it.
    fn fetch(&self, range: Range<u64>) -> std::io::Result<Bytes> {
        if let Some((whole, got)) = store::take_ahead(&self.object, &range) {
            let slice =
                got.slice((range.start - whole.start) as usize..(range.end - whole.start) as usize);
            self.keep(whole.start, got);
            return Ok(slice);
        }
        let got = store::get_range(&self.object, range.clone()).map_err(std::io::Error::other)?;
        if got.len() as u64 != range.end - range.start {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: asked for {} bytes, got {}",
                    self.object.url,
                    range.end - range.start,
                    got.len()
                ),
            ));
        }
        self.keep(range.start, got.clone());
        Ok(got)
    }

    fn keep(&self, at: u64, got: Bytes) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == KEPT {
            kept.remove(0);
        }
        kept.push((at, got));
    }

    /// What to fetch for a read of `want` by the parquet crate: the column chunk that holds
    /// it, or the object's last 64 KiB for the footer, else the bytes asked for.
    fn widen(&self, want: Range<u64>, len: u64) -> Range<u64> {
        let i = self.chunks.partition_point(|c| c.start <= want.start);
        if let Some(c) = i.checked_sub(1).map(|i| &self.chunks[i]) {
            if want.end <= c.end && c.end <= len {
                return c.clone();
            }
        }
        if want.start >= len.saturating_sub(TAIL) {
            return len.saturating_sub(TAIL)..len;
        }
        want
    }

    /// The bytes `want`, from a kept range or fetched (widened).
    fn get(&self, want: Range<u64>, len: u64) -> std::io::Result<Bytes> {
        if let Some(b) = self.kept(want.clone()) {
            return Ok(b);
        }
        let wide = self.widen(want.clone(), len);
        let got = self.fetch(wide.clone())?;
        // `fetch` returned the whole of `wide`, which holds `want`: the slice is inside it.
        Ok(got.slice((want.start - wide.start) as usize..(want.end - wide.start) as usize))
    }
}

impl Length for Blob {
    fn len(&self) -> u64 {
        self.len
    }
}

/// What `get_read` hands the parquet crate: a local file's reader or fetched bytes.
pub enum BlobRead {
    Local(std::io::BufReader<File>),
    Remote(bytes::buf::Reader<Bytes>),
}

impl Read for BlobRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            BlobRead::Local(r) => r.read(buf),
            BlobRead::Remote(r) => r.read(buf),
        }
    }
}

impl ChunkReader for Blob {
    type T = BlobRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<BlobRead> {
        match &self.inner {
            Inner::Local(f) => Ok(BlobRead::Local(f.get_read(start)?)),
            Inner::Remote(r) => {
                if start >= self.len {
                    return Err(parquet::errors::ParquetError::EOF(format!(
                        "a read at {start} is past the end ({} bytes)",
                        self.len
                    )));
                }
                // Page headers are read through this: serve them from the chunk being read.
                let bytes = match r.kept_from(start) {
                    Some(b) => b,
                    None => {
                        let want = start..(start + 1).min(self.len);
                        let wide = r.widen(want.clone(), self.len);
                        let wide =
                            if wide == want { start..(start + TAIL).min(self.len) } else { wide };
                        r.fetch(wide.clone())?.slice((start - wide.start) as usize..)
                    }
                };
                Ok(BlobRead::Remote(bytes::Buf::reader(bytes)))
            }
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match &self.inner {
            Inner::Local(f) => f.get_bytes(start, length),
            Inner::Remote(r) => {
                let end = start.checked_add(length as u64).filter(|&e| e <= self.len);
                let end = end.ok_or_else(|| {
                    parquet::errors::ParquetError::EOF(format!(
                        "{} bytes at {start} run past the end ({} bytes)",
                        length, self.len
                    ))
                })?;
                Ok(r.get(start..end, self.len)?)
            }
        }
    }
}

/// Open `at` for reading, with the error naming it.
pub fn open_for(
    at: &Location,
    meta: Option<&ParquetMetaData>,
    display: &std::path::Path,
) -> Result<Blob> {
    Blob::open(at, meta).map_err(|e| crate::Error::Io { path: display.to_path_buf(), source: e })
}
