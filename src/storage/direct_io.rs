//! What reading and writing past the page cache share: buffers aligned as O_DIRECT needs them,
//! and switching a descriptor's O_DIRECT on and off (Linux; elsewhere files stay buffered).

use std::fs::File;

/// Direct reads and writes start at, and are sized in, multiples of this (every device's block
/// divides it).
pub(super) const ALIGN: usize = 4096;

/// One aligned block of a buffer.
#[repr(C, align(4096))]
#[derive(Clone, Copy)]
struct Block([u8; ALIGN]);

/// An aligned buffer, filled from the front.
pub(super) struct Buffer {
    blocks: Vec<Block>,
    pub(super) len: usize,
}

impl Buffer {
    pub(super) fn new(bytes: usize) -> Buffer {
        Buffer { blocks: vec![Block([0; ALIGN]); bytes / ALIGN], len: 0 }
    }

    pub(super) fn capacity(&self) -> usize {
        self.blocks.len() * ALIGN
    }

    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `Block` is a plain byte array (repr(C), no padding), so the blocks are
        // `capacity()` initialised bytes in a row.
        unsafe { std::slice::from_raw_parts_mut(self.blocks.as_mut_ptr().cast::<u8>(), self.capacity()) }
    }

    pub(super) fn filled(&self) -> &[u8] {
        // SAFETY: as in `bytes_mut`; `len <= capacity()`.
        unsafe { std::slice::from_raw_parts(self.blocks.as_ptr().cast::<u8>(), self.len) }
    }
}

#[cfg(target_os = "linux")]
pub(super) fn set_direct(file: &File, on: bool) {
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl on an open descriptor reads and writes none of our memory. A file system
    // without direct writes refuses the flag, and the file stays buffered.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            let flags = if on { flags | libc::O_DIRECT } else { flags & !libc::O_DIRECT };
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags);
        }
    }
}

#[cfg(target_os = "linux")]
pub(super) fn is_direct(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: as in `set_direct`.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_DIRECT != 0
}

#[cfg(not(target_os = "linux"))]
pub(super) fn set_direct(_file: &File, _on: bool) {}

#[cfg(not(target_os = "linux"))]
pub(super) fn is_direct(_file: &File) -> bool {
    false
}
