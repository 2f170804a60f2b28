//! Decoding: inputs (JSON-lines or Parquet, wherever `storage` finds them) become rows of
//! cells, each accepted through the profile or rejected with a reason, and reach their
//! consumer through one of three drivers: `fold` (rank, trend, health), `records` (plan, in
//! order) and `table` (query's raw records).

mod aligned;
mod document;
mod field_tree;
mod fields;
pub mod json_fields;
mod json_shape;
mod json_walk;
mod jsonl;
pub mod layout;
mod parquet;
mod parquet_check;
mod parquet_fold;
mod parquet_late;
mod first_times;
mod parquet_pages;
mod parquet_json;
mod parquet_nested;
mod rows;
mod table;

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{Context, Result};
use polars::prelude::DataFrame;
use rayon::prelude::*;

pub use json_fields::FieldPicker;
pub use rows::{ColumnRecords, FullRow, Record};
pub use table::{Ndjson, RawTable};

use crate::messages::Progress;
use layout::{Layout, RowFacts};
pub use first_times::FirstTimes;
use crate::storage::{Location, Opener, Storage};
use jsonl::Chunks;
use parquet::{Group, ParquetSource};
use rows::{PieceTally, Rows};

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
    /// A partial state (`dlqf.state/1`): counts, not rows; read by `state`, not decoded here.
    State,
}

/// One concrete input with a known format.
#[derive(Clone, Debug)]
pub struct Input {
    /// How the input is named in messages: the path or URL as found.
    pub display: String,
    pub location: Location,
    pub format: Format,
    pub size: Option<u64>,
    /// S3 objects: the ETag when listed.
    pub etag: Option<String>,
    /// The `.keys` and `.headers` files of an S3-sink chunk whose values file this is.
    pub aligned: Option<aligned::Siblings>,
}

/// What rows are read with from their input besides their own bytes.
#[derive(Default)]
struct InputContext {
    /// The hive partition folders the input lies in.
    partition: Vec<(String, String)>,
    /// The input is an aligned S3-sink chunk.
    aligned: bool,
}

impl InputContext {
    fn of(input: &Input) -> InputContext {
        InputContext { partition: hive_folders(&input.display), aligned: input.aligned.is_some() }
    }
}

