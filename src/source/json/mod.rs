//! JSON-lines: the stream is cut into large newline-aligned chunks (a byte-order mark dropped)
//! that are parsed in parallel, reading only the profile's fields; lines are counted per chunk
//! so numbers can be restored in chunk order.

pub(super) mod columns;
mod document;
mod picker;
mod shape;
mod walk;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::ops::{Deref, Range};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use memmap2::Mmap;

use anyhow::{Context, Result};

pub use document::{is_document, WRAPPERS};
pub use picker::FieldPicker;
use crate::source::input::{Compression, Input};
use crate::source::row::layout::Cell;
use crate::source::row::rows::{FullRow, Record, Rows};
use crate::source::row::tally::PieceTally;
use crate::source::row::tree::FieldTree;
use crate::lines::{line_at, LineBlocks};
use crate::storage::{release, MappedFile, Opener};
use crate::timestamp::DateCache;

const CHUNK_BYTES: usize = 8 << 20;

/// A copied chunk is read this much at a time into one buffer that stays in the core's L2
/// cache: `pread` writes it there and the decoder reads it there, where a whole chunk's copy
/// went out to memory and came back (rank of 3.9 GB in small folios: 0.70 s against 0.77 s,
/// sys 0.23 s against 0.31; 64 KiB and 1 MiB windows 0.73 s).
const WINDOW_BYTES: usize = 256 << 10;

/// The input's lines as numbered newline-aligned chunks, decompressed (by the name's
/// extension, or by the stream's first bytes when the name says nothing, as on stdin).
pub(super) fn chunks(opener: &Opener, input: &Input, compression: Compression) -> Result<Chunks> {
    if compression == Compression::None {
        if let Some(mapped) = opener.map(&input.location)? {
            if sniffed(compression, &mapped.map) == Compression::None {
                if document::is_document(&mapped.map[..mapped.map.len().min(DOCUMENT_HEAD)]) {
                    if let Some(lines) = document::to_lines(&mapped.map) {
                        return Ok(Chunks::new(Box::new(io::Cursor::new(lines)), CHUNK_BYTES, &input.display));
                    }
                }
                return Ok(Chunks::mapped(mapped, CHUNK_BYTES, WINDOW_BYTES, ReadMode::from_env(), &input.display));
            }
        }
    }
    let (reader, _) = decompressed(opener.open(&input.location)?, compression, &input.display)?;
    let mut reader = BufReader::with_capacity(DOCUMENT_HEAD, reader);
    let head = reader.fill_buf().with_context(|| format!("{}: cannot read", input.display))?;
    if document::is_document(head) {
        let mut text = Vec::new();
        reader.read_to_end(&mut text).with_context(|| format!("{}: read error", input.display))?;
        let lines = document::to_lines(&text).unwrap_or(text);
        return Ok(Chunks::new(Box::new(io::Cursor::new(lines)), CHUNK_BYTES, &input.display));
    }
    Ok(Chunks::new(Box::new(reader), CHUNK_BYTES, &input.display))
}

/// Lines already in memory (an aligned S3-sink chunk's, put together) as numbered
/// newline-aligned chunks; `display` names them in errors.
pub(super) fn chunks_of_lines(lines: Vec<u8>, display: &str) -> Chunks {
    Chunks::new(Box::new(io::Cursor::new(lines)), CHUNK_BYTES, display)
}

/// How much of a stream's start tells a JSON document from JSON lines.
const DOCUMENT_HEAD: usize = 64 << 10;

/// A stream decompressed as its name says, or as its first bytes say when the name says
/// nothing (stdin, a file named without its extension), and the compression it was in.
pub fn decompressed(raw: Box<dyn Read + Send>, compression: Compression, display: &str) -> Result<(Box<dyn Read + Send>, Compression)> {
    let mut peek = BufReader::with_capacity(1 << 20, raw);
    let head = peek.fill_buf().with_context(|| format!("{display}: cannot read"))?;
    let found = sniffed(compression, head);
    let reader: Box<dyn Read + Send> = match found {
        Compression::None => Box::new(peek),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(peek)),
        Compression::Zstd => Box::new(zstd::Decoder::with_buffer(peek).with_context(|| format!("{display}: not a zstd stream"))?),
    };
    Ok((reader, found))
}

