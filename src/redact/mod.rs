//! `redact`: dumps a postmortem can share. Every personal or secret value becomes a keyed
//! token, the layout and the signatures stay, and the output says it is redacted so no replay
//! is planned from it.

pub mod coarsen;
pub mod detect;
mod lines;
mod parquet;
pub mod record;
pub mod rules;
mod signs;
pub mod token;

use std::io::{BufWriter, Read, Write};

use anyhow::{Context, Result};

use crate::profile::Profile;
use crate::raw_json;
use crate::source::{decompressed, sniffed, Compression, Format, Input, WRAPPERS};
use crate::storage::{DiskWriter, Location, Output, Storage};
use lines::{redact_lines, Lines, Names};
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
            // A local file that is not compressed is read where it lies; any other is read as
            // a stream, decompressed. Written compressed as it was read, whatever its name says.
            let mapped = match compression {
                Compression::None => storage.map(location)?.filter(|m| sniffed(Compression::None, &m.map) == Compression::None),
                _ => None,
            };
            let (lines, compression) = match &mapped {
                Some(m) => (Lines::Mapped(&m.map), Compression::None),
                None => {
                    let (reader, compression) = decompressed(storage.open(location)?, compression, display)?;
                    (Lines::Read(reader), compression)
                }
            };
            let mut output = Output::create(storage, destination)?;
            let failed = || format!("{destination}: write failed");
            let report = {
                // Straight to the disk: a dump's size copied into the page cache costs the
                // kernel a third of what the redaction does, and its writeback takes the cores.
                let disk = DiskWriter::new(output.file()).with_context(failed)?;
                // Small: a block's chunks are written past it, not copied into it first.
                let mut writer = BufWriter::with_capacity(64 << 10, compressed(disk, compression)?);
                let output = destination.to_string();
                let report = redact_lines(lines, &mut writer, redactor, marker, Names { input: display, output: &output })?;
                writer.flush().with_context(failed)?;
                let inner = writer.into_inner().map_err(|e| e.into_error()).with_context(failed)?;
                inner.finish().with_context(failed)?.finish().with_context(failed)?;
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
    /// The stream ended; the writer under it.
    fn finish(self) -> std::io::Result<W> {
        match self {
            Compressed::Plain(mut w) => w.flush().map(|()| w),
            Compressed::Gzip(w) => w.finish(),
            Compressed::Zstd(w) => w.finish(),
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
