//! Staged keys past the memory budget, in a temporary file: each worker thread appends its
//! staged partitions to a file of its own (anonymous, in the temporary directory, gone when
//! closed), one segment per partition per spill, and the keys are read back one partition at
//! a time when they are counted. The counts stay exact and memory stays near the budget,
//! however many distinct values a key has; the cost is one write and one read of the keys
//! that did not fit, which the page cache mostly absorbs.

use std::fs::File;
use std::io;

/// One thread's spilled keys: where each partition's segments are in its file.
pub(crate) struct SpillFile {
    file: File,
    /// Bytes written so far: the next segment goes here.
    end: u64,
    /// Per partition: its segments, as (offset, length).
    segments: Vec<Vec<(u64, u64)>>,
}

impl SpillFile {
    /// A new, empty file in the temporary directory (`TMPDIR`), for `parts` partitions.
    pub(crate) fn create(parts: usize) -> io::Result<Self> {
        Ok(SpillFile { file: tempfile::tempfile()?, end: 0, segments: vec![Vec::new(); parts] })
    }

    /// Append `data` as a segment of partition `p`. A failed write records nothing: the
    /// next segment is written over whatever part of it reached the file.
    pub(crate) fn append(&mut self, p: usize, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        write_all_at(&self.file, data, self.end)?;
        self.segments[p].push((self.end, data.len() as u64));
        self.end += data.len() as u64;
        Ok(())
    }

    /// Bytes spilled.
    pub(crate) fn bytes(&self) -> u64 {
        self.end
    }

    /// Bytes spilled of partition `p`.
    pub(crate) fn part_bytes(&self, p: usize) -> u64 {
        self.segments[p].iter().map(|s| s.1).sum()
    }

    /// Every segment of partition `p`, in order, appended to `out`.
    pub(crate) fn read_part(&self, p: usize, out: &mut Vec<u8>) -> io::Result<()> {
        for &(at, len) in &self.segments[p] {
            let start = out.len();
            out.resize(start + len as usize, 0);
            read_exact_at(&self.file, &mut out[start..], at)?;
        }
        Ok(())
    }

    /// Each segment of partition `p`, read into `buf` (reused), handed to `f`.
    pub(crate) fn each_segment(
        &self,
        p: usize,
        buf: &mut Vec<u8>,
        mut f: impl FnMut(&[u8]),
    ) -> io::Result<()> {
        for &(at, len) in &self.segments[p] {
            buf.resize(len as usize, 0);
            read_exact_at(&self.file, buf, at)?;
            f(buf);
        }
        Ok(())
    }
}

#[cfg(unix)]
fn write_all_at(file: &File, data: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, at)
}

#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

#[cfg(windows)]
fn write_all_at(file: &File, mut data: &[u8], mut at: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !data.is_empty() {
        let n = file.seek_write(data, at)?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        data = &data[n..];
        at += n as u64;
    }
    Ok(())
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buf: &mut [u8], mut at: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        let n = file.seek_read(buf, at)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
        at += n as u64;
    }
    Ok(())
}

/// Where keys are spilled, for an error message: the temporary directory.
pub(crate) fn spill_dir() -> std::path::PathBuf {
    std::env::temp_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_come_back_per_partition_in_order() {
        let mut f = SpillFile::create(3).unwrap();
        f.append(0, b"abc").unwrap();
        f.append(2, b"xy").unwrap();
        f.append(0, b"").unwrap();
        f.append(0, b"defg").unwrap();
        assert_eq!(f.bytes(), 9);
        let mut buf = Vec::new();
        let mut got: Vec<Vec<u8>> = Vec::new();
        f.each_segment(0, &mut buf, |s| got.push(s.to_vec())).unwrap();
        assert_eq!(got, vec![b"abc".to_vec(), b"defg".to_vec()]);
        got.clear();
        f.each_segment(1, &mut buf, |s| got.push(s.to_vec())).unwrap();
        assert!(got.is_empty());
        f.each_segment(2, &mut buf, |s| got.push(s.to_vec())).unwrap();
        assert_eq!(got, vec![b"xy".to_vec()]);
        let mut all = b"0".to_vec();
        f.read_part(0, &mut all).unwrap();
        assert_eq!(all, b"0abcdefg");
    }
}
