//! Where bytes live: local files, stdin/stdout (`-`) and S3 objects (`s3://bucket/key`), behind
//! one location type parsed once. Listing, reading and atomic writing happen here, nowhere else.

mod direct_io;
mod disk_reader;
mod disk_writer;
mod file;
mod s3;

pub use disk_writer::DiskWriter;
pub use file::{map_file, release, MappedFile};

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use bytes::Bytes;

use crate::temp::TempFile;

/// Where an input is read from or an output written to.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Location {
    /// `-`: stdin for an input, stdout for an output.
    Std,
    File(PathBuf),
    S3 { bucket: String, key: String },
}

impl Location {
    /// `-`, `s3://bucket/key`, or a local path.
    pub fn parse(arg: &str) -> Result<Location> {
        if arg == "-" {
            return Ok(Location::Std);
        }
        if let Some(rest) = arg.strip_prefix("s3://") {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                bail!("{arg}: no bucket name");
            }
            return Ok(Location::S3 { bucket: bucket.into(), key: key.into() });
        }
        Ok(Location::File(PathBuf::from(arg)))
    }

    /// The last part of the name (for formats and hidden files).
    pub fn file_name(&self) -> &str {
        match self {
            Location::Std => "",
            Location::File(p) => p.file_name().and_then(|n| n.to_str()).unwrap_or(""),
            Location::S3 { key, .. } => key.rsplit('/').next().unwrap_or(key),
        }
    }

    pub fn is_std(&self) -> bool {
        *self == Location::Std
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Std => f.write_str("-"),
            Location::File(p) => write!(f, "{}", p.display()),
            Location::S3 { bucket, key } => write!(f, "s3://{bucket}/{key}"),
        }
    }
}

/// Bytes already read from stdin to tell what it holds; `open` gives them back first.
static STDIN_HEAD: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

/// The first `n` bytes of stdin (fewer if it ends first), without consuming them: the next
/// `open` of stdin starts with them.
pub fn peek_stdin(n: usize) -> Result<Vec<u8>> {
    let mut head = STDIN_HEAD.lock().expect("no thread panics holding it");
    if head.len() < n {
        let missing = (n - head.len()) as u64;
        std::io::stdin().lock().take(missing).read_to_end(&mut head).context("reading stdin")?;
    }
    Ok(head[..head.len().min(n)].to_vec())
}

/// One object an input argument names.
#[derive(Clone, Debug)]
pub struct Found {
    pub location: Location,
    pub size: Option<u64>,
    /// S3 objects: the ETag, which changes when the object does.
    pub etag: Option<String>,
    /// Named by the argument itself (read whatever its name), not found inside a folder or
    /// prefix or by a glob (read only when its name says it is a dump).
    pub explicit: bool,
}

/// The storage of one run: S3 clients are built once per bucket and shared.
#[derive(Default)]
pub struct Storage {
    s3: s3::Clients,
}

impl Storage {
    pub fn new() -> Storage {
        Storage::default()
    }

    /// What an input argument names: a file; every file under a folder (hidden and
    /// `_`-prefixed ones skipped); the files a glob matches; stdin; or the same over S3
    /// (one object, a prefix, a glob). Errors name the argument when it names nothing.
    pub fn list(&self, arg: &str) -> Result<Vec<Found>> {
        match Location::parse(arg)? {
            Location::Std => Ok(vec![Found { location: Location::Std, size: None, etag: None, explicit: true }]),
            Location::File(path) => file::list(arg, &path),
            Location::S3 { bucket, key } => self.s3.list(arg, &bucket, &key),
        }
    }

    /// The object's bytes as a stream.
    pub fn open(&self, location: &Location) -> Result<Box<dyn Read + Send>> {
        match location {
            Location::Std => {
                let head = std::mem::take(&mut *STDIN_HEAD.lock().expect("no thread panics holding it"));
                Ok(Box::new(std::io::Cursor::new(head).chain(std::io::stdin())))
            }
            Location::File(p) => Ok(Box::new(File::open(p).with_context(|| format!("{}: cannot open", p.display()))?)),
            Location::S3 { bucket, key } => self.s3.open(bucket, key),
        }
    }

    /// Opens a large object to be read once, front to back (a manifest): a local file is read
    /// straight from the disk (`DiskReader`), past the page cache.
    pub fn open_sequential(&self, location: &Location) -> Result<Box<dyn Read + Send>> {
        match location {
            Location::File(p) => {
                let file = File::open(p).with_context(|| format!("{}: cannot open", p.display()))?;
                if file.metadata().is_ok_and(|m| m.is_file()) {
                    Ok(Box::new(disk_reader::DiskReader::new(&file).with_context(|| format!("{}: cannot read", p.display()))?))
                } else {
                    Ok(Box::new(file))
                }
            }
            other => self.open(other),
        }
    }

    /// A local file mapped into memory (`map_file`); None for stdin, S3, pipes and empty files.
    pub fn map(&self, location: &Location) -> Result<Option<MappedFile>> {
        match location {
            Location::File(path) => map_file(path),
            Location::Std | Location::S3 { .. } => Ok(None),
        }
    }

