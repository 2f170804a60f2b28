//! Where records come from: resolves the user's input arguments to concrete inputs and scans
//! them in parallel into an accumulator, counting and naming every row it cannot read.

pub mod json_fields;
mod jsonl;
mod local;
mod parquet;
mod records;
pub mod s3;

use std::path::PathBuf;

use anyhow::Result;

pub use local::resolve_inputs;
pub use json_fields::FieldPicker;
pub use jsonl::{for_each_line, open_reader};
pub use records::{FullRow, Record};

use crate::progress::Progress;
use crate::signature::{Layout, RowFacts};

/// How many rejected rows are kept with their `file:line: reason`; all are counted.
pub const NAMED_REJECTS: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Parquet,
    Jsonl(Compression),
}

#[derive(Clone, Debug)]
pub enum Location {
    Stdin,
    Path(PathBuf),
    S3 { bucket: String, key: String },
}

/// One concrete input: a file (or stdin) with a known format.
#[derive(Clone, Debug)]
pub struct Input {
    /// How the input is named in messages: the path as the user gave or we found it.
    pub display: String,
    pub location: Location,
    pub format: Format,
    pub size: Option<u64>,
}

/// What a scan folds every accepted row into. Merge must be order-independent, so results do
/// not depend on file order, chunking or thread count.
pub trait Accumulator: Send + Sized {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts);
    fn merge(&mut self, other: Self);
}

/// An analysis that may be switched off for a run.
impl<A: Accumulator> Accumulator for Option<A> {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts) {
        if let Some(a) = self {
            a.add(signature_key, row);
        }
    }

    fn merge(&mut self, other: Self) {
        match (self.as_mut(), other) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => *self = Some(b),
            (_, None) => {}
        }
    }
}

/// Two analyses from one scan (the HTML report needs the ranking and the trend).
impl<A: Accumulator, B: Accumulator> Accumulator for (A, B) {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts) {
        self.0.add(signature_key, row);
        self.1.add(signature_key, row);
    }

    fn merge(&mut self, other: Self) {
        self.0.merge(other.0);
        self.1.merge(other.1);
    }
}

/// Rows outside `[since, until)` are skipped (not rejected).
#[derive(Clone, Copy, Debug, Default)]
pub struct Window {
    pub since: Option<i64>,
    pub until: Option<i64>,
}

impl Window {
    pub fn contains(&self, time: i64) -> bool {
        self.since.is_none_or(|s| time >= s) && self.until.is_none_or(|u| time < u)
    }
}

/// Drops inputs inside hive day partitions (`dt=YYYY-MM-DD/` or `date=YYYY-MM-DD/`) whose day
/// lies wholly outside the window, so they are never read. A partition's day is taken to be
/// the day of the failures it holds.
pub fn prune_partitions(inputs: Vec<Input>, window: Window) -> Vec<Input> {
    if window.since.is_none() && window.until.is_none() {
        return inputs;
    }
    inputs
        .into_iter()
        .filter(|input| {
            let day = input.display.split('/').find_map(|part| {
                let value = part.strip_prefix("dt=").or_else(|| part.strip_prefix("date="))?;
                crate::timestamp::parse_rfc3339(&format!("{value}T00:00:00Z"))
            });
            match day {
                None => true,
                Some(start) => {
                    let end = start + 86_400_000_000;
                    window.since.is_none_or(|s| end > s) && window.until.is_none_or(|u| start < u)
                }
            }
        })
        .collect()
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reject {
    pub input: String,
    pub line: u64,
    pub reason: String,
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.input, self.line, self.reason)
    }
}

/// Counts for a scan; `rejects` holds the first `NAMED_REJECTS` in input and line order.
#[derive(Debug, Default)]
pub struct Tally {
    pub accepted: u64,
    pub outside_window: u64,
    pub rejected: u64,
    pub rejects: Vec<Reject>,
}

