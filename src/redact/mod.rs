//! `redact`: dumps a postmortem can share. Every personal or secret value becomes a keyed
//! token, the layout and the signatures stay, and the output says it is redacted so no replay
//! is planned from it.

pub mod coarsen;
pub mod detect;
mod parquet;
pub mod record;
pub mod rules;
mod signs;
pub mod token;

use std::io::{BufWriter, Read, Write};

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::lines::LineBlocks;
use crate::profile::Profile;
use crate::raw_json;
use crate::source::{decompressed, is_document, Compression, Format, Input, WRAPPERS};
use crate::storage::{Location, Output, Storage};
pub use record::Redactor;
pub use token::Keyed;

/// The member every redacted JSON record carries, and the key of a redacted Parquet file's
/// metadata: its value names the key (a digest of it), never the key itself.
pub const MARKER: &str = "dlqf_redacted";

/// What a redacted dump says of itself: the key's id.
pub fn key_id(keyed: &Keyed) -> String {
    keyed.token("key", b"dlqf redact key id", token::Shape::Value)
}

/// What one file gave.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FileReport {
    pub records: u64,
    /// Lines that are not JSON: written as a stub that is not JSON either (their text may hold
    /// anything), each named `file:line: reason`.
    pub malformed: Vec<String>,
}

/// Redacts one input (with its `.keys` and `.headers` files, for an S3-sink chunk) into the
/// files `destination_of` names, each in its format and compression.
pub fn redact_input(storage: &Storage, input: &Input, destination_of: &dyn Fn(&Location) -> Location, profile: &Profile, keyed: &Keyed, coarsen_hours: Option<u32>) -> Result<FileReport> {
    let rules = rules::from_profile(profile);
    let coarsen = coarsen_hours.map(|hours| coarsen::Coarsen::new(hours, profile.time_format));
    let redactor = Redactor::new(&rules, keyed.clone()).with_coarsen(coarsen).with_card_last_four(profile.keep_card_last_four);
    let marker = key_id(keyed);
    let Some(siblings) = &input.aligned else {
        return redact_file(storage, &input.display, &input.location, input.format, &destination_of(&input.location), &redactor, &marker);
    };
    // A chunk's files hold one record's value, key and headers a line (or row) each.
    let mut report = redact_file(storage, &input.display, &input.location, input.format, &destination_of(&input.location), &redactor.below("value"), &marker)?;
    let envelope = rules::headers_envelope(&rules);
    for (sibling, part_redactor) in [(&siblings.keys, redactor.below("key")), (&siblings.headers, redactor.for_headers(&envelope))] {
        let Some(sibling) = sibling else { continue };
        let format = crate::source::format_from_name(&sibling.display).unwrap_or(input.format);
        let part = redact_file(storage, &sibling.display, &sibling.location, format, &destination_of(&sibling.location), &part_redactor, &marker)?;
        report.malformed.extend(part.malformed);
    }
    Ok(report)
}

/// Redacts one file into `destination`, in its format and compression.
fn redact_file(storage: &Storage, display: &str, location: &Location, format: Format, destination: &Location, redactor: &Redactor, marker: &str) -> Result<FileReport> {
    match format {
        Format::Parquet => parquet::redact(storage, display, location, destination, redactor, marker),
        Format::Jsonl(compression) => {
            // Written compressed as it was read, whatever its name says.
            let (reader, compression) = decompressed(storage.open(location)?, compression, display)?;
            let mut output = Output::create(storage, destination)?;
            let report = {
                let writer = compressed(output.file(), compression)?;
                let mut writer = BufWriter::with_capacity(1 << 20, writer);
                let report = redact_lines(reader, &mut writer, redactor, marker, display)?;
                writer.flush().with_context(|| format!("{destination}: write failed"))?;
                let inner = writer.into_inner().map_err(|e| e.into_error()).with_context(|| format!("{destination}: write failed"))?;
                inner.finish().with_context(|| format!("{destination}: write failed"))?;
                report
            };
            output.commit()?;
            Ok(report)
        }
        Format::State => anyhow::bail!("{display}: a partial state holds counts, not records: nothing to redact"),
    }
}

