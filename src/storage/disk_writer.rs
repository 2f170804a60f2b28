//! Writes a large file front to back straight to the disk (O_DIRECT on Linux): copying gigabytes
//! into the page cache costs the kernel as much CPU as hashing them, and a plan has none to spare.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::direct_io::{is_direct, set_direct, Buffer, ALIGN};

/// Buffers of bytes on their way to disk, and the threads writing them side by side: two writes
/// in flight keep a disk busier than one.
const BUFFERS: usize = 4;
const WRITERS: usize = 2;

/// A file being written from offset 0 to its end through aligned buffers: whole buffers go to
/// disk directly on threads of their own while the next fills, and the last partial one through
/// the page cache at `finish`. Where the file system refuses direct writes, every buffer goes
/// through the page cache and is handed to the disk at once (`sync_file_range`), so the final
/// sync finds little left.
pub struct DiskWriter {
    file: Arc<File>,
    filling: Buffer,
    /// Where `filling` starts in the file.
    offset: u64,
    full: Option<SyncSender<(u64, Buffer)>>,
    empty: Receiver<io::Result<Buffer>>,
    /// Buffers made so far (up to `BUFFERS`).
    made: usize,
    buffer_bytes: usize,
    writers: Vec<JoinHandle<()>>,
}

impl DiskWriter {
    /// Writes `file` (opened for writing; its contents are overwritten from offset 0).
    pub fn new(file: &File) -> io::Result<DiskWriter> {
        DiskWriter::with_buffers(file, 4 << 20)
    }

    fn with_buffers(file: &File, buffer_bytes: usize) -> io::Result<DiskWriter> {
        assert!(buffer_bytes >= ALIGN && buffer_bytes % ALIGN == 0, "buffers are whole blocks");
        let file = Arc::new(file.try_clone()?);
        set_direct(&file, true);
        let (full, to_write) = sync_channel::<(u64, Buffer)>(BUFFERS);
        let (done, empty) = channel();
        let to_write = Arc::new(Mutex::new(to_write));
        let writers = (0..WRITERS)
            .map(|_| {
                let (file, to_write, done) = (file.clone(), to_write.clone(), done.clone());
                std::thread::spawn(move || write_buffers(&file, &to_write, &done))
            })
            .collect();
        Ok(DiskWriter { file, filling: Buffer::new(buffer_bytes), offset: 0, full: Some(full), empty, made: 1, buffer_bytes, writers })
    }

    pub fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let n = self.filling.append(bytes);
            bytes = &bytes[n..];
            if self.filling.len == self.filling.capacity() {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    /// Sends the full buffer to be written and takes an empty one (a new one while there are
    /// fewer than `BUFFERS`, else the next one written).
    fn hand_over(&mut self) -> io::Result<()> {
        let next = match self.empty.try_recv() {
            Ok(written) => written?,
            Err(_) if self.made < BUFFERS => {
                self.made += 1;
                Buffer::new(self.buffer_bytes)
            }
            Err(_) => self.empty.recv().expect("writers return every buffer")?,
        };
        self.filling.settle();
        let full = std::mem::replace(&mut self.filling, next);
        let len = full.len as u64;
        self.full.as_ref().expect("sending until finished").send((self.offset, full)).expect("writers run until finished");
        self.offset += len;
        self.filling.len = 0;
        Ok(())
    }

    /// Waits for every buffer to be written, writes the rest through the page cache and returns
    /// the file (written, not yet synced).
    pub fn finish(mut self) -> io::Result<Arc<File>> {
        drop(self.full.take());
        for writer in self.writers.drain(..) {
            writer.join().expect("writers do not panic");
        }
        for written in self.empty.try_iter() {
            written?;
        }
        set_direct(&self.file, false);
        self.filling.settle();
        self.file.write_all_at(self.filling.filled(), self.offset)?;
        Ok(self.file)
    }
}

/// For writers layered on it (a compressor): every write is taken whole.
impl io::Write for DiskWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    /// Nothing: the bytes go to disk a buffer at a time, and the rest at `finish`.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer thread: takes full buffers in turn, writes each where it goes and sends it back
/// (or the error that stopped it).
fn write_buffers(file: &File, to_write: &Mutex<Receiver<(u64, Buffer)>>, done: &Sender<io::Result<Buffer>>) {
    loop {
        let next = to_write.lock().expect("not poisoned").recv();
        let Ok((offset, buffer)) = next else { return };
        let written = write_at(file, buffer.filled(), offset).map(|()| buffer);
        // The owner is gone only once it stopped writing.
        let _ = done.send(written);
    }
}

/// Writes a whole buffer at `offset`: directly if the file takes it, else through the page
/// cache, handed straight on to the disk.
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    match file.write_all_at(bytes, offset) {
        // Direct writes refused (alignment, or a file system that only says so now): the page
        // cache takes them.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && is_direct(file) => {
            set_direct(file, false);
            file.write_all_at(bytes, offset)?;
        }
        other => other?,
    }
    if !is_direct(file) {
        start_writing(file, offset, bytes.len() as u64);
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn start_writing(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: a system call on an open descriptor; it reads and writes none of our memory.
    // Errors are left to the final sync, which reports them.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writing(_file: &File, _offset: u64, _len: u64) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(pieces: &[&[u8]], buffer_bytes: usize) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let file = File::create(&path).unwrap();
        let mut writer = DiskWriter::with_buffers(&file, buffer_bytes).unwrap();
        for piece in pieces {
            writer.write_all(piece).unwrap();
        }
        writer.finish().unwrap().sync_all().unwrap();
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn bytes_land_in_order_across_buffers_and_the_partial_tail() {
        let bytes: Vec<u8> = (0..37 * ALIGN + 123).map(|i| (i * 7 % 251) as u8).collect();
        // Pieces smaller than, equal to and larger than a buffer, at every alignment.
        for sizes in [&[1usize, 4095, 4097, 10_000][..], &[ALIGN * 2], &[ALIGN * 9 + 1], &[bytes.len()]] {
            let mut pieces = Vec::new();
            let mut rest = bytes.as_slice();
            for size in sizes.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let (piece, tail) = rest.split_at((*size).min(rest.len()));
                pieces.push(piece);
                rest = tail;
            }
            assert_eq!(written(&pieces, ALIGN * 2), bytes, "pieces of {sizes:?}");
        }
    }

    #[test]
    fn an_empty_or_tiny_file_is_written_whole() {
        assert_eq!(written(&[], ALIGN), b"");
        assert_eq!(written(&[b"x"], ALIGN), b"x");
        assert_eq!(written(&[&[b'y'; ALIGN]], ALIGN), vec![b'y'; ALIGN]);
    }

    #[test]
    fn with_direct_writes_refused_whole_buffers_go_through_the_page_cache() {
        // As on a file system that refuses the flag: whole buffers take the buffered path.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let file = File::create(&path).unwrap();
        let mut writer = DiskWriter::with_buffers(&file, ALIGN).unwrap();
        set_direct(&writer.file, false);
        writer.write_all(&[b'z'; 3 * ALIGN + 5]).unwrap();
        writer.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), vec![b'z'; 3 * ALIGN + 5]);
    }
}
