//! Opening a manifest for review or execution: one read of the file checks every seal and
//! keeps a private copy of the bytes checked, so nothing later can run bytes nobody verified.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};

use super::entry_scan::EntryChecker;
use super::hasher::Hasher;
use super::{manifest_digest, DecisionCounts, Entry, Header, FORMAT};
use crate::lines::LineBlocks;
use crate::signature::Signature;
use crate::temp::TempFile;

/// Decision counts per signature.
pub type SignatureCounts = Vec<(Signature, DecisionCounts)>;

/// A verified manifest: its header, and its entries as they were when verified.
pub struct Manifest {
    pub header: Header,
    /// How the manifest is named in messages.
    name: String,
    /// The verified bytes, in an unlinked temporary file only this process can reach.
    copy: File,
    /// Where the entries start in `copy`.
    entries_at: u64,
}

impl Manifest {
    /// Reads the manifest once, copying it aside while checking that the header matches its
    /// `manifest_sha256` (and that this is `expected`, the reviewed digest, when given), the
    /// entries their `entries_sha256`, and the header's counts the entries. Any mismatch is an
    /// error naming it, before anything is sent.
    pub fn open_verified(name: &str, source: impl Read, expected: Option<&str>) -> Result<Manifest> {
        Self::open(name, source, expected).map(|(manifest, _)| manifest)
    }

    fn open(name: &str, source: impl Read, expected: Option<&str>) -> Result<(Manifest, SignatureCounts)> {
        let name = name.to_string();
        let copy = private_file()?;
        let mut writer = BufWriter::with_capacity(1 << 20, &copy);
        let (header, entries_at, counts) = verify(&name, source, expected, Some(&mut writer))?;
        drop(writer);
        Ok((Manifest { header, name, copy, entries_at }, counts))
    }

    /// `open_verified` without an expected digest, for review: also the entries' counts per
    /// signature (`summarize`'s).
    pub fn open_for_review(name: &str, source: impl Read) -> Result<(Manifest, SignatureCounts)> {
        Self::open(name, source, None)
    }

    /// Checks a manifest as `open_verified` does, in one pass that keeps nothing. Returns the
    /// header and the entries' counts per signature (for `show`; a signature may come more
    /// than once, its counts to be added).
    pub fn summarize(name: &str, source: impl Read) -> Result<(Header, SignatureCounts)> {
        verify(name, source, None, None).map(|(header, _, counts)| (header, counts))
    }

    /// The entries in order, read from the verified copy.
    pub fn entries(&mut self) -> Result<impl Iterator<Item = Result<Entry>> + '_> {
        self.copy.seek(SeekFrom::Start(self.entries_at)).with_context(|| format!("{}: cannot read the verified copy", self.name))?;
        let name = &self.name;
        Ok(BufReader::with_capacity(1 << 20, &self.copy).lines().enumerate().map(move |(i, line)| {
            let line = line.with_context(|| format!("{name}: cannot read the verified copy"))?;
            serde_json::from_str(&line).with_context(|| format!("{name}:{}: not a manifest entry", i + 2))
        }))
    }
}

/// Bytes of entries read, hashed and parsed at a time.
const BLOCK_BYTES: usize = 4 << 20;

