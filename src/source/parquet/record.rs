//! A Parquet row as the JSON object a manifest carries, written straight from the columns:
//! byte for byte what serde_json writes for `values::to_json` of each value, without the values.

use anyhow::Result;
use polars::prelude::{
    ArrowDataType, BooleanChunked, ChunkApply, DataFrame, DataType, Float64Chunked, Int32Chunked, Int64Chunked, Series, StringChunked, TimeUnit, UInt64Chunked,
};

use super::StrArray;
use crate::source::row::rows::ColumnRecords;
use crate::json_scan::{needs_escape, word_needs_escape};
use crate::timestamp;
use crate::values::{push_bytes, to_json, write_json_string};

/// Writes the rows of one frame as JSON objects, columns in frame order.
pub(super) struct RowWriter {
    columns: Vec<ColumnWriter>,
}

/// A column's values and the bytes before each: `{` (the first column) or `,`, then `"name":`;
/// and the same with a string's opening quote, to write a plain string in three moves.
struct ColumnWriter {
    name: String,
    before: Vec<u8>,
    before_quote: Vec<u8>,
    values: Values,
}

/// A column in the shape its JSON is written from.
enum Values {
    /// Text as its one arrow array: a value is read from its view without finding its chunk.
    /// True when no value needs escaping: each is then copied between quotes unchecked.
    Str(StrArray, bool),
    Int(Int64Chunked),
    UInt(UInt64Chunked),
    Float(Float64Chunked),
    Bool(BooleanChunked),
    /// Datetimes as microseconds since the epoch.
    Micros(Int64Chunked),
    Date(Int32Chunked),
    /// Anything else, through `to_json`.
    Other(Series),
}

/// A text column as one arrow array.
fn text_array(ca: &StringChunked) -> StrArray {
    ca.rechunk().downcast_iter().next().cloned().unwrap_or_else(|| StrArray::new_empty(ArrowDataType::Utf8View))
}

/// A text column, checked at once for text that needs escaping: the span of each buffer its
/// values use in one run, and each value short enough to live in its view in a word or two,
/// rather than value by value as they are written. (A frame's arrays share their row group's
/// buffers, so only the spans its views reach are checked.) Bytes between values are checked
/// too; like a view that points nowhere, they can only cost the shortcut.
fn text_values(array: StrArray) -> Values {
    let buffers = array.data_buffers();
    let mut spans = vec![(usize::MAX, 0); buffers.len()];
    let mut clean = true;
    for view in array.views().iter() {
        let (start, len) = (view.offset as usize, view.length as usize);
        if view.is_inline() {
            // The view's bytes in memory order, whatever the machine's byte order.
            clean &= !inline_needs_escape(u128::from_le_bytes(view.as_u128().to_ne_bytes()), len);
        } else if let Some(span) = spans.get_mut(view.buffer_idx as usize) {
            *span = (span.0.min(start), span.1.max(start + len));
        } else {
            clean = false;
        }
    }
    clean = clean
        && spans.iter().zip(buffers.iter()).all(|(&(start, end), buffer)| start >= end || buffer.get(start..end).is_some_and(|used| !needs_escape(used)));
    Values::Str(array, clean)
}

/// Whether the text held in an inline view (its bytes read little-endian: the length, then up
/// to 12 bytes of text) needs escaping.
fn inline_needs_escape(view: u128, len: usize) -> bool {
    let keep = (1u128 << (8 * len)) - 1;
    // Bytes past the text are read as a plain letter.
    let text = (view >> 32) & keep | (u128::from_le_bytes([b'a'; 16]) & !keep);
    word_needs_escape(text as u64) || word_needs_escape((text >> 64) as u64)
}

