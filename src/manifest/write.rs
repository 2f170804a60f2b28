//! Writing a manifest in one pass: the header comes first but is known last, so its widest
//! form is reserved, the entries stream after it, and the sealed header fills the space.

use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::{hex, manifest_digest, Decision, DecisionCounts, Header};
use crate::storage::{DiskWriter, Output};

/// A manifest being written to its output (a temporary file until it is finished).
pub struct ManifestWriter<'o> {
    output: Output<'o>,
    name: String,
    header: Header,
    reserved: usize,
    sealer: Sealer,
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
        Ok(ManifestWriter { output, name: name.to_string(), header: widest, reserved, sealer: Sealer::start(out), count: 0, counts: DecisionCounts::default() })
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
        self.sealer.seal(lines).with_context(|| format!("{}: cannot write", self.name))
    }

    /// Seals the header over the entries written, writes it in place and puts the manifest
    /// where it goes (renamed into place, or uploaded). Returns the sealed header.
    pub fn finish(self, rejected: u64) -> Result<Header> {
        let cannot_write = || format!("{}: cannot write", self.name);
        let (digest, out) = self.sealer.finish().with_context(cannot_write)?;
        let mut header = Header {
            counts: self.counts,
            rejected,
            entries: self.count,
            entries_sha256: hex(&digest.finalize()),
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

/// The entries' hash and their way to disk, on a thread of their own: each batch of lines is
/// hashed and copied into the disk writer a piece at a time, so the copy reads what hashing
/// just brought into the cache (copied from memory on the planning thread, it cost a twentieth
/// of a plan's CPU). A batch is handed over once the one before is taken.
struct Sealer {
    batches: SyncSender<Vec<u8>>,
    sealed: Receiver<Vec<u8>>,
    /// None once joined after it stopped early.
    thread: Option<JoinHandle<io::Result<(Sha256, DiskWriter)>>>,
}

/// Bytes hashed, then copied, at a time: well inside a core's L2 cache.
const PIECE: usize = 64 << 10;

impl Sealer {
    fn start(mut out: DiskWriter) -> Sealer {
        let (batches, to_seal) = sync_channel::<Vec<u8>>(0);
        let (give_back, sealed) = channel();
        let thread = std::thread::spawn(move || {
            let mut digest = Sha256::new();
            for lines in to_seal {
                for piece in lines.chunks(PIECE) {
                    digest.update(piece);
                    out.write_all(piece)?;
                }
                // The owner may be gone (an error ended its work); the buffer is then dropped.
                let _ = give_back.send(lines);
            }
            Ok((digest, out))
        });
        Sealer { batches, sealed, thread: Some(thread) }
    }

    /// Hands over the next batch; returns the batches sealed since the last call, for reuse.
    /// An error writing an earlier batch is returned here.
    fn seal(&mut self, lines: Vec<u8>) -> io::Result<Vec<Vec<u8>>> {
        if self.batches.send(lines).is_err() {
            // Only an error writing stops the thread while batches still come.
            return Err(self.stopped());
        }
        Ok(self.sealed.try_iter().collect())
    }

    /// The error that stopped the thread early.
    fn stopped(&mut self) -> io::Error {
        match self.thread.take().map(|thread| thread.join().expect("the sealer does not panic")) {
            Some(Err(e)) => e,
            _ => io::Error::other("the manifest's writer had stopped"),
        }
    }

    /// The digest of every batch and the writer they went to, once every batch is written.
    fn finish(mut self) -> io::Result<(Sha256, DiskWriter)> {
        let Some(thread) = self.thread.take() else { return Err(self.stopped()) };
        drop(self.batches);
        thread.join().expect("the sealer does not panic")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that fails stops the sealer, and the next batch handed over returns its error
    /// (here the file was opened for reading only).
    #[test]
    fn a_write_error_comes_back_from_a_later_batch() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let read_only = std::fs::File::open(file.path()).unwrap();
        let mut sealer = Sealer::start(DiskWriter::new(&read_only).unwrap());
        // Five of the disk writer's 4 MiB buffers are more than it ever holds at once.
        let failed = (0..8).find_map(|_| sealer.seal(vec![b'x'; 5 << 20]).err());
        let error = failed.expect("a later batch returns the error");
        assert_eq!(error.raw_os_error(), Some(libc::EBADF), "{error}");
        assert!(sealer.finish().is_err(), "finishing after the error fails too");
    }
}
