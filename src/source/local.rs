//! Local inputs: files, directories (recursive, hive `dt=…/` folders included), globs and `-`.
//! Formats come from the file name, or from the first bytes when the name says nothing.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use walkdir::WalkDir;

use super::{Compression, Format, Input, Location};

/// Expands the command line's inputs into concrete ones, sorted by name (byte order) so that
/// results never depend on the order they were given in; a file named twice is read once.
pub fn resolve_inputs(args: &[String]) -> Result<Vec<Input>> {
    // Each input with what makes it the same file: its canonical path, or its URL.
    let mut found: Vec<(Input, String)> = Vec::new();
    for arg in args {
        if arg == "-" {
            let stdin = Input { display: "<stdin>".into(), location: Location::Stdin, format: Format::Jsonl(Compression::None), size: None };
            found.push((stdin, "-".into()));
            continue;
        }
        if arg.starts_with("s3://") {
            found.extend(super::s3::resolve(arg)?.into_iter().map(|input| {
                let url = input.display.clone();
                (input, url)
            }));
            continue;
        }
        let path = Path::new(arg);
        let mut files = Vec::new();
        if path.exists() {
            collect(path, true, &mut files)?;
        } else if arg.contains(['*', '?', '[']) {
            let matches = glob::glob(arg).with_context(|| format!("invalid glob pattern `{arg}`"))?;
            for entry in matches {
                let entry = entry.with_context(|| format!("reading matches of `{arg}`"))?;
                collect(&entry, false, &mut files)?;
            }
            if files.is_empty() {
                bail!("{arg}: no dump files match this pattern");
            }
        } else {
            bail!("{arg}: no such file or directory");
        }
        for (path, format) in files {
            let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
            let size = std::fs::metadata(&path).ok().map(|m| m.len());
            let input = Input { display: path.display().to_string(), location: Location::Path(path), format, size };
            found.push((input, canonical.to_string_lossy().into_owned()));
        }
    }
    found.sort_by(|a, b| a.0.display.cmp(&b.0.display).then_with(|| a.1.cmp(&b.1)));
    let mut seen = HashSet::new();
    Ok(found.into_iter().filter(|(_, same)| seen.insert(same.clone())).map(|(input, _)| input).collect())
}

/// A file named explicitly is read whatever its name; inside directories only dump files
/// (by extension) count, hidden and `_`-prefixed ones (`_SUCCESS`) are skipped.
fn collect(path: &Path, explicit: bool, out: &mut Vec<(PathBuf, Format)>) -> Result<()> {
    if path.is_file() {
        let format = match format_from_name(path) {
            Some(f) => f,
            None if explicit => sniff(path)?,
            None => return Ok(()),
        };
        out.push((path.to_path_buf(), format));
        return Ok(());
    }
    let mut files = Vec::new();
    for entry in WalkDir::new(path).follow_links(true).sort_by_file_name() {
        let entry = entry.with_context(|| format!("{}: cannot list directory", path.display()))?;
        let name = entry.file_name().to_string_lossy();
        if entry.depth() > 0 && (name.starts_with('.') || name.starts_with('_')) {
            continue;
        }
        if entry.file_type().is_file() {
            if let Some(format) = format_from_name(entry.path()) {
                files.push((entry.into_path(), format));
            }
        }
    }
    out.extend(files);
    Ok(())
}

pub fn format_from_name(path: &Path) -> Option<Format> {
    let name = path.file_name()?.to_string_lossy().to_lowercase();
    let (stem, compression) = if let Some(s) = name.strip_suffix(".gz") {
        (s, Compression::Gzip)
    } else if let Some(s) = name.strip_suffix(".zst").or_else(|| name.strip_suffix(".zstd")) {
        (s, Compression::Zstd)
    } else {
        (name.as_str(), Compression::None)
    };
    if compression == Compression::None && (stem.ends_with(".parquet") || stem.ends_with(".pq")) {
        return Some(Format::Parquet);
    }
    if stem.ends_with(".jsonl") || stem.ends_with(".ndjson") || stem.ends_with(".json") {
        return Some(Format::Jsonl(compression));
    }
    None
}

fn sniff(path: &Path) -> Result<Format> {
    let mut head = [0u8; 4];
    let mut file = std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let n = file.read(&mut head).with_context(|| format!("{}: cannot read", path.display()))?;
    Ok(match &head[..n] {
        b"PAR1" => Format::Parquet,
        [0x1f, 0x8b, ..] => Format::Jsonl(Compression::Gzip),
        [0x28, 0xb5, 0x2f, 0xfd] => Format::Jsonl(Compression::Zstd),
        _ => Format::Jsonl(Compression::None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_follow_the_file_name() {
        let f = |n: &str| format_from_name(Path::new(n));
        assert_eq!(f("a.parquet"), Some(Format::Parquet));
        assert_eq!(f("a.jsonl"), Some(Format::Jsonl(Compression::None)));
        assert_eq!(f("a.NDJSON"), Some(Format::Jsonl(Compression::None)));
        assert_eq!(f("a.jsonl.gz"), Some(Format::Jsonl(Compression::Gzip)));
        assert_eq!(f("a.jsonl.zst"), Some(Format::Jsonl(Compression::Zstd)));
        assert_eq!(f("a.csv"), None);
        assert_eq!(f("_SUCCESS"), None);
    }
}