impl Tally {
    fn absorb(&mut self, other: Tally) {
        self.accepted += other.accepted;
        self.outside_window += other.outside_window;
        self.rejected += other.rejected;
        self.rejects.extend(other.rejects);
        self.rejects.truncate(NAMED_REJECTS);
    }
}

pub struct Scan<'a> {
    pub layout: &'a Layout,
    pub window: Window,
    pub progress: &'a Progress,
}

impl Scan<'_> {
    /// Reads every input into one accumulator made by `make`.
    pub fn run<A, F>(&self, inputs: &[Input], make: F) -> Result<(A, Tally)>
    where
        A: Accumulator,
        F: Fn() -> A + Sync,
    {
        let mut acc = make();
        let mut tally = Tally::default();
        for input in inputs {
            let (part, part_tally) = match input.format {
                Format::Parquet => {
                    let local = LocalCopy::of(input)?;
                    parquet::scan(self, local.path(), &input.display, &make)?
                }
                Format::Jsonl(compression) => jsonl::scan(self, input, compression, &make)?,
            };
            acc.merge(part);
            tally.absorb(part_tally);
        }
        self.progress.finish();
        Ok((acc, tally))
    }

    /// Shared by the sources: extract one row and fold it in, or record why it was rejected.
    fn take_row<'c, A: Accumulator>(
        &self,
        cells: &'c [crate::signature::Cell<'c>],
        key: &mut Vec<u8>,
        acc: &mut A,
        tally: &mut LocalTally,
        line: u64,
    ) {
        match self.layout.extract(cells, key) {
            Ok(row) => {
                if self.window.contains(row.time) {
                    acc.add(key, &row);
                    tally.accepted += 1;
                } else {
                    tally.outside_window += 1;
                }
            }
            Err(reason) => tally.reject(line, reason),
        }
    }
}

/// A Parquet input as a local file: the file itself, or an S3 object downloaded for the scan.
pub enum LocalCopy<'a> {
    Borrowed(&'a std::path::Path),
    Downloaded(crate::temp::TempFile),
}

impl<'a> LocalCopy<'a> {
    pub fn of(input: &'a Input) -> Result<LocalCopy<'a>> {
        match &input.location {
            Location::Path(p) => Ok(LocalCopy::Borrowed(p)),
            Location::S3 { bucket, key } => Ok(LocalCopy::Downloaded(s3::download(bucket, key)?)),
            Location::Stdin => anyhow::bail!("{}: Parquet cannot be read from stdin", input.display),
        }
    }

    pub fn path(&self) -> &std::path::Path {
        match self {
            LocalCopy::Borrowed(p) => p,
            LocalCopy::Downloaded(t) => t.path(),
        }
    }
}

/// A tally for one piece of one input, with line numbers local to that piece.
#[derive(Default)]
struct LocalTally {
    accepted: u64,
    outside_window: u64,
    rejected: u64,
    rejects: Vec<(u64, String)>,
}

impl LocalTally {
    fn reject(&mut self, line: u64, reason: String) {
        self.rejected += 1;
        if self.rejects.len() < NAMED_REJECTS {
            self.rejects.push((line, reason));
        }
    }

    /// Merges another piece whose line numbers are in the same numbering as this one's.
    fn merge_sorted(&mut self, other: LocalTally) {
        self.accepted += other.accepted;
        self.outside_window += other.outside_window;
        self.rejected += other.rejected;
        self.rejects.extend(other.rejects);
        self.rejects.sort_by_key(|(line, _)| *line);
        self.rejects.truncate(NAMED_REJECTS);
    }

    /// Converts to a `Tally`, shifting local line numbers by `first_line - 1`.
    fn into_tally(self, input: &str, line_offset: u64) -> Tally {
        Tally {
            accepted: self.accepted,
            outside_window: self.outside_window,
            rejected: self.rejected,
            rejects: self
                .rejects
                .into_iter()
                .map(|(line, reason)| Reject { input: input.to_string(), line: line + line_offset, reason })
                .collect(),
        }
    }
}