/// A writer compressing as the input was (gzip and zstd at their default levels, which
/// depend on nothing but the bytes: the output stays byte for byte the same).
enum Compressed<W: Write> {
    Plain(W),
    Gzip(flate2::write::GzEncoder<W>),
    Zstd(zstd::Encoder<'static, W>),
}

impl<W: Write> Compressed<W> {
    fn finish(self) -> std::io::Result<()> {
        match self {
            Compressed::Plain(mut w) => w.flush(),
            Compressed::Gzip(w) => w.finish().map(drop),
            Compressed::Zstd(w) => w.finish().map(drop),
        }
    }
}

impl<W: Write> Write for Compressed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Compressed::Plain(w) => w.write(buf),
            Compressed::Gzip(w) => w.write(buf),
            Compressed::Zstd(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Compressed::Plain(w) => w.flush(),
            Compressed::Gzip(w) => w.flush(),
            Compressed::Zstd(w) => w.flush(),
        }
    }
}

fn compressed<W: Write>(writer: W, compression: Compression) -> Result<Compressed<W>> {
    Ok(match compression {
        Compression::None => Compressed::Plain(writer),
        // No name or time in the header: the same input gives the same bytes.
        Compression::Gzip => Compressed::Gzip(flate2::GzBuilder::new().mtime(0).write(writer, flate2::Compression::default())),
        Compression::Zstd => Compressed::Zstd(zstd::Encoder::new(writer, 3)?),
    })
}

/// The lines of a JSON-lines stream redacted in blocks, each block's lines in parallel, in
/// order; a block is written on a thread of its own while the next is read and redacted. A
/// JSON document (an array, a wrapper object, pretty-printed records) is read whole.
fn redact_lines(reader: Box<dyn Read + Send>, out: &mut (impl Write + Send), redactor: &Redactor, marker: &str, name: &str) -> Result<FileReport> {
    let mut blocks = LineBlocks::new(reader, 8 << 20);
    let mut report = FileReport::default();
    let mut line_no = 0usize;
    let Some(first) = blocks.next_into(Vec::new()) else { return Ok(report) };
    let first = first.with_context(|| format!("{name}: read failed"))?;
    if is_document(&first) {
        let mut whole = first;
        while let Some(rest) = blocks.next_into(Vec::new()) {
            whole.extend_from_slice(&rest.with_context(|| format!("{name}: read failed"))?);
        }
        if let Some((written, records)) = redact_document(&whole, redactor, marker) {
            out.write_all(&written)?;
            report.records = records;
            return Ok(report);
        }
        // Not a sequence of JSON values after all: read as lines, as rank does.
        for chunk in redact_block(&whole, &Redactors::new(redactor), marker, name, &mut line_no, &mut report) {
            out.write_all(&chunk)?;
        }
        return Ok(report);
    }
    std::thread::scope(|scope| -> Result<()> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Vec<u8>>>(2);
        let writer = scope.spawn(move || -> std::io::Result<()> {
            for chunks in rx {
                for chunk in chunks {
                    out.write_all(&chunk)?;
                }
            }
            Ok(())
        });
        let redactors = Redactors::new(redactor);
        let mut block = Some(first);
        let mut spare = Vec::new();
        while let Some(current) = block.take() {
            // The next block is read while this one is redacted.
            let (chunks, next) = rayon::join(|| redact_block(&current, &redactors, marker, name, &mut line_no, &mut report), || blocks.next_into(std::mem::take(&mut spare)));
            if tx.send(chunks).is_err() {
                break; // the writer failed: its error is below
            }
            spare = current;
            block = next.transpose().with_context(|| format!("{name}: read failed"))?;
        }
        drop(tx);
        writer.join().expect("the writer does not panic")?;
        Ok(())
    })?;
    Ok(report)
}

/// Redactors for the threads redacting a file's blocks, each kept from chunk to chunk (with
/// the replacements it remembers and the memory it has grown).
struct Redactors<'a, 'r> {
    first: &'a Redactor<'r>,
    idle: std::sync::Mutex<Vec<Redactor<'r>>>,
}

impl<'a, 'r> Redactors<'a, 'r> {
    fn new(first: &'a Redactor<'r>) -> Self {
        Redactors { first, idle: std::sync::Mutex::new(Vec::new()) }
    }

