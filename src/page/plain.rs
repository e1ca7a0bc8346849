//! PLAIN-encoded byte arrays (a 4-byte little-endian length before each value), split into
//! their values' places without copying them.

/// PLAIN byte arrays: a 4-byte little-endian length before each value.
pub(crate) fn split_plain(buf: &[u8], n: usize, out: &mut Vec<(u32, u32)>) -> Option<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
