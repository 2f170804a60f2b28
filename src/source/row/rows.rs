//! The one place every format's rows go through: a row's cells become its signature key and
//! facts through the profile's layout (or a reject reason), the time window is applied, and
//! the piece's tally counts and names what happened, by line (or row) number.

use serde_json::{Map, Value};

use super::layout::{Cell, Layout, RowContext, RowFacts};
use super::tally::PieceTally;
use crate::source::input::Window;
use crate::timestamp::DateCache;

/// An accepted row: its raw signature key, facts, and (when asked for) the full record.
pub struct FullRow<'a> {
    pub key: &'a [u8],
    pub facts: RowFacts<'a>,
    pub record: Record<'a>,
    /// The record was put together from an aligned S3-sink chunk (see `aligned`).
    pub aligned: bool,
}

/// A whole record: a JSON line's own text (kept byte for byte), a row as a JSON object, or a
/// row of columns (Parquet's), written as JSON straight where it goes (not first into a buffer
/// of its own).
pub enum Record<'a> {
    Text(&'a str),
    /// A JSON line that is not UTF-8 (kcat writes binary payloads raw), byte for byte.
    Bytes(&'a [u8]),
    Object(Map<String, Value>),
    Row { records: &'a dyn ColumnRecords, row: usize },
}

/// Rows held as columns that write each row as a JSON object where its record goes: what a
/// `Record::Row` is read from.
pub trait ColumnRecords {
    /// Row `row` as a JSON object, appended to `out`.
    fn write(&self, row: usize, out: &mut Vec<u8>);

    /// The value of the field named `name` in row `row`, as the row's JSON gives it; None if
    /// the rows have no such field.
    fn field(&self, row: usize, name: &str) -> Option<Value>;
}

impl Record<'_> {
    /// The record as JSON, appended to `out`; a line that is not UTF-8 with each invalid byte
    /// as U+FFFD (what a reader of the manifest sees; the bytes replay sends are resolved
    /// from the line itself, see `origin`).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Record::Text(text) => out.extend_from_slice(text.as_bytes()),
            Record::Bytes(bytes) => out.extend_from_slice(String::from_utf8_lossy(bytes).as_bytes()),
            Record::Object(map) => serde_json::to_writer(&mut *out, map).expect("records serialise"),
            Record::Row { records, row } => records.write(*row, out),
        }
    }

    /// The record's JSON text as read (a line byte for byte), or as written.
    pub fn raw_json(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Record::Text(text) => std::borrow::Cow::Borrowed(text.as_bytes()),
            Record::Bytes(bytes) => std::borrow::Cow::Borrowed(bytes),
            other => {
                let mut json = Vec::new();
                other.write_json(&mut json);
                std::borrow::Cow::Owned(json)
            }
        }
    }

    pub fn into_object(self) -> Map<String, Value> {
        match self {
            Record::Text(text) => serde_json::from_str(text).expect("a line that parsed once parses again"),
            Record::Object(map) => map,
            other => {
                let mut json = Vec::new();
                other.write_json(&mut json);
                serde_json::from_slice(&json).expect("a written row parses")
            }
        }
    }

    /// One top-level field of the record, if it has it.
    pub fn field(&self, name: &str) -> Option<Value> {
        match self {
            Record::Object(map) => map.get(name).cloned(),
            Record::Text(text) => crate::json_scan::field_text(text, name).and_then(|value| serde_json::from_str(value).ok()),
            Record::Bytes(bytes) => crate::raw_json::lookup(bytes, &[crate::path::Step::Key(name.to_string())]).and_then(crate::raw_json::decoded).map(|d| match d {
                crate::path::Decoded::Json(v) => v,
                crate::path::Decoded::Bytes(b) => Value::String(String::from_utf8_lossy(&b).into_owned()),
            }),
            Record::Row { records, row } => records.field(*row, name),
        }
    }
}

/// Interprets rows through the layout and the window.
pub(in crate::source) struct Rows<'a> {
    pub layout: &'a Layout,
    pub window: Window,
    /// The input's hive partition folders.
    pub partition: &'a [(String, String)],
    /// The input's path or URL as found.
    pub path: &'a str,
    /// The input is an aligned S3-sink chunk.
    pub aligned: bool,
}

impl Rows<'_> {
    /// One row's cells (and its record's JSON text, for a layout that needs it): `accept` gets
    /// the key and facts of a row inside the window; anything else is counted (and a reject
    /// named) in `tally`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn take<'c>(&self, cells: &'c [Cell<'c>], key: &mut Vec<u8>, dates: &mut DateCache, line: u64, record: Option<&[u8]>, tally: &mut PieceTally, accept: impl FnOnce(&[u8], RowFacts<'c>)) {
        let context = RowContext { partition: self.partition, path: self.path, record };
        match self.layout.extract(cells, key, dates, &context) {
            Ok(facts) => self.take_facts(key, facts, tally, accept),
            Err(reason) => tally.reject(line, reason),
        }
    }

    /// A row whose key and facts a source built itself (the Parquet fast path).
    #[inline]
    pub fn take_facts<'c>(&self, key: &[u8], facts: RowFacts<'c>, tally: &mut PieceTally, accept: impl FnOnce(&[u8], RowFacts<'c>)) {
        if self.window.contains(facts.time) {
            tally.accepted += 1;
            accept(key, facts);
        } else {
            tally.outside_window += 1;
        }
    }
}
