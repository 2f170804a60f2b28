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
        AnyValue::Date(days) => Value::String(timestamp::format_date(days)),
        AnyValue::Datetime(v, unit, _) | AnyValue::DatetimeOwned(v, unit, _) => {
            let micros = match unit {
                TimeUnit::Nanoseconds => v.div_euclid(1000),
                TimeUnit::Microseconds => v,
                TimeUnit::Milliseconds => v.saturating_mul(1000),
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
        // Bytes as base64 (a JSON string holds text only).
        AnyValue::Binary(bytes) => Value::String(crate::path::base64_encode(bytes)),
        AnyValue::BinaryOwned(bytes) => Value::String(crate::path::base64_encode(&bytes)),
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
fn write_plain_json_string(out: &mut Vec<u8>, s: &str) {
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
    // SAFETY: `reserve` left room for `n` bytes from `at`, and each width is at most `n`
    // and at least half of it.
    unsafe {
        let dst = out.as_mut_ptr().add(at);
        match n {
            16.. => copy_ends::<16>(bytes.as_ptr(), dst, n),
            8.. => copy_ends::<8>(bytes.as_ptr(), dst, n),
            _ => copy_ends::<4>(bytes.as_ptr(), dst, n),
        }
        out.set_len(at + n);
    }
}

/// Copies `n` bytes from `src` to `dst` in two moves of `W` bytes: one from the start, one
/// ending at the end; since `2 * W >= n` they cover all `n`.
///
/// # Safety
/// `W <= n <= 2 * W`, `src` readable and `dst` writable for `n` bytes, not overlapping.
#[inline(always)]
unsafe fn copy_ends<const W: usize>(src: *const u8, dst: *mut u8, n: usize) {
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, W);
        std::ptr::copy_nonoverlapping(src.add(n - W), dst.add(n - W), W);
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
