//! What reading and writing past the page cache share: buffers aligned as O_DIRECT needs them,
//! switching a descriptor's O_DIRECT on and off (Linux; elsewhere files stay buffered), and
//! telling which of a file's pages the cache already holds, to read those from it.

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

/// What of a file the page cache holds, for reading those parts from it: the file mapped (to
/// ask `mincore`, which neither reads nor faults anything in) and a handle of its own that
/// reads through the cache.
pub(super) struct CachedPages {
    map: memmap2::Mmap,
    file: File,
}

impl CachedPages {
    /// None where the system cannot tell (not Linux, pages of another size than `ALIGN`, an
    /// empty file, no second handle).
    #[cfg(target_os = "linux")]
    pub(super) fn of(file: &File) -> Option<CachedPages> {
        use std::os::fd::AsRawFd;
        // SAFETY: sysconf reads a system setting.
        if unsafe { libc::sysconf(libc::_SC_PAGESIZE) } != ALIGN as libc::c_long {
            return None;
        }
        // A file description of its own: `file`'s is switched to direct reads.
        let own = File::open(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
        // SAFETY: the mapping is only asked which of its pages are resident, never read.
        let map = unsafe { memmap2::Mmap::map(&own) }.ok()?;
        Some(CachedPages { map, file: own })
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn of(_file: &File) -> Option<CachedPages> {
        None
    }

    /// Reads into `bytes`, from `offset` on, the pages the cache holds in a row from there: how
    /// many bytes (whole pages, unless the file ends first).
    #[cfg(target_os = "linux")]
    pub(super) fn read(&self, bytes: &mut [u8], offset: u64) -> usize {
        use std::os::unix::fs::FileExt;
        let Ok(start) = usize::try_from(offset) else { return 0 };
        let end = self.map.len().min(start.saturating_add(bytes.len()));
        if start % ALIGN != 0 || start >= end {
            return 0;
        }
        let mut resident = vec![0u8; (end - start).div_ceil(ALIGN)];
        // SAFETY: the range lies inside the mapping (page-aligned start), and `resident` has a
        // byte for each of its pages.
        let asked = unsafe { libc::mincore(self.map.as_ptr().add(start) as *mut libc::c_void, end - start, resident.as_mut_ptr()) };
        if asked != 0 {
            return 0;
        }
        let pages = resident.iter().take_while(|&&r| r & 1 == 1).count();
        let want = (pages * ALIGN).min(end - start);
        let mut n = 0;
        while n < want {
            match self.file.read_at(&mut bytes[n..want], offset + n as u64) {
                Ok(0) | Err(_) => break,
                Ok(got) => n += got,
            }
        }
        // What follows must start on a page for a direct read.
        if n < want { n - n % ALIGN } else { n }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn read(&self, _bytes: &mut [u8], _offset: u64) -> usize {
        0
    }
}
