//! Reads a large local file front to back straight from the disk (O_DIRECT on Linux): a manifest
//! written past the page cache would otherwise cost seconds of kernel time filling it on first read.
//! What the page cache already holds is read from it, at memory speed.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use super::direct_io::{is_direct, set_direct, Buffer, CachedPages, ALIGN};

/// Buffers read ahead of the one being handed out.
const AHEAD: usize = 3;

/// A file read in aligned buffers by a thread of its own, a few ahead of the reader; where the
/// file system refuses direct reads, the same thread reads through the page cache.
pub struct DiskReader {
    filled: Receiver<io::Result<Buffer>>,
    empty: SyncSender<Buffer>,
    current: Option<Buffer>,
    /// Bytes of `current` already handed out.
    taken: usize,
    reader: Option<JoinHandle<()>>,
}

impl DiskReader {
    pub fn new(file: &File) -> io::Result<DiskReader> {
        DiskReader::with_buffers(file, 4 << 20)
    }

    fn with_buffers(file: &File, buffer_bytes: usize) -> io::Result<DiskReader> {
        let file = file.try_clone()?;
        let cached = CachedPages::of(&file);
        set_direct(&file, true);
        let (filled_tx, filled) = sync_channel(AHEAD);
        let (empty, empty_rx) = sync_channel::<Buffer>(AHEAD + 2);
        for _ in 0..AHEAD + 1 {
            empty.send(Buffer::new(buffer_bytes)).expect("room for every buffer");
        }
        let reader = std::thread::spawn(move || read_buffers(&file, cached.as_ref(), &empty_rx, &filled_tx));
        Ok(DiskReader { filled, empty, current: None, taken: 0, reader: Some(reader) })
    }
}

impl io::Read for DiskReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(buffer) = &self.current {
                let left = &buffer.filled()[self.taken..];
                if !left.is_empty() {
                    let n = left.len().min(out.len());
                    out[..n].copy_from_slice(&left[..n]);
                    self.taken += n;
                    return Ok(n);
                }
                let _ = self.empty.send(self.current.take().expect("checked"));
            }
            match self.filled.recv() {
                // The end: the reader thread is done.
                Err(_) => return Ok(0),
                Ok(buffer) => {
                    self.current = Some(buffer?);
                    self.taken = 0;
                }
            }
        }
    }
}

impl Drop for DiskReader {
    fn drop(&mut self) {
        // Unblocks the reader thread wherever it waits (for an empty buffer, or to hand over a
        // full one), then waits for it.
        drop(std::mem::replace(&mut self.filled, sync_channel(0).1));
        drop(std::mem::replace(&mut self.empty, sync_channel(0).0));
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The reader thread: fills empty buffers in file order until the end (a short read) or an
/// error, each sent on as it is filled.
fn read_buffers(file: &File, cached: Option<&CachedPages>, empty: &Receiver<Buffer>, filled: &SyncSender<io::Result<Buffer>>) {
    let mut offset = 0u64;
    while let Ok(mut buffer) = empty.recv() {
        let capacity = buffer.capacity();
        let read = fill(file, cached, buffer.bytes_mut(), offset);
        let done = !matches!(read, Ok(n) if n == capacity);
        let sent = match read {
            Ok(n) => {
                buffer.len = n;
                offset += n as u64;
                filled.send(Ok(buffer))
            }
            Err(e) => filled.send(Err(e)),
        };
        if done || sent.is_err() {
            return;
        }
    }
}

/// Reads into `bytes` from `offset` until it is full or the file ends: what the page cache
/// holds from it (through `cached`), the rest directly if the file takes it, else through the
/// page cache. (A manifest just written is on the disk only; one read by another program
/// since, in the cache, reads from there at memory speed rather than at the disk's.)
fn fill(file: &File, cached: Option<&CachedPages>, bytes: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut n = cached.map_or(0, |cached| cached.read(bytes, offset));
    while n < bytes.len() {
        match file.read_at(&mut bytes[n..], offset + n as u64) {
            Ok(0) => break,
            Ok(got) => n += got,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Direct reads refused (or a short one left the rest unaligned): the page cache
            // serves the rest.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && is_direct(file) => set_direct(file, false),
            Err(e) => return Err(e),
        }
        if n % ALIGN != 0 && is_direct(file) && n < bytes.len() {
            set_direct(file, false);
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn read_back(bytes: &[u8], buffer_bytes: usize, piece: usize, direct: bool) -> Vec<u8> {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), bytes).unwrap();
        let file = File::open(file.path()).unwrap();
        let mut reader = DiskReader::with_buffers(&file, buffer_bytes).unwrap();
        if !direct {
            set_direct(&file, false);
        }
        let mut back = Vec::new();
        let mut out = vec![0; piece];
        loop {
            let n = reader.read(&mut out).unwrap();
            if n == 0 {
                break;
            }
            back.extend_from_slice(&out[..n]);
        }
        back
    }

    #[test]
    fn a_file_reads_back_whole_whatever_the_sizes() {
        for len in [0, 1, ALIGN - 1, ALIGN, ALIGN + 1, 5 * ALIGN, 9 * ALIGN + 77] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
            for piece in [1, 1000, ALIGN, 3 * ALIGN + 5] {
                for direct in [true, false] {
                    assert_eq!(read_back(&bytes, 2 * ALIGN, piece, direct), bytes, "{len} bytes, pieces of {piece}, direct {direct}");
                }
            }
        }
    }

    /// A file with some of its pages in the page cache and some not (dropped where the file
    /// system lets them go): read from the cache where it holds the pages, directly elsewhere,
    /// the same bytes.
    #[test]
    fn a_file_partly_in_the_page_cache_reads_back_whole() {
        let len = 23 * ALIGN + 321;
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
        // (from, to) spans of the file dropped from the cache.
        let dropped: [&[(usize, usize)]; 4] = [&[], &[(0, len)], &[(3 * ALIGN, 9 * ALIGN)], &[(0, 2 * ALIGN), (10 * ALIGN, 11 * ALIGN), (20 * ALIGN, len)]];
        for ranges in dropped {
            for buffer_bytes in [ALIGN, 4 * ALIGN, 32 * ALIGN] {
                let file = tempfile::NamedTempFile::new().unwrap();
                std::fs::write(file.path(), &bytes).unwrap();
                let file = File::open(file.path()).unwrap();
                file.sync_all().unwrap();
                #[cfg(target_os = "linux")]
                for &(from, to) in ranges {
                    use std::os::fd::AsRawFd;
                    // SAFETY: advice about an open descriptor's pages; no memory of ours.
                    unsafe { libc::posix_fadvise(file.as_raw_fd(), from as i64, (to - from) as i64, libc::POSIX_FADV_DONTNEED) };
                }
                let mut back = Vec::new();
                DiskReader::with_buffers(&file, buffer_bytes).unwrap().read_to_end(&mut back).unwrap();
                assert!(back == bytes, "dropped {ranges:?}, buffers of {buffer_bytes}");
            }
        }
    }

    #[test]
    fn a_reader_dropped_early_stops_its_thread() {
        let bytes = vec![7u8; 40 * ALIGN];
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &bytes).unwrap();
        let mut reader = DiskReader::with_buffers(&File::open(file.path()).unwrap(), ALIGN).unwrap();
        let mut one = [0u8; 10];
        reader.read_exact(&mut one).unwrap();
        drop(reader);
    }
}
