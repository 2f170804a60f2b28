//! What reading and writing past the page cache share: buffers aligned as O_DIRECT needs them,
//! switching a descriptor's O_DIRECT on and off (Linux; elsewhere files stay buffered), and
//! telling which of a file's pages the cache already holds, to read those from it.

use std::fs::File;

/// Direct reads and writes start at, and are sized in, multiples of this (every device's block
/// divides it).
pub(super) const ALIGN: usize = 4096;

/// Buffers of at least this size start on a huge-page boundary and ask for huge pages: the
/// kernel pins a buffer's pages for each direct write, a 2 MiB page at once instead of 512.
const HUGE_PAGE: usize = 2 << 20;

/// An aligned buffer, filled from the front.
pub(super) struct Buffer {
    bytes: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
    pub(super) len: usize,
}

// SAFETY: the buffer owns its memory alone, like a `Vec<u8>`.
unsafe impl Send for Buffer {}

impl Buffer {
    /// A zeroed buffer of `bytes` (a multiple of `ALIGN`).
    pub(super) fn new(bytes: usize) -> Buffer {
        assert!(bytes > 0 && bytes % ALIGN == 0, "buffers are whole blocks");
        let align = if bytes >= HUGE_PAGE { HUGE_PAGE } else { ALIGN };
        let layout = std::alloc::Layout::from_size_align(bytes, align).expect("a valid buffer size");
        // SAFETY: the layout's size is not zero.
        let Some(ptr) = std::ptr::NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }) else {
            std::alloc::handle_alloc_error(layout)
        };
        #[cfg(target_os = "linux")]
        if align == HUGE_PAGE {
            // SAFETY: advice on memory this buffer owns; it changes no contents. Refused
            // advice only leaves small pages.
            unsafe { libc::madvise(ptr.as_ptr().cast(), bytes - bytes % HUGE_PAGE, libc::MADV_HUGEPAGE) };
        }
        Buffer { bytes: ptr, layout, len: 0 }
    }

    pub(super) fn capacity(&self) -> usize {
        self.layout.size()
    }

    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the allocation holds `capacity()` initialised (zeroed, then written) bytes.
        unsafe { std::slice::from_raw_parts_mut(self.bytes.as_ptr(), self.capacity()) }
    }

    pub(super) fn filled(&self) -> &[u8] {
        // SAFETY: as in `bytes_mut`; `len <= capacity()`.
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr(), self.len) }
    }

    /// Appends what fits of `bytes` and says how many it took. They are stored past the cache:
    /// the disk reads them from memory, and copied through the cache (each line read in first)
    /// they took a twentieth of a plan's CPU. `settle` must come before anything else reads them.
    pub(super) fn append(&mut self, bytes: &[u8]) -> usize {
        let (start, n) = (self.len, bytes.len().min(self.capacity() - self.len));
        copy_past_cache(&mut self.bytes_mut()[start..start + n], &bytes[..n]);
        self.len += n;
        n
    }

    /// Makes what `append` stored visible to other threads and to the kernel.
    pub(super) fn settle(&self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE is part of x86-64.
        unsafe {
            std::arch::x86_64::_mm_sfence()
        };
    }
}

/// `dst.copy_from_slice(src)`, whole 64-byte lines of `dst` written with streaming stores.
#[cfg(target_arch = "x86_64")]
fn copy_past_cache(dst: &mut [u8], src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    const LINE: usize = 64;
    // The stores below read `src` as far as `dst` goes.
    assert_eq!(dst.len(), src.len());
    let head = dst.as_ptr().align_offset(LINE).min(dst.len());
    let lines = (dst.len() - head) / LINE * LINE;
    dst[..head].copy_from_slice(&src[..head]);
    // SAFETY: SSE2 is part of x86-64. `head..head + lines` lies inside both slices (of equal
    // length, asserted above) and starts on a line of `dst`, so every store is to 16 aligned
    // bytes it owns.
    unsafe {
        let (to, from) = (dst.as_mut_ptr().add(head), src.as_ptr().add(head));
        for line in (0..lines).step_by(LINE) {
            for lane in (0..LINE).step_by(16) {
                let v = _mm_loadu_si128(from.add(line + lane).cast::<__m128i>());
                _mm_stream_si128(to.add(line + lane).cast::<__m128i>(), v);
            }
        }
    }
    dst[head + lines..].copy_from_slice(&src[head + lines..]);
}

#[cfg(not(target_arch = "x86_64"))]
fn copy_past_cache(dst: &mut [u8], src: &[u8]) {
    dst.copy_from_slice(src);
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.bytes.as_ptr(), self.layout) }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_aligned_and_writable_to_their_end() {
        for bytes in [ALIGN, ALIGN * 3, HUGE_PAGE, HUGE_PAGE + ALIGN] {
            let mut buffer = Buffer::new(bytes);
            assert_eq!(buffer.capacity(), bytes);
            let align = if bytes >= HUGE_PAGE { HUGE_PAGE } else { ALIGN };
            assert_eq!(buffer.bytes_mut().as_ptr() as usize % align, 0, "{bytes} bytes");
            assert!(buffer.bytes_mut().iter().all(|&b| b == 0), "{bytes} bytes");
            buffer.bytes_mut()[bytes - 1] = 7;
            buffer.len = bytes;
            assert_eq!(buffer.filled()[bytes - 1], 7);
        }
    }

    #[test]
    fn appends_land_whole_at_every_offset_and_length() {
        let source: Vec<u8> = (0..600).map(|i| (i * 31 % 253) as u8).collect();
        for at in 0..130 {
            for len in (0..300).chain([513, 600 - 1]) {
                let mut buffer = Buffer::new(ALIGN);
                buffer.bytes_mut().fill(0xAA);
                buffer.len = at;
                assert_eq!(buffer.append(&source[..len]), len);
                buffer.settle();
                let bytes = buffer.bytes_mut();
                assert!(bytes[..at].iter().all(|&b| b == 0xAA), "{at}+{len}: before");
                assert_eq!(&bytes[at..at + len], &source[..len], "{at}+{len}");
                assert!(bytes[at + len..].iter().all(|&b| b == 0xAA), "{at}+{len}: after");
            }
        }
        // Only what fits is taken.
        let mut buffer = Buffer::new(ALIGN);
        buffer.len = ALIGN - 10;
        assert_eq!(buffer.append(&source), 10);
        assert_eq!(buffer.filled()[ALIGN - 10..], source[..10]);
    }
}