    /// Opens objects (with their sizes, when known) one after another, in order; small S3
    /// objects are fetched ahead, several at once, so many small objects cost little more than
    /// one large one. Take them in order.
    pub fn open_in_order(&self, objects: &[(Location, Option<u64>)]) -> Opener<'_> {
        Opener { storage: self, ahead: s3::Ahead::start(&self.s3, objects) }
    }

    /// The whole object (small files: reports, policies).
    pub fn read_all(&self, location: &Location) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open(location)?.read_to_end(&mut bytes).with_context(|| format!("{location}: cannot read"))?;
        Ok(bytes)
    }

    /// Byte ranges of an object (Parquet footers and column chunks), fetched together.
    pub fn read_ranges(&self, location: &Location, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        match location {
            Location::S3 { bucket, key } => self.s3.ranges(bucket, key, ranges),
            Location::File(p) => file::ranges(p, ranges),
            Location::Std => bail!("stdin cannot be read at random"),
        }
    }

    /// Writes `bytes` whole: stdout, or a file through a temporary file and a rename (a
    /// reader never sees half of it), or one S3 PUT.
    pub fn write(&self, location: &Location, bytes: &[u8]) -> Result<()> {
        match location {
            Location::Std => {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                match out.write_all(bytes).and_then(|_| out.flush()) {
                    // The reader went away (`| head`): nothing more is wanted, and nothing is wrong.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                    other => other.context("writing to stdout"),
                }
            }
            Location::File(path) => {
                let mut output = Output::create(self, location)?;
                std::io::Write::write_all(output.file(), bytes).with_context(|| format!("{}: write failed", path.display()))?;
                output.commit()
            }
            Location::S3 { bucket, key } => self.s3.put(bucket, key, bytes.to_vec()),
        }
    }
}

/// Opens the objects given to `Storage::open_in_order`, in that order.
pub struct Opener<'a> {
    storage: &'a Storage,
    ahead: s3::Ahead,
}

impl Opener<'_> {
    pub fn open(&self, location: &Location) -> Result<Box<dyn Read + Send>> {
        match self.ahead.take(location) {
            Some(fetched) => Ok(Box::new(std::io::Cursor::new(fetched?))),
            None => self.storage.open(location),
        }
    }

    /// A local file mapped into memory (`Storage::map`).
    pub fn map(&self, location: &Location) -> Result<Option<MappedFile>> {
        self.storage.map(location)
    }
}

/// An output being written: a temporary file (beside a local destination, so the commit is a
/// rename; in the temporary folder for S3, uploaded in parts on commit). Dropped uncommitted,
/// it leaves nothing behind.
pub struct Output<'a> {
    storage: &'a Storage,
    destination: Location,
    temp: TempFile,
    file: File,
}

impl<'a> Output<'a> {
    pub fn create(storage: &'a Storage, destination: &Location) -> Result<Output<'a>> {
        let temp = match destination {
            Location::Std => bail!("this output must be a file or an s3:// object, not stdout"),
            Location::File(path) => {
                let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
                std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
                TempFile::in_dir(dir)
            }
            Location::S3 { .. } => TempFile::new(),
        };
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(temp.path())
            .with_context(|| format!("{destination}: cannot create {}", temp.path().display()))?;
        Ok(Output { storage, destination: destination.clone(), temp, file })
    }

    /// The temporary file to write (and seek in).
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Puts the written file in place: synced and renamed, or uploaded.
    pub fn commit(self) -> Result<()> {
        let name = &self.destination;
        self.file.sync_all().with_context(|| format!("{name}: write failed"))?;
        match &self.destination {
            // A device or pipe (`-o /dev/null`, `-o /dev/stdout`, a FIFO) gets the bytes written
            // into it: renaming over it would replace the device with a file.
            Location::File(path) if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) => {
                let mut written = File::open(self.temp.path()).with_context(|| format!("{name}: write failed"))?;
                let mut device = File::options().write(true).open(path).with_context(|| format!("{name}: cannot open for writing"))?;
                std::io::copy(&mut written, &mut device).with_context(|| format!("{name}: write failed"))?;
                Ok(())
            }
            Location::File(path) => self.temp.persist(path).with_context(|| format!("{name}: cannot write")),
            Location::S3 { bucket, key } => self.storage.s3.upload(bucket, key, self.temp.path()),
            Location::Std => unreachable!("refused at create"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_once() {
        assert_eq!(Location::parse("-").unwrap(), Location::Std);
        assert_eq!(Location::parse("s3://b/k/x.jsonl").unwrap(), Location::S3 { bucket: "b".into(), key: "k/x.jsonl".into() });
        assert_eq!(Location::parse("s3://b").unwrap(), Location::S3 { bucket: "b".into(), key: "".into() });
        assert!(Location::parse("s3:///k").is_err());
        assert_eq!(Location::parse("dumps/a.jsonl").unwrap(), Location::File("dumps/a.jsonl".into()));
        assert_eq!(Location::parse("s3://b/k/x.jsonl").unwrap().to_string(), "s3://b/k/x.jsonl");
        assert_eq!(Location::parse("s3://b/k/x.jsonl").unwrap().file_name(), "x.jsonl");
    }

    #[test]
    fn an_output_to_a_device_or_pipe_writes_into_it_and_leaves_it_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        Storage::new().write(&Location::File(fifo.clone()), b"{}\n").unwrap();
        assert_eq!(reader.join().unwrap(), b"{}\n");
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&std::fs::metadata(&fifo).unwrap().file_type()), "still a pipe");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
        Storage::new().write(&Location::File("/dev/null".into()), b"x").unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(&std::fs::metadata("/dev/null").unwrap().file_type()));
    }

    #[test]
    fn an_uncommitted_output_leaves_nothing_and_a_committed_one_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::new();
        let target = Location::File(dir.path().join("out/report.json"));
        let mut output = Output::create(&storage, &target).unwrap();
        std::io::Write::write_all(output.file(), b"half").unwrap();
        drop(output);
        assert_eq!(std::fs::read_dir(dir.path().join("out")).unwrap().count(), 0);
        storage.write(&target, b"{}\n").unwrap();
        assert_eq!(std::fs::read(dir.path().join("out/report.json")).unwrap(), b"{}\n");
    }
}