/// The compression a stream is in: as its name says, or when the name says nothing, as its
/// first bytes say.
pub fn sniffed(given: Compression, head: &[u8]) -> Compression {
    match (given, head) {
        (Compression::None, [0x1f, 0x8b, ..]) => Compression::Gzip,
        (Compression::None, [0x28, 0xb5, 0x2f, 0xfd, ..]) => Compression::Zstd,
        (given, _) => given,
    }
}

/// Decodes one chunk, whole or handed over in newline-aligned windows one after another: each
/// line goes through the field picker and the rows' layout, and `accept` gets every accepted
/// row with its line's own text as the record. A line of a kept shape is read straight from
/// the bytes, its end found as it is read; any other is cut at its newline, checked as UTF-8
/// and parsed. What the lines taught (their shapes, their dates) and their numbering carry
/// from one window to the next.
pub(super) struct LineDecoder<'r> {
    rows: &'r Rows<'r>,
    picker: FieldPicker<'r>,
    key: Vec<u8>,
    dates: DateCache,
    pub tally: PieceTally,
}

impl<'r> LineDecoder<'r> {
    pub fn new(rows: &'r Rows<'r>) -> LineDecoder<'r> {
        let picker = FieldPicker::new(rows.layout.tree());
        LineDecoder { rows, picker, key: Vec::with_capacity(128), dates: DateCache::default(), tally: PieceTally::default() }
    }

    /// Decodes the chunk's next window (whole lines), numbering its lines on from the last's.
    /// Lines go in batches: a batch's fields are picked, then its rows taken, in line order,
    /// so the parser's code and the normalisers' stay in the core's instruction cache each in
    /// turn (a row through both at once missed it a third more often).
    pub fn decode(&mut self, bytes: &[u8], accept: &mut impl FnMut(FullRow<'_>)) {
        let LineDecoder { rows, picker, key, dates, tally } = self;
        // Cells of their own for each line of a batch (they borrow from the window), all
        // `Missing` before a line is read: what the picker expects of cells it did not fill.
        let mut batch: Vec<(Vec<Cell>, u64, Result<Line, String>)> = Vec::with_capacity(BATCH_LINES);
        let mut spare: Vec<Vec<Cell>> = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let mut cells = spare.pop().unwrap_or_else(|| vec![Cell::Missing; rows.layout.columns.len()]);
            tally.lines += 1;
            let (parsed, next) = match picker.read_raw(bytes, at, &mut cells) {
                Some((end, text)) => {
                    debug_assert_eq!(std::str::from_utf8(&bytes[at..end]).is_ok(), text, "a line read raw is UTF-8 when it says so");
                    let line = if text {
                        // SAFETY: `read_raw` found the line UTF-8 (see `Shape::read_raw`).
                        Line::Text(unsafe { std::str::from_utf8_unchecked(&bytes[at..end]) })
                    } else {
                        Line::Bytes(&bytes[at..end])
                    };
                    let newline = if bytes.get(end) == Some(&b'\r') { 2 } else { 1 };
                    (Ok(line), (end + newline).min(bytes.len()))
                }
                None => match read_full(bytes, at, picker, &mut cells) {
                    (Some(parsed), next) => (parsed, next),
                    (None, next) => {
                        at = next;
                        spare.push(cells);
                        continue;
                    }
                },
            };
            at = next;
            batch.push((cells, tally.lines, parsed));
            if batch.len() == BATCH_LINES {
                take_batch(rows, &mut batch, &mut spare, key, dates, tally, accept);
            }
        }
        take_batch(rows, &mut batch, &mut spare, key, dates, tally, accept);
    }
}

/// The rows of a batch's lines taken in line order (or their lines rejected), their cells
/// reset to `Missing` and kept for the next lines.
fn take_batch<'a>(
    rows: &Rows,
    batch: &mut Vec<(Vec<Cell<'a>>, u64, Result<Line<'a>, String>)>,
    spare: &mut Vec<Vec<Cell<'a>>>,
    key: &mut Vec<u8>,
    dates: &mut DateCache,
    tally: &mut PieceTally,
    accept: &mut impl FnMut(FullRow<'_>),
) {
    for (mut cells, line_no, parsed) in batch.drain(..) {
        match parsed {
            Ok(Line::Text(text)) => {
                let text = text.trim_ascii();
                rows.take(&cells, key, dates, line_no, Some(text.as_bytes()), tally, |key, facts| accept(FullRow { key, facts, record: Record::Text(text), aligned: rows.aligned }))
            }
            Ok(Line::Bytes(line)) => {
                let line = line.trim_ascii();
                rows.take(&cells, key, dates, line_no, Some(line), tally, |key, facts| accept(FullRow { key, facts, record: Record::Bytes(line), aligned: rows.aligned }))
            }
            Err(reason) => tally.reject(line_no, reason),
        }
        cells.iter_mut().for_each(|c| *c = Cell::Missing);
        spare.push(cells);
    }
}