/// The hive partition folders (`key=value`) a name lies in, outermost first.
pub fn hive_folders(name: &str) -> Vec<(String, String)> {
    let folders = name.rsplit_once('/').map_or("", |(dirs, _)| dirs);
    folders.split('/').filter_map(|part| part.split_once('=')).filter(|(k, _)| !k.is_empty()).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

impl Input {
    /// A local file's modification time (RFC 3339, UTC): with the size, how a reader sees that
    /// a file changed since it was read.
    pub fn modified(&self) -> Option<String> {
        let Location::File(path) = &self.location else { return None };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
        Some(crate::timestamp::format_micros(chrono::DateTime::<chrono::Utc>::from(modified).timestamp_micros()))
    }
}

/// Resolves input arguments into inputs sorted by name (byte order), so results never depend
/// on the order they were given in; a file named twice (or by name and through its folder)
/// is read once, under the smallest of its names. Inside folders, prefixes and globs only
/// dump files count (by extension); a file named explicitly is read whatever its name.
pub fn inputs(storage: &Storage, args: &[String]) -> Result<Vec<Input>> {
    let mut found: Vec<(Input, String)> = Vec::new();
    for arg in args {
        for object in storage.list(arg)? {
            let format = match format_from_name(object.location.file_name()) {
                Some(format) => format,
                None if object.explicit => sniff(storage, &object.location)?,
                None => continue,
            };
            let display = match &object.location {
                Location::Std => "<stdin>".to_string(),
                other => other.to_string(),
            };
            let same = match &object.location {
                Location::File(p) => p.canonicalize().unwrap_or_else(|_| p.clone()).to_string_lossy().into_owned(),
                _ => display.clone(),
            };
            found.push((Input { display, location: object.location, format, size: object.size, etag: object.etag, aligned: None }, same));
        }
    }
    found.sort_by(|a, b| a.0.display.cmp(&b.0.display).then_with(|| a.1.cmp(&b.1)));
    let mut seen = HashSet::new();
    let unique = found.into_iter().filter(|(_, same)| seen.insert(same.clone())).map(|(input, _)| input).collect();
    Ok(aligned::group(unique))
}

/// The format a file name implies: `.parquet`/`.pq`, `.jsonl`/`.ndjson`/`.json` with an
/// optional `.gz`/`.zst`, or `.state`.
pub fn format_from_name(name: &str) -> Option<Format> {
    let name = name.to_lowercase();
    if name.ends_with(".state") {
        return Some(Format::State);
    }
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

/// How every partial state begins (its header's first field): what tells one from a dump.
pub const STATE_HEAD: &[u8] = b"{\"state\":\"dlqf.state/";

/// The format of a file whose name says nothing, from its first bytes (stdin: partial states,
/// else JSON-lines, its compression found when it is read).
fn sniff(storage: &Storage, location: &Location) -> Result<Format> {
    if location.is_std() {
        let head = crate::storage::peek_stdin(STATE_HEAD.len())?;
        return Ok(if head == STATE_HEAD { Format::State } else { Format::Jsonl(Compression::None) });
    }
    let mut head = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(storage.open(location)?, STATE_HEAD.len() as u64), &mut head)
        .with_context(|| format!("{location}: cannot read"))?;
    Ok(match head.as_slice() {
        [b'P', b'A', b'R', b'1', ..] => Format::Parquet,
        head if head == STATE_HEAD => Format::State,
        _ => Format::Jsonl(Compression::None),
    })
}

/// What a scan folds every accepted row into. Merge must be order-independent, so results do
/// not depend on file order, chunking or thread count.
pub trait Accumulator: Send + Sized {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts);
    fn merge(&mut self, other: Self);

    /// A row group's rows whose keys a source numbered, column by column: an accumulator
    /// keyed by signature can gather them per number, look each key up once, and ask for a
    /// row's id only when it needs it.
    fn add_numbered(&mut self, rows: &NumberedRows) {
        for (r, n) in rows.accepted() {
            self.add(&rows.keys[n as usize], &(rows.facts)(r));
        }
    }
}

/// A row group's rows with numbered keys: row `r` has key number `numbers[r]` (`keys[n]` is
/// key number n; `NOT_ACCEPTED`: the row was rejected or outside the window) and time
/// `times[r]`; `facts(r)` gives its id and attempts too, at a cost (its page may be read only
/// then). `layout` tells which keys normalise alike, and `first_times` what the fold's other
/// parts met in each bucket.
pub struct NumberedRows<'a> {
    pub layout: &'a Layout,
    pub first_times: &'a FirstTimes,
    pub keys: &'a [Vec<u8>],
    pub numbers: &'a [u32],
    pub times: &'a [i64],
    pub facts: &'a dyn Fn(usize) -> RowFacts<'a>,
}

impl NumberedRows<'_> {
    /// The number of a row that is not handed over.
    pub const NOT_ACCEPTED: u32 = u32::MAX;

    /// The accepted rows and their key numbers, in row order.
    pub fn accepted(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.numbers.iter().enumerate().filter(|(_, &n)| n != Self::NOT_ACCEPTED).map(|(r, &n)| (r, n))
    }
}

