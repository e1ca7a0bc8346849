//! Arrow arrays read as counting keys, one row at a time: a fixed-width value as its 64-bit
//! key (ints, dates and timestamps in Spark's units, floats by their canonical bits, decimals
//! unscaled), a wide decimal as 128 bits, a string or binary as its bytes; None for NULL.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};

use crate::value::{canonical_f32, canonical_f64, KeyType};

/// The counting keys of a column of 64-bit values that are their own keys (as `each_i64`
/// reads them: ints, unscaled decimals, microsecond timestamps) and has no NULL, as the
/// array's own slice; None for any other array.
pub(crate) fn plain_i64(a: &ArrayRef) -> Option<&[i64]> {
    if a.null_count() > 0 {
        return None;
    }
    match a.data_type() {
        DataType::Int64 => Some(a.as_primitive::<Int64Type>().values()),
        DataType::Decimal64(..) => Some(a.as_primitive::<Decimal64Type>().values()),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            Some(a.as_primitive::<TimestampMicrosecondType>().values())
        }
        _ => None,
    }
}

/// As `each_i64`, for the common arrays (32- and 64-bit integers and dates, no NULL) with `f`
/// called directly, not through a `dyn` call per row: `f(row, key)`. False for other arrays
/// (nothing called).
#[inline]
pub(crate) fn each_plain_i64(a: &ArrayRef, mut f: impl FnMut(usize, i64)) -> bool {
    if a.null_count() > 0 {
        return false;
    }
    match a.data_type() {
        DataType::Int64 => {
            a.as_primitive::<Int64Type>().values().iter().enumerate().for_each(|(i, &v)| f(i, v))
        }
        DataType::Int32 => a
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .enumerate()
            .for_each(|(i, &v)| f(i, v as i64)),
        DataType::Date32 => a
            .as_primitive::<Date32Type>()
            .values()
            .iter()
            .enumerate()
            .for_each(|(i, &v)| f(i, v as i64)),
        _ => return false,
    }
    true
}

/// Call `f` with each row's 64-bit counting key (None for NULL).
pub(crate) fn each_i64(
    a: &ArrayRef,
    ty: KeyType,
    f: &mut dyn FnMut(Option<i64>),
) -> std::result::Result<(), String> {
    macro_rules! prim {
        ($t:ty, $conv:expr) => {{
            let arr = a.as_primitive::<$t>();
            let conv = $conv;
            if arr.null_count() == 0 {
                for &v in arr.values().iter() {
                    f(Some(conv(v)));
                }
            } else {
                for v in arr.iter() {
                    f(v.map(conv));
                }
            }
        }};
    }
    match a.data_type() {
        DataType::Null => (0..a.len()).for_each(|_| f(None)),
        DataType::Boolean => a.as_boolean().iter().for_each(|v| f(v.map(|b| b as i64))),
        DataType::Int8 => prim!(Int8Type, |v: i8| v as i64),
        DataType::Int16 => prim!(Int16Type, |v: i16| v as i64),
        DataType::Int32 => prim!(Int32Type, |v: i32| v as i64),
        DataType::Int64 => prim!(Int64Type, |v: i64| v),
        DataType::UInt8 => prim!(UInt8Type, |v: u8| v as i64),
        DataType::UInt16 => prim!(UInt16Type, |v: u16| v as i64),
        DataType::UInt32 => prim!(UInt32Type, |v: u32| v as i64),
        DataType::Float32 => prim!(Float32Type, |v: f32| canonical_f32(v).to_bits() as i64),
        DataType::Float64 => prim!(Float64Type, |v: f64| canonical_f64(v).to_bits() as i64),
        DataType::Date32 => prim!(Date32Type, |v: i32| v as i64),
        DataType::Date64 => prim!(Date64Type, |v: i64| v.div_euclid(86_400_000)),
        DataType::Timestamp(TimeUnit::Second, _) => {
            prim!(TimestampSecondType, |v: i64| v.saturating_mul(1_000_000))
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            prim!(TimestampMillisecondType, |v: i64| v.saturating_mul(1_000))
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            prim!(TimestampMicrosecondType, |v: i64| v)
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            prim!(TimestampNanosecondType, |v: i64| v.div_euclid(1_000))
        }
        DataType::Decimal32(..) => prim!(Decimal32Type, |v: i32| v as i64),
        DataType::Decimal64(..) => prim!(Decimal64Type, |v: i64| v),
        DataType::Decimal128(..) => prim!(Decimal128Type, |v: i128| v as i64),
        DataType::Decimal256(..) => {
            for v in a.as_primitive::<Decimal256Type>().iter() {
                f(v.and_then(|x| x.to_i128()).map(|x| x as i64));
            }
        }
        DataType::Dictionary(_, _) => {
            let dict = a.as_any_dictionary();
            let mut values = Vec::with_capacity(dict.values().len());
            each_i64(dict.values(), ty, &mut |v| values.push(v))?;
            let keys = dict.keys();
            for (i, k) in dict.normalized_keys().into_iter().enumerate() {
                f(if keys.is_null(i) { None } else { values.get(k).copied().flatten() });
            }
        }
        other => return Err(format!("type {other} cannot be counted as {}", ty.spark_name())),
    }
    Ok(())
}