/// Lines whose fields are picked before their rows are taken (`LineDecoder::decode`).
const BATCH_LINES: usize = 32;

/// A line read: UTF-8 text, or bytes that are not (kcat writes binary payloads raw), whose
/// kept strings are.
enum Line<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// The line at `at`, cut at its newline, checked as UTF-8 and parsed: its text or why it is
/// rejected (None for a blank line), and where the next starts. Apart from `decode`'s loop:
/// most lines are read raw.
#[cold]
fn read_full<'a>(bytes: &'a [u8], at: usize, picker: &mut FieldPicker, cells: &mut [Cell<'a>]) -> (Option<Result<Line<'a>, String>>, usize) {
    let (line, next) = line_at(bytes, at);
    if line.iter().all(u8::is_ascii_whitespace) {
        return (None, next);
    }
    let parsed = match simdutf8::basic::from_utf8(line) {
        Ok(text) => picker.pick(text, cells).map(|()| Line::Text(text)),
        // Invalid UTF-8 in a field the profile does not read never rejects the line.
        Err(_) => picker.pick_bytes(line, cells).map(|()| Line::Bytes(line)),
    };
    (Some(parsed), next)
}

/// Checks one chunk's lines as JSON objects for SQL, passing each valid line to `valid`; the
/// rest are counted and named in the tally.
pub(super) fn check_objects(bytes: &[u8], mut valid: impl FnMut(&[u8])) -> PieceTally {
    pick_objects(bytes, &FieldTree::default(), |line, _| valid(line))
}

/// Reads each line of a chunk as a JSON object, passing `each` the line and `tree`'s fields
/// of it (`Missing` where absent); lines that are not are counted and named in the tally.
fn pick_objects<'a>(bytes: &'a [u8], tree: &FieldTree, mut each: impl FnMut(&'a [u8], &[Cell<'a>])) -> PieceTally {
    let mut picker = FieldPicker::new(tree);
    let mut cells = vec![Cell::Missing; tree.cells()];
    let mut tally = PieceTally::default();
    tally.lines = for_each_line(bytes, |line_no, line| match parse_line(line, &mut picker, &mut cells) {
        Ok(_) => {
            tally.accepted += 1;
            each(line, &cells);
        }
        Err(reason) => tally.reject(line_no, reason),
    });
    tally
}

/// The lines of a chunk with their 1-based numbers within it; blank lines are skipped but
/// counted. Returns the number of lines.
pub(super) fn for_each_line<'a>(bytes: &'a [u8], mut f: impl FnMut(u64, &'a [u8])) -> u64 {
    let mut line_no = 0u64;
    let mut at = 0;
    while at < bytes.len() {
        let (line, next) = line_at(bytes, at);
        at = next;
        line_no += 1;
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
/// shared by the tasks that decode them (one cuts the next chunk at a time).
pub(super) struct Chunks {
    source: ChunkSource,
    /// The input's name, for errors.
    display: String,
    /// Buffers handed back after decoding, reused so their pages need not be faulted in again.
    spare: Mutex<Vec<Vec<u8>>>,
}

enum ChunkSource {
    Read(Mutex<ChunkReader>),
    /// A local file, cut into chunks on its mapping; the next chunk's start and number, and
    /// how much of a chunk copied out is read at a time.
    Mapped { map: Arc<Mmap>, file: File, size: usize, next: Mutex<(usize, usize)>, mode: ReadMode, window: usize },
}

/// How a mapped file's chunks are read: in place, copied out with `pread`, or each as the
/// page faults of a sample of it say (`copying_beats_mapping`). `DLQF_JSONL_READ=map|copy`
/// chooses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ReadMode {
    Map,
    Copy,
    Probe,
}

impl ReadMode {
    fn from_env() -> ReadMode {
        match std::env::var("DLQF_JSONL_READ").as_deref() {
            Ok("map") => ReadMode::Map,
            Ok("copy") => ReadMode::Copy,
            _ => ReadMode::Probe,
        }
    }

    /// Whether a mapped chunk is copied out rather than read in place.
    fn copies(self, map: &Mmap, chunk: Range<usize>) -> bool {
        match self {
            ReadMode::Map => false,
            ReadMode::Copy => true,
            ReadMode::Probe => copying_beats_mapping(map, chunk),
        }
    }
}

/// One chunk's bytes: read into a buffer, or a range of a mapped file (read in place or
/// copied out, whole by `Chunks::load` or a window at a time by `Chunks::read_windows`).
pub(super) enum ChunkBytes {
    Read(Vec<u8>),
    Mapped(Arc<Mmap>, Range<usize>),
}

impl Deref for ChunkBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            ChunkBytes::Read(buf) => buf,
            ChunkBytes::Mapped(map, range) => &map[range.clone()],
        }
    }
}

