//! Key values and their Spark SQL types.

use chrono::{DateTime, NaiveDate};
use serde_json::Value as Json;

/// The Spark SQL type a key column is read as (what `spark.read.parquet` would give it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    Void,
    Boolean,
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Float,
    Double,
    String,
    Binary,
    Date,
    /// `utc`: TIMESTAMP (instant) when true, TIMESTAMP_NTZ when false.
    Timestamp {
        utc: bool,
    },
    Decimal {
        precision: u8,
        scale: i8,
    },
}

impl KeyType {
    pub fn spark_name(&self) -> String {
        match self {
            KeyType::Void => "void".into(),
            KeyType::Boolean => "boolean".into(),
            KeyType::TinyInt => "tinyint".into(),
            KeyType::SmallInt => "smallint".into(),
            KeyType::Int => "int".into(),
            KeyType::BigInt => "bigint".into(),
            KeyType::Float => "float".into(),
            KeyType::Double => "double".into(),
            KeyType::String => "string".into(),
            KeyType::Binary => "binary".into(),
            KeyType::Date => "date".into(),
            KeyType::Timestamp { utc: true } => "timestamp".into(),
            KeyType::Timestamp { utc: false } => "timestamp_ntz".into(),
            KeyType::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            KeyType::TinyInt
                | KeyType::SmallInt
                | KeyType::Int
                | KeyType::BigInt
                | KeyType::Float
                | KeyType::Double
                | KeyType::Decimal { .. }
        )
    }
}

/// One key value as Spark sees it. Floats are kept as read; NaN and -0.0 are folded when
/// counting and hashing, as Spark folds them in joins and aggregations.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// tinyint, smallint and int (Spark hashes all three as an int).
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Str(String),
    Binary(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00 (UTC for TIMESTAMP, wall clock for NTZ).
    Timestamp(i64),
    Decimal {
        unscaled: i128,
        precision: u8,
        scale: i8,
    },
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// A float or double NaN.
    pub fn is_nan(&self) -> bool {
        matches!(self, Value::Float(f) if f.is_nan())
            || matches!(self, Value::Double(d) if d.is_nan())
    }

    /// Rebuild a value from the 64-bit counting key used for fixed-width types.
    pub fn from_i64_key(k: i64, t: KeyType) -> Value {
        match t {
            KeyType::Void => Value::Null,
            KeyType::Boolean => Value::Bool(k != 0),
            KeyType::TinyInt | KeyType::SmallInt | KeyType::Int => Value::Int(k as i32),
            KeyType::BigInt => Value::Long(k),
            KeyType::Float => Value::Float(f32::from_bits(k as u32)),
            KeyType::Double => Value::Double(f64::from_bits(k as u64)),
            KeyType::Date => Value::Date(k as i32),
            KeyType::Timestamp { .. } => Value::Timestamp(k),
            KeyType::Decimal { precision, scale } => {
                Value::Decimal { unscaled: k as i128, precision, scale }
            }
            KeyType::String | KeyType::Binary => Value::Null,
        }
    }

    /// Date as `YYYY-MM-DD`.
    pub fn date_string(days: i32) -> String {
        match NaiveDate::from_num_days_from_ce_opt(719_163 + days) {
            Some(d) => d.format("%Y-%m-%d").to_string(),
            None => format!("{days} days after 1970-01-01"),
        }
    }

    /// Timestamp as ISO 8601, with `Z` for an instant (TIMESTAMP) and none for TIMESTAMP_NTZ.
    pub fn timestamp_string(micros: i64, utc: bool) -> String {
        let secs = micros.div_euclid(1_000_000);
        let sub = micros.rem_euclid(1_000_000) as u32;
        match DateTime::from_timestamp(secs, sub * 1000) {
            Some(dt) => {
                let mut s = dt.naive_utc().format("%Y-%m-%dT%H:%M:%S").to_string();
                if sub != 0 {
                    let frac = format!("{sub:06}");
                    s.push('.');
                    s.push_str(frac.trim_end_matches('0'));
                }
                if utc {
                    s.push('Z');
                }
                s
            }
            None => format!("{micros} microseconds after 1970-01-01"),
        }
    }

    pub fn decimal_string(unscaled: i128, scale: i8) -> String {
        if scale <= 0 {
            let mut s = unscaled.to_string();
            for _ in 0..(-scale) {
                s.push('0');
            }
            return s;
        }
        let neg = unscaled < 0;
        let digits = unscaled.unsigned_abs().to_string();
        let scale = scale as usize;
        let padded = if digits.len() <= scale {
            format!("{}{}", "0".repeat(scale + 1 - digits.len()), digits)
        } else {
            digits
        };
        let (int, frac) = padded.split_at(padded.len() - scale);
        format!("{}{}.{}", if neg { "-" } else { "" }, int, frac)
    }

    pub fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The value as native JSON: null, numbers, strings; dates `YYYY-MM-DD`, timestamps ISO 8601,
    /// decimals as strings, binary as lowercase hex; NaN and infinities as strings.
    pub fn to_json(&self, t: KeyType) -> Json {
        match self {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::from(*i),
            Value::Long(l) => Json::from(*l),
            Value::Float(f) => float_json(*f as f64, Some(*f)),
            Value::Double(d) => float_json(*d, None),
            Value::Str(s) => Json::String(s.clone()),
            Value::Binary(b) => Json::String(Value::hex(b)),
            Value::Date(d) => Json::String(Value::date_string(*d)),
            Value::Timestamp(m) => {
                let utc = matches!(t, KeyType::Timestamp { utc: true });
                Json::String(Value::timestamp_string(*m, utc))
            }
            Value::Decimal { unscaled, scale, .. } => {
                Json::String(Value::decimal_string(*unscaled, *scale))
            }
        }
    }

    /// The value for a terminal or a CSV cell: strings quoted so that '' and ' ' are visible,
    /// control characters escaped; NULL as NULL.
    pub fn display(&self, t: KeyType) -> String {
        match self {
            Value::Null => "NULL".into(),
            Value::Str(s) => {
                let mut out = String::with_capacity(s.len() + 2);
                out.push('\'');
                for c in s.chars() {
                    match c {
                        '\'' => out.push_str("\\'"),
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
                        c => out.push(c),
                    }
                }
                out.push('\'');
                out
            }
            Value::Binary(b) => format!("X'{}'", Value::hex(b)),
            other => match other.to_json(t) {
                Json::String(s) => s,
                j => j.to_string(),
            },
        }
    }
}

