//! Keys as bytes: a composite key (or a partition column) encoded row by row, each part tagged
//! by its kind, and decoded back into values; and a key as the per-unit tallies store it.

use arrow_array::{Array, ArrayRef};

use super::arrays::{each_bytes, each_i128, each_i64};
use crate::value::{canonical_f32, canonical_f64, KeyType, Value};

/// The values of one key part in a batch, ready to be encoded row by row.
pub(crate) enum Atoms<'a> {
    I64(Vec<Option<i64>>),
    I128(Vec<Option<i128>>),
    Bytes(Vec<Option<&'a [u8]>>),
    Const(Atom),
}

#[derive(Debug, Clone)]
pub(crate) enum Atom {
    Null,
    I64(i64),
    I128(i128),
    Bytes(Vec<u8>),
}

impl<'a> Atoms<'a> {
    pub(crate) fn from_array(a: &'a ArrayRef, ty: KeyType) -> std::result::Result<Self, String> {
        Ok(match ty {
            KeyType::String | KeyType::Binary => {
                let mut v = Vec::with_capacity(a.len());
                each_bytes(a, &mut |b| v.push(b))?;
                Atoms::Bytes(v)
            }
            KeyType::Decimal { precision, .. } if precision > 18 => {
                let mut v = Vec::with_capacity(a.len());
                each_i128(a, &mut |x| v.push(x))?;
                Atoms::I128(v)
            }
            _ => {
                let mut v = Vec::with_capacity(a.len());
                each_i64(a, ty, &mut |x| v.push(x))?;
                Atoms::I64(v)
            }
        })
    }

    pub(crate) fn encode(&self, row: usize, out: &mut Vec<u8>) -> bool {
        match self {
            Atoms::I64(v) => encode_atom(&v[row].map(Atom::I64).unwrap_or(Atom::Null), out),
            Atoms::I128(v) => encode_atom(&v[row].map(Atom::I128).unwrap_or(Atom::Null), out),
            Atoms::Bytes(v) => match v[row] {
                Some(b) => {
                    out.push(6);
                    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    out.extend_from_slice(b);
                    true
                }
                None => encode_atom(&Atom::Null, out),
            },
            Atoms::Const(a) => encode_atom(a, out),
        }
    }
}

/// Append an atom; returns false for NULL.
fn encode_atom(a: &Atom, out: &mut Vec<u8>) -> bool {
    match a {
        Atom::Null => {
            out.push(0);
            false
        }
        Atom::I64(v) => {
            out.push(3);
            out.extend_from_slice(&v.to_le_bytes());
            true
        }
        Atom::I128(v) => {
            out.push(8);
            out.extend_from_slice(&v.to_le_bytes());
            true
        }
        Atom::Bytes(b) => {
            out.push(6);
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
            true
        }
    }
}

pub(crate) fn atom_of(v: &Value, ty: KeyType) -> Atom {
    match v {
        Value::Null => Atom::Null,
        Value::Bool(b) => Atom::I64(*b as i64),
        Value::Int(i) | Value::Date(i) => Atom::I64(*i as i64),
        Value::Long(l) | Value::Timestamp(l) => Atom::I64(*l),
        Value::Float(f) => Atom::I64(canonical_f32(*f).to_bits() as i64),
        Value::Double(d) => Atom::I64(canonical_f64(*d).to_bits() as i64),
        Value::Str(s) => Atom::Bytes(s.as_bytes().to_vec()),
        Value::Binary(b) => Atom::Bytes(b.clone()),
        Value::Decimal { unscaled, precision, .. } => {
            let _ = ty;
            if *precision > 18 {
                Atom::I128(*unscaled)
            } else {
                Atom::I64(*unscaled as i64)
            }
        }
    }
}

pub(crate) fn decode_key(mut buf: &[u8], types: &[KeyType]) -> Vec<Value> {
    let mut out = Vec::with_capacity(types.len());
    for &t in types {
        if buf.is_empty() {
            out.push(Value::Null);
            continue;
        }
        let tag = buf[0];
        buf = &buf[1..];
        let v = match tag {
            3 if buf.len() >= 8 => {
                let k = i64::from_le_bytes(buf[..8].try_into().unwrap_or([0; 8]));
                buf = &buf[8..];
                Value::from_i64_key(k, t)
            }
            8 if buf.len() >= 16 => {
                let k = i128::from_le_bytes(buf[..16].try_into().unwrap_or([0; 16]));
                buf = &buf[16..];
                let (precision, scale) = match t {
                    KeyType::Decimal { precision, scale } => (precision, scale),
                    _ => (38, 0),
                };
                Value::Decimal { unscaled: k, precision, scale }
            }
            6 if buf.len() >= 4 => {
                let len = (u32::from_le_bytes(buf[..4].try_into().unwrap_or([0; 4])) as usize)
                    .min(buf.len() - 4);
                let v = bytes_value(&buf[4..4 + len], t);
                buf = &buf[4 + len..];
                v
            }
            _ => Value::Null,
        };
        out.push(v);
    }
    out
}

pub(crate) fn bytes_value(b: &[u8], t: KeyType) -> Value {
    match t {
        KeyType::String => Value::Str(String::from_utf8_lossy(b).into_owned()),
        _ => Value::Binary(b.to_vec()),
    }
}

/// Values encoded as `group_keys` encodes a row of them (so `decode_key` reads them back).
pub(crate) fn encode_values(key: &[Value], types: &[KeyType]) -> Vec<u8> {
    let mut buf = Vec::new();
    for (v, t) in key.iter().zip(types) {
        encode_atom(&atom_of(v, *t), &mut buf);
    }
    buf
}

/// The key as the per-unit tallies store it (None for a single NULL, which is tallied apart).
pub(crate) fn tally_key(key: &[Value], types: &[KeyType]) -> Option<Vec<u8>> {
    if key.len() == 1 {
        let t = types[0];
        return match atom_of(&key[0], t) {
            Atom::Null => None,
            Atom::I64(v) => Some(v.to_le_bytes().to_vec()),
            Atom::I128(v) => Some(v.to_le_bytes().to_vec()),
            Atom::Bytes(b) => Some(b),
        };
    }
    let mut buf = Vec::new();
    for (v, t) in key.iter().zip(types) {
        encode_atom(&atom_of(v, *t), &mut buf);
    }
    Some(buf)
}

/// Each row of `columns` (of `types`) as bytes, equal exactly where Spark's GROUP BY and
/// DISTINCT put two rows in one group: NULLs together, every NaN as one, -0.0 as 0.0.
pub fn group_keys(
    columns: &[ArrayRef],
    types: &[KeyType],
) -> std::result::Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::with_capacity(columns.first().map_or(0, |a| a.len()));
    each_group_key(columns, types, |_, key| out.push(key.to_vec()))?;
    Ok(out)
}

/// `f(row, key)` for each row, its key encoded as `group_keys` encodes it, into one buffer
/// reused from row to row (no allocation per row).
pub fn each_group_key(
    columns: &[ArrayRef],
    types: &[KeyType],
    mut f: impl FnMut(usize, &[u8]),
) -> std::result::Result<(), String> {
    let atoms: Vec<Atoms> = columns
        .iter()
        .zip(types)
        .map(|(a, t)| Atoms::from_array(a, *t))
        .collect::<std::result::Result<_, _>>()?;
    let rows = columns.first().map(|a| a.len()).unwrap_or(0);
    let mut key = Vec::new();
    for row in 0..rows {
        key.clear();
        for a in &atoms {
            a.encode(row, &mut key);
        }
        f(row, &key);
    }
    Ok(())
}