struct ChunkReader {
    blocks: LineBlocks<Box<dyn Read + Send>>,
    index: usize,
}

impl Chunks {
    fn new(reader: Box<dyn Read + Send>, size: usize, display: &str) -> Chunks {
        let reader = ChunkReader { blocks: LineBlocks::new(reader, size), index: 0 };
        Chunks { source: ChunkSource::Read(Mutex::new(reader)), display: display.to_string(), spare: Mutex::new(Vec::new()) }
    }

    fn mapped(mapped: MappedFile, size: usize, window: usize, mode: ReadMode, display: &str) -> Chunks {
        let MappedFile { map, file } = mapped;
        let source = ChunkSource::Mapped { map: Arc::new(map), file, size, next: Mutex::new((0, 0)), mode, window };
        Chunks { source, display: display.to_string(), spare: Mutex::new(Vec::new()) }
    }

    /// The chunks, numbered in order: a mapped file's as ranges that `load` makes ready; a
    /// read error names the input.
    pub(super) fn iter(&self) -> impl Iterator<Item = Result<(usize, ChunkBytes)>> + Send + '_ {
        std::iter::from_fn(move || match &self.source {
            ChunkSource::Read(reader) => {
                let spare = self.spare.lock().expect("spare buffers").pop().unwrap_or_default();
                let next = reader.lock().expect("chunk reader").next(spare)?;
                Some(next.map(|(index, bytes)| (index, ChunkBytes::Read(bytes))).with_context(|| format!("{}: read error", self.display)))
            }
            ChunkSource::Mapped { map, next, size, .. } => {
                let mut next = next.lock().expect("chunk cutter");
                let (mut start, index) = *next;
                if index == 0 && map.starts_with(BOM) {
                    start = BOM.len();
                }
                if start >= map.len() {
                    return None;
                }
                let end = match start.checked_add(*size).filter(|&e| e < map.len()) {
                    Some(e) => memchr::memchr(b'\n', &map[e..]).map_or(map.len(), |nl| e + nl + 1),
                    None => map.len(),
                };
                *next = (end, index + 1);
                Some(Ok((index, ChunkBytes::Mapped(map.clone(), start..end))))
            }
        })
    }

    /// A chunk ready to decode, whole: a mapped range copied out where the read mode (or its
    /// probe) says copying costs less. Called by the thread that decodes the chunk, so that
    /// the copy does not hold up the cutting of the next one.
    pub(super) fn load(&self, bytes: ChunkBytes) -> Result<ChunkBytes> {
        let (ChunkSource::Mapped { file, mode, .. }, ChunkBytes::Mapped(map, range)) = (&self.source, &bytes) else {
            return Ok(bytes);
        };
        if !mode.copies(map, range.clone()) {
            return Ok(bytes);
        }
        let mut buf = self.spare.lock().expect("spare buffers").pop().unwrap_or_default();
        buf.resize(range.len(), 0);
        let read = file.read_exact_at(&mut buf, range.start as u64).with_context(|| format!("{}: read error", self.display));
        // The pages the probe and the cut touched (where it looked for the last newline).
        release(map, range.clone());
        read.map(|()| ChunkBytes::Read(buf))
    }

    /// Hands a chunk to `each` as newline-aligned windows, in order: a mapped range that the
    /// read mode (or its probe) says to copy is read a window at a time (`copy_windows`);
    /// anything else whole. The chunk is given back after.
    pub(super) fn read_windows(&self, bytes: ChunkBytes, mut each: impl FnMut(&[u8])) -> Result<()> {
        let read = match (&self.source, &bytes) {
            (ChunkSource::Mapped { file, mode, window, .. }, ChunkBytes::Mapped(map, range)) if mode.copies(map, range.clone()) => {
                self.copy_windows(file, *window, range.clone(), &mut each)
            }
            _ => {
                each(&bytes);
                Ok(())
            }
        };
        // A mapped range's pages the probe and the cut touched leave the resident set.
        self.give_back(bytes);
        read
    }

    /// Reads `range` of `file` `window` bytes at a time into one small buffer that stays in
    /// the core's cache, handing `each` the whole lines so far; the line cut at a window's end
    /// is carried to the next.
    fn copy_windows(&self, file: &File, window: usize, range: Range<usize>, each: &mut impl FnMut(&[u8])) -> Result<()> {
        let mut buf = self.spare.lock().expect("spare buffers").pop().unwrap_or_default();
        let (mut carry, mut offset) = (0, range.start);
        let read = loop {
            let want = window.min(range.end - offset);
            if buf.len() < carry + want {
                buf.resize(carry + want, 0);
            }
            if let Err(e) = file.read_exact_at(&mut buf[carry..carry + want], offset as u64) {
                break Err(e);
            }
            offset += want;
            let filled = carry + want;
            let cut = if offset == range.end { filled } else { memchr::memrchr(b'\n', &buf[..filled]).map_or(0, |nl| nl + 1) };
            if cut > 0 {
                each(&buf[..cut]);
            }
            buf.copy_within(cut..filled, 0);
            carry = filled - cut;
            if offset == range.end {
                break Ok(());
            }
        };
        self.spare.lock().expect("spare buffers").push(buf);
        read.with_context(|| format!("{}: read error", self.display))
    }

    /// Takes back a decoded chunk: a buffer for reuse; a mapped range leaves the resident set
    /// (its pages stay in the page cache), which would otherwise grow to the file's size.
    pub(super) fn give_back(&self, bytes: ChunkBytes) {
        match bytes {
            ChunkBytes::Read(buf) => self.spare.lock().expect("spare buffers").push(buf),
            ChunkBytes::Mapped(map, range) => release(&map, range),
        }
    }
}

