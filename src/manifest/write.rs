//! Writing a manifest in one pass: the header comes first but is known last, so its widest
//! form is reserved, the entries stream after it, and the sealed header fills the space.

use std::os::unix::fs::FileExt;

use anyhow::{Context, Result};

use super::hasher::Hasher;
use super::{manifest_digest, Decision, DecisionCounts, Header};
use crate::storage::{DiskWriter, Output};

/// A manifest being written to its output (a temporary file until it is finished).
pub struct ManifestWriter<'o> {
    output: Output<'o>,
    name: String,
    header: Header,
    reserved: usize,
    /// The entries' hash, taken on a thread that then hands them to the disk writer; each
    /// batch is handed over once the one before is taken.
    hasher: Hasher<Vec<u8>, DiskWriter>,
    count: u64,
    counts: DecisionCounts,
}

impl<'o> ManifestWriter<'o> {
    /// Starts a manifest in `output` whose header is `header` once its counts and digests are
    /// filled in (whatever they hold now is replaced).
    pub fn create(mut output: Output<'o>, name: &str, header: Header) -> Result<ManifestWriter<'o>> {
        // The widest values the header can end up with: JSON allows the trailing spaces that
        // pad a narrower one.
        let widest = Header {
            counts: DecisionCounts { replay: u64::MAX, poison_attempts: u64::MAX, poison_uncleared: u64::MAX },
            rejected: u64::MAX,
            entries: u64::MAX,
            entries_sha256: "0".repeat(64),
            manifest_sha256: "0".repeat(64),
            ..header
        };
        let reserved = serde_json::to_vec(&widest)?.len();
        let mut out = DiskWriter::new(output.file()).with_context(|| format!("{name}: cannot write"))?;
        out.write_all(&vec![b' '; reserved])?;
        out.write_all(b"\n")?;
        Ok(ManifestWriter { output, name: name.to_string(), header: widest, reserved, hasher: Hasher::start(0, out), count: 0, counts: DecisionCounts::default() })
    }

    /// Appends one entry line (with its newline), in manifest order.
    pub fn write(&mut self, line: &[u8], decision: Decision) -> Result<()> {
        let mut counts = DecisionCounts::default();
        counts.add(decision);
        self.write_lines(line.to_vec(), 1, &counts).map(drop)
    }

    /// Appends `entries` whole entry lines, in manifest order, whose decisions add up to
    /// `counts`. Returns the buffers of lines written since the last call, for reuse.
    pub fn write_lines(&mut self, lines: Vec<u8>, entries: u64, counts: &DecisionCounts) -> Result<Vec<Vec<u8>>> {
        self.count += entries;
        self.counts.add_counts(counts);
        self.hasher.hash(lines).with_context(|| format!("{}: cannot write", self.name))
    }

    /// Seals the header over the entries written, writes it in place and puts the manifest
    /// where it goes (renamed into place, or uploaded). Returns the sealed header.
    pub fn finish(self, rejected: u64) -> Result<Header> {
        let cannot_write = || format!("{}: cannot write", self.name);
        let (entries_sha256, out) = self.hasher.finish().with_context(cannot_write)?;
        let mut header = Header {
            counts: self.counts,
            rejected,
            entries: self.count,
            entries_sha256,
            manifest_sha256: String::new(),
            ..self.header
        };
        let serde_json::Value::Object(fields) = serde_json::to_value(&header)? else { unreachable!("a header is an object") };
        header.manifest_sha256 = manifest_digest(&fields);
        let mut line = serde_json::to_vec(&header)?;
        line.resize(self.reserved, b' ');
        let file = out.finish().with_context(cannot_write)?;
        file.write_all_at(&line, 0).with_context(cannot_write)?;
        self.output.commit()?;
        Ok(header)
    }
}
