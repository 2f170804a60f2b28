//! The one place every format's rows go through: a row's cells become its signature key and
//! facts through the profile's layout (or a reject reason), the time window is applied, and
//! the piece's tally counts and names what happened, by line (or row) number.

use serde_json::{Map, Value};

use super::{Reject, Tally, Window, NAMED_REJECTS};
use super::layout::{Cell, Layout, RowFacts};
use super::parquet_json::ParquetRow;
use crate::timestamp::DateCache;

/// An accepted row: its raw signature key, facts, and (when asked for) the full record.
pub struct FullRow<'a> {
    pub key: &'a [u8],
    pub facts: RowFacts<'a>,
    pub record: Record<'a>,
}

/// A whole record: a JSON line's own text (kept byte for byte), a row as a JSON object, or a
/// Parquet row, written as JSON straight where it goes (not first into a buffer of its own).
pub enum Record<'a> {
    Text(&'a str),
    Object(Map<String, Value>),
    Row(ParquetRow<'a>),
}

impl Record<'_> {
    /// The record as JSON, appended to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Record::Text(text) => out.extend_from_slice(text.as_bytes()),
            Record::Object(map) => serde_json::to_writer(&mut *out, map).expect("records serialise"),
            Record::Row(row) => row.write(out),
        }
    }

    pub fn into_object(self) -> Map<String, Value> {
        match self {
            Record::Text(text) => serde_json::from_str(text).expect("a line that parsed once parses again"),
            Record::Object(map) => map,
            row @ Record::Row(_) => {
                let mut json = Vec::new();
                row.write_json(&mut json);
                serde_json::from_slice(&json).expect("a written row parses")
            }
        }
    }

    /// One field of the record, if it has it.
    pub fn field(&self, name: &str) -> Option<Value> {
        match self {
            Record::Object(map) => map.get(name).cloned(),
            Record::Text(text) => crate::json_scan::field_text(text, name).and_then(|value| serde_json::from_str(value).ok()),
            Record::Row(row) => row.field(name),
        }
    }
}

/// What one piece of an input (a chunk of lines, a row group) held, with line numbers local
/// to the piece.
#[derive(Default)]
pub(super) struct PieceTally {
    pub accepted: u64,
    pub outside_window: u64,
    pub rejected: u64,
    pub rejects: Vec<(u64, String)>,
    /// Lines (or rows) the piece spans, blank lines included.
    pub lines: u64,
}

impl PieceTally {
    pub fn reject(&mut self, line: u64, reason: String) {
        self.rejected += 1;
        if self.rejects.len() < NAMED_REJECTS {
            self.rejects.push((line, reason));
        }
    }
}

/// Adds the tallies of an input's pieces, in piece order, to `tally`: local line numbers
/// become the input's.
pub(super) fn absorb(tally: &mut Tally, input: &str, pieces: impl IntoIterator<Item = PieceTally>) {
    let mut lines_before = 0;
    for piece in pieces {
        tally.accepted += piece.accepted;
        tally.outside_window += piece.outside_window;
        tally.rejected += piece.rejected;
        for (line, reason) in piece.rejects {
            if tally.rejects.len() < NAMED_REJECTS {
                tally.rejects.push(Reject { input: input.to_string(), line: line + lines_before, reason });
            }
        }
        lines_before += piece.lines;
    }
}

/// Interprets rows through the layout and the window.
pub(super) struct Rows<'a> {
    pub layout: &'a Layout,
    pub window: Window,
}

impl Rows<'_> {
    /// One row's cells: `accept` gets the key and facts of a row inside the window; anything
    /// else is counted (and a reject named) in `tally`.
    #[inline]
    pub fn take<'c>(&self, cells: &'c [Cell<'c>], key: &mut Vec<u8>, dates: &mut DateCache, line: u64, tally: &mut PieceTally, accept: impl FnOnce(&[u8], RowFacts<'c>)) {
        match self.layout.extract(cells, key, dates) {
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