/// Call `f` with each row's 128-bit counting key, a wide decimal unscaled (None for NULL).
pub(crate) fn each_i128(
    a: &ArrayRef,
    f: &mut dyn FnMut(Option<i128>),
) -> std::result::Result<(), String> {
    match a.data_type() {
        DataType::Decimal128(..) => a.as_primitive::<Decimal128Type>().iter().for_each(&mut *f),
        DataType::Decimal256(..) => {
            for v in a.as_primitive::<Decimal256Type>().iter() {
                f(v.and_then(|x| x.to_i128()));
            }
        }
        DataType::UInt64 => {
            a.as_primitive::<UInt64Type>().iter().for_each(|v| f(v.map(|x| x as i128)))
        }
        DataType::Dictionary(_, _) => {
            let dict = a.as_any_dictionary();
            let mut values = Vec::with_capacity(dict.values().len());
            each_i128(dict.values(), &mut |v| values.push(v))?;
            let keys = dict.keys();
            for (i, k) in dict.normalized_keys().into_iter().enumerate() {
                f(if keys.is_null(i) { None } else { values.get(k).copied().flatten() });
            }
        }
        other => return Err(format!("type {other} cannot be counted as a wide decimal")),
    }
    Ok(())
}

/// Call `f` with each row's bytes, a string's or a binary's (None for NULL).
pub(crate) fn each_bytes<'a>(
    a: &'a ArrayRef,
    f: &mut dyn FnMut(Option<&'a [u8]>),
) -> std::result::Result<(), String> {
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().iter().for_each(|v| f(v.map(str::as_bytes))),
        DataType::LargeUtf8 => a.as_string::<i64>().iter().for_each(|v| f(v.map(str::as_bytes))),
        DataType::Utf8View => a.as_string_view().iter().for_each(|v| f(v.map(str::as_bytes))),
        DataType::Binary => a.as_binary::<i32>().iter().for_each(&mut *f),
        DataType::LargeBinary => a.as_binary::<i64>().iter().for_each(&mut *f),
        DataType::BinaryView => a.as_binary_view().iter().for_each(&mut *f),
        DataType::FixedSizeBinary(_) => a.as_fixed_size_binary().iter().for_each(&mut *f),
        DataType::Dictionary(_, _) => {
            let dict = a.as_any_dictionary();
            let mut values: Vec<Option<&'a [u8]>> = Vec::with_capacity(dict.values().len());
            each_bytes(dict.values(), &mut |v| values.push(v))?;
            let keys = dict.keys();
            for (i, k) in dict.normalized_keys().into_iter().enumerate() {
                f(if keys.is_null(i) { None } else { values.get(k).copied().flatten() });
            }
        }
        other => return Err(format!("type {other} cannot be counted as a string or binary")),
    }
    Ok(())
}
