//! Temporary files that never outlive their use: removed on drop, unless they were renamed
//! into place. Every partial output (reports, manifests, dumps, downloads) goes through one.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub struct TempFile {
    path: PathBuf,
}

impl Default for TempFile {
    fn default() -> TempFile {
        TempFile::new()
    }
}

impl TempFile {
    /// A fresh hidden name in `dir` (pass the target's folder to rename into place later).
    pub fn in_dir(dir: &Path) -> TempFile {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        TempFile { path: dir.join(format!(".dlqf-{}-{n}.tmp", std::process::id())) }
    }

    /// A fresh name in the system's temporary folder.
    pub fn new() -> TempFile {
        TempFile::in_dir(&std::env::temp_dir())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the file to `target` (same file system), so it is no longer removed.
    pub fn persist(self, target: &Path) -> std::io::Result<()> {
        std::fs::rename(&self.path, target)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