impl RowWriter {
    pub(super) fn new(df: &DataFrame) -> Result<RowWriter> {
        let columns = df
            .columns()
            .iter()
            .enumerate()
            .map(|(n, c)| {
                let s = c.as_materialized_series();
                let values = match s.dtype() {
                    DataType::String => text_values(text_array(s.str()?)),
                    DataType::Categorical(..) | DataType::Enum(..) => text_values(text_array(s.cast(&DataType::String)?.str()?)),
                    DataType::UInt64 => Values::UInt(s.u64()?.rechunk().into_owned()),
                    dt if dt.is_integer() => Values::Int(s.cast(&DataType::Int64)?.i64()?.rechunk().into_owned()),
                    // An f32 is written as the double it widens to, as `to_json` does.
                    DataType::Float32 | DataType::Float64 => Values::Float(s.cast(&DataType::Float64)?.f64()?.rechunk().into_owned()),
                    DataType::Boolean => Values::Bool(s.bool()?.rechunk().into_owned()),
                    DataType::Datetime(unit, _) => {
                        let raw = s.cast(&DataType::Int64)?.i64()?.rechunk().into_owned();
                        Values::Micros(match unit {
                            TimeUnit::Nanoseconds => raw.apply_values(|v| v.div_euclid(1000)),
                            TimeUnit::Microseconds => raw,
                            TimeUnit::Milliseconds => raw.apply_values(|v| v.saturating_mul(1000)),
                        })
                    }
                    DataType::Date => Values::Date(s.cast(&DataType::Int32)?.i32()?.rechunk().into_owned()),
                    _ => Values::Other(s.rechunk()),
                };
                let mut before = vec![if n == 0 { b'{' } else { b',' }];
                serde_json::to_writer(&mut before, c.name().as_str()).expect("names serialise");
                before.push(b':');
                let before_quote = [&before[..], b"\""].concat();
                Ok(ColumnWriter { name: c.name().to_string(), before, before_quote, values })
            })
            .collect::<Result<_>>()?;
        Ok(RowWriter { columns })
    }
}

impl ColumnRecords for RowWriter {
    /// Row `i` (of the frame's) as a JSON object, appended to `out`.
    fn write(&self, i: usize, out: &mut Vec<u8>) {
        if self.columns.is_empty() {
            out.push(b'{');
        }
        for column in &self.columns {
            if let Values::Str(ca, true) = &column.values {
                if let Some(v) = ca.get(i) {
                    push_bytes(out, &column.before_quote);
                    push_bytes(out, v.as_bytes());
                    out.push(b'"');
                    continue;
                }
            }
            push_bytes(out, &column.before);
            column.values.write(i, out);
        }
        out.push(b'}');
    }

    /// The value of the column named `name` in row `i`, as the row's JSON gives it; None if
    /// the frame has no such column.
    fn field(&self, i: usize, name: &str) -> Option<serde_json::Value> {
        let column = self.columns.iter().find(|c| c.name == name)?;
        let mut json = Vec::new();
        column.values.write(i, &mut json);
        Some(serde_json::from_slice(&json).expect("a written value parses"))
    }
}

impl Values {
    /// Row `i`'s value as JSON, appended to `out`.
    fn write(&self, i: usize, out: &mut Vec<u8>) {
        match self {
            Values::Str(ca, _) => match ca.get(i) {
                Some(v) => write_json_string(out, v),
                None => out.extend_from_slice(b"null"),
            },
            Values::Int(ca) => match ca.get(i) {
                Some(v) => out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
                None => out.extend_from_slice(b"null"),
            },
            Values::UInt(ca) => match ca.get(i) {
                Some(v) => out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes()),
                None => out.extend_from_slice(b"null"),
            },
            // serde_json writes a finite double the shortest way back (ryu), anything else as null.
            Values::Float(ca) => serde_json::to_writer(&mut *out, &ca.get(i)).expect("numbers serialise"),
            Values::Bool(ca) => match ca.get(i) {
                Some(v) => out.extend_from_slice(if v { b"true" } else { b"false" }),
                None => out.extend_from_slice(b"null"),
            },
            Values::Micros(ca) => match ca.get(i) {
                Some(v) => write_json_string(out, &timestamp::format_micros(v)),
                None => out.extend_from_slice(b"null"),
            },
            Values::Date(ca) => match ca.get(i) {
                Some(days) => write_json_string(out, &timestamp::format_date(days)),
                None => out.extend_from_slice(b"null"),
            },
            Values::Other(s) => serde_json::to_writer(&mut *out, &to_json(s.get(i).expect("a row of the frame"))).expect("values serialise"),
        }
    }
}

#[cfg(test)]
mod tests {
    use polars::prelude::{Column, DataFrame, DataType, IntoColumn, NamedFrom, Series, TimeUnit};

    use super::*;
    use crate::values::rows;

