//! JSON-lines scanning: the stream is cut into large newline-aligned chunks that are parsed in
//! parallel, reading only the profile's fields; line numbers are restored in chunk order.

use std::fs::File;
use std::io::{self, BufReader, Read};

use anyhow::{Context, Result};
use rayon::iter::{ParallelBridge, ParallelIterator};

use super::{Accumulator, Compression, Input, LocalTally, Location, Scan, Tally};
use super::json_fields::FieldPicker;
use crate::signature::Cell;

const CHUNK_BYTES: usize = 8 << 20;

pub(super) fn scan<A, F>(scan: &Scan, input: &Input, compression: Compression, make: &F) -> Result<(A, Tally)>
where
    A: Accumulator,
    F: Fn() -> A + Sync,
{
    let chunks = open_chunks(input, compression)?;
    let spare = chunks.spare.clone();

    let folded = chunks
        .par_bridge()
        .try_fold(
            || (make(), Vec::new()),
            |(mut acc, mut metas), chunk| -> io::Result<(A, Vec<ChunkMeta>)> {
                let (index, bytes) = chunk?;
                scan.progress.advance(bytes.len() as u64);
                metas.push(parse_chunk(scan, index, &bytes, &mut acc));
                spare.lock().expect("spare buffers").push(bytes);
                Ok((acc, metas))
            },
        )
        .try_reduce(
            || (make(), Vec::new()),
            |(mut a, mut ma), (b, mb)| {
                a.merge(b);
                ma.extend(mb);
                Ok((a, ma))
            },
        );
    let (acc, mut metas) = folded.with_context(|| format!("{}: read error", input.display))?;

    metas.sort_by_key(|m| m.index);
    let mut tally = Tally::default();
    let mut lines_before = 0;
    for meta in metas {
        tally.absorb(meta.tally.into_tally(&input.display, lines_before));
        lines_before += meta.lines;
    }
    Ok((acc, tally))
}

/// The input's bytes, decompressed, as numbered newline-aligned chunks.
pub(super) fn open_chunks(input: &Input, compression: Compression) -> Result<Chunks> {
    let reader = open_reader(input, compression)?;
    Ok(Chunks { reader, carry: Vec::new(), index: 0, done: false, size: CHUNK_BYTES, spare: Default::default() })
}

/// The input's bytes, decompressed, from a file, stdin or S3.
pub fn open_reader(input: &Input, compression: Compression) -> Result<Box<dyn Read + Send>> {
    let raw: Box<dyn Read + Send> = match &input.location {
        Location::Stdin => Box::new(io::stdin()),
        Location::Path(p) => Box::new(File::open(p).with_context(|| format!("{}: cannot open", input.display))?),
        Location::S3 { bucket, key } => super::s3::open(bucket, key)?,
    };
    let reader: Box<dyn Read + Send> = match compression {
        Compression::None => raw,
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 20, raw))),
        Compression::Zstd => Box::new(zstd::Decoder::new(raw).with_context(|| format!("{}: not a zstd stream", input.display))?),
    };
    Ok(reader)
}

/// The lines of a chunk with their 1-based numbers within it; blank lines are skipped but
/// counted. Returns the number of lines.
pub fn for_each_line<'a>(bytes: &'a [u8], mut f: impl FnMut(u64, &'a [u8])) -> u64 {
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

struct ChunkMeta {
    index: usize,
    lines: u64,
    tally: LocalTally,
}

fn parse_chunk<A: Accumulator>(scan: &Scan, index: usize, bytes: &[u8], acc: &mut A) -> ChunkMeta {
    let names = &scan.layout.columns;
    let mut cells: Vec<Cell> = vec![Cell::Missing; names.len()];
    let mut key = Vec::with_capacity(128);
    let mut tally = LocalTally::default();
    let mut picker = FieldPicker::new(names);
    let lines = for_each_line(bytes, |line_no, line| {
        cells.iter_mut().for_each(|c| *c = Cell::Missing);
        match parse_line(line, &mut picker, &mut cells) {
            Ok(()) => scan.take_row(&cells, &mut key, acc, &mut tally, line_no),
            Err(reason) => tally.reject(line_no, reason),
        }
    });
    ChunkMeta { index, lines, tally }
}

/// Parses one line as a JSON object, keeping only the fields named in `names`.
pub(super) fn parse_line<'a>(line: &'a [u8], picker: &mut FieldPicker, cells: &mut [Cell<'a>]) -> Result<(), String> {
    let text = match simdutf8::basic::from_utf8(line) {
        Ok(text) => text,
        Err(_) => {
            let e = std::str::from_utf8(line).expect_err("simdutf8 and std agree on invalid UTF-8");
            return Err(format!("invalid UTF-8 at column {}", e.valid_up_to() + 1));
        }
    };
    picker.pick(text, cells)
}

/// Newline-aligned chunks of about `CHUNK_BYTES`, numbered in stream order.
pub(super) struct Chunks {
    reader: Box<dyn Read + Send>,
    carry: Vec<u8>,
    index: usize,
    done: bool,
    size: usize,
    /// Buffers handed back after parsing, reused so their pages need not be faulted in again.
    pub(super) spare: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
}

impl Iterator for Chunks {
    type Item = io::Result<(usize, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut buf = self.spare.lock().expect("spare buffers").pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(&self.carry);
        self.carry.clear();
        buf.reserve(self.size);
        loop {
            let start = buf.len();
            // read_to_end fills spare capacity without zeroing it first.
            let n = match (&mut self.reader).take(self.size as u64).read_to_end(&mut buf) {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if n < self.size {
                self.done = true;
                if buf.is_empty() {
                    return None;
                }
                break;
            }
            if let Some(last_nl) = memchr::memrchr(b'\n', &buf[start..]).map(|i| i + start) {
                self.carry.extend_from_slice(&buf[last_nl + 1..]);
                buf.truncate(last_nl + 1);
                break;
            }
            // A line longer than a chunk: keep reading until it ends.
        }
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
        let chunks = Chunks { reader: Box::new(io::Cursor::new(text.clone())), carry: Vec::new(), index: 0, done: false, size: 1000, spare: Default::default() };
        let parts: Vec<Vec<u8>> = chunks.map(|c| c.unwrap().1).collect();
        assert!(parts.len() > 100);
        assert!(parts.iter().all(|p| p.ends_with(b"\n")));
        assert_eq!(parts.concat(), text);
    }
}