fn float_json(d: f64, f: Option<f32>) -> Json {
    if !d.is_finite() {
        return Json::String(if d.is_nan() {
            "NaN".into()
        } else if d > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        });
    }
    match f {
        // Print a float the way it was written (0.1f32 as 0.1, not 0.10000000149011612).
        Some(f) => f
            .to_string()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Json::Number)
            .unwrap_or(Json::Null),
        None => serde_json::Number::from_f64(d).map(Json::Number).unwrap_or(Json::Null),
    }
}

/// Spark compares, groups and joins all NaNs as one value and -0.0 as 0.0.
pub fn canonical_f32(f: f32) -> f32 {
    if f.is_nan() {
        f32::from_bits(0x7fc00000)
    } else if f == 0.0 {
        0.0
    } else {
        f
    }
}

pub fn canonical_f64(d: f64) -> f64 {
    if d.is_nan() {
        f64::from_bits(0x7ff8000000000000)
    } else if d == 0.0 {
        0.0
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_format_with_scale() {
        assert_eq!(Value::decimal_string(12345, 2), "123.45");
        assert_eq!(Value::decimal_string(-5, 3), "-0.005");
        assert_eq!(Value::decimal_string(0, 2), "0.00");
        assert_eq!(Value::decimal_string(7, -2), "700");
    }

    #[test]
    fn dates_and_timestamps_are_iso() {
        assert_eq!(Value::date_string(0), "1970-01-01");
        assert_eq!(Value::date_string(-1), "1969-12-31");
        assert_eq!(Value::timestamp_string(1_500_000, true), "1970-01-01T00:00:01.5Z");
        assert_eq!(Value::timestamp_string(-1, false), "1969-12-31T23:59:59.999999");
    }
}
