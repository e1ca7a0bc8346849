//! A page body decompressed into a buffer the caller reuses: none, Snappy, ZSTD and LZ4_RAW
//! (the codecs a page is counted straight from; the others go through the parquet crate). A
//! size the body cannot have is refused before anything is allocated.

use parquet::basic::Compression;

/// The page body decompressed into `out` (or the body itself when stored uncompressed).
pub(crate) fn inflate<'a>(
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
pub(crate) fn decompress(
    codec: Compression,
    body: &[u8],
    size: usize,
    out: &mut Vec<u8>,
) -> Option<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
