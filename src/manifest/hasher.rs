//! The entries' SHA-256 taken on a thread of its own, block by block in order: the verifying
//! reader hashes while its other threads check the same bytes.

use std::ops::Deref;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

use super::hex;

pub(super) struct Hasher<B> {
    blocks: SyncSender<B>,
    hashed: Receiver<B>,
    thread: JoinHandle<Sha256>,
}

impl<B> Hasher<B>
where
    B: Deref + Send + 'static,
    B::Target: AsRef<[u8]>,
{
    /// A hasher with room for `queue` blocks waiting (0: each is handed over directly).
    pub fn start(queue: usize) -> Hasher<B> {
        let (blocks, to_hash) = sync_channel::<B>(queue);
        let (give_back, hashed) = channel();
        let thread = std::thread::spawn(move || {
            let mut digest = Sha256::new();
            for block in to_hash {
                digest.update((*block).as_ref());
                // The owner may be gone (an error ended its work); the block is then dropped.
                let _ = give_back.send(block);
            }
            digest
        });
        Hasher { blocks, hashed, thread }
    }

    /// Hands over the next block; returns the blocks hashed since the last call, for reuse.
    pub fn hash(&self, block: B) -> Vec<B> {
        self.blocks.send(block).expect("the hasher runs until it is finished");
        self.hashed.try_iter().collect()
    }

    /// The digest of every block, as lowercase hex.
    pub fn finish(self) -> String {
        drop(self.blocks);
        hex(&self.thread.join().expect("the hasher does not panic").finalize())
    }
}