/// The one pass over a manifest: the header checked against its seal (and `expected`), then
/// the entries in blocks of whole lines, which this thread copies to `copy` while one thread
/// hashes them in order and the others check their entries. Returns the header, where the entries start and the entries'
/// counts per signature.
fn verify(name: &str, source: impl Read, expected: Option<&str>, mut copy: Option<&mut dyn Write>) -> Result<(Header, u64, SignatureCounts)> {
    let mut reader = BufReader::with_capacity(1 << 20, source);
    let read_error = || format!("{name}: cannot read");
    let copy_error = || format!("{name}: cannot copy the manifest aside (to {})", std::env::temp_dir().display());

    let mut first = Vec::new();
    reader.read_until(b'\n', &mut first).with_context(read_error)?;
    if let Some(copy) = copy.as_mut() {
        copy.write_all(&first).with_context(copy_error)?;
    }
    let header = parse_header(&first, name)?;
    if let Some(expected) = expected {
        if !expected.eq_ignore_ascii_case(&header.manifest_sha256) {
            bail!(
                "{name}: manifest_sha256 {} is not the reviewed {expected}: this is a different manifest; nothing was sent",
                header.manifest_sha256
            );
        }
    }

    // Blocks are hashed in order on one thread and checked on others, in any order; what
    // each block held is put back in order afterwards.
    let checkers = rayon::current_num_threads().clamp(1, 8);
    let (to_check, checkable) = std::sync::mpsc::sync_channel::<(usize, Arc<Vec<u8>>)>(checkers * 2);
    let checkable = Mutex::new(checkable);
    let (digest, checked) = std::thread::scope(|scope| -> Result<(String, Vec<Checked>)> {
        // Owned here, so that leaving early (a read error) ends the checkers too.
        let to_check = to_check;
        let mut hasher = Hasher::<Arc<Vec<u8>>>::start(4, ());
        let workers: Vec<_> = (0..checkers)
            .map(|_| {
                let checkable = &checkable;
                scope.spawn(move || {
                    let mut checker = EntryChecker::default();
                    let mut blocks = Vec::new();
                    loop {
                        let next = checkable.lock().expect("not poisoned").recv();
                        let Ok((index, block)) = next else { return Checked { blocks, checker } };
                        blocks.push((index, check_block(&block, &mut checker)));
                    }
                })
            })
            .collect();
        let mut blocks = LineBlocks::new(reader, BLOCK_BYTES);
        let mut index = 0;
        while let Some(block) = blocks.next_into(Vec::new()) {
            let block = Arc::new(block.with_context(read_error)?);
            // Blocks hashed are dropped here; the checkers keep their own reference.
            drop(hasher.hash(block.clone()).expect("hashing alone does not fail"));
            if let Some(copy) = copy.as_mut() {
                copy.write_all(&block).with_context(copy_error)?;
            }
            // The checkers only stop once this thread has: a send cannot fail.
            let _ = to_check.send((index, block));
            index += 1;
        }
        drop(to_check);
        let checked = workers.into_iter().map(|w| w.join().expect("a checker does not panic")).collect();
        Ok((hasher.finish().expect("hashing alone does not fail").0, checked))
    })?;
    let mut by_signature = Vec::new();
    let mut blocks = Vec::new();
    for Checked { blocks: found, checker } in checked {
        blocks.extend(found);
        by_signature.extend(checker.into_counts());
    }
    blocks.sort_by_key(|(index, _)| *index);
    let mut lines = 0u64;
    let mut counts = DecisionCounts::default();
    let mut unreadable: Option<String> = None;
    for (_, block) in blocks {
        if let (None, Some((line, why))) = (&unreadable, block.first_problem) {
            // Line 1 is the header.
            unreadable = Some(format!("{name}:{}: {why}", lines + line + 1));
        }
        lines += block.lines;
        counts.add_counts(&block.counts);
    }
    if let Some(copy) = copy.as_mut() {
        copy.flush().with_context(copy_error)?;
    }

    if digest != header.entries_sha256 {
        bail!(
            "{name}: the entries do not match entries_sha256 (the header says {}, the entries hash to {digest}): the manifest was altered or truncated; nothing was sent",
            header.entries_sha256
        );
    }
    if lines != header.entries {
        bail!("{name}: the header says {} entries, the file has {lines}; nothing was sent", header.entries);
    }
    if let Some(why) = unreadable {
        bail!("{why}; nothing was sent");
    }
    // Every entry's signature has the same fields, in the same order: reports line them up.
    let fields: std::collections::BTreeSet<Vec<&str>> = by_signature.iter().map(|(s, _)| s.0.iter().map(|(f, _)| f.as_str()).collect()).collect();
    if let [first, second, ..] = fields.iter().collect::<Vec<_>>()[..] {
        bail!("{name}: entries carry signatures with different fields ({first:?} and {second:?}); nothing was sent");
    }
    if counts != header.counts {
        bail!("{name}: the header's counts ({}) do not match the entries ({}); nothing was sent", header.counts, counts);
    }
    Ok((header, first.len() as u64, by_signature))
}