/// An analysis that may be switched off for a run.
impl<A: Accumulator> Accumulator for Option<A> {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts) {
        if let Some(a) = self {
            a.add(signature_key, row);
        }
    }

    fn add_numbered(&mut self, rows: &NumberedRows) {
        if let Some(a) = self {
            a.add_numbered(rows);
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

    fn add_numbered(&mut self, rows: &NumberedRows) {
        self.0.add_numbered(rows);
        self.1.add_numbered(rows);
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
    inputs.into_iter().filter(|input| !partition_outside(&input.display, window)).collect()
}

/// Whether `name` lies in a hive day partition wholly outside the window.
pub fn partition_outside(name: &str, window: Window) -> bool {
    if window.since.is_none() && window.until.is_none() {
        return false;
    }
    let day = name.split('/').find_map(|part| {
        let value = part.strip_prefix("dt=").or_else(|| part.strip_prefix("date="))?;
        crate::timestamp::parse_rfc3339(&format!("{value}T00:00:00Z"))
    });
    match day {
        None => false,
        Some(start) => {
            let end = start + 86_400_000_000;
            !(window.since.is_none_or(|s| end > s) && window.until.is_none_or(|u| start < u))
        }
    }
}

/// A row that could not be read: where, and why (also kept as such in partial states).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
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

/// Rejected rows counted by the kind of their reason (values, quoted text and positions taken
/// out), each kind with its first reason, so that a run that accepts nothing can say why.
#[derive(Clone, Debug, Default)]
pub struct ReasonKinds(std::collections::HashMap<String, (u64, String)>);

/// Kinds of reason told apart; past these, rejects are counted as one more kind.
const REASON_KINDS: usize = 64;

impl ReasonKinds {
    pub fn add(&mut self, reason: &str, rows: u64) {
        let mut kind = reason_kind(reason);
        if self.0.len() >= REASON_KINDS && !self.0.contains_key(&kind) {
            kind = "other reasons".into();
        }
        self.0.entry(kind).or_insert_with(|| (0, reason.to_string())).0 += rows;
    }

    pub fn merge(&mut self, other: ReasonKinds) {
        for (kind, (rows, example)) in other.0 {
            let entry = self.0.entry(kind).or_insert((0, example.clone()));
            entry.0 += rows;
            if example < entry.1 {
                entry.1 = example;
            }
        }
    }

    /// The `n` most common kinds: an example reason of each and its rows, most rows first.
    pub fn most_common(&self, n: usize) -> Vec<(&str, u64)> {
        let mut kinds: Vec<(&str, u64, &str)> = self.0.iter().map(|(kind, (rows, example))| (example.as_str(), *rows, kind.as_str())).collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.2.cmp(b.2)));
        kinds.into_iter().take(n).map(|(example, rows, _)| (example, rows)).collect()
    }
}

/// A reason without what varies from row to row: quoted text, numbers.
fn reason_kind(reason: &str) -> String {
    let mut kind = String::with_capacity(reason.len());
    let mut chars = reason.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                kind.push_str("\"…\"");
                let mut escaped = false;
                for c in chars.by_ref() {
                    match c {
                        '\\' if !escaped => escaped = true,
                        '"' if !escaped => break,
                        _ => escaped = false,
                    }
                }
            }
            c if c.is_ascii_digit() => {
                kind.push('N');
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
            }
            c => kind.push(c),
        }
    }
    kind
}

/// Counts for a scan; `rejects` holds the first `NAMED_REJECTS` in input and line order.
#[derive(Debug, Default)]
pub struct Tally {
    pub accepted: u64,
    pub outside_window: u64,
    pub rejected: u64,
    pub rejects: Vec<Reject>,
    /// Every rejected row, by kind of reason.
    pub kinds: ReasonKinds,
    /// Rejected rows of each input, in input order (`fold` only).
    pub rejected_by_input: Vec<u64>,
}

/// A scan of inputs through a profile's layout and a time window.
pub struct Scan<'a> {
    pub storage: &'a Storage,
    pub layout: &'a Layout,
    pub window: Window,
    pub progress: &'a Progress,
}

/// An input cut into pieces decoded independently: chunks of lines, or row groups.
enum Pieces<'s> {
    Lines(Chunks),
    Groups(ParquetSource<'s>, Vec<Group>),
    /// A whole input as one frame (an aligned S3-sink chunk in Parquet).
    Frame(Arc<DataFrame>),
}

/// One piece, numbered in input order.
enum Piece {
    Chunk(usize, jsonl::ChunkBytes),
    Group(Group),
    /// Rows of a loaded row group (every column), for readers of whole records: a group is
    /// decoded in slices so the records built from it at once stay few.
    Slice(RecordSlice),
}

