//! The entries' SHA-256 taken on a thread of its own, block by block in order: the verifying
//! reader hashes while its other threads check the same bytes, and the writer hands each piece
//! it hashed to the disk writer while it is in cache.

use std::io;
use std::ops::Deref;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

use super::hex;
use crate::storage::DiskWriter;

pub(super) struct Hasher<B, W = ()> {
    blocks: SyncSender<B>,
    hashed: Receiver<B>,
    /// None once joined after it stopped early.
    thread: Option<JoinHandle<io::Result<(Sha256, W)>>>,
}

/// Where the bytes go once hashed.
pub(super) trait AfterHash: Send + 'static {
    fn take(&mut self, piece: &[u8]) -> io::Result<()>;
}

/// Nowhere: the reader only checks them.
impl AfterHash for () {
    fn take(&mut self, _: &[u8]) -> io::Result<()> {
        Ok(())
    }
}

/// To disk: copied from the cache that hashing just filled (copied from memory on the planning
/// thread, it cost a twentieth of a plan's CPU).
impl AfterHash for DiskWriter {
    fn take(&mut self, piece: &[u8]) -> io::Result<()> {
        self.write_all(piece)
    }
}

/// Bytes hashed, then handed on, at a time: well inside a core's L2 cache.
const PIECE: usize = 64 << 10;

impl<B, W> Hasher<B, W>
where
    B: Deref + Send + 'static,
    B::Target: AsRef<[u8]>,
    W: AfterHash,
{
    /// A hasher with room for `queue` blocks waiting (0: each is handed over directly), that
    /// hands what it hashed to `then`.
    pub fn start(queue: usize, mut then: W) -> Hasher<B, W> {
        let (blocks, to_hash) = sync_channel::<B>(queue);
        let (give_back, hashed) = channel();
        let thread = std::thread::spawn(move || {
            let mut digest = Sha256::new();
            for block in to_hash {
                for piece in (*block).as_ref().chunks(PIECE) {
                    digest.update(piece);
                    then.take(piece)?;
                }
                // The owner may be gone (an error ended its work); the block is then dropped.
                let _ = give_back.send(block);
            }
            Ok((digest, then))
        });
        Hasher { blocks, hashed, thread: Some(thread) }
    }

    /// Hands over the next block; returns the blocks hashed since the last call, for reuse.
    /// An error handing an earlier block on is returned here.
    pub fn hash(&mut self, block: B) -> io::Result<Vec<B>> {
        if self.blocks.send(block).is_err() {
            // Only an error handing a block on stops the thread while blocks still come.
            return Err(self.stopped());
        }
        Ok(self.hashed.try_iter().collect())
    }

    /// The error that stopped the thread early.
    fn stopped(&mut self) -> io::Error {
        match self.thread.take().map(|thread| thread.join().expect("the hasher does not panic")) {
            Some(Err(e)) => e,
            _ => io::Error::other("the hasher had stopped"),
        }
    }

    /// The digest of every block, as lowercase hex, and where the blocks went, once every
    /// block is handed on.
    pub fn finish(mut self) -> io::Result<(String, W)> {
        let Some(thread) = self.thread.take() else { return Err(self.stopped()) };
        drop(self.blocks);
        let (digest, then) = thread.join().expect("the hasher does not panic")?;
        Ok((hex(&digest.finalize()), then))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that fails stops the hasher, and the next block handed over returns its error
    /// (here the file was opened for reading only).
    #[test]
    fn a_write_error_comes_back_from_a_later_block() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let read_only = std::fs::File::open(file.path()).unwrap();
        let mut hasher = Hasher::<Vec<u8>, _>::start(0, DiskWriter::new(&read_only).unwrap());
        // Five of the disk writer's 4 MiB buffers are more than it ever holds at once.
        let failed = (0..8).find_map(|_| hasher.hash(vec![b'x'; 5 << 20]).err());
        let error = failed.expect("a later block returns the error");
        assert_eq!(error.raw_os_error(), Some(libc::EBADF), "{error}");
        assert!(hasher.finish().is_err(), "finishing after the error fails too");
    }
}