    fn with<T>(&self, work: impl FnOnce(&mut Redactor<'r>) -> T) -> T {
        let idle = self.idle.lock().expect("no redactor panics").pop();
        let mut redactor = idle.unwrap_or_else(|| self.first.clone());
        let done = work(&mut redactor);
        self.idle.lock().expect("no redactor panics").push(redactor);
        done
    }
}

/// Lines a parallel task redacts: enough to outweigh its cost, few enough that two threads
/// finish a block together.
const CHUNK_LINES: usize = 256;

/// One block of whole lines, each redacted on its own: the redacted chunks, in order.
fn redact_block(block: &[u8], redactors: &Redactors, marker: &str, name: &str, line_no: &mut usize, report: &mut FileReport) -> Vec<Vec<u8>> {
    let mut lines: Vec<&[u8]> = Vec::with_capacity(block.len() / 256);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', block) {
        lines.push(&block[start..=end]);
        start = end + 1;
    }
    if start < block.len() {
        lines.push(&block[start..]);
    }
    let first_line = *line_no + 1;
    *line_no += lines.len();
    let done: Vec<(Vec<u8>, Vec<String>, u64)> = lines
        .par_chunks(CHUNK_LINES)
        .enumerate()
        .map(|(chunk_no, chunk)| {
            redactors.with(|redactor| {
                let mut out = Vec::with_capacity(chunk.iter().map(|l| l.len() + 64).sum());
                let mut malformed = Vec::new();
                let mut records = 0;
                for (i, line) in chunk.iter().enumerate() {
                    let number = first_line + chunk_no * CHUNK_LINES + i;
                    match redact_line(line, redactor, marker, &mut out) {
                        Ok(true) => records += 1,
                        Ok(false) => {}
                        Err(why) => malformed.push(format!("{name}:{number}: {why}")),
                    }
                }
                (out, malformed, records)
            })
        })
        .collect();
    let mut chunks = Vec::with_capacity(done.len());
    for (bytes, malformed, records) in done {
        chunks.push(bytes);
        report.malformed.extend(malformed);
        report.records += records;
    }
    chunks
}

/// One line (with its line end) redacted into `out`. Ok(true): a record; Ok(false): a blank
/// line, kept; Err: not JSON, written as a stub that is not JSON either.
fn redact_line(line: &[u8], redactor: &mut Redactor, marker: &str, out: &mut Vec<u8>) -> Result<bool, String> {
    let (body, end) = match line.strip_suffix(b"\n") {
        Some(body) => match body.strip_suffix(b"\r") {
            Some(body) => (body, &b"\r\n"[..]),
            None => (body, &b"\n"[..]),
        },
        None => (line, &b""[..]),
    };
    if body.trim_ascii().is_empty() {
        out.extend_from_slice(line);
        return Ok(false);
    }
    let start = out.len();
    if let Err(e) = record_with_marker(body.trim_ascii(), redactor, marker, out) {
        // Its text may hold anything: a stub a reader rejects as well, the line's token in it.
        out.truncate(start);
        out.extend_from_slice(b"{\"");
        out.extend_from_slice(MARKER.as_bytes());
        out.extend_from_slice(b"_line\":\"");
        out.extend_from_slice(redactor.text_token(body).as_bytes());
        out.extend_from_slice(b"\"");
        out.extend_from_slice(end);
        return Err(format!("not JSON ({e}); written as a stub that is not JSON either"));
    }
    out.extend_from_slice(end);
    Ok(true)
}

/// Whether a line is one JSON value, as the readers check it (the same scanner): bytes that
/// are not UTF-8 may stand in strings (kcat writes binary values raw).
fn check_json(line: &[u8]) -> Result<(), String> {
    let mut p = crate::json_scan::Parser::over_bytes(line, crate::json_scan::Kernel::detected());
    p.ws();
    p.skip_value(0)?;
    p.ws();
    if p.at_end() {
        Ok(())
    } else {
        Err(p.error("trailing characters"))
    }
}

