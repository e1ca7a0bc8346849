//! Reading a Spark event log: one file of JSON lines, plain or compressed with a codec Spark
//! uses for event logs (zstd, lz4, snappy, lzf: told by the file's first bytes, not its name),
//! or a rolling event-log folder (`eventlog_v2_*`, its `events_N_*` files in order).
//! A log that ends mid-event (a crashed or still running application, a copy cut short) is
//! read up to the last whole line, with a warning. A log may be in an object store (s3://...,
//! fetched whole).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The events of a log, as parsed JSON, and what went wrong on the way.
pub struct Events {
    pub events: Vec<serde_json::Value>,
    pub warnings: Vec<String>,
    /// The files read, in order.
    pub files: Vec<PathBuf>,
    pub codec: &'static str,
}

/// The files of a log: the file itself, or a rolling folder's event files in index order.
fn files_of(path: &Path) -> Result<Vec<PathBuf>> {
    let text = path.to_string_lossy();
    if crate::store::is_remote(&text) {
        return remote_files_of(&text);
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
            let idx = rest.split('_').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(u64::MAX);
            files.push((idx, e.path()));
        }
    }
    if files.is_empty() {
        return Err(Error::bad_file(path, "a folder without events_* files: not a rolling Spark event log (eventlog_v2_*)"));
    }
    files.sort();
    Ok(files.into_iter().map(|f| f.1).collect())
}

/// An event log in an object store: the object, or a rolling log's `events_N_*` objects.
fn remote_files_of(url: &str) -> Result<Vec<PathBuf>> {
    let folder = url.trim_end_matches('/');
    let mut files: Vec<(u64, String)> = crate::store::list_folder(&format!("{folder}/"))?
        .into_iter()
        .filter_map(|(name, _)| {
            let rest = name.strip_prefix("events_")?;
            Some((rest.split('_').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(u64::MAX), format!("{folder}/{name}")))
        })
        .collect();
    if files.is_empty() {
        return Ok(vec![PathBuf::from(url)]);
    }
    files.sort();
    Ok(files.into_iter().map(|f| PathBuf::from(f.1)).collect())
}

/// Decompress a whole file by its magic bytes. Returns the text, the codec, and an error
/// message if the stream ended early (the bytes before it are kept).
fn decode(bytes: Vec<u8>) -> (Vec<u8>, &'static str, Option<String>) {
    if bytes.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        let mut out = Vec::new();
        let r = zstd::stream::read::Decoder::new(&bytes[..]).and_then(|mut d| d.read_to_end(&mut out));
        return (out, "zstd", r.err().map(|e| format!("zstd stream: {e}")));
    }
    if bytes.starts_with(b"LZ4Block") {
        let (out, err) = lz4_blocks(&bytes);
        return (out, "lz4", err);
    }
    if bytes.starts_with(b"\x82SNAPPY\x00") {
        let (out, err) = snappy_java(&bytes);
        return (out, "snappy", err);
    }
    if bytes.starts_with(b"ZV") {
        let (out, err) = lzf_chunks(&bytes);
        return (out, "lzf", err);
    }
    (bytes, "none", None)
}

/// lz4-java's LZ4BlockOutputStream (what Spark's lz4 codec writes): blocks of
/// "LZ4Block", a token, compressed and original lengths and a checksum (little endian), data.
fn lz4_blocks(b: &[u8]) -> (Vec<u8>, Option<String>) {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b.len() < i + 21 || &b[i..i + 8] != b"LZ4Block" {
            return (out, Some(format!("lz4 stream: bad block header at byte {i}")));
        }
        let token = b[i + 8];
        let clen = u32::from_le_bytes([b[i + 9], b[i + 10], b[i + 11], b[i + 12]]) as usize;
        let dlen = u32::from_le_bytes([b[i + 13], b[i + 14], b[i + 15], b[i + 16]]) as usize;
        i += 21;
        if clen == 0 && dlen == 0 {
            // The end mark; a concatenated stream may follow.
            continue;
        }
        if b.len() < i + clen {
            return (out, Some("lz4 stream: cut short".into()));
        }
        let data = &b[i..i + clen];
        match token & 0xF0 {
            0x10 => out.extend_from_slice(data),
            0x20 => match lz4_flex::block::decompress(data, dlen) {
                Ok(d) => out.extend_from_slice(&d),
                Err(e) => return (out, Some(format!("lz4 block: {e}"))),
            },
            t => return (out, Some(format!("lz4 stream: unknown block type {t:#x}"))),
        }
        i += clen;
    }
    (out, None)
}

