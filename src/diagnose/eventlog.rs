//! Reading a Spark event log: one file of JSON lines, plain or compressed with a codec Spark
//! uses for event logs (zstd, lz4, snappy, lzf: told by the file's first bytes, not its name),
//! or a rolling event-log folder (`eventlog_v2_*`, its `events_N_*` files in order).
//! A log that ends mid-event (a crashed or still running application, a copy cut short) is
//! read up to the last whole line, with a warning. A log may be in an object store (s3://...,
//! streamed to a temporary file).
//!
//! The log is read as a stream, a step of a few MiB at a time: the lines of a step are parsed in
//! parallel (`events`), then taken into the application in order, so memory holds one step and
//! what the model keeps per task, whatever the log's size.

use std::fs;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::events::{self, Line};
use super::model::App;
use crate::error::{Error, Result};
use crate::progress::{Counted, Progress, Step, StepProgress};
use crate::stats::RunStats;

/// The application a log describes, and what went wrong on the way.
pub struct Log {
    pub app: App,
    pub warnings: Vec<String>,
    /// The files read, in order.
    pub files: Vec<PathBuf>,
    pub codec: &'static str,
}

/// The files of a log: the file itself, or a rolling folder's event files in index order.
fn files_of(path: &Path, stats: &RunStats) -> Result<Vec<PathBuf>> {
    let text = path.to_string_lossy();
    if crate::table::store::is_remote(&text) {
        return remote_files_of(&text, stats);
    }
    if !path.exists() {
        return Err(Error::NotFound(path.to_path_buf()));
    }
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let rd = fs::read_dir(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let mut files: Vec<(u64, PathBuf)> = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if let Some(rest) = name.strip_prefix("events_") {
            let idx =
                rest.split('_').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(u64::MAX);
            files.push((idx, e.path()));
        }
    }
    if files.is_empty() {
        return Err(Error::bad_file(
            path,
            "a folder without events_* files: not a rolling Spark event log (eventlog_v2_*)",
        ));
    }
    files.sort();
    Ok(files.into_iter().map(|f| f.1).collect())
}

/// An event log in an object store: the object, or a rolling log's `events_N_*` objects.
fn remote_files_of(url: &str, stats: &RunStats) -> Result<Vec<PathBuf>> {
    let folder = url.trim_end_matches('/');
    let mut files: Vec<(u64, String)> =
        crate::table::store::list_folder(&format!("{folder}/"), stats)?
            .into_iter()
            .filter_map(|(name, _)| {
                let rest = name.strip_prefix("events_")?;
                Some((
                    rest.split('_').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(u64::MAX),
                    format!("{folder}/{name}"),
                ))
            })
            .collect();
    if files.is_empty() {
        return Ok(vec![PathBuf::from(url)]);
    }
    files.sort();
    Ok(files.into_iter().map(|f| PathBuf::from(f.1)).collect())
}

/// The decoded bytes of one log file, as a stream, and the codec its first bytes name. The
/// file's bytes are counted on `bar` as they are read.
fn open<'a>(
    file: &Path,
    bar: &'a dyn StepProgress,
    stats: &Arc<RunStats>,
) -> Result<(Box<dyn Read + 'a>, &'static str)> {
    let text = file.to_string_lossy();
    let local = if crate::table::store::is_remote(&text) {
        crate::table::store::download(&text, stats)?
    } else {
        fs::File::open(file).map_err(|source| Error::Io { path: file.to_path_buf(), source })?
    };
    bar.grow(local.metadata().map(|m| m.len()).unwrap_or(0));
    let mut raw =
        std::io::BufReader::with_capacity(1 << 20, Counted { inner: local, progress: bar });
    let head = raw.fill_buf().map_err(|source| Error::Io { path: file.to_path_buf(), source })?;
    if head.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        let d = zstd::stream::read::Decoder::with_buffer(raw)
            .map_err(|source| Error::Io { path: file.to_path_buf(), source })?;
        return Ok((Box::new(d), "zstd"));
    }
    if head.starts_with(b"LZ4Block") {
        return Ok((Box::new(Blocks::new(raw, lz4_block)), "lz4"));
    }
    if head.starts_with(b"\x82SNAPPY\x00") {
        raw.consume(16);
        return Ok((Box::new(Blocks::new(raw, snappy_chunk)), "snappy"));
    }
    if head.starts_with(b"ZV") {
        return Ok((Box::new(Blocks::new(raw, lzf_chunk)), "lzf"));
    }
    Ok((Box::new(raw), "none"))
}