/// What checking one block of entry lines found: its lines, their decisions, and the first
/// line (counted from 1 in the block) that is not an entry, with why.
struct BlockCheck {
    lines: u64,
    counts: DecisionCounts,
    first_problem: Option<(u64, String)>,
}

/// What one checker found: each block it took (by its index in the file) and its counts per
/// signature.
struct Checked {
    blocks: Vec<(usize, BlockCheck)>,
    checker: EntryChecker,
}

/// Checks a block of whole lines (the last may lack its newline, at the end of the file).
fn check_block(block: &[u8], checker: &mut EntryChecker) -> BlockCheck {
    // Valid UTF-8 as a whole, the block's lines can go to the scanner as text.
    let text = simdutf8::basic::from_utf8(block).ok();
    let mut found = BlockCheck { lines: 0, counts: DecisionCounts::default(), first_problem: None };
    let mut start = 0;
    while start < block.len() {
        let end = memchr::memchr(b'\n', &block[start..]).map_or(block.len(), |i| start + i);
        found.lines += 1;
        match checker.check(&block[start..end], text.map(|t| &t[start..end])) {
            Ok(decision) if end < block.len() => found.counts.add(decision),
            Ok(_) => {
                found.first_problem.get_or_insert((found.lines, "the last entry has no newline".to_string()));
            }
            Err(e) => {
                found.first_problem.get_or_insert((found.lines, format!("not a manifest entry ({e})")));
            }
        }
        start = end + 1;
    }
    found
}

/// Parses and checks the header line against its own seal.
fn parse_header(line: &[u8], name: &str) -> Result<Header> {
    // Lines end with LF alone, the header's too: the entries' seal covers their bytes, and a
    // header line converted to CRLF must not pass where an entry would not.
    if line.contains(&b'\r') {
        bail!("{name}:1: a carriage return: a manifest's lines end with LF alone (was the file converted to CRLF?); nothing was sent");
    }
    // A key written twice would be read as one value by one reader and another by the next.
    let fields: Map<String, Value> = match crate::strict_json::parse(line.trim_ascii_end()) {
        Ok(Value::Object(fields)) => fields,
        Ok(_) => bail!("{name}:1: not a dlqf manifest header (not a JSON object)"),
        Err(e) => bail!("{name}:1: not a dlqf manifest header ({e})"),
    };
    match fields.get("manifest").and_then(Value::as_str) {
        Some(FORMAT) => {}
        Some(other) => bail!("{name}: manifest format `{other}` is not {FORMAT}"),
        None => bail!("{name}:1: not a dlqf manifest header (no \"manifest\" field)"),
    }
    let Some(sealed) = fields.get("manifest_sha256").and_then(Value::as_str) else {
        bail!("{name}: the header has no manifest_sha256 (written by an older dlqf?): plan it again; nothing was sent");
    };
    let digest = manifest_digest(&fields);
    if digest != sealed {
        bail!(
            "{name}: the header does not match its manifest_sha256 (sealed {sealed}, the header hashes to {digest}): a header field (policy, classification, counts, inputs…) was altered; nothing was sent"
        );
    }
    serde_json::from_value(Value::Object(fields)).with_context(|| format!("{name}:1: not a dlqf manifest header"))
}

/// A read-write file with no name: removed from its folder at once, it lives as long as the
/// handle and no other process can open it by path.
fn private_file() -> Result<File> {
    let tmp = TempFile::new();
    let file = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(tmp.path())
        .with_context(|| format!("{}: cannot create a private copy of the manifest", tmp.path().display()))?;
    drop(tmp);
    Ok(file)
}
