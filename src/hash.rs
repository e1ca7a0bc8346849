//! Spark's Murmur3 hash (`hash(col)` and shuffle `HashPartitioning`), bit for bit.
//!
//! Spark hashes a row with `Murmur3_x86_32` seeded with 42, chaining the key columns: each
//! column's hash is the seed of the next, and a NULL column leaves the running hash unchanged.
//! The shuffle partition is `pmod(hash, partitions)`. Strings and binaries use Spark's legacy
//! `hashUnsafeBytes`, which differs from the reference Murmur3 in the tail: each of the last
//! 1-3 bytes is sign-extended and mixed as a block of its own.

use crate::value::Value;

/// The seed Spark uses for `hash()` and for shuffle partitioning.
pub const SPARK_SEED: i32 = 42;

const C1: i32 = 0xcc9e2d51u32 as i32;
const C2: i32 = 0x1b873593;

#[inline]
fn mix_k1(k1: i32) -> i32 {
    k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

#[inline]
fn mix_h1(h1: i32, k1: i32) -> i32 {
    (h1 ^ k1).rotate_left(13).wrapping_mul(5).wrapping_add(0xe6546b64u32 as i32)
}

#[inline]
fn fmix(mut h1: i32, length: i32) -> i32 {
    h1 ^= length;
    h1 ^= ((h1 as u32) >> 16) as i32;
    h1 = h1.wrapping_mul(0x85ebca6bu32 as i32);
    h1 ^= ((h1 as u32) >> 13) as i32;
    h1 = h1.wrapping_mul(0xc2b2ae35u32 as i32);
    h1 ^= ((h1 as u32) >> 16) as i32;
    h1
}

/// `Murmur3_x86_32.hashInt`.
#[inline]
pub fn hash_int(input: i32, seed: i32) -> i32 {
    fmix(mix_h1(seed, mix_k1(input)), 4)
}

/// `Murmur3_x86_32.hashLong`.
#[inline]
pub fn hash_long(input: i64, seed: i32) -> i32 {
    let low = input as i32;
    let high = ((input as u64) >> 32) as i32;
    let h1 = mix_h1(seed, mix_k1(low));
    let h1 = mix_h1(h1, mix_k1(high));
    fmix(h1, 8)
}

/// `Murmur3_x86_32.hashUnsafeBytes` (Spark's legacy tail handling).
pub fn hash_bytes(bytes: &[u8], seed: i32) -> i32 {
    let aligned = bytes.len() - bytes.len() % 4;
    let mut h1 = seed;
    for chunk in bytes[..aligned].chunks_exact(4) {
        let word = i32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        h1 = mix_h1(h1, mix_k1(word));
    }
    for &b in &bytes[aligned..] {
        h1 = mix_h1(h1, mix_k1(b as i8 as i32));
    }
    fmix(h1, bytes.len() as i32)
}

/// `java.math.BigInteger.toByteArray()`: minimal big-endian two's complement.
pub fn big_integer_bytes(v: i128) -> Vec<u8> {
    let full = v.to_be_bytes();
    let mut start = 0;
    while start < full.len() - 1 {
        let (b, next) = (full[start], full[start + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    full[start..].to_vec()
}

/// Hash one value of a Spark column, continuing from `seed`.
pub fn hash_value(v: &Value, seed: i32) -> i32 {
    match v {
        Value::Null => seed,
        Value::Bool(b) => hash_int(*b as i32, seed),
        Value::Int(i) | Value::Date(i) => hash_int(*i, seed),
        Value::Long(l) | Value::Timestamp(l) => hash_long(*l, seed),
        Value::Float(f) => {
            // Spark: -0.0 hashes as 0; floatToIntBits folds every NaN into one.
            let bits = if *f == 0.0 {
                0
            } else if f.is_nan() {
                0x7fc00000
            } else {
                f.to_bits() as i32
            };
            hash_int(bits, seed)
        }
        Value::Double(d) => {
            let bits = if *d == 0.0 {
                0
            } else if d.is_nan() {
                0x7ff8000000000000u64 as i64
            } else {
                d.to_bits() as i64
            };
            hash_long(bits, seed)
        }
        Value::Decimal { unscaled, precision, .. } => {
            if *precision <= 18 {
                hash_long(*unscaled as i64, seed)
            } else {
                hash_bytes(&big_integer_bytes(*unscaled), seed)
            }
        }
        Value::Str(s) => hash_bytes(s.as_bytes(), seed),
        Value::Binary(b) => hash_bytes(b, seed),
    }
}

/// Spark's hash of a (possibly composite) key: the columns chained from seed 42.
pub fn spark_hash(key: &[Value]) -> i32 {
    key.iter().fold(SPARK_SEED, |h, v| hash_value(v, h))
}

/// `pmod(hash, partitions)`: the shuffle partition Spark sends the key to.
pub fn spark_partition(key: &[Value], partitions: u32) -> u32 {
    pmod(spark_hash(key), partitions)
}

pub fn pmod(h: i32, n: u32) -> u32 {
    (h as i64).rem_euclid(n as i64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_integer_bytes_matches_java() {
        assert_eq!(big_integer_bytes(0), vec![0]);
        assert_eq!(big_integer_bytes(127), vec![0x7f]);
        assert_eq!(big_integer_bytes(128), vec![0x00, 0x80]);
        assert_eq!(big_integer_bytes(-1), vec![0xff]);
        assert_eq!(big_integer_bytes(-128), vec![0x80]);
        assert_eq!(big_integer_bytes(-129), vec![0xff, 0x7f]);
        assert_eq!(big_integer_bytes(256), vec![0x01, 0x00]);
    }

    #[test]
    fn null_keys_hash_to_the_seed() {
        assert_eq!(spark_hash(&[Value::Null]), 42);
        assert_eq!(spark_hash(&[Value::Null, Value::Null]), 42);
        assert_eq!(spark_partition(&[Value::Null], 200), 42);
    }

    #[test]
    fn pmod_is_never_negative() {
        assert_eq!(pmod(-1, 200), 199);
        assert_eq!(pmod(i32::MIN, 200), ((i32::MIN as i64).rem_euclid(200)) as u32);
    }
}

/// Vectors printed by real Spark (`tests/spark/hash_vectors.py`): `hash(x)` and
/// `pmod(hash(x), 200)` for every key type, string tails of 0-3 bytes, non-ASCII text,
/// NaN, -0.0, wide decimals and composite keys with NULLs.
#[cfg(test)]
mod spark_vectors {
    use super::*;
    use serde_json::Value as J;

    fn parse(t: &str, v: &J) -> Value {
        let s = || v.as_str().unwrap().to_string();
        match t {
            "boolean" => Value::Bool(v.as_bool().unwrap()),
            "tinyint" | "smallint" | "int" => Value::Int(v.as_i64().unwrap() as i32),
            "bigint" => Value::Long(v.as_i64().unwrap()),
            "float" => {
                Value::Float(s().parse::<f32>().unwrap_or_else(|_| parse_py_float(&s()) as f32))
            }
            "double" => Value::Double(s().parse::<f64>().unwrap_or_else(|_| parse_py_float(&s()))),
            "string" => Value::Str(s()),
            "binary" => Value::Binary(
                (0..s().len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&s()[i..i + 2], 16).unwrap())
                    .collect(),
            ),
            "date" => Value::Date(v.as_i64().unwrap() as i32),
            "timestamp" | "timestamp_ntz" => Value::Timestamp(v.as_i64().unwrap()),
            d if d.starts_with("decimal(") => {
                let inner = &d[8..d.len() - 1];
                let (p, sc) = inner.split_once(',').unwrap();
                Value::Decimal {
                    unscaled: s().parse().unwrap(),
                    precision: p.parse().unwrap(),
                    scale: sc.parse().unwrap(),
                }
            }
            other => panic!("unknown type {other}"),
        }
    }

    fn parse_py_float(s: &str) -> f64 {
        match s {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => panic!("float {s}"),
        }
    }

    #[test]
    fn every_vector_matches_spark() {
        let doc: J =
            serde_json::from_str(include_str!("../tests/data/spark_hash_vectors.json")).unwrap();
        let vectors = doc["vectors"].as_array().unwrap();
        assert!(vectors.len() > 80);
        let mut checked = 0;
        for v in vectors {
            let t = v["type"].as_str().unwrap();
            let key: Vec<Value> = if t == "string,int" {
                let a = &v["value"][0];
                let b = &v["value"][1];
                vec![
                    if a.is_null() { Value::Null } else { Value::Str(a.as_str().unwrap().into()) },
                    if b.is_null() { Value::Null } else { Value::Int(b.as_i64().unwrap() as i32) },
                ]
            } else {
                vec![parse(t, &v["value"])]
            };
            let want = v["hash"].as_i64().unwrap() as i32;
            assert_eq!(spark_hash(&key), want, "{t} {}", v["value"]);
            assert_eq!(
                spark_partition(&key, 200) as i64,
                v["pmod200"].as_i64().unwrap(),
                "{t} {}",
                v["value"]
            );
            checked += 1;
        }
        assert_eq!(checked, vectors.len());
    }
}