/// Whether copying a chunk of a mapped file out costs less than reading it in place, told by
/// the page faults it takes to touch 256 KiB in the chunk's middle.
///
/// A page cache that holds the file in small folios, as `cp` and writes of a few KiB leave
/// it, maps 16 pages a fault: the kernel's time for those faults and the TLB misses of 4 KiB
/// pages cost more than `pread`'s copy (rank of 3.9 GB: 0.69-0.75 s against 0.66 s). A file
/// read from disk or written in large blocks is held in large folios, mapped 0.5-2 MiB a
/// fault: then mapping wins (0.54 s against 0.67 s). A file can hold both (its first tens of
/// MiB read from disk are in small folios while readahead's window grows, and pages evicted
/// and read again come back in small ones), so each chunk is asked.
fn copying_beats_mapping(map: &Mmap, chunk: Range<usize>) -> bool {
    if chunk.len() < PROBE_MIN_CHUNK {
        return false;
    }
    let start = (chunk.start + chunk.len() / 2) & !(PAGE - 1);
    let before = thread_page_faults();
    for page in map[start..start + PROBE_BYTES].chunks(PAGE) {
        std::hint::black_box(page[0]);
    }
    let faults = thread_page_faults().saturating_sub(before);
    faults.saturating_mul(BYTES_PER_LARGE_FAULT) > PROBE_BYTES as u64
}

const PAGE: usize = 4096;

/// How much of a chunk is touched to tell how its pages map: four faults in small folios.
const PROBE_BYTES: usize = 256 << 10;

/// The smallest chunk worth probing (a file's last one may be small): a smaller one is read
/// in place, where either way costs little.
const PROBE_MIN_CHUNK: usize = 1 << 20;

/// Fewer bytes than this mapped a fault, on average, means small folios (64 KiB a fault with
/// the kernel's default fault-around).
const BYTES_PER_LARGE_FAULT: u64 = 128 << 10;

/// Page faults this thread has taken so far (0 where the system does not say).
fn thread_page_faults() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getrusage only writes the struct it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0 {
            return (usage.ru_minflt + usage.ru_majflt) as u64;
        }
    }
    0
}