struct RecordSlice {
    group: Arc<DataFrame>,
    index: usize,
    offset: usize,
    rows: usize,
    /// The slice's share of the group's bytes, for progress.
    bytes: u64,
}

/// A stream's chunks of lines as pieces.
fn chunk_pieces(chunks: &Chunks) -> impl Iterator<Item = Result<Piece>> + Send + '_ {
    chunks.iter().map(|chunk| chunk.map(|(index, bytes)| Piece::Chunk(index, bytes)))
}

/// Rows of a row group decoded as one slice when reading whole records.
const SLICE_ROWS: usize = 4_096;

/// A row group's rows in slices of `SLICE_ROWS`, for readers of whole records: each part of
/// the group loaded when its slices are due.
fn record_slices<'a>(source: &'a ParquetSource, group: Group) -> impl Iterator<Item = Result<Piece>> + Send + 'a {
    let (held, mut failed) = match source.hold(group, None) {
        Ok(held) => (Some(held), None),
        Err(e) => (None, Some(e)),
    };
    // A group that cannot be held is one failed part.
    let parts: Box<dyn Iterator<Item = std::ops::Range<usize>> + Send> = if held.is_some() { Box::new(source.parts(group)) } else { Box::new(std::iter::once(0..0)) };
    let group_rows = group.rows.max(1);
    parts.flat_map(move |part| -> Vec<Result<Piece>> {
        let Some(held) = &held else { return failed.take().map(Err).into_iter().collect() };
        let df = match source.load_rows(held, group, None, Some(part)) {
            Ok(df) => Arc::new(df),
            Err(e) => return vec![Err(e)],
        };
        let height = df.height();
        (0..height)
            .step_by(SLICE_ROWS)
            .map(|offset| {
                let rows = SLICE_ROWS.min(height - offset);
                let bytes = group.bytes * rows as u64 / group_rows as u64;
                Ok(Piece::Slice(RecordSlice { group: df.clone(), index: group.index, offset, rows, bytes }))
            })
            .collect()
    })
}

/// A whole frame in slices of `SLICE_ROWS`, numbered in order.
fn frame_slices(frame: &Arc<DataFrame>) -> impl rayon::iter::ParallelIterator<Item = Result<Piece>> + '_ {
    let height = frame.height();
    (0..height.div_ceil(SLICE_ROWS)).into_par_iter().map(move |index| {
        let offset = index * SLICE_ROWS;
        let rows = SLICE_ROWS.min(height - offset);
        Ok(Piece::Slice(RecordSlice { group: frame.clone(), index, offset, rows, bytes: 0 }))
    })
}

/// Slices handed on ahead of the one due: fewer than a part holds, so that the next part of a
/// row group loads while this part's last slices are decoded and written, and no third part is
/// held (a part's worth ahead held one: 317-330 MiB against 267-294 for pyarrow's groups).
const SLICES_AHEAD: usize = 8;