    /// Every row as the writer writes it and as serde_json writes `values::to_json` of each
    /// value (the general path `query` uses): the same bytes.
    fn same_as_serde_json(df: &DataFrame) {
        let writer = RowWriter::new(df).unwrap();
        for (i, row) in rows(df).unwrap().iter().enumerate() {
            let mut ours = Vec::new();
            writer.write(i, &mut ours);
            // A field reads as it does from the row's JSON (a line's text is read that way).
            let read: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&ours).unwrap();
            for (name, value) in &read {
                assert_eq!(writer.field(i, name).as_ref(), Some(value), "row {i}, field {name}");
            }
            assert_eq!(writer.field(i, "no such column"), None);
            assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(row).unwrap(), "row {i}");
        }
    }

    /// Text columns checked at once: a frame that is a slice of a larger array (sharing its
    /// buffers) with one value to escape, short or long, in any row, and without one.
    #[test]
    fn text_checked_by_column_is_written_as_serde_json_writes_it() {
        let plain = ["short", "", "twelve bytes", "a value well past the twelve bytes a view holds", "é 😀 past twelve bytes"];
        let n = 12;
        for special in ["q\"uote", "tab\tin a value past twelve bytes", "ctl\u{1}", "long, and the last byte is a \\"] {
            for at in 0..=n {
                let text: Vec<String> = (0..n).map(|i| if i == at { special.to_string() } else { plain[i % plain.len()].to_string() }).collect();
                let whole = DataFrame::new(n, vec![Column::new("s".into(), text)]).unwrap();
                for (offset, len) in [(0, n), (0, n / 2), (n / 2, n - n / 2), (3, 4)] {
                    let frame = whole.slice(offset as i64, len);
                    same_as_serde_json(&frame);
                    let clean = matches!(RowWriter::new(&frame).unwrap().columns[0].values, Values::Str(_, true));
                    assert_eq!(clean, !(offset..offset + len).contains(&at), "{special:?} at {at}, rows {offset}+{len}");
                }
            }
        }
    }

    #[test]
    fn rows_are_written_as_serde_json_writes_their_values() {
        let n = 7;
        let text = ["plain", "q\"uote", "back\\slash", "ctl\u{1}\u{1f}\n", "é 😀 \u{2028}", "", "a string longer than thirty-two bytes, to cross a step"];
        let ints: Vec<Option<i64>> = vec![Some(0), Some(-1), Some(i64::MAX), Some(i64::MIN), None, Some(42), Some(7)];
        let floats: Vec<Option<f64>> = vec![Some(0.1), Some(-0.0), Some(f64::NAN), Some(f64::INFINITY), Some(1e300), None, Some(5e-324)];
        let micros: Vec<Option<i64>> = vec![Some(0), Some(-1), Some(1_700_000_000_123_456), None, Some(86_399_999_999), Some(-86_400_000_001), Some(1)];
        let columns: Vec<Column> = vec![
            Column::new("s".into(), text.iter().map(|s| Some(*s)).collect::<Vec<_>>()),
            Column::new("nulls".into(), vec![None::<&str>; n]),
            Column::new("clean".into(), vec![Some("a"), None, Some("plain text past twelve bytes"), Some(""), None, Some("é"), Some("b")]),
            Column::new("i64".into(), ints.clone()),
            Series::new("i8".into(), vec![Some(-128i8), Some(127), None, Some(0), Some(1), Some(2), Some(3)]).into_column(),
            Series::new("u64".into(), vec![Some(u64::MAX), Some(0), None, Some(1), Some(2), Some(3), Some(4)]).into_column(),
            Series::new("u32".into(), vec![Some(u32::MAX), Some(0), None, Some(1), Some(2), Some(3), Some(4)]).into_column(),
            Column::new("f64".into(), floats.clone()),
            Series::new("f32".into(), vec![Some(0.1f32), Some(-0.0), Some(f32::NAN), Some(f32::NEG_INFINITY), Some(3.4e38), None, Some(1.5)]).into_column(),
            Column::new("bool".into(), vec![Some(true), Some(false), None, Some(true), Some(true), Some(false), None]),
            Column::new("us".into(), micros.clone()).cast(&DataType::Datetime(TimeUnit::Microseconds, None)).unwrap(),
            Column::new("ms".into(), micros.clone()).cast(&DataType::Datetime(TimeUnit::Milliseconds, None)).unwrap(),
            Column::new("ns".into(), micros.clone()).cast(&DataType::Datetime(TimeUnit::Nanoseconds, None)).unwrap(),
            Series::new("date".into(), vec![Some(0i32), Some(-1), Some(20_000), None, Some(1), Some(-719_162), Some(2_932_896)])
                .cast(&DataType::Date)
                .unwrap()
                .into_column(),
            Column::new("cat".into(), text.iter().map(|s| Some(*s)).collect::<Vec<_>>())
                .cast(&DataType::from_categories(polars::prelude::Categories::global()))
                .unwrap(),
            Column::new("we\"ird name".into(), ints),
        ];
        same_as_serde_json(&DataFrame::new(n, columns).unwrap());
        same_as_serde_json(&DataFrame::new(n, Vec::new()).unwrap());
    }
}
