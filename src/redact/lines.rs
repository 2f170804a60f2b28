//! A JSON-lines file redacted a block at a time, each block's lines in parallel tasks and
//! written in order on a thread of its own: the redaction keeps both cores busy while the
//! input is read (or lies mapped) and the output is written.

use std::io::{Read, Write};
use std::sync::Mutex;

use anyhow::{Context, Result};
use rayon::prelude::*;

use super::{record_with_marker, redact_document, FileReport, Redactor, MARKER};
use crate::lines::LineBlocks;
use crate::source::is_document;
use crate::storage::release;

/// The bytes of lines a block holds: the output of one is in memory at a time per stage.
const BLOCK_BYTES: usize = 8 << 20;

/// The bytes of lines one parallel task redacts (about 300 envelope records): enough to
/// outweigh a task's cost, few enough that two threads finish a block together.
const TASK_BYTES: usize = 256 << 10;

/// Where the lines come from: a local file's mapping, read where it lies, or a stream read a
/// block at a time (the next block read while this one is redacted).
pub(super) enum Lines<'m> {
    Mapped(&'m memmap2::Mmap),
    Read(Box<dyn Read + Send>),
}

/// The lines redacted into `out`, in order; a JSON document (an array, a wrapper object,
/// pretty-printed records) is read whole.
pub(super) fn redact_lines(lines: Lines, out: &mut (impl Write + Send), redactor: &Redactor, marker: &str, name: &str) -> Result<FileReport> {
    let mut report = FileReport::default();
    let (mut blocks, first) = match lines {
        Lines::Mapped(map) => {
            if is_document(map) {
                return redact_whole(map, out, redactor, marker, name);
            }
            (None, Block::Mapped { map, start: 0 })
        }
        Lines::Read(reader) => {
            let mut blocks = LineBlocks::new(reader, BLOCK_BYTES);
            let Some(first) = blocks.next_into(Vec::new()) else { return Ok(report) };
            let first = first.with_context(|| format!("{name}: read failed"))?;
            if is_document(&first) {
                let mut whole = first;
                while let Some(rest) = blocks.next_into(Vec::new()) {
                    whole.extend_from_slice(&rest.with_context(|| format!("{name}: read failed"))?);
                }
                return redact_whole(&whole, out, redactor, marker, name);
            }
            (Some(blocks), Block::Owned(first))
        }
    };
    let spares = Mutex::new(Vec::new());
    std::thread::scope(|scope| -> Result<()> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Vec<u8>>>(2);
        let spares = &spares;
        let writer = scope.spawn(move || -> std::io::Result<()> {
            for chunks in rx {
                for mut chunk in chunks {
                    out.write_all(&chunk)?;
                    // Its memory goes to a task of a later block.
                    chunk.clear();
                    spares.lock().expect("no task panics").push(chunk);
                }
            }
            Ok(())
        });
        let redactors = Redactors::new(redactor);
        let mut tasks = Tasks { redactors: &redactors, spares, marker, name, line_no: 0 };
        let mut block = Some(first);
        let mut spare = Vec::new();
        while let Some(current) = block.take() {
            let (chunks, next) = match (&current, &mut blocks) {
                (&Block::Mapped { map, start }, _) => {
                    let end = start + cut(&map[start..], BLOCK_BYTES);
                    let chunks = tasks.redact(&map[start..end], &mut report);
                    // Its pages leave the resident set, as a read block's memory is reused.
                    release(map, start..end);
                    (chunks, (end < map.len()).then_some(Ok(Block::Mapped { map, start: end })))
                }
                // The next block is read while this one is redacted.
                (Block::Owned(bytes), Some(blocks)) => {
                    let (chunks, next) = rayon::join(|| tasks.redact(bytes, &mut report), || blocks.next_into(std::mem::take(&mut spare)));
                    (chunks, next.map(|n| n.map(Block::Owned)))
                }
                (Block::Owned(bytes), None) => (tasks.redact(bytes, &mut report), None),
            };
            if tx.send(chunks).is_err() {
                break; // the writer failed: its error is below
            }
            if let Block::Owned(bytes) = current {
                spare = bytes;
            }
            block = next.transpose().with_context(|| format!("{name}: read failed"))?;
        }
        drop(tx);
        writer.join().expect("the writer does not panic")?;
        Ok(())
    })?;
    Ok(report)
}

