//! Values and types between skewjoin and the pyspark driver (`_spark_driver.py`): Spark's type
//! names (`simpleString`) as Arrow types, so that a Spark table's columns resolve like a file's;
//! key values back from Spark (integers as numbers, dates as days, timestamps as microseconds,
//! floats and decimals as Spark's strings, binaries as hex) and candidate values sent to it as
//! strings it casts back.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, IntervalUnit, TimeUnit};
use serde_json::Value as Json;

use crate::value::{KeyType, Value};

/// A Spark type name as the Arrow type a Parquet file of it would have; nested types keep
/// their kind (so that they are refused as keys and kept out of a salt's hash where they hold
/// a map) but not their fields.
pub fn arrow_type(spark: &str) -> DataType {
    let t = spark.trim().to_ascii_lowercase();
    match t.as_str() {
        "string" => DataType::Utf8,
        "boolean" => DataType::Boolean,
        "tinyint" | "byte" => DataType::Int8,
        "smallint" | "short" => DataType::Int16,
        "int" | "integer" => DataType::Int32,
        "bigint" | "long" => DataType::Int64,
        "float" | "real" => DataType::Float32,
        "double" => DataType::Float64,
        "date" => DataType::Date32,
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "binary" => DataType::Binary,
        "void" => DataType::Null,
        _ if t.starts_with("varchar") || t.starts_with("char") => DataType::Utf8,
        _ if t.starts_with("decimal") => decimal(&t),
        _ if t.starts_with("array") => {
            DataType::List(Arc::new(Field::new("element", DataType::Null, true)))
        }
        _ if t.starts_with("map") => {
            let entries = Fields::from(vec![
                Field::new("key", DataType::Utf8, false),
                Field::new("value", DataType::Null, true),
            ]);
            DataType::Map(Arc::new(Field::new("entries", DataType::Struct(entries), false)), false)
        }
        _ if t.starts_with("interval") => DataType::Interval(IntervalUnit::MonthDayNano),
        _ => DataType::Struct(Fields::empty()),
    }
}

/// `decimal(p,s)`; Spark's bare `decimal` is decimal(10,0).
fn decimal(t: &str) -> DataType {
    let inner = t.trim_start_matches("decimal").trim_matches(|c| c == '(' || c == ')');
    let mut parts = inner.split(',').map(|x| x.trim().parse::<i16>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(p), Some(s)) => DataType::Decimal128(p as u8, s as i8),
        _ => DataType::Decimal128(10, 0),
    }
}

/// A key value as the driver encodes it, in the key's type; None when it does not parse.
pub fn value(j: &Json, t: KeyType) -> Option<Value> {
    if j.is_null() {
        return Some(Value::Null);
    }
    Some(match t {
        KeyType::Void => Value::Null,
        KeyType::Boolean => Value::Bool(j.as_bool()?),
        KeyType::TinyInt | KeyType::SmallInt | KeyType::Int => {
            Value::Int(i32::try_from(j.as_i64()?).ok()?)
        }
        KeyType::BigInt => Value::Long(j.as_i64()?),
        KeyType::Float => Value::Float(j.as_str()?.parse().ok()?),
        KeyType::Double => Value::Double(j.as_str()?.parse().ok()?),
        KeyType::String => Value::Str(j.as_str()?.to_string()),
        KeyType::Binary => Value::Binary(unhex(j.as_str()?)?),
        KeyType::Date => Value::Date(i32::try_from(j.as_i64()?).ok()?),
        KeyType::Timestamp { .. } => Value::Timestamp(j.as_i64()?),
        KeyType::Decimal { precision, scale } => {
            Value::Decimal { unscaled: unscaled(j.as_str()?, scale)?, precision, scale }
        }
    })
}

/// A candidate value as the string the driver casts back to the key's type.
pub fn candidate(v: &Value) -> Json {
    Json::String(match v {
        Value::Null => return Json::Null,
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Long(i) => i.to_string(),
        Value::Float(f) => float_text(*f as f64, f.to_string()),
        Value::Double(d) => float_text(*d, d.to_string()),
        Value::Str(s) => s.clone(),
        Value::Binary(b) => Value::hex(b),
        Value::Date(d) => d.to_string(),
        Value::Timestamp(t) => t.to_string(),
        Value::Decimal { unscaled, scale, .. } => Value::decimal_string(*unscaled, *scale),
    })
}

/// NaN and the infinities as Spark's cast from string reads them.
fn float_text(d: f64, shortest: String) -> String {
    if d.is_nan() {
        "NaN".into()
    } else if d.is_infinite() {
        if d > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        shortest
    }
}

/// Spark's decimal string (`-12.50`, plain notation) as an unscaled integer at `scale`.
fn unscaled(s: &str, scale: i8) -> Option<i128> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let scale = scale.max(0) as usize;
    if frac.len() > scale || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let text = format!("{int}{frac}{}", "0".repeat(scale - frac.len()));
    let v: i128 = if text.is_empty() { 0 } else { text.parse().ok()? };
    Some(if neg { -v } else { v })
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spark_types_as_arrow_types() {
        assert_eq!(arrow_type("decimal(12,3)"), DataType::Decimal128(12, 3));
        assert_eq!(arrow_type("timestamp_ntz"), DataType::Timestamp(TimeUnit::Microsecond, None));
        assert_eq!(arrow_type("varchar(10)"), DataType::Utf8);
        assert!(matches!(arrow_type("map<string,int>"), DataType::Map(..)));
        assert!(matches!(arrow_type("struct<a:int>"), DataType::Struct(_)));
    }

    #[test]
    fn values_round_trip() {
        let dec = KeyType::Decimal { precision: 10, scale: 2 };
        assert_eq!(
            value(&json!("-12.5"), dec),
            Some(Value::Decimal { unscaled: -1250, precision: 10, scale: 2 })
        );
        assert_eq!(
            value(&json!("0.00"), dec),
            Some(Value::Decimal { unscaled: 0, precision: 10, scale: 2 })
        );
        assert_eq!(
            candidate(&Value::Decimal { unscaled: -1250, precision: 10, scale: 2 }),
            json!("-12.50")
        );
        assert!(value(&json!("NaN"), KeyType::Double).unwrap().is_nan());
        assert_eq!(value(&json!("Infinity"), KeyType::Double), Some(Value::Double(f64::INFINITY)));
        assert_eq!(value(&json!("1.0E10"), KeyType::Double), Some(Value::Double(1e10)));
        assert_eq!(candidate(&Value::Double(f64::NEG_INFINITY)), json!("-Infinity"));
        assert_eq!(value(&json!("0aff"), KeyType::Binary), Some(Value::Binary(vec![10, 255])));
        assert_eq!(value(&json!(3_000_000_000i64), KeyType::Int), None);
        assert_eq!(value(&json!(null), KeyType::String), Some(Value::Null));
    }
}
