//! A Parquet page header, from the little of Thrift's compact protocol it needs: the page's
//! kind, sizes, value count and encodings (data pages v1 and v2, dictionary pages). A header
//! that is cut short, or holds a field that cannot fit in what is left, is refused (None)
//! before anything is looped over or allocated.

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
        let id =
            if delta == 0 { i16::try_from(self.zigzag()?).ok()? } else { last.checked_add(delta)? };
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
pub(crate) fn page_header(b: &[u8]) -> Option<(Header, usize)> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let (hd, len) = page_header(&h).unwrap();
        assert_eq!(len, h.len());
        assert_eq!((hd.kind, hd.uncompressed, hd.compressed), (0, 100, 50));
        assert_eq!(hd.v1, Some((7, 8, 3)));
        for cut in 0..h.len() {
            assert!(page_header(&h[..cut]).is_none(), "cut at {cut}");
        }
        // An unknown field holding a map of 2^63 boolean pairs, or a list of 2^31 booleans,
        // is refused at once (it cannot fit), not looped over.
        let mut m = h[..7].to_vec();
        m.extend_from_slice(&[
            0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x11, 0x00,
        ]);
        let t = std::time::Instant::now();
        assert!(page_header(&m).is_none());
        let mut l = h[..7].to_vec();
        l.extend_from_slice(&[0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00]);
        assert!(page_header(&l).is_none());
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }
}