/// `slices`, pulled on a thread of `scope` up to `SLICES_AHEAD` ahead of the caller. Loading a
/// part (polars decompressing and decoding its columns) had held up the thread that hands
/// batches on in order, and with it the manifest's hashing, once every 131,072 rows.
fn loaded_ahead<'scope, 'env, I>(scope: &'scope std::thread::Scope<'scope, 'env>, slices: I) -> impl Iterator<Item = Result<Piece>> + Send + 'env
where
    I: Iterator<Item = Result<Piece>> + Send + 'env,
    'env: 'scope,
{
    let (ahead, slices_due) = std::sync::mpsc::sync_channel(SLICES_AHEAD);
    scope.spawn(move || {
        for slice in slices {
            // The receiver is gone once reading stopped.
            if ahead.send(slice).is_err() {
                break;
            }
        }
    });
    slices_due.into_iter()
}

impl Piece {
    fn index(&self) -> usize {
        match self {
            Piece::Chunk(index, _) => *index,
            Piece::Group(group) => group.index,
            Piece::Slice(slice) => slice.index,
        }
    }

    /// Bytes read, for progress.
    fn bytes(&self) -> u64 {
        match self {
            Piece::Chunk(_, bytes) => bytes.len() as u64,
            Piece::Group(group) => group.bytes,
            Piece::Slice(slice) => slice.bytes,
        }
    }
}

impl Scan<'_> {
    fn rows<'r>(&'r self, input: &'r InputContext) -> Rows<'r> {
        Rows { layout: self.layout, window: self.window, partition: &input.partition, aligned: input.aligned }
    }

    fn pieces<'s>(&'s self, opener: &Opener, input: &Input) -> Result<Pieces<'s>> {
        Ok(match input.format {
            Format::State => anyhow::bail!("{}: a partial state holds counts, not rows: rank, trend and health read it", input.display),
            Format::Jsonl(_) if input.aligned.is_some() => Pieces::Lines(aligned::json_chunks(self.storage, input)?),
            Format::Jsonl(compression) => Pieces::Lines(jsonl::chunks(opener, input, compression)?),
            Format::Parquet if input.aligned.is_some() => Pieces::Frame(aligned::parquet_frame(self.storage, input)?),
            Format::Parquet => {
                let source = ParquetSource::open(self.storage, input)?;
                let groups = source.groups();
                Pieces::Groups(source, groups)
            }
        })
    }

    /// Decodes one piece, `accept` getting each accepted row (with its whole record when
    /// `records`). A chunk is decoded window by window as it is read, then given back.
    fn decode(&self, pieces: &Pieces, input: &InputContext, piece: Piece, records: bool, mut accept: impl FnMut(FullRow<'_>)) -> Result<PieceTally> {
        self.progress.advance(piece.bytes());
        let rows = self.rows(input);
        match (pieces, piece) {
            (Pieces::Lines(chunks), Piece::Chunk(_, bytes)) => {
                let mut decoder = jsonl::LineDecoder::new(&rows);
                chunks.read_windows(bytes, |window| decoder.decode(window, &mut accept))?;
                Ok(decoder.tally)
            }
            // polars' arrays from a file it could not fully check may panic when read: that is
            // the row group's corruption, named, never a crash (`contain`; loading is contained
            // in `load` itself).
            (Pieces::Groups(source, _), Piece::Group(group)) => {
                let roots = self.layout.roots();
                let columns = (!records && !self.layout.needs_record()).then_some(roots.as_slice());
                let df = source.load(group, columns)?;
                crate::contain::contained(|| parquet::decode(&rows, &df, records, accept)).unwrap_or_else(|panic| Err(source.corrupt_group(group, &panic)))
            }
            (Pieces::Groups(..) | Pieces::Frame(_), Piece::Slice(slice)) => {
                let frame = slice.group.slice(slice.offset as i64, slice.rows);
                crate::contain::contained(|| parquet::decode(&rows, &frame, records, accept))
                    .unwrap_or_else(|panic| Err(anyhow::anyhow!("corrupt Parquet data: the reader failed on it ({panic})")))
            }
            _ => unreachable!("pieces come from their own input"),
        }
    }

    /// Folds one row group into `acc` from its pages when it holds the usual column types
    /// (string signature columns and id, a string or native time, PLAIN or dictionary pages);
    /// None leaves it to polars, as does `DLQF_PARQUET_PAGES=off` for every group (tests
    /// compare the two readers with it).
    fn fold_pages<A: Accumulator>(&self, source: &ParquetSource, group: Group, first_times: &FirstTimes, acc: &mut A) -> Result<Option<PieceTally>> {
        static PAGES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if !*PAGES.get_or_init(|| std::env::var_os("DLQF_PARQUET_PAGES").is_none_or(|v| v != "off")) {
            return Ok(None);
        }
        let plan = self.layout.direct_columns().filter(|p| p.signature.iter().all(|s| ![Some(p.id), Some(p.time), p.attempts].contains(&Some(*s))));
        let Some(plan) = plan else { return Ok(None) };
        let Some(columns) = source.page_columns(group, plan, &self.layout.columns)? else { return Ok(None) };
        self.progress.advance(group.bytes);
        let tally = parquet_fold::fold_pages(&self.rows(&InputContext::default()), plan, &columns, first_times, acc);
        if columns.id.unreadable() {
            return Err(source.unreadable_ids(group, &self.layout.columns[plan.id]));
        }
        Ok(Some(tally))
    }

    /// Reads every input into one accumulator made by `make`: pieces are decoded in parallel,
    /// in any order, and merged.
    pub fn fold<A, F>(&self, inputs: &[Input], make: F) -> Result<(A, Tally)>
    where
        A: Accumulator,
        F: Fn() -> A + Sync,
    {
        let opener = self.storage.open_in_order(&objects(inputs));
        let mut acc = make();
        let mut tally = Tally::default();
        // What any part met in each bucket: rows later than that are folded without their ids.
        let first_times = FirstTimes::default();
        for input in inputs {
            let pieces = self.pieces(&opener, input)?;
            let context = InputContext::of(input);
            // A part goes on from piece to piece (a few parts a run, not one a piece): fewer to
            // merge.
            let read = |(mut part, mut tallies): Folded<A>, piece: Result<Piece>| -> Result<Folded<A>> {
                let piece = piece?;
                let index = piece.index();
                let from_pages = match (&pieces, &piece) {
                    (Pieces::Groups(source, _), Piece::Group(group)) => self.fold_pages(source, *group, &first_times, &mut part)?,
                    _ => None,
                };
                let piece_tally = match from_pages {
                    Some(tally) => tally,
                    None => self.decode(&pieces, &context, piece, false, |FullRow { key, facts, record, .. }| {
                        part.add(key, &facts);
                        // A line's text needs no drop: only an object calls its drop code.
                        if let Record::Object(object) = record {
                            drop(object);
                        }
                    })?,
                };
                tallies.push((index, piece_tally));
                Ok((part, tallies))
            };
            let start = || (make(), Vec::new());
            let folded = match &pieces {
                Pieces::Lines(chunks) => chunk_pieces(chunks).par_bridge().try_fold(start, read).try_reduce(start, merge),
                Pieces::Groups(_, groups) => groups.par_iter().map(|g| Ok(Piece::Group(*g))).try_fold(start, read).try_reduce(start, merge),
                Pieces::Frame(frame) => frame_slices(frame).try_fold(start, read).try_reduce(start, merge),
            };
            let (part, mut piece_tallies) = folded?;
            acc.merge(part);
            piece_tallies.sort_by_key(|(index, _)| *index);
            let before = tally.rejected;
            rows::absorb(&mut tally, &input.display, piece_tallies.into_iter().map(|(_, t)| t));
            tally.rejected_by_input.push(tally.rejected - before);
        }
        self.progress.finish();
        Ok((acc, tally))
    }

    /// Reads every accepted row with its whole record, in order: each piece's rows (in
    /// parallel with other pieces) go through `map` into a batch `start` makes, and `sink`
    /// gets the batches in order: inputs as resolved (by name), lines or rows in file order.
    /// The sink runs on its own thread, so writing one batch overlaps decoding the next, and
    /// memory stays bounded by a few batches.
    pub fn records<B, N, F, S>(&self, inputs: &[Input], start: N, map: F, mut sink: S) -> Result<Tally>
    where
        B: Send,
        N: Fn() -> B + Sync,
        F: Fn(&mut B, FullRow) + Sync,
        S: FnMut(B) -> Result<()> + Send,
    {
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<B>(2);
            let writer = scope.spawn(move || -> Result<()> { rx.into_iter().try_for_each(&mut sink) });
            let read = self.read_in_order(inputs, &start, &map, |batch| tx.send(batch).is_ok());
            drop(tx);
            let written = writer.join().expect("the sink thread does not panic");
            // A sink error explains a stopped read, so it comes first.
            written?;
            read
        })
    }

    /// Decodes every input's pieces in parallel, a few ahead of the one due next, handing
    /// each piece's batch to `emit` in order (false: stop). A piece starts as soon as a
    /// thread is free, not when a whole round of pieces is done.
    fn read_in_order<B, N, F>(&self, inputs: &[Input], start: &N, map: &F, mut emit: impl FnMut(B) -> bool) -> Result<Tally>
    where
        B: Send,
        N: Fn() -> B + Sync,
        F: Fn(&mut B, FullRow) + Sync,
    {
        let opener = self.storage.open_in_order(&objects(inputs));
        let mut tally = Tally::default();
        for input in inputs {
            let pieces = self.pieces(&opener, input)?;
            let context = InputContext::of(input);
            let (stopped, piece_tallies) = std::thread::scope(|threads| {
                let all: Box<dyn Iterator<Item = Result<Piece>> + Send + '_> = match &pieces {
                    Pieces::Lines(chunks) => Box::new(chunk_pieces(chunks)),
                    Pieces::Groups(source, groups) => Box::new(loaded_ahead(threads, groups.iter().flat_map(|g| record_slices(source, *g)))),
                    Pieces::Frame(frame) => Box::new(frame_slices(frame).collect::<Vec<_>>().into_iter()),
                };
                // The pieces left are dropped on return, which stops the thread loading them.
                self.decode_in_order(&pieces, &context, all, start, map, &mut emit)
            })?;
            rows::absorb(&mut tally, &input.display, piece_tallies);
            if stopped {
                return Ok(tally);
            }
        }
        self.progress.finish();
        Ok(tally)
    }

    /// `read_in_order` for one input's pieces: whether `emit` stopped the reading, and each
    /// piece's tally.
    fn decode_in_order<B, N, F>(
        &self,
        pieces: &Pieces,
        input: &InputContext,
        mut all: Box<dyn Iterator<Item = Result<Piece>> + Send + '_>,
        start: &N,
        map: &F,
        emit: &mut impl FnMut(B) -> bool,
    ) -> Result<(bool, Vec<PieceTally>)>
    where
        B: Send,
        N: Fn() -> B + Sync,
        F: Fn(&mut B, FullRow) + Sync,
    {
        let ahead = rayon::current_num_threads().max(1) * 2;
        let mut piece_tallies = Vec::new();
        // Waiting here (not on a pool thread) for the oldest piece leaves the pool to decode.
        let stopped = rayon::in_place_scope(|scope| -> Result<bool> {
            let mut in_flight = std::collections::VecDeque::new();
            loop {
                while in_flight.len() < ahead {
                    let Some(piece) = all.next() else { break };
                    let piece = piece?;
                    let (done, result) = std::sync::mpsc::sync_channel::<Result<(B, PieceTally)>>(1);
                    scope.spawn(move |_| {
                        let mut rows = start();
                        let decoded = self.decode(pieces, input, piece, true, |row| map(&mut rows, row)).map(|t| (rows, t));
                        // The receiver is gone only if reading already stopped.
                        let _ = done.send(decoded);
                    });
                    in_flight.push_back(result);
                }
                let Some(oldest) = in_flight.pop_front() else { return Ok(false) };
                let (rows, piece_tally) = oldest.recv().expect("a decoding task always reports")?;
                piece_tallies.push(piece_tally);
                if !emit(rows) {
                    return Ok(true);
                }
            }
        })?;
        Ok((stopped, piece_tallies))
    }
}

/// The inputs as storage objects, for opening in order.
fn objects(inputs: &[Input]) -> Vec<(Location, Option<u64>)> {
    inputs.iter().filter(|i| matches!(i.format, Format::Jsonl(_))).map(|i| (i.location.clone(), i.size)).collect()
}

type Folded<A> = (A, Vec<(usize, PieceTally)>);

fn merge<A: Accumulator>((mut a, mut ta): Folded<A>, (b, tb): Folded<A>) -> Result<Folded<A>> {
    a.merge(b);
    ta.extend(tb);
    Ok((a, ta))
}
