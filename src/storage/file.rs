//! Local files: an argument is a file, a folder (read recursively, hive `dt=…/` folders
//! included) or a glob; hidden and `_`-prefixed names inside folders (`_SUCCESS`) are skipped.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use walkdir::WalkDir;

use super::{Found, Location};

/// A regular, non-empty file mapped into memory, so its bytes are read where they lie in the
/// page cache instead of copied out; None for anything else (a pipe, a device, an empty file).
/// The file stays open beside its mapping for readers that copy some of it out instead.
pub fn map_file(path: &Path) -> Result<Option<MappedFile>> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let meta = file.metadata().with_context(|| format!("{}: cannot open", path.display()))?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(None);
    }
    // SAFETY: as polars does for every local Parquet file it reads, the file is mapped and
    // assumed not to shrink while it is read.
    let map = unsafe { memmap2::Mmap::map(&file) }.with_context(|| format!("{}: cannot map", path.display()))?;
    Ok(Some(MappedFile { map, file }))
}

/// Lets a mapped range's pages leave the resident set (they stay in the page cache), which
/// would otherwise grow to the size of the file read.
pub fn release(map: &memmap2::Mmap, range: Range<usize>) {
    #[cfg(unix)]
    // SAFETY: a read-only mapping of a file: a page dropped here that is touched again (a
    // neighbouring chunk's first line) is read back from the file.
    let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, range.start, range.len()) };
}

/// A local file's mapping and the open file it maps.
pub struct MappedFile {
    pub map: memmap2::Mmap,
    pub file: File,
}

pub(super) fn list(arg: &str, path: &Path) -> Result<Vec<Found>> {
    let mut found = Vec::new();
    if path.exists() {
        collect(path, true, &mut found)?;
    } else if arg.contains(['*', '?', '[']) {
        for entry in glob::glob(arg).with_context(|| format!("invalid glob pattern `{arg}`"))? {
            let entry = entry.with_context(|| format!("reading matches of `{arg}`"))?;
            collect(&entry, false, &mut found)?;
        }
        if found.is_empty() {
            bail!("{arg}: no dump files match this pattern");
        }
    } else {
        bail!("{arg}: no such file or directory");
    }
    Ok(found)
}

fn collect(path: &Path, explicit: bool, out: &mut Vec<Found>) -> Result<()> {
    let size = |p: &Path| std::fs::metadata(p).ok().map(|m| m.len());
    if path.is_file() {
        out.push(Found { location: Location::File(path.to_path_buf()), size: size(path), etag: None, explicit });
        return Ok(());
    }
    for entry in WalkDir::new(path).follow_links(true).sort_by_file_name() {
        let entry = entry.with_context(|| format!("{}: cannot list directory", path.display()))?;
        let name = entry.file_name().to_string_lossy();
        if entry.depth() > 0 && (name.starts_with('.') || name.starts_with('_')) {
            continue;
        }
        if entry.file_type().is_file() {
            out.push(Found { location: Location::File(entry.path().to_path_buf()), size: size(entry.path()), etag: None, explicit: false });
        }
    }
    Ok(())
}

pub(super) fn ranges(path: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    ranges
        .iter()
        .map(|r| {
            let mut buf = vec![0u8; (r.end - r.start) as usize];
            file.read_exact_at(&mut buf, r.start).with_context(|| format!("{}: cannot read bytes {}..{}", path.display(), r.start, r.end))?;
            Ok(Bytes::from(buf))
        })
        .collect()
}
