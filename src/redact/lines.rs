//! A JSON-lines file redacted in tasks of a few hundred lines, as many in flight as the pool
//! keeps busy, written in order on a thread of its own: no core waits for a block's last task,
//! and the input is read (or lies mapped) while the output is written.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use super::{record_with_marker, redact_document, FileReport, Redactor, MARKER};
use crate::lines::LineBlocks;
use crate::source::is_document;
use crate::storage::release;

/// The bytes of lines read at a time from a stream, and of a mapping released at a time.
const BLOCK_BYTES: usize = 8 << 20;

/// The bytes of lines one parallel task redacts (about 300 envelope records): enough to
/// outweigh a task's cost, few enough that the last ones end together.
const TASK_BYTES: usize = 256 << 10;

/// The tasks started and not yet written (16 MiB of lines): what bounds the memory.
const IN_FLIGHT: usize = 64;

/// Where the lines come from: a local file's mapping, read where it lies, or a stream read a
/// block at a time (the next block read while the tasks of this one run).
pub(super) enum Lines<'m> {
    Mapped(&'m memmap2::Mmap),
    Read(Box<dyn Read + Send>),
}

/// The names errors give: the input's (and its line's), and the output's.
#[derive(Clone, Copy)]
pub(super) struct Names<'a> {
    pub input: &'a str,
    pub output: &'a str,
}

/// The lines redacted into `out`, in order; a JSON document (an array, a wrapper object,
/// pretty-printed records) is read whole.
pub(super) fn redact_lines(lines: Lines, out: &mut (impl Write + Send), redactor: &Redactor, marker: &str, names: Names) -> Result<FileReport> {
    let name = names.input;
    match lines {
        Lines::Mapped(map) => {
            if is_document(map) {
                return redact_whole(map, out, redactor, marker, names);
            }
            let pipeline = Pipeline { redactor, marker, names, mapped: Some(map) };
            pipeline.run(std::iter::once(Ok(Block::Borrowed(&map[..]))), out)
        }
        Lines::Read(reader) => {
            let mut blocks = LineBlocks::new(reader, BLOCK_BYTES);
            let Some(first) = blocks.next_into(Vec::new()) else { return Ok(FileReport::default()) };
            let first = first.with_context(|| format!("{name}: read failed"))?;
            if is_document(&first) {
                let mut whole = first;
                while let Some(rest) = blocks.next_into(Vec::new()) {
                    whole.extend_from_slice(&rest.with_context(|| format!("{name}: read failed"))?);
                }
                return redact_whole(&whole, out, redactor, marker, names);
            }
            let rest = std::iter::from_fn(move || blocks.next_into(Vec::new()));
            let blocks = std::iter::once(Ok(first)).chain(rest).map(|block| block.map(|b| Block::Owned(Arc::new(b))));
            Pipeline { redactor, marker, names, mapped: None }.run(blocks, out)
        }
    }
}

/// A JSON document's records redacted in its shape, or (not a sequence of JSON values after
/// all) its lines, as rank reads it.
fn redact_whole(text: &[u8], out: &mut (impl Write + Send), redactor: &Redactor, marker: &str, names: Names) -> Result<FileReport> {
    if let Some((written, records)) = redact_document(text, redactor, marker) {
        out.write_all(&written).with_context(|| format!("{}: write failed", names.output))?;
        return Ok(FileReport { records, ..FileReport::default() });
    }
    Pipeline { redactor, marker, names, mapped: None }.run(std::iter::once(Ok(Block::Borrowed(text))), out)
}

/// Whole lines: the mapping's (or a document's) in place, or a block read from a stream, which
/// its tasks share.
#[derive(Clone)]
enum Block<'m> {
    Borrowed(&'m [u8]),
    Owned(Arc<Vec<u8>>),
}

impl Block<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Block::Borrowed(bytes) => bytes,
            Block::Owned(bytes) => bytes,
        }
    }
}

/// Where the first line ending at or after `at` bytes of `text` ends (all of it when none does).
fn cut(text: &[u8], at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |nl| at + nl + 1)
}

/// What one task did: its redacted lines, the lines that were not JSON (numbered within the
/// task), its records and lines, and the bytes of input it read.
struct Done {
    out: Vec<u8>,
    malformed: Vec<(usize, String)>,
    records: u64,
    lines: usize,
    read: usize,
}

