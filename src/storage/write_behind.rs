//! Starts writing a growing file's pages to disk while more is written, so the sync that makes
//! it durable at the end has little left to wait for (Linux; elsewhere the final sync does all).

use std::fs::File;

/// How far a file written front to back has been handed to the disk.
pub struct WriteBehind {
    /// Bytes handed to the disk at a time.
    window: u64,
    started: u64,
}

impl Default for WriteBehind {
    fn default() -> WriteBehind {
        WriteBehind { window: 32 << 20, started: 0 }
    }
}

impl WriteBehind {
    /// `file` now holds at least `end` bytes: each whole window before it starts going to
    /// disk. Errors are left to the final sync, which reports them.
    pub fn written(&mut self, file: &File, end: u64) {
        while end - self.started >= self.window {
            start_writing(file, self.started, self.window);
            self.started += self.window;
        }
    }
}

#[cfg(target_os = "linux")]
fn start_writing(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: a system call on an open descriptor; it reads and writes none of our memory.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writing(_file: &File, _offset: u64, _len: u64) {}

#[cfg(test)]
mod tests {
    use super::WriteBehind;
    use std::io::{Read, Seek, Write};

    #[test]
    fn whole_windows_are_handed_over_and_the_bytes_stay_as_written() {
        let mut file = tempfile::tempfile().unwrap();
        let mut behind = WriteBehind { window: 4096, started: 0 };
        let bytes: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 251) as u8).collect();
        let mut end = 0;
        for piece in bytes.chunks(1000) {
            file.write_all(piece).unwrap();
            end += piece.len() as u64;
            behind.written(&file, end);
            assert_eq!(behind.started, end / 4096 * 4096);
        }
        file.sync_all().unwrap();
        let mut back = Vec::new();
        file.rewind().unwrap();
        file.read_to_end(&mut back).unwrap();
        assert_eq!(back, bytes);
    }
}
