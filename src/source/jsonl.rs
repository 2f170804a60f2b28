//! JSON-lines: the stream is cut into large newline-aligned chunks (a byte-order mark dropped)
//! that are parsed in parallel, reading only the profile's fields; lines are counted per chunk
//! so numbers can be restored in chunk order.

use std::io::{self, BufRead, BufReader, Read};
use std::sync::Mutex;

use anyhow::{Context, Result};

use super::json_fields::FieldPicker;
use super::rows::{FullRow, PieceTally, Record, Rows};
use super::{Compression, Input, Piece};
use super::layout::Cell;
use crate::lines::LineBlocks;
use crate::storage::Opener;

const CHUNK_BYTES: usize = 8 << 20;

/// The input's lines as numbered newline-aligned chunks, decompressed (by the name's
/// extension, or by the stream's first bytes when the name says nothing, as on stdin).
pub(super) fn chunks(opener: &Opener, input: &Input, compression: Compression) -> Result<Chunks> {
    let raw = opener.open(&input.location)?;
    let mut peek = BufReader::with_capacity(1 << 20, raw);
    let head = peek.fill_buf().with_context(|| format!("{}: cannot read", input.display))?;
    let compression = match (compression, head) {
        (Compression::None, [0x1f, 0x8b, ..]) => Compression::Gzip,
        (Compression::None, [0x28, 0xb5, 0x2f, 0xfd, ..]) => Compression::Zstd,
        (given, _) => given,
    };
    let reader: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(peek),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(peek)),
        Compression::Zstd => Box::new(zstd::Decoder::with_buffer(peek).with_context(|| format!("{}: not a zstd stream", input.display))?),
    };
    Ok(Chunks::new(reader, CHUNK_BYTES))
}

/// Decodes one chunk: each line through the field picker and the rows' layout; `accept` gets
/// every accepted row with its line's own text as the record.
pub(super) fn decode<'b>(rows: &Rows, bytes: &'b [u8], mut accept: impl FnMut(FullRow<'_>)) -> PieceTally {
    let names = &rows.layout.columns;
    let mut cells: Vec<Cell> = vec![Cell::Missing; names.len()];
    let mut key = Vec::with_capacity(128);
    let mut tally = PieceTally::default();
    let mut picker = FieldPicker::new(names);
    tally.lines = for_each_line(bytes, |line_no, line| {
        cells.iter_mut().for_each(|c| *c = Cell::Missing);
        match parse_line(line, &mut picker, &mut cells) {
            Ok(text) => {
                rows.take(&cells, &mut key, line_no, &mut tally, |key, facts| accept(FullRow { key, facts, record: Record::Text(text.trim()) }))
            }
            Err(reason) => tally.reject(line_no, reason),
        }
    });
    tally
}

/// Checks one chunk's lines as JSON objects for SQL, passing each valid line to `valid`; the
/// rest are counted and named in the tally.
pub(super) fn check_objects(bytes: &[u8], mut valid: impl FnMut(&[u8])) -> PieceTally {
    let mut picker = FieldPicker::new(&[]);
    let mut tally = PieceTally::default();
    tally.lines = for_each_line(bytes, |line_no, line| match parse_line(line, &mut picker, &mut []) {
        Ok(_) => {
            tally.accepted += 1;
            valid(line);
        }
        Err(reason) => tally.reject(line_no, reason),
    });
    tally
}

/// The lines of a chunk with their 1-based numbers within it; blank lines are skipped but
/// counted. Returns the number of lines.
pub(super) fn for_each_line<'a>(bytes: &'a [u8], mut f: impl FnMut(u64, &'a [u8])) -> u64 {
    let mut line_no = 0u64;
    let mut rest = bytes;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let mut line = &rest[..end];
        rest = if end < rest.len() { &rest[end + 1..] } else { &[] };
        line_no += 1;
        if let [head @ .., b'\r'] = line {
            line = head;
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            f(line_no, line);
        }
    }
    line_no
}