/// A record redacted, with the marker as its last member when it is an object; Err: it is
/// not one JSON value.
fn record_with_marker(body: &[u8], redactor: &mut Redactor, marker: &str, out: &mut Vec<u8>) -> Result<(), String> {
    let start = out.len();
    redactor.record(body, out)?;
    if out.get(start) == Some(&b'{') && out.last() == Some(&b'}') {
        out.pop();
        if out.len() > start + 1 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(MARKER.as_bytes());
        out.extend_from_slice(b"\":\"");
        out.extend_from_slice(marker.as_bytes());
        out.extend_from_slice(b"\"}");
    }
    Ok(())
}

/// A JSON document's records redacted, in its shape (an array stays an array, on one line;
/// a wrapper object keeps its other members, scrubbed). None: not a sequence of JSON values.
fn redact_document(text: &[u8], redactor: &Redactor, marker: &str) -> Option<(Vec<u8>, u64)> {
    let mut redactor = redactor.clone();
    let mut out = Vec::with_capacity(text.len() + text.len() / 8);
    let mut records = 0u64;
    let mut pos = raw_json::skip_ws(text, if text.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 });
    while pos < text.len() {
        let end = raw_json::value_end(text, pos)?;
        let value = &text[pos..end];
        check_json(value).ok()?;
        match value.first() {
            Some(b'[') => records += records_array(value, &mut redactor, marker, &mut out)?,
            Some(b'{') if raw_json::members(value).any(|(k, v)| WRAPPERS.iter().any(|w| w.as_bytes() == &*k) && v.first() == Some(&b'[')) => {
                out.push(b'{');
                for (i, (written, name, member)) in raw_json::members_as_written(value).enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(written);
                    out.push(b':');
                    if WRAPPERS.iter().any(|w| w.as_bytes() == &*name) && member.first() == Some(&b'[') {
                        records += records_array(member, &mut redactor, marker, &mut out)?;
                    } else {
                        let scrubbed = redactor.text(member);
                        out.extend_from_slice(&scrubbed);
                    }
                }
                out.push(b'}');
            }
            _ => {
                record_with_marker(value, &mut redactor, marker, &mut out).ok()?;
                records += 1;
            }
        }
        out.push(b'\n');
        pos = raw_json::skip_ws(text, end);
    }
    Some((out, records))
}

/// An array of records redacted as an array; how many it held (None: one is not JSON).
fn records_array(array: &[u8], redactor: &mut Redactor, marker: &str, out: &mut Vec<u8>) -> Option<u64> {
    out.push(b'[');
    let mut records = 0;
    for record in raw_json::elements(array) {
        if records > 0 {
            out.push(b',');
        }
        record_with_marker(record, redactor, marker, out).ok()?;
        records += 1;
    }
    out.push(b']');
    Some(records)
}

/// The key id of a dump `redact` wrote, or None: a Parquet file's metadata, or the first
/// record of JSON-lines (or of a JSON document) holding the marker.
pub fn redacted_by(storage: &Storage, input: &Input) -> Result<Option<String>> {
    let siblings = input.aligned.iter().flat_map(|s| [&s.keys, &s.headers]).flatten();
    for sibling in siblings {
        let Some(format) = crate::source::format_from_name(&sibling.display) else { continue };
        let part = Input { display: sibling.display.clone(), location: sibling.location.clone(), format, size: sibling.size, etag: None, aligned: None };
        if let Some(key) = redacted_by(storage, &part)? {
            return Ok(Some(key));
        }
    }
    match input.format {
        Format::Parquet => Ok(crate::source::parquet_footer_value(storage, input, MARKER)),
        Format::Jsonl(compression) => {
            let mut head = Vec::new();
            decompressed(storage.open(&input.location)?, compression, &input.display)?.0.take(1 << 20).read_to_end(&mut head).with_context(|| format!("{}: read failed", input.display))?;
            let start = raw_json::skip_ws(&head, 0);
            let first = match head.get(start) {
                Some(b'[') => raw_json::elements(&head[start..]).next(),
                Some(b'{') => raw_json::value_end(&head, start).map(|end| &head[start..end]),
                _ => None,
            };
            let marked = first.and_then(|record| raw_json::lookup(record, &[crate::path::Step::Key(MARKER.into())]));
            Ok(marked.and_then(raw_json::string_bytes).map(|id| String::from_utf8_lossy(&id).into_owned()))
        }
        Format::State => Ok(None),
    }
}