/// One file's redaction: its blocks cut into tasks the pool runs in any order, and a writer
/// that puts their output back in order.
struct Pipeline<'a, 'r, 'm> {
    redactor: &'a Redactor<'r>,
    marker: &'a str,
    names: Names<'a>,
    /// A local file's mapping: its pages leave the resident set once their lines are written.
    mapped: Option<&'m memmap2::Mmap>,
}

impl Pipeline<'_, '_, '_> {
    fn run<'m>(&self, blocks: impl Iterator<Item = std::io::Result<Block<'m>>>, out: &mut (impl Write + Send)) -> Result<FileReport> {
        let redactors = Redactors::new(self.redactor);
        let spares = Mutex::new(Vec::new());
        let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, Done)>();
        // A task starts with a credit; the writer gives it back once the task's lines are out.
        let (credit_tx, credit_rx) = std::sync::mpsc::sync_channel::<()>(IN_FLIGHT);
        for _ in 0..IN_FLIGHT {
            credit_tx.send(()).expect("room for every credit");
        }
        let (redactors, spares, marker) = (&redactors, &spares, self.marker);
        let (names, mapped) = (self.names, self.mapped);
        std::thread::scope(|threads| -> Result<FileReport> {
            let writer = threads.spawn(move || write_in_order(done_rx, credit_tx, out, spares, mapped, names.input));
            let read = rayon::in_place_scope_fifo(|tasks| -> std::io::Result<()> {
                let mut index = 0;
                for block in blocks {
                    let block = block?;
                    let len = block.bytes().len();
                    let mut start = 0;
                    while start < len {
                        let end = cut(block.bytes(), start + TASK_BYTES);
                        if credit_rx.recv().is_err() {
                            return Ok(()); // the writer failed: its error is below
                        }
                        let (block, done_tx) = (block.clone(), done_tx.clone());
                        tasks.spawn_fifo(move |_| {
                            let done = redactors.with(|redactor| redact_task(&block.bytes()[start..end], redactor, marker, spares));
                            let _ = done_tx.send((index, done));
                        });
                        index += 1;
                        start = end;
                    }
                }
                Ok(())
            });
            drop(done_tx);
            let report = writer.join().expect("the writer does not panic").with_context(|| format!("{}: write failed", names.output))?;
            read.with_context(|| format!("{}: read failed", names.input))?;
            Ok(report)
        })
    }
}

/// The tasks' output written in the order of their lines as each is done, a credit given back
/// for each; a mapping's pages released behind them.
fn write_in_order(done: Receiver<(usize, Done)>, credits: SyncSender<()>, out: &mut impl Write, spares: &Mutex<Vec<Vec<u8>>>, mapped: Option<&memmap2::Mmap>, name: &str) -> std::io::Result<FileReport> {
    let mut report = FileReport::default();
    let mut waiting = BTreeMap::new();
    let (mut next, mut line_no, mut read, mut released) = (0, 0, 0, 0);
    for (index, task) in done {
        waiting.insert(index, task);
        while let Some(mut task) = waiting.remove(&next) {
            out.write_all(&task.out)?;
            report.malformed.extend(task.malformed.into_iter().map(|(line, why)| format!("{name}:{}: {why}", line_no + line + 1)));
            report.records += task.records;
            line_no += task.lines;
            read += task.read;
            if let Some(map) = mapped.filter(|map| read - released >= BLOCK_BYTES || read == map.len()) {
                release(map, released..read);
                released = read;
            }
            // Its memory goes to a later task.
            task.out.clear();
            spares.lock().expect("no task panics").push(task.out);
            let _ = credits.send(());
            next += 1;
        }
    }
    Ok(report)
}

/// One task's lines, each redacted on its own.
fn redact_task(task: &[u8], redactor: &mut Redactor, marker: &str, spares: &Mutex<Vec<Vec<u8>>>) -> Done {
    let mut out = spares.lock().expect("no task panics").pop().unwrap_or_default();
    out.reserve(task.len() + task.len() / 8);
    let (mut malformed, mut records, mut lines) = (Vec::new(), 0, 0);
    let mut at = 0;
    while at < task.len() {
        let end = memchr::memchr(b'\n', &task[at..]).map_or(task.len(), |nl| at + nl + 1);
        match redact_line(&task[at..end], redactor, marker, &mut out) {
            Ok(true) => records += 1,
            Ok(false) => {}
            Err(why) => malformed.push((lines, why)),
        }
        lines += 1;
        at = end;
    }
    Done { out, malformed, records, lines, read: task.len() }
}

/// Redactors for the tasks, each kept from task to task (with the replacements it remembers
/// and the memory it has grown).
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