/// Parses one line as a JSON object, keeping only the fields named in `names`; returns the
/// line as text (validated once here, never again).
pub(super) fn parse_line<'a>(line: &'a [u8], picker: &mut FieldPicker, cells: &mut [Cell<'a>]) -> Result<&'a str, String> {
    let text = match simdutf8::basic::from_utf8(line) {
        Ok(text) => text,
        Err(_) => {
            let e = std::str::from_utf8(line).expect_err("simdutf8 and std agree on invalid UTF-8");
            return Err(format!("invalid UTF-8 at column {}", e.valid_up_to() + 1));
        }
    };
    picker.pick(text, cells)?;
    Ok(text)
}

/// A stream cut into newline-aligned chunks of about `CHUNK_BYTES`, numbered in stream order;
/// shared by the tasks that decode them (one reads the next chunk at a time).
pub(super) struct Chunks {
    reader: Mutex<ChunkReader>,
    /// Buffers handed back after decoding, reused so their pages need not be faulted in again.
    spare: Mutex<Vec<Vec<u8>>>,
}

struct ChunkReader {
    blocks: LineBlocks<Box<dyn Read + Send>>,
    index: usize,
}

impl Chunks {
    fn new(reader: Box<dyn Read + Send>, size: usize) -> Chunks {
        Chunks { reader: Mutex::new(ChunkReader { blocks: LineBlocks::new(reader, size), index: 0 }), spare: Mutex::new(Vec::new()) }
    }

    /// The chunks, in order, as pieces; a read error names the input.
    pub(super) fn iter<'a>(&'a self, display: &'a str) -> impl Iterator<Item = Result<Piece>> + Send + 'a {
        std::iter::from_fn(move || {
            let spare = self.spare.lock().expect("spare buffers").pop().unwrap_or_default();
            let next = self.reader.lock().expect("chunk reader").next(spare)?;
            Some(next.map(|(index, bytes)| Piece::Chunk(index, bytes)).with_context(|| format!("{display}: read error")))
        })
    }

    /// Returns a decoded chunk's buffer for reuse.
    pub(super) fn give_back(&self, bytes: Vec<u8>) {
        self.spare.lock().expect("spare buffers").push(bytes);
    }
}

impl ChunkReader {
    fn next(&mut self, buf: Vec<u8>) -> Option<io::Result<(usize, Vec<u8>)>> {
        let mut buf = match self.blocks.next_into(buf)? {
            Ok(buf) => buf,
            Err(e) => return Some(Err(e)),
        };
        let index = self.index;
        self.index += 1;
        if index == 0 && buf.starts_with(b"\xEF\xBB\xBF") {
            buf.drain(..3); // a UTF-8 byte-order mark is not part of the first record
        }
        Some(Ok((index, buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn picks_only_named_fields_and_keeps_their_types() {
        let names = names(&["a", "b", "c", "d"]);
        let mut cells = vec![Cell::Missing; 4];
        parse_line(br#"{"a":"x\"y","z":{"deep":[1,2]},"b":3,"c":null}"#, &mut FieldPicker::new(&names), &mut cells).unwrap();
        assert_eq!(cells, [Cell::Str("x\"y".into()), Cell::Int(3), Cell::Null, Cell::Missing]);
    }

    #[test]
    fn malformed_lines_give_a_reason() {
        let names = names(&["a"]);
        let mut cells = vec![Cell::Missing; 1];
        let err = parse_line(br#"{"a":"x""#, &mut FieldPicker::new(&names), &mut cells).unwrap_err();
        assert!(err.starts_with("invalid JSON: EOF while parsing"), "{err}");
        let err = parse_line(b"{\"a\":\"\xff\"}", &mut FieldPicker::new(&names), &mut cells).unwrap_err();
        assert_eq!(err, "invalid UTF-8 at column 7");
    }

    #[test]
    fn chunks_end_on_newlines_and_cover_every_byte() {
        let text: Vec<u8> = (0..200_000).flat_map(|i| format!("{{\"n\":{i}}}\n").into_bytes()).collect();
        let chunks = Chunks::new(Box::new(io::Cursor::new(text.clone())), 1000);
        let parts: Vec<Vec<u8>> = chunks
            .iter("t")
            .map(|c| match c.unwrap() {
                Piece::Chunk(_, bytes) => bytes,
                Piece::Group(_) | Piece::Slice(_) => unreachable!(),
            })
            .collect();
        assert!(parts.len() > 100);
        assert!(parts.iter().all(|p| p.ends_with(b"\n")));
        assert_eq!(parts.concat(), text);
    }
}