/// snappy-java's SnappyOutputStream (Spark's snappy codec): a 16-byte header, then chunks
/// of a big-endian length and raw snappy data.
fn snappy_java(b: &[u8]) -> (Vec<u8>, Option<String>) {
    let mut out = Vec::new();
    let mut i = 16;
    let mut dec = snap::raw::Decoder::new();
    while i < b.len() {
        if b.len() < i + 4 {
            return (out, Some("snappy stream: cut short".into()));
        }
        let n = u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as usize;
        i += 4;
        if b.len() < i + n {
            return (out, Some("snappy stream: cut short".into()));
        }
        match dec.decompress_vec(&b[i..i + n]) {
            Ok(d) => out.extend_from_slice(&d),
            Err(e) => return (out, Some(format!("snappy chunk: {e}"))),
        }
        i += n;
    }
    (out, None)
}

/// The LZF chunk format of the compress-lzf library (Spark's lzf codec): "ZV", a type byte
/// (0 stored, 1 compressed), lengths (big endian), data.
fn lzf_chunks(b: &[u8]) -> (Vec<u8>, Option<String>) {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b.len() < i + 5 || &b[i..i + 2] != b"ZV" {
            return (out, Some(format!("lzf stream: bad chunk header at byte {i}")));
        }
        let kind = b[i + 2];
        let n = u16::from_be_bytes([b[i + 3], b[i + 4]]) as usize;
        match kind {
            0 => {
                i += 5;
                if b.len() < i + n {
                    return (out, Some("lzf stream: cut short".into()));
                }
                out.extend_from_slice(&b[i..i + n]);
                i += n;
            }
            1 => {
                if b.len() < i + 7 {
                    return (out, Some("lzf stream: cut short".into()));
                }
                let dlen = u16::from_be_bytes([b[i + 5], b[i + 6]]) as usize;
                i += 7;
                if b.len() < i + n {
                    return (out, Some("lzf stream: cut short".into()));
                }
                match lzf_block(&b[i..i + n], dlen) {
                    Some(d) => out.extend_from_slice(&d),
                    None => return (out, Some("lzf chunk: corrupt data".into())),
                }
                i += n;
            }
            k => return (out, Some(format!("lzf stream: unknown chunk type {k}"))),
        }
    }
    (out, None)
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

/// Read every event of the log at `path`.
pub fn read(path: &Path) -> Result<Events> {
    let files = files_of(path)?;
    let mut events = Vec::new();
    let mut warnings = Vec::new();
    let mut codec = "none";
    for (fi, f) in files.iter().enumerate() {
        let bytes = crate::store::read_whole(&f.to_string_lossy())?.to_vec();
        let (text, c, err) = decode(bytes);
        codec = c;
        if let Some(e) = err {
            warnings.push(format!("{}: {e}; read up to there", f.display()));
        }
        let total = text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
        for (li, line) in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).enumerate() {
            match serde_json::from_slice::<serde_json::Value>(line) {
                Ok(v) if v.get("Event").and_then(|e| e.as_str()).is_some() => events.push(v),
                Ok(_) | Err(_) if events.is_empty() && fi == 0 => {
                    return Err(Error::bad_file(f, "not a Spark event log: its first line is not a JSON event with an \"Event\" field"));
                }
                Ok(_) => warnings.push(format!("{} line {}: a JSON line without an \"Event\" field, skipped", f.display(), li + 1)),
                Err(_) if li + 1 == total => warnings.push(format!(
                    "{} ends in the middle of an event (line {}): the log is cut short; diagnosed as far as it goes",
                    f.display(),
                    li + 1
                )),
                Err(e) => warnings.push(format!("{} line {}: not JSON ({e}), skipped", f.display(), li + 1)),
            }
        }
    }
    if events.is_empty() {
        return Err(Error::bad_file(path, "no events: an empty Spark event log"));
    }
    Ok(Events { events, warnings, files, codec })
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
        let (out, codec, err) = decode(b);
        assert_eq!(codec, "lz4");
        assert_eq!(err, None);
        assert_eq!(out, text);
    }
}
