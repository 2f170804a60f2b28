//! Writing a manifest in one pass: the header comes first but is known last, so its widest
//! form is reserved, the entries stream after it, and the sealed header fills the space.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::{hex, manifest_digest, Decision, DecisionCounts, Header};
use crate::temp::TempFile;

/// A manifest being written to a temporary file beside its destination.
pub struct ManifestWriter {
    tmp: TempFile,
    out: BufWriter<File>,
    header: Header,
    reserved: usize,
    entries: Sha256,
    count: u64,
    counts: DecisionCounts,
}

impl ManifestWriter {
    /// Starts a manifest in `dir` whose header is `header` once its counts and digests are
    /// filled in (whatever they hold now is replaced).
    pub fn create(dir: &Path, header: Header) -> Result<ManifestWriter> {
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
        let tmp = TempFile::in_dir(dir);
        let file = File::create(tmp.path()).with_context(|| format!("{}: cannot create", tmp.path().display()))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&vec![b' '; reserved])?;
        out.write_all(b"\n")?;
        Ok(ManifestWriter { tmp, out, header: widest, reserved, entries: Sha256::new(), count: 0, counts: DecisionCounts::default() })
    }

    /// Appends one entry line (with its newline), in manifest order.
    pub fn write(&mut self, line: &[u8], decision: Decision) -> Result<()> {
        self.entries.update(line);
        self.count += 1;
        self.counts.add(decision);
        self.out.write_all(line).with_context(|| format!("{}: cannot write", self.tmp.path().display()))
    }

    /// Seals the header over the entries written and writes it in place. Returns the header
    /// and the finished file, still temporary until the caller persists or uploads it.
    pub fn finish(self, rejected: u64) -> Result<(Header, TempFile)> {
        let mut header = Header {
            counts: self.counts,
            rejected,
            entries: self.count,
            entries_sha256: hex(&self.entries.finalize()),
            manifest_sha256: String::new(),
            ..self.header
        };
        let serde_json::Value::Object(fields) = serde_json::to_value(&header)? else { unreachable!("a header is an object") };
        header.manifest_sha256 = manifest_digest(&fields);
        let mut line = serde_json::to_vec(&header)?;
        line.resize(self.reserved, b' ');
        let mut file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&line)?;
        file.sync_all().with_context(|| format!("{}: cannot write", self.tmp.path().display()))?;
        Ok((header, self.tmp))
    }
}