/// A stream of a block codec's decoded blocks: `next` reads one block (None at the end).
struct Blocks<R> {
    inner: R,
    next: fn(&mut R) -> std::io::Result<Option<Vec<u8>>>,
    out: Vec<u8>,
    at: usize,
}

impl<R> Blocks<R> {
    fn new(inner: R, next: fn(&mut R) -> std::io::Result<Option<Vec<u8>>>) -> Self {
        Blocks { inner, next, out: Vec::new(), at: 0 }
    }
}

impl<R> Read for Blocks<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.out.len() {
            match (self.next)(&mut self.inner)? {
                Some(block) => (self.out, self.at) = (block, 0),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn corrupt(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// Fill `buf` from `r`: false at a clean end before its first byte; an error if the stream
/// ends inside it.
fn read_block_header(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(corrupt("cut short")),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The largest block a codec's header may announce: lz4-java's and snappy-java's blocks are 32
/// MiB at most; a larger length is a corrupt header, not a reason to allocate it.
const MAX_BLOCK: usize = 64 << 20;

/// `n` bytes of a block's data.
fn block_data(r: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    if n > MAX_BLOCK {
        return Err(corrupt(&format!("a block of {n} bytes announced (a corrupt header)")));
    }
    let mut data = vec![0; n];
    r.read_exact(&mut data).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            corrupt("cut short")
        } else {
            e
        }
    })?;
    Ok(data)
}

/// One block of lz4-java's LZ4BlockOutputStream (what Spark's lz4 codec writes): "LZ4Block",
/// a token, compressed and original lengths and a checksum (little endian), data. A block of
/// zero lengths is an end mark (a concatenated stream may follow): an empty block.
fn lz4_block(r: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut h = [0u8; 21];
    if !read_block_header(r, &mut h)? {
        return Ok(None);
    }
    if &h[..8] != b"LZ4Block" {
        return Err(corrupt("bad block header"));
    }
    let clen = u32::from_le_bytes([h[9], h[10], h[11], h[12]]) as usize;
    let dlen = u32::from_le_bytes([h[13], h[14], h[15], h[16]]) as usize;
    if dlen > MAX_BLOCK {
        return Err(corrupt(&format!("a block of {dlen} bytes announced (a corrupt header)")));
    }
    let data = block_data(r, clen)?;
    match h[8] & 0xF0 {
        _ if clen == 0 && dlen == 0 => Ok(Some(Vec::new())),
        0x10 => Ok(Some(data)),
        0x20 => lz4_flex::block::decompress(&data, dlen)
            .map(Some)
            .map_err(|e| corrupt(&format!("lz4 block: {e}"))),
        t => Err(corrupt(&format!("unknown block type {t:#x}"))),
    }
}

/// One chunk of snappy-java's SnappyOutputStream (Spark's snappy codec), after its 16-byte
/// header: a big-endian length and raw snappy data.
fn snappy_chunk(r: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut h = [0u8; 4];
    if !read_block_header(r, &mut h)? {
        return Ok(None);
    }
    let data = block_data(r, u32::from_be_bytes(h) as usize)?;
    if snap::raw::decompress_len(&data).is_ok_and(|n| n > MAX_BLOCK) {
        return Err(corrupt(
            "snappy chunk: a block of more than 64 MiB announced (a corrupt header)",
        ));
    }
    snap::raw::Decoder::new()
        .decompress_vec(&data)
        .map(Some)
        .map_err(|e| corrupt(&format!("snappy chunk: {e}")))
}

/// One chunk of the compress-lzf library's format (Spark's lzf codec): "ZV", a type byte
/// (0 stored, 1 compressed), lengths (big endian), data.
fn lzf_chunk(r: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut h = [0u8; 5];
    if !read_block_header(r, &mut h)? {
        return Ok(None);
    }
    if &h[..2] != b"ZV" {
        return Err(corrupt("bad chunk header"));
    }
    let n = u16::from_be_bytes([h[3], h[4]]) as usize;
    match h[2] {
        0 => block_data(r, n).map(Some),
        1 => {
            let d = block_data(r, 2)?;
            let data = block_data(r, n)?;
            lzf_block(&data, u16::from_be_bytes([d[0], d[1]]) as usize)
                .map(Some)
                .ok_or_else(|| corrupt("lzf chunk: corrupt data"))
        }
        k => Err(corrupt(&format!("unknown chunk type {k}"))),
    }
}

/// One LZF block (liblzf's format): literal runs and back references.
pub fn lzf_block(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            out.extend_from_slice(input.get(ip..ip + n)?);
            ip += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(ip)? as usize;
                ip += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(ip)? as usize + 1;
            ip += 1;
            let start = out.len().checked_sub(back)?;
            for k in 0..len + 2 {
                let c = out[start + k];
                out.push(c);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

/// The decoded bytes read per step; the lines of each step are parsed in parallel.
const STEP: usize = 8 << 20;

/// Read the log at `path` into the application it describes, as one stream: memory holds one
/// step of the log and what the model keeps per task, whatever the log's size.
pub fn read(path: &Path, progress: &dyn Progress, stats: &Arc<RunStats>) -> Result<Log> {
    let files = files_of(path, stats)?;
    let bar = progress.start(Step::ReadingLog, 0);
    let mut feed = Feed {
        app: App::default(),
        warnings: Vec::new(),
        file: PathBuf::new(),
        first_file: true,
        line: 0,
        bad: None,
    };
    let mut codec = "none";
    for (fi, f) in files.iter().enumerate() {
        feed.start_file(f, fi == 0);
        let (input, c) = open(f, bar.as_ref(), stats)?;
        codec = c;
        read_lines(input, c, &mut feed)?;
        feed.end_file();
    }
    bar.finish();
    if feed.app.events == 0 {
        return Err(Error::bad_file(path, "no events: an empty Spark event log"));
    }
    feed.app.finish();
    Ok(Log { app: feed.app, warnings: feed.warnings, files, codec })
}

/// Read `input` step by step, parse each step's whole lines in parallel, take them in order.
fn read_lines(mut input: Box<dyn Read + '_>, codec: &str, feed: &mut Feed) -> Result<()> {
    use rayon::prelude::*;
    let mut buf: Vec<u8> = Vec::with_capacity(STEP * 2);
    loop {
        let (n, err) = fill(&mut input, &mut buf, STEP);
        match &err {
            // An uncompressed file that cannot be read is an error, not a log cut short.
            Some(e) if codec == "none" => {
                return Err(Error::Io {
                    path: feed.file.clone(),
                    source: std::io::Error::new(e.kind(), e.to_string()),
                })
            }
            Some(e) => feed
                .warnings
                .push(format!("{}: {codec} stream: {e}; read up to there", feed.file.display())),
            None => {}
        }
        let end = n == 0 || err.is_some();
        let cut = if end {
            buf.len()
        } else {
            buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)
        };
        if cut == 0 && !end {
            continue; // one line longer than a step: read on
        }
        let mut lines: Vec<&[u8]> = buf[..cut].split(|&b| b == b'\n').collect();
        if !end {
            lines.pop(); // the nothing after the step's last newline
        }
        let parsed: Vec<Option<Line>> = lines
            .par_iter()
            .with_min_len(64)
            .map(|l| (!l.trim_ascii().is_empty()).then(|| events::parse(l)))
            .collect();
        for p in parsed {
            feed.take(p)?;
        }
        buf.drain(..cut);
        if end {
            return Ok(());
        }
    }
}

/// Append up to `step` more bytes of `input` to `buf`: the bytes read (0 at the end), and the
/// stream's error if it broke (the bytes before it are kept).
fn fill(input: &mut dyn Read, buf: &mut Vec<u8>, step: usize) -> (usize, Option<std::io::Error>) {
    let start = buf.len();
    buf.resize(start + step, 0);
    let mut got = 0;
    let mut err = None;
    while got < step {
        match input.read(&mut buf[start + got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    buf.truncate(start + got);
    (got, err)
}

/// The parsed lines taken into the application in order, with the warnings they earn.
struct Feed {
    app: App,
    warnings: Vec<String>,
    file: PathBuf,
    first_file: bool,
    /// The line number in the current file of the last line taken.
    line: usize,
    /// A line that was not JSON, told once we know whether it was the file's last.
    bad: Option<(usize, String)>,
}

impl Feed {
    fn start_file(&mut self, f: &Path, first: bool) {
        (self.file, self.first_file, self.line, self.bad) = (f.to_path_buf(), first, 0, None);
    }

    /// One line (None: an empty one).
    fn take(&mut self, line: Option<Line>) -> Result<()> {
        self.line += 1;
        let Some(line) = line else { return Ok(()) };
        let before_any = self.app.events == 0 && self.first_file;
        match line {
            Line::Bad(_) | Line::NotEvent if before_any => {
                return Err(Error::bad_file(&self.file, "not a Spark event log: its first line is not a JSON event with an \"Event\" field"));
            }
            Line::Bad(e) => {
                self.flush_bad();
                self.bad = Some((self.line, e));
                return Ok(());
            }
            Line::NotEvent => {
                self.flush_bad();
                self.warnings.push(format!(
                    "{} line {}: a JSON line without an \"Event\" field, skipped",
                    self.file.display(),
                    self.line
                ));
            }
            other => {
                self.flush_bad();
                self.app.take(other);
            }
        }
        Ok(())
    }

    /// A bad line followed by another: it was not the end of the log.
    fn flush_bad(&mut self) {
        if let Some((n, e)) = self.bad.take() {
            self.warnings
                .push(format!("{} line {n}: not JSON ({e}), skipped", self.file.display()));
        }
    }

    /// A bad last line: the log is cut short.
    fn end_file(&mut self) {
        if let Some((n, _)) = self.bad.take() {
            self.warnings.push(format!("{} ends in the middle of an event (line {n}): the log is cut short; diagnosed as far as it goes", self.file.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lzf_literals_and_back_references() {
        // "abcabcabcabc": 3 literals, then a back reference of length 9 at distance 3.
        let block = [2u8, b'a', b'b', b'c', (7 << 5), 0, 2];
        assert_eq!(lzf_block(&block, 12).as_deref(), Some(&b"abcabcabcabc"[..]));
        assert!(lzf_block(&[2u8, b'a'], 3).is_none());
    }

    #[test]
    fn lz4_java_block_stream() {
        let text = b"{\"Event\":\"SparkListenerLogStart\"}\n".repeat(20);
        let c = lz4_flex::block::compress(&text);
        let mut b = b"LZ4Block".to_vec();
        b.push(0x20);
        b.extend((c.len() as u32).to_le_bytes());
        b.extend((text.len() as u32).to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(&c);
        b.extend(b"LZ4Block");
        b.push(0x10);
        b.extend([0u8; 12]);
        let mut out = Vec::new();
        Blocks::<&[u8]>::new(&b[..], lz4_block).read_to_end(&mut out).unwrap();
        assert_eq!(out, text);
        // Cut inside the second block's header: the first block's bytes, then an error.
        let mut out = Vec::new();
        let err =
            Blocks::<&[u8]>::new(&b[..b.len() - 5], lz4_block).read_to_end(&mut out).unwrap_err();
        assert_eq!(err.to_string(), "cut short");
        assert_eq!(out, text);
    }
}