/// A UTF-8 byte-order mark: not part of the first record.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl ChunkReader {
    fn next(&mut self, buf: Vec<u8>) -> Option<io::Result<(usize, Vec<u8>)>> {
        let mut buf = match self.blocks.next_into(buf)? {
            Ok(buf) => buf,
            Err(e) => return Some(Err(e)),
        };
        let index = self.index;
        self.index += 1;
        if index == 0 && buf.starts_with(BOM) {
            buf.drain(..BOM.len());
        }
        Some(Ok((index, buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> FieldTree {
        FieldTree::flat(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>())
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

    /// A chunk whose lines are read raw (by the shape of the lines before) and in full, in
    /// turn: every line counted at its number, blank lines and `\r\n` cut as the line cutter
    /// cuts them, bad lines named, and the rows those of a line-by-line serde_json reading (a
    /// line with invalid UTF-8 in a field the profile does not read is accepted, its record
    /// kept byte for byte; serde_json reads it with the bad byte replaced).
    #[test]
    fn a_chunk_decodes_alike_whether_its_lines_are_read_raw_or_in_full() {
        let layout = crate::source::row::layout::Layout::new(&crate::profile::Profile::load("vision").unwrap());
        let rows = Rows { layout: &layout, window: crate::source::input::Window { since: None, until: None }, partition: &[], path: "", aligned: false };
        let line = |id: usize, store: &str, reason: &str, attempts: &str| {
            format!(r#"{{"capture_id":"cap-{id}","store_id":"{store}","stage":"inference","reject_reason":"{reason}","registry_revision":"det-v8.0","capture_timestamp":"2026-10-21T11:29:24Z","attempts":{attempts}}}"#).into_bytes()
        };
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for i in 0..60 {
            let mut l = match i % 12 {
                1 => line(i, "zürich", "timeout", "1"),
                2 => line(i, "store", r#"time\"out"#, "2"),
                3 => line(i, "store", "zü", "-0"),
                4 => line(i, "st~ore", "timeout", "1").into_iter().map(|b| if b == b'~' { 0xff } else { b }).collect(),
                5 => b"   ".to_vec(),
                6 => [line(i, "store", "timeout", "3"), b"\r".to_vec()].concat(),
                7 => [line(i, "store", "timeout", "3"), b" ".to_vec()].concat(),
                8 => line(i, "store", "timeout", "3")[..40].to_vec(),
                9 => line(i, "store", "timeout", "03"),
                10 => line(i, "store\u{1}", "timeout", "4"),
                _ => line(i, "store", "timeout", "5"),
            };
            if i == 59 {
                l = line(i, "last", "timeout", "1");
            }
            lines.push(l);
        }
        let chunk = lines.join(&b'\n');
        let mut got = Vec::new();
        let mut decoder = LineDecoder::new(&rows);
        decoder.decode(&chunk, &mut |row: FullRow| {
            let text = match row.record {
                Record::Text(text) => text.as_bytes().to_vec(),
                Record::Bytes(bytes) => bytes.to_vec(),
                _ => unreachable!(),
            };
            got.push((row.facts.id.into_owned(), row.facts.attempts, text));
        });
        let tally = decoder.tally;
        let (mut want, mut bad) = (Vec::new(), Vec::new());
        for (n, l) in chunk.split(|&b| b == b'\n').enumerate() {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            if l.trim_ascii().is_empty() {
                continue;
            }
            match serde_json::from_str::<serde_json::Value>(&String::from_utf8_lossy(l)) {
                Ok(v) => want.push((v["capture_id"].as_str().unwrap().to_string(), v["attempts"].as_f64().unwrap() as i64, l.trim_ascii().to_vec())),
                Err(_) => bad.push(n as u64 + 1),
            }
        }
        assert_eq!(tally.lines, 60);
        assert_eq!(tally.rejects.iter().map(|r| r.0).collect::<Vec<_>>(), bad);
        assert_eq!(got, want);
        assert_eq!((tally.accepted, tally.rejected), (want.len() as u64, bad.len() as u64));
        assert!(want.len() > 30 && bad.len() > 10);
        assert!(got.iter().any(|(_, _, text)| std::str::from_utf8(text).is_err()), "a line with an invalid byte was accepted");
    }

    /// Spring's binary partition and offset, read only through `int_be`, are read raw as their
    /// integers: every row's id is what the bytes make as big-endian integers (worked out here
    /// from `i64::from_be_bytes`), lines read raw and in full alike; a value of no bytes or of
    /// nine falls through to the record's own partition and offset, as the profile says.
    #[test]
    fn binary_ids_read_raw_are_the_integers_their_bytes_make() {
        let layout = crate::source::row::layout::Layout::new(&crate::profile::Profile::load("spring-kafka").unwrap());
        let rows = Rows { layout: &layout, window: crate::source::input::Window { since: None, until: None }, partition: &[], path: "", aligned: false };
        let kcat = |bytes: &[u8]| {
            let mut out = Vec::new();
            for &b in bytes {
                match b {
                    b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
                    0..=0x1f => out.extend_from_slice(format!("\\u{b:04X}").as_bytes()),
                    _ => out.push(b),
                }
            }
            out
        };
        let int_be = |b: &[u8]| {
            (1..=8).contains(&b.len()).then(|| {
                let mut word = if b[0] >= 0x80 { [0xff; 8] } else { [0; 8] };
                word[8 - b.len()..].copy_from_slice(b);
                i64::from_be_bytes(word)
            })
        };
        let mut random = crate::testing::random(0x5851_f42d_4c95_7f2d);
        let mut bytes = |len_mod: u64| -> Vec<u8> {
            let len = (random() % len_mod) as usize;
            (0..len).map(|_| if random() % 3 == 0 { 0 } else { random() as u8 }).collect()
        };
        let (mut chunk, mut want) = (Vec::new(), Vec::new());
        for i in 0..400u64 {
            // Mostly 4 and 8 bytes, as Spring writes them; now and then any length up to 9.
            let (partition, offset) = if i % 10 == 9 { (bytes(10), bytes(10)) } else { (bytes(5).into_iter().chain([0; 4]).take(4).collect(), bytes(9).into_iter().chain([0; 8]).take(8).collect()) };
            let line = [
                format!(r#"{{"topic":"orders-dlt","partition":{},"offset":{},"tstype":"create","ts":1795849200000,"broker":1,"headers":["kafka_dlt-original-topic","orders","kafka_dlt-original-partition",""#, i % 3, 1000 + i).into_bytes(),
                kcat(&partition),
                br#"","kafka_dlt-original-offset",""#.to_vec(),
                kcat(&offset),
                br#"","kafka_dlt-exception-fqcn","x.Boom","kafka_dlt-exception-stacktrace","x.Boom: no\n\tat a.B.c(B.java:1)\n"],"key":"k","payload":"v"}"#.to_vec(),
            ]
            .concat();
            chunk.extend_from_slice(&line);
            chunk.push(b'\n');
            let p = int_be(&partition).unwrap_or((i % 3) as i64);
            let o = int_be(&offset).unwrap_or((1000 + i) as i64);
            want.push(format!("orders/{p}/{o}"));
        }
        let mut got = Vec::new();
        let mut decoder = LineDecoder::new(&rows);
        decoder.decode(&chunk, &mut |row: FullRow| got.push(row.facts.id.into_owned()));
        assert_eq!(decoder.tally.rejects, []);
        assert_eq!(got, want);
        // The offset's leaf is one a raw read takes as its integer.
        let offset = layout.columns.iter().position(|c| c.contains("original-offset")).unwrap();
        assert_eq!(layout.tree().raw_string(offset), crate::source::row::tree::RawString::IntBe);
    }

    /// A chunk copied out a window at a time (windows shorter than a line, about two lines,
    /// longer than the chunk) decodes as the chunk read in place: the same rows, the same lines
    /// counted and the same rejects named at the same numbers, chunk by chunk.
    #[test]
    fn a_chunk_read_in_windows_decodes_as_the_whole_chunk() {
        let layout = crate::source::row::layout::Layout::new(&crate::profile::Profile::load("vision").unwrap());
        let rows = Rows { layout: &layout, window: crate::source::input::Window { since: None, until: None }, partition: &[], path: "", aligned: false };
        let mut text = BOM.to_vec();
        for i in 0..3000 {
            let store = if i % 50 == 33 { "s".repeat(3000) } else { format!("store-{}", i % 7) };
            let line = format!(r#"{{"capture_id":"cap-{i}","store_id":"{store}","stage":"inference","reject_reason":"r{}","registry_revision":"det-v8.0","capture_timestamp":"2026-10-21T11:29:24Z","attempts":{}}}"#, i % 3, i % 4);
            let line = match i % 50 {
                7 => "  ".to_string(),
                13 => line[..70].to_string(),
                21 => format!("{line}\r"),
                29 => line.replace("inference", "inf\\u00e9rence"),
                _ => line,
            };
            text.extend(line.bytes());
            text.push(b'\n');
        }
        text.extend(br#"{"capture_id":"last"}"#);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &text).unwrap();
        let decoded = |window: usize, mode: ReadMode| {
            let chunks = Chunks::mapped(crate::storage::map_file(file.path()).unwrap().unwrap(), 4096, window, mode, "t");
            let mut out = Vec::new();
            for piece in chunks.iter() {
                let (index, bytes) = piece.unwrap();
                let mut decoder = LineDecoder::new(&rows);
                let mut got = Vec::new();
                chunks
                    .read_windows(bytes, |window| {
                        decoder.decode(window, &mut |row: FullRow| {
                            let Record::Text(text) = row.record else { unreachable!() };
                            got.push((row.facts.id.into_owned(), text.to_string()));
                        })
                    })
                    .unwrap();
                let tally = decoder.tally;
                out.push((index, tally.lines, tally.accepted, tally.rejects, got));
            }
            out
        };
        let whole = decoded(64, ReadMode::Map);
        assert!(whole.len() > 100);
        assert_eq!(whole.iter().map(|c| c.1).sum::<u64>(), 3001);
        assert_eq!(whole.iter().map(|c| c.2).sum::<u64>(), 3000 - 60 - 60);
        assert_eq!(whole.iter().map(|c| c.3.len()).sum::<usize>(), 61);
        for window in [64, 600, 1 << 20] {
            assert!(decoded(window, ReadMode::Copy) == whole, "windows of {window} bytes");
        }
    }

    #[test]
    fn chunks_end_on_newlines_and_cover_every_byte() {
        let text: Vec<u8> = (0..200_000).flat_map(|i| format!("{{\"n\":{i}}}\n").into_bytes()).collect();
        let chunks = Chunks::new(Box::new(io::Cursor::new(text.clone())), 1000, "t");
        let parts: Vec<Vec<u8>> = chunks
            .iter()
            .map(|c| c.unwrap().1.to_vec())
            .collect();
        assert!(parts.len() > 100);
        assert!(parts.iter().all(|p| p.ends_with(b"\n")));
        assert_eq!(parts.concat(), text);
    }

    #[test]
    fn a_mapped_file_is_cut_as_a_read_one_and_given_back_chunks_stay_readable() {
        // A byte-order mark, a line longer than a chunk, and no newline at the end.
        let mut text: Vec<u8> = b"\xEF\xBB\xBF".to_vec();
        text.extend((0..20_000).flat_map(|i| format!("{{\"n\":{i}}}\n").into_bytes()));
        text.extend(format!("{{\"long\":\"{}\"}}\n", "x".repeat(5000)).into_bytes());
        text.extend(b"{\"last\":1}");
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &text).unwrap();
        // In place and copied out: the same chunks.
        let cut = |mode: ReadMode| {
            let mapped = crate::storage::map_file(file.path()).unwrap().unwrap();
            let chunks = Chunks::mapped(mapped, 1000, 64, mode, "t");
            let mut parts = Vec::new();
            for (n, piece) in chunks.iter().enumerate() {
                let (index, bytes) = piece.unwrap();
                assert_eq!(index, n);
                let bytes = chunks.load(bytes).unwrap();
                assert_eq!(matches!(bytes, ChunkBytes::Read(_)), mode == ReadMode::Copy);
                parts.push(bytes.to_vec());
                // Given back before the next is cut: its pages leave (or its buffer is reused),
                // the next chunk's bytes stay.
                chunks.give_back(bytes);
            }
            parts
        };
        let parts = cut(ReadMode::Map);
        assert_eq!(cut(ReadMode::Copy), parts);
        assert_eq!(cut(ReadMode::Probe), parts);
        assert!(parts.len() > 100);
        let (last, whole) = parts.split_last().unwrap();
        assert!(whole.iter().all(|p| p.ends_with(b"\n")));
        assert_eq!(last.as_slice(), b"{\"last\":1}");
        assert!(parts.iter().any(|p| p.len() > 5000));
        assert_eq!(parts.concat(), text[3..]);
        let read: Vec<Vec<u8>> = Chunks::new(Box::new(io::Cursor::new(text.clone())), 1000, "t")
            .iter()
            .map(|c| c.unwrap().1.to_vec())
            .collect();
        assert_eq!(read.concat(), parts.concat());
    }
}
