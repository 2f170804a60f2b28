//! JSON-lines files that replay appends to (the `file:` target and quarantine sink): a torn
//! last line is cut before anything is appended, a failed write is cut back, and a line is on
//! disk (synced) before the caller records it as done.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

pub struct AppendFile {
    path: PathBuf,
    /// Opened for appending; every write holds the file's lock (flock), so executors on one
    /// host sharing the file never interleave or cut each other's lines.
    file: Mutex<File>,
    /// The length known to be on disk; syncs are serialised so one covers every write before it.
    synced: Mutex<u64>,
}

impl AppendFile {
    /// Opens (or creates) the file, cuts a half-written last line, and calls `each` with every
    /// whole line already in it.
    pub fn open(path: &Path, mut each: impl FnMut(&str)) -> Result<AppendFile> {
        let name = path.display();
        let file = OpenOptions::new().create(true).read(true).append(true).open(path).with_context(|| format!("{name}: cannot open"))?;
        flock(&file, libc::LOCK_EX).with_context(|| format!("{name}: cannot lock"))?;
        let mut whole = 0u64;
        let mut reader = BufReader::new(&file);
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader.read_line(&mut line).with_context(|| format!("{name}: cannot read"))?;
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            whole += n as u64;
            each(&line);
        }
        if whole < file.metadata()?.len() {
            crate::messages::warning(format!("{name}: cut a torn last line (from an interrupted write) before appending"));
            file.set_len(whole).with_context(|| format!("{name}: cannot repair"))?;
            file.sync_data().with_context(|| format!("{name}: cannot repair"))?;
        }
        flock(&file, libc::LOCK_UN).with_context(|| format!("{name}: cannot unlock"))?;
        Ok(AppendFile { path: path.to_path_buf(), file: Mutex::new(file), synced: Mutex::new(whole) })
    }

    /// Appends one line (with its newline) whole and syncs it. A write that fails part way
    /// (a full disk) is cut back, so the file never holds a torn line.
    pub fn append(&self, line: &[u8]) -> Result<()> {
        let name = self.path.display();
        let (end, handle) = {
            let mut file = self.file.lock().expect("append lock");
            flock(&file, libc::LOCK_EX).with_context(|| format!("{name}: cannot lock"))?;
            let written = file.metadata().and_then(|m| {
                let start = m.len();
                match file.write_all(line) {
                    Ok(()) => Ok(start + line.len() as u64),
                    Err(e) => {
                        let _ = file.set_len(start);
                        Err(e)
                    }
                }
            });
            let _ = flock(&file, libc::LOCK_UN);
            let end = written.with_context(|| format!("{name}: cannot write"))?;
            (end, file.try_clone().with_context(|| format!("{name}: cannot sync"))?)
        };
        let mut synced = self.synced.lock().expect("sync lock");
        if *synced < end {
            let covered = handle.metadata().map(|m| m.len()).unwrap_or(end);
            handle.sync_data().with_context(|| format!("{name}: cannot sync"))?;
            *synced = covered.max(end);
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Takes or lets go of the file's advisory lock (`File::lock` needs Rust 1.89).
fn flock(file: &File, operation: std::ffi::c_int) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor the `File` owns and keeps open for the call.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_cut_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        std::fs::write(&path, "{\"key\":\"a\"}\n{\"key\":\"b\"}\n{\"key\":\"c\",\"rec").unwrap();
        let mut seen = Vec::new();
        let file = AppendFile::open(&path, |l| seen.push(l.trim_end().to_string())).unwrap();
        assert_eq!(seen, ["{\"key\":\"a\"}", "{\"key\":\"b\"}"]);
        file.append(b"{\"key\":\"c\"}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"key\":\"a\"}\n{\"key\":\"b\"}\n{\"key\":\"c\"}\n");
    }

    /// The lock an append holds keeps another handle of the file (another executor) out
    /// until it is let go.
    #[test]
    fn the_file_lock_keeps_other_handles_out_until_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let (ours, theirs) = (File::create(&path).unwrap(), File::open(&path).unwrap());
        flock(&ours, libc::LOCK_EX).unwrap();
        let refused = flock(&theirs, libc::LOCK_EX | libc::LOCK_NB).unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock);
        flock(&ours, libc::LOCK_UN).unwrap();
        flock(&theirs, libc::LOCK_EX | libc::LOCK_NB).unwrap();
    }
}
