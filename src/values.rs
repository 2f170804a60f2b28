//! Polars values as JSON (timestamps as RFC 3339 text, nested values as JSON), shared by the
//! records a plan carries and the rows a query returns.

use polars::prelude::{AnyValue, DataFrame, TimeUnit};
use serde_json::{Map, Number, Value};

use crate::timestamp;

/// A Parquet value as JSON: timestamps as RFC 3339 text, nested values as JSON.
pub fn to_json(value: AnyValue) -> Value {
    match value {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(b),
        AnyValue::String(s) => Value::String(s.to_string()),
        AnyValue::StringOwned(s) => Value::String(s.to_string()),
        AnyValue::UInt8(v) => v.into(),
        AnyValue::UInt16(v) => v.into(),
        AnyValue::UInt32(v) => v.into(),
        AnyValue::UInt64(v) => v.into(),
        AnyValue::Int8(v) => v.into(),
        AnyValue::Int16(v) => v.into(),
        AnyValue::Int32(v) => v.into(),
        AnyValue::Int64(v) => v.into(),
        AnyValue::Float32(v) => Number::from_f64(v.into()).map(Value::Number).unwrap_or(Value::Null),
        AnyValue::Float64(v) => Number::from_f64(v).map(Value::Number).unwrap_or(Value::Null),
        AnyValue::Date(days) => Value::String(timestamp::format_micros(i64::from(days) * 86_400_000_000)[..10].to_string()),
        AnyValue::Datetime(v, unit, _) | AnyValue::DatetimeOwned(v, unit, _) => {
            let micros = match unit {
                TimeUnit::Nanoseconds => v.div_euclid(1000),
                TimeUnit::Microseconds => v,
                TimeUnit::Milliseconds => v * 1000,
            };
            Value::String(timestamp::format_micros(micros))
        }
        AnyValue::List(series) => Value::Array(series.iter().map(to_json).collect()),
        av @ AnyValue::Struct(..) => {
            let AnyValue::Struct(_, _, fields) = av else { unreachable!() };
            let mut map = Map::new();
            for (field, v) in fields.iter().zip(av._iter_struct_av()) {
                map.insert(field.name().to_string(), to_json(v));
            }
            Value::Object(map)
        }
        // A categorical is its text (Display would quote it).
        other => match other.get_str() {
            Some(text) => Value::String(text.to_string()),
            None => Value::String(other.to_string()),
        },
    }
}

/// A frame's rows as JSON objects, columns in order.
pub fn rows(df: &DataFrame) -> anyhow::Result<Vec<Map<String, Value>>> {
    let columns: Vec<_> = df.columns().iter().map(|c| (c.name().to_string(), c.as_materialized_series().clone())).collect();
    (0..df.height())
        .map(|i| columns.iter().map(|(name, s)| Ok((name.clone(), to_json(s.get(i)?)))).collect())
        .collect()
}

/// A string as serde_json writes it: copied when nothing in it needs escaping.
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    if crate::json_scan::needs_escape(s.as_bytes()) {
        serde_json::to_writer(&mut *out, s).expect("strings serialise");
    } else {
        write_plain_json_string(out, s);
    }
}

/// A string known to need no escaping, between quotes.
#[inline]
pub fn write_plain_json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    push_bytes(out, s.as_bytes());
    out.push(b'"');
}

/// Appends `bytes` to `out`, as `extend_from_slice` does. Most pieces of a written record are
/// short: from 4 to 32 bytes they are copied in two overlapping moves of a fixed size, not by
/// a call to `memcpy`.
#[inline(always)]
pub fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if !(4..=32).contains(&n) {
        out.extend_from_slice(bytes);
        return;
    }
    out.reserve(n);
    let at = out.len();
    let (src, width) = (bytes.as_ptr(), if n >= 16 { 16 } else if n >= 8 { 8 } else { 4 });
    // SAFETY: `reserve` left room for `n` bytes from `at`. Each move copies `width <= n`
    // bytes that lie inside `bytes` to the same place in that room; the first covers the
    // start, the second the end, and since `2 * width >= n` they cover all `n` bytes.
    unsafe {
        let dst = out.as_mut_ptr().add(at);
        match width {
            16 => {
                std::ptr::copy_nonoverlapping(src, dst, 16);
                std::ptr::copy_nonoverlapping(src.add(n - 16), dst.add(n - 16), 16);
            }
            8 => {
                std::ptr::copy_nonoverlapping(src, dst, 8);
                std::ptr::copy_nonoverlapping(src.add(n - 8), dst.add(n - 8), 8);
            }
            _ => {
                std::ptr::copy_nonoverlapping(src, dst, 4);
                std::ptr::copy_nonoverlapping(src.add(n - 4), dst.add(n - 4), 4);
            }
        }
        out.set_len(at + n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to 70 (each width of the short copies, and past them), appended
    /// to buffers of several lengths and capacities: the same bytes as `extend_from_slice`.
    #[test]
    fn pushed_bytes_are_the_bytes_given() {
        let source: Vec<u8> = (0..70u8).map(|i| i.wrapping_mul(37).wrapping_add(1)).collect();
        for len in 0..=source.len() {
            for start in [0, 3, 17] {
                for capacity in [0, start + len, 256] {
                    let mut ours = Vec::with_capacity(capacity);
                    ours.extend(std::iter::repeat_n(0xee, start));
                    let mut theirs = ours.clone();
                    push_bytes(&mut ours, &source[..len]);
                    theirs.extend_from_slice(&source[..len]);
                    assert_eq!(ours, theirs, "{len} bytes after {start}, capacity {capacity}");
                }
            }
        }
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        // Every ASCII character, at every position of strings shorter and longer than the
        // 8- and 32-byte steps of the scanning kernels, among plain and non-ASCII text.
        for c in (0u8..0x80).map(char::from).chain(['é', '😀', '\u{7f}', '\u{2028}']) {
            for len in [0, 1, 7, 8, 31, 32, 33, 70] {
                for at in 0..=len {
                    let text: String = (0..len).map(|i| if i == at { c } else { 'a' }).collect();
                    let mut ours = Vec::new();
                    write_json_string(&mut ours, &text);
                    assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(&text).unwrap(), "{text:?}");
                }
            }
        }
    }
}