/// A block of whole lines: the mapping's lines from `start` (as many as `cut` gives), or
/// lines read into memory.
enum Block<'m> {
    Mapped { map: &'m memmap2::Mmap, start: usize },
    Owned(Vec<u8>),
}

/// A JSON document's records redacted in its shape, or (not a sequence of JSON values after
/// all) its lines, as rank reads it.
fn redact_whole(text: &[u8], out: &mut impl Write, redactor: &Redactor, marker: &str, name: &str) -> Result<FileReport> {
    let mut report = FileReport::default();
    if let Some((written, records)) = redact_document(text, redactor, marker) {
        out.write_all(&written)?;
        report.records = records;
        return Ok(report);
    }
    let redactors = Redactors::new(redactor);
    let spares = Mutex::new(Vec::new());
    let mut tasks = Tasks { redactors: &redactors, spares: &spares, marker, name, line_no: 0 };
    for chunk in tasks.redact(text, &mut report) {
        out.write_all(&chunk)?;
    }
    Ok(report)
}

/// Where the first line ending at or after `at` bytes of `text` ends (all of it when none does).
fn cut(text: &[u8], at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |nl| at + nl + 1)
}

/// Redactors for the threads redacting a file's blocks, each kept from task to task (with
/// the replacements it remembers and the memory it has grown).
struct Redactors<'a, 'r> {
    first: &'a Redactor<'r>,
    idle: Mutex<Vec<Redactor<'r>>>,
}

impl<'a, 'r> Redactors<'a, 'r> {
    fn new(first: &'a Redactor<'r>) -> Self {
        Redactors { first, idle: Mutex::new(Vec::new()) }
    }

    fn with<T>(&self, work: impl FnOnce(&mut Redactor<'r>) -> T) -> T {
        let idle = self.idle.lock().expect("no redactor panics").pop();
        let mut redactor = idle.unwrap_or_else(|| self.first.clone());
        let done = work(&mut redactor);
        self.idle.lock().expect("no redactor panics").push(redactor);
        done
    }
}

/// What a block's tasks share: the redactors, the written chunks' memory for reuse, and the
/// number of the lines before the block.
struct Tasks<'a, 'r> {
    redactors: &'a Redactors<'a, 'r>,
    spares: &'a Mutex<Vec<Vec<u8>>>,
    marker: &'a str,
    name: &'a str,
    line_no: usize,
}

impl Tasks<'_, '_> {
    /// One block of whole lines, each redacted on its own: the redacted chunks, in order. A
    /// task cuts its own lines; a line that is not JSON is numbered once the tasks before it
    /// have counted theirs.
    fn redact(&mut self, block: &[u8], report: &mut FileReport) -> Vec<Vec<u8>> {
        let mut ranges = Vec::with_capacity(block.len() / TASK_BYTES + 1);
        let mut start = 0;
        while start < block.len() {
            let end = cut(block, start + TASK_BYTES);
            ranges.push(start..end);
            start = end;
        }
        let done: Vec<(Vec<u8>, Vec<(usize, String)>, u64, usize)> = ranges
            .into_par_iter()
            .map(|range| {
                let task = &block[range];
                let mut out = self.spares.lock().expect("no task panics").pop().unwrap_or_default();
                out.reserve(task.len() + task.len() / 8);
                self.redactors.with(|redactor| {
                    let (mut malformed, mut records, mut lines) = (Vec::new(), 0, 0);
                    let mut at = 0;
                    while at < task.len() {
                        let end = memchr::memchr(b'\n', &task[at..]).map_or(task.len(), |nl| at + nl + 1);
                        match redact_line(&task[at..end], redactor, self.marker, &mut out) {
                            Ok(true) => records += 1,
                            Ok(false) => {}
                            Err(why) => malformed.push((lines, why)),
                        }
                        lines += 1;
                        at = end;
                    }
                    (out, malformed, records, lines)
                })
            })
            .collect();
        let mut chunks = Vec::with_capacity(done.len());
        for (bytes, malformed, records, lines) in done {
            chunks.push(bytes);
            report.malformed.extend(malformed.into_iter().map(|(line, why)| format!("{}:{}: {why}", self.name, self.line_no + line + 1)));
            report.records += records;
            self.line_no += lines;
        }
        chunks
    }
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
