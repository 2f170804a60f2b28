//! Parquet: one row group per task, only the columns needed decoded (whole records a part of a
//! group at a time), so memory stays flat whatever the file size; a remote file is read by
//! ranged requests, never downloaded whole. Row numbers stand in for line numbers. Analyses
//! read a group's pages themselves when its columns have the usual types (`fold`), polars
//! reads the rest.

mod check;
mod fold;
mod late;
mod nested;
mod pages;
mod record;

use std::borrow::Cow;
use std::fs::File;
use std::io::Cursor;
use std::ops::Range;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use polars::prelude::{
    BooleanChunked, DataFrame, DataType, FileMetadata, Float64Chunked, Int64Chunked, Int64Type, ParallelStrategy, ParquetReader,
    PolarsDataType, SerReader, StaticArray, StringChunked, StringType, TimeUnit,
};

use polars_buffer::Buffer;
use polars_parquet::parquet::metadata::ColumnChunkMetadata;

pub(super) use fold::fold_pages;
use fold::{PageColumns, Times};
use late::{Ids, LateTexts};
use pages::{Codes, Ints, TextTimes, Texts};
use record::RowWriter;
use crate::source::input::Input;
use crate::source::row::layout::{push_part, Cell, DirectColumns, RowFacts};
use crate::source::row::rows::{ColumnRecords, FullRow, Record, Rows};
use crate::source::row::tally::PieceTally;
use crate::path::Step;
use crate::storage::{map_file, Location, Storage};
use crate::timestamp::DateCache;

/// Readers of whole records load a row group in parts of at most this many rows, and of
/// about this much of the group's uncompressed data: memory stays flat whatever size of
/// group the writer chose (pyarrow's are a million rows). Not smaller: polars decompresses
/// each page a part reaches whole, so the pages across a boundary are decompressed twice
/// (with 1 MiB pages, a 262,144-row group took 23% more zstd work in parts of 65,536 rows
/// than in parts of 131,072).
const PART_ROWS: usize = 131_072;
const PART_BYTES: usize = 32 << 20;
const MIN_PART_ROWS: usize = 4_096;

/// The bytes at the end of a Parquet file: footer length (4) and magic (4).
const TAIL: u64 = 8;
/// How much of the end of a remote file is fetched first, in the hope that the footer fits.
const FIRST_TAIL: u64 = 64 << 10;

/// A Parquet input opened for reading row groups: its footer read once; a local file is
/// memory-mapped by polars, an S3 object read by ranged requests for the column chunks needed.
pub(super) struct ParquetSource<'s> {
    display: String,
    metadata: Arc<FileMetadata>,
    /// The footer as it would be for each row group alone, so polars reads just that one.
    single: Vec<Arc<FileMetadata>>,
    read: Read<'s>,
}

enum Read<'s> {
    Local(std::path::PathBuf),
    Remote { storage: &'s Storage, location: Location, size: u64 },
}

/// One row group: its number, first row (0-based), rows and compressed bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Group {
    pub index: usize,
    pub offset: usize,
    pub rows: usize,
    pub bytes: u64,
}

impl<'s> ParquetSource<'s> {
    pub fn open(storage: &'s Storage, input: &Input) -> Result<ParquetSource<'s>> {
        let not_parquet = || format!("{}: not a readable Parquet file", input.display);
        let (read, metadata, file_len) = match &input.location {
            Location::File(path) => {
                let file = File::open(path).with_context(|| format!("{}: cannot open", input.display))?;
                let file_len = file.metadata().with_context(|| format!("{}: cannot open", input.display))?.len();
                // polars' footer parser may panic on a damaged footer: contained, it is this file's.
                let metadata = crate::contain::contained(|| ParquetReader::new(file).get_metadata().map(|m| m.clone()))
                    .map_err(|panic| anyhow::anyhow!("the footer cannot be parsed ({panic})"))
                    .and_then(|read| read.map_err(anyhow::Error::from))
                    .with_context(not_parquet)?;
                (Read::Local(path.clone()), metadata, file_len)
            }
            Location::S3 { .. } => {
                let size = match input.size {
                    Some(size) => size,
                    None => bail!("{}: size unknown", input.display),
                };
                let metadata = remote_metadata(storage, &input.location, size).with_context(not_parquet)?;
                (Read::Remote { storage, location: input.location.clone(), size }, metadata, size)
            }
            Location::Std => bail!("{}: Parquet cannot be read from stdin", input.display),
        };
        if let Err(why) = check::check(&metadata, file_len) {
            bail!("{}: corrupt Parquet footer: {why}", input.display);
        }
        let mut base = (*metadata).clone();
        base.row_groups = Vec::new();
        let single = metadata
            .row_groups
            .iter()
            .map(|rg| Arc::new(FileMetadata { row_groups: vec![rg.clone()], num_rows: rg.num_rows(), max_row_group_height: rg.num_rows(), ..base.clone() }))
            .collect();
        Ok(ParquetSource { display: input.display.clone(), metadata, single, read })
    }

    pub fn groups(&self) -> Vec<Group> {
        let mut offset = 0;
        self.metadata
            .row_groups
            .iter()
            .enumerate()
            .map(|(index, rg)| {
                let group = Group { index, offset, rows: rg.num_rows(), bytes: rg.compressed_size() as u64 };
                offset = offset.saturating_add(rg.num_rows());
                group
            })
            .collect()
    }

    /// The rows of a row group, in the parts a reader of whole records loads at once (none
    /// smaller than `MIN_PART_ROWS` for a footer's byte count, however large).
    pub fn parts(&self, group: Group) -> impl Iterator<Item = Range<usize>> + Send + 'static {
        let rows = group.rows;
        let by_bytes = self.metadata.row_groups[group.index].total_byte_size().div_ceil(PART_BYTES);
        let parts = rows.div_ceil(PART_ROWS).max(by_bytes.min(rows.div_ceil(MIN_PART_ROWS))).max(1);
        let step = rows.div_ceil(parts).max(1);
        (0..rows).step_by(step).map(move |start| start..rows.min(start + step))
    }

    /// One row group's `columns` (those the file has), or all its columns.
    pub fn load(&self, group: Group, columns: Option<&[String]>) -> Result<DataFrame> {
        self.load_rows(&self.hold(group, columns)?, group, columns, None)
    }

    /// The bytes of a row group's `columns` (or all), held while its parts are loaded: a
    /// remote group's column chunks are fetched once, not once a part; a local file is mapped.
    /// Every page header of those chunks is checked first (`check::check_pages`):
    /// polars' reader allocates what they claim.
    pub fn hold(&self, group: Group, columns: Option<&[String]>) -> Result<Held> {
        let rg = &self.metadata.row_groups[group.index];
        let chunks: Vec<&ColumnChunkMetadata> = match self.present(group, columns) {
            Some(names) => names.iter().flat_map(|n| rg.columns_under_root_iter(n).into_iter().flatten()).collect(),
            None => rg.parquet_columns().iter().collect(),
        };
        let cannot_open = || format!("{}: cannot open", self.display);
        let (held, mapped) = match &self.read {
            Read::Local(path) => match map_file(path)? {
                Some(mapped) => (Held::Local(mapped.file), Some(mapped.map)),
                None => (Held::Local(File::open(path).with_context(cannot_open)?), None),
            },
            Read::Remote { storage, location, size } => {
                let ranges: Vec<Range<u64>> = chunks.iter().map(|c| c.byte_range()).collect();
                (Held::Remote(Sparse::fetch(storage, location, *size, &ranges)?), None)
            }
        };
        let bytes: &[u8] = match (&held, &mapped) {
            (_, Some(map)) => map,
            (Held::Remote(file), _) => file.as_ref(),
            (Held::Local(_), None) => &[],
        };
        // (A local file that cannot be mapped is left to polars' reader unchecked.)
        if !bytes.is_empty() {
            for chunk in chunks {
                check::check_chunk(chunk, bytes, group.rows).map_err(|why| corrupt_chunk(&self.display, group.offset, chunk, &why))?;
            }
        }
        Ok(held)
    }

    /// `rows` of a held row group (or all of them), its `columns` or all.
    pub fn load_rows(&self, held: &Held, group: Group, columns: Option<&[String]>, rows: Option<Range<usize>>) -> Result<DataFrame> {
        let present = self.present(group, columns);
        let corrupt = || format!("{}: corrupt row group at row {}", self.display, group.offset + 1);
        // A whole group (for records) is loaded while nothing else decodes: its columns in
        // parallel. Groups of a few columns are decoded side by side instead.
        let parallel = if columns.is_none() { ParallelStrategy::Columns } else { ParallelStrategy::None };
        let single = self.single[group.index].clone();
        let slice = rows.as_ref().map(|r| (r.start, r.len()));
        // polars' reader may panic on bytes it does not check: that is this row group's
        // corruption, named, never a crash (`contain`).
        let read = crate::contain::contained(|| match held {
            Held::Local(file) => {
                let mut reader = ParquetReader::new(file.try_clone().with_context(|| format!("{}: cannot open", self.display))?).with_columns(present).with_slice(slice).read_parallel(parallel);
                reader.set_metadata(single);
                reader.finish().with_context(corrupt)
            }
            Held::Remote(file) => {
                let mut reader = ParquetReader::new(Cursor::new(file)).with_columns(present).with_slice(slice).read_parallel(parallel);
                reader.set_metadata(single);
                reader.finish().with_context(corrupt)
            }
        });
        read.unwrap_or_else(|panic| Err(self.corrupt_group(group, &panic)))
    }

    /// Of `columns`, those the row group has.
    fn present(&self, group: Group, columns: Option<&[String]>) -> Option<Vec<String>> {
        let rg = &self.metadata.row_groups[group.index];
        columns.map(|names| names.iter().filter(|n| rg.columns_under_root_iter(n).is_some()).cloned().collect())
    }

    /// The error of a row group whose data made the Parquet reader fail (`contain`).
    pub fn corrupt_group(&self, group: Group, why: &str) -> anyhow::Error {
        anyhow::anyhow!("{}: corrupt row group at row {}: the Parquet reader failed on it ({why})", self.display, group.offset + 1)
    }

    /// The error of a row group whose ids, read late, hold a page that cannot be read.
    pub fn unreadable_ids(&self, group: Group, column: &str) -> anyhow::Error {
        anyhow::anyhow!("{}: corrupt row group at row {}: a page of column `{column}` cannot be read", self.display, group.offset + 1)
    }

    /// What an analysis needs of one row group, read from its pages (`pages`): None
    /// unless the signature columns and the id are strings, the time a string or native
    /// timestamp column, the attempts integers (or absent), every page PLAIN or
    /// dictionary-encoded, and the tuples of signature codes can be numbered in 64 bits.
    /// Ids are read late (`late`) where every row has one.
    pub fn page_columns(&self, group: Group, plan: &DirectColumns, names: &[String]) -> Result<Option<PageColumns>> {
        let rg = &self.metadata.row_groups[group.index];
        let chunk = |i: usize| {
            let mut chunks = rg.columns_under_root_iter(&names[i])?;
            let chunk = chunks.next()?;
            chunks.next().is_none().then_some(chunk)
        };
        // Mapped for this row group only: pages of the file stay out of the resident set once
        // the group is read, as with polars' reader.
        let file = match &self.read {
            Read::Local(path) => match map_file(path)? {
                Some(mapped) => Buffer::from_owner(mapped.map),
                None => return Ok(None),
            },
            Read::Remote { storage, location, size } => {
                let wanted = [Some(plan.id), Some(plan.time), plan.attempts].into_iter().flatten().chain(plan.signature.iter().copied());
                let ranges: Vec<Range<u64>> = wanted.filter_map(chunk).map(|c| c.byte_range()).collect();
                Buffer::from_owner(Sparse::fetch(storage, location, *size, &ranges)?)
            }
        };
        let rows = rg.num_rows();
        let others = || -> Option<_> {
            let signature = plan.signature.iter().map(|&i| Codes::read(chunk(i)?, &file, rows)).collect::<Option<Vec<_>>>()?;
            signature.iter().try_fold(1u64, |n, c| n.checked_mul(c.values.len().max(1) as u64))?;
            // Absent attempts count as 0; a column that is there must read as integers.
            let attempts = match plan.attempts.filter(|&i| rg.columns_under_root_iter(&names[i]).is_some()) {
                None => None,
                Some(i) => Some(Ints::read(chunk(i)?, &file, rows)?),
            };
            let time = chunk(plan.time)?;
            let time = match Ints::read_times(time, &file, rows) {
                Some((values, factor)) => Times::Native(values, factor),
                None => Times::Text(TextTimes::read(time, &file, rows)?),
            };
            Some((signature, attempts, time))
        };
        // Read late where every row has an id (and the column is not the time's too): a fold
        // asks for few.
        let late = plan.id != plan.time && plan.attempts != Some(plan.id);
        let id = || {
            let chunk = chunk(plan.id)?;
            match late.then(|| LateTexts::read(chunk, &file, rows, &self.metadata.footer_buf)).flatten() {
                Some(late) => Some(Ids::Late(late)),
                None => Texts::read(chunk, &file, rows).map(Ids::Read),
            }
        };
        // In a large group the ids and the other columns are two tasks: a thread with no group
        // left takes one instead of waiting for the group to end. Ids read now are often as
        // many bytes as the rest; read late, their task only lists their pages. (In small
        // groups the split costs more than it saves: its halves end up on two cores.)
        let (id, others) = if rows >= SPLIT_ROWS { rayon::join(id, others) } else { (id(), others()) };
        Ok(id.zip(others).map(|(id, (signature, attempts, time))| PageColumns { signature, id, time, attempts, rows }))
    }
}

/// A whole Parquet file in memory, read as one frame once its footer and every page header
/// are checked (`check`), polars' reader contained: for the small files read whole.
pub(super) fn read_whole(bytes: bytes::Bytes, display: &str) -> Result<DataFrame> {
    check_whole(&bytes, display)?;
    crate::contain::contained(|| ParquetReader::new(Cursor::new(bytes)).finish())
        .map_err(|panic| anyhow::anyhow!("the Parquet reader failed on it ({panic})"))?
        .with_context(|| format!("{display}: not a readable Parquet file"))
}

/// A value of a Parquet file's footer key-value metadata, read from the footer alone (a ranged
/// read in S3); None when the file has none of that key or cannot be read as Parquet.
pub fn footer_value(storage: &Storage, input: &Input, key: &str) -> Option<String> {
    let source = ParquetSource::open(storage, input).ok()?;
    source.metadata.key_value_metadata().iter().flatten().find(|kv| kv.key == key).map(|kv| kv.value.clone().unwrap_or_default())
}

/// A whole Parquet file's footer and every page header checked (`check`), polars' footer
/// parser contained: what any path does before it gives polars' own reader a whole file.
pub fn check_whole(bytes: &[u8], display: &str) -> Result<()> {
    let not_parquet = || format!("{display}: not a readable Parquet file");
    let metadata = crate::contain::contained(|| ParquetReader::new(Cursor::new(bytes)).get_metadata().map(|m| m.clone()))
        .map_err(|panic| anyhow::anyhow!("the footer cannot be parsed ({panic})"))
        .and_then(|read| read.map_err(anyhow::Error::from))
        .with_context(not_parquet)?;
    if let Err(why) = check::check(&metadata, bytes.len() as u64) {
        bail!("{display}: corrupt Parquet footer: {why}");
    }
    let mut offset = 0usize;
    for rg in &metadata.row_groups {
        for chunk in rg.parquet_columns() {
            check::check_chunk(chunk, bytes, rg.num_rows()).map_err(|why| corrupt_chunk(display, offset, chunk, &why))?;
        }
        offset = offset.saturating_add(rg.num_rows());
    }
    Ok(())
}

/// The error of a column chunk whose pages claim more than it holds, in the row group that
/// starts at row `offset` (0-based).
fn corrupt_chunk(display: &str, offset: usize, chunk: &ColumnChunkMetadata, why: &str) -> anyhow::Error {
    anyhow::anyhow!("{display}: corrupt row group at row {}, column `{}`: {why}", offset + 1, chunk.descriptor().path_in_schema.join("."))
}

/// The footer of a remote file, by ranged requests: the end first, then the rest if the
/// footer is longer.
fn remote_metadata(storage: &Storage, location: &Location, size: u64) -> Result<Arc<FileMetadata>> {
    if size < TAIL + 4 {
        bail!("{size} bytes is too short");
    }
    let first = size.saturating_sub(FIRST_TAIL);
    let tail = storage.read_ranges(location, std::slice::from_ref(&(first..size)))?.remove(0);
    if (tail.len() as u64) < TAIL {
        bail!("{} bytes read of its last {}: the object changed since it was listed", tail.len(), size - first);
    }
    let footer_len = u32::from_le_bytes(tail[tail.len() - 8..tail.len() - 4].try_into().expect("4 bytes")) as u64;
    if &tail[tail.len() - 4..] != b"PAR1" || footer_len + TAIL > size {
        bail!("no Parquet footer");
    }
    let start = size - TAIL - footer_len;
    let mut file = Sparse::new(size)?;
    if start < first {
        file.put(start, &storage.read_ranges(location, std::slice::from_ref(&(start..first)))?[0]);
    }
    file.put(first, &tail);
    // polars' footer parser may panic on a damaged footer: contained, it is this object's.
    crate::contain::contained(|| ParquetReader::new(Cursor::new(file)).get_metadata().map(|m| m.clone()))
        .map_err(|panic| anyhow::anyhow!("the footer cannot be parsed ({panic})"))?
        .map_err(anyhow::Error::from)
}

/// A row group's bytes while it is loaded: the local file, or a remote group's chunks.
pub(super) enum Held {
    Local(File),
    Remote(Sparse),
}

/// A file-sized buffer holding only the byte ranges fetched: an anonymous mapping whose other
/// pages are never touched, so they take no memory. polars reads it as it would the file.
pub(super) struct Sparse(memmap2::MmapMut);

impl Sparse {
    fn new(size: u64) -> Result<Sparse> {
        Ok(Sparse(memmap2::MmapMut::map_anon(size as usize).context("cannot map memory for a remote Parquet file")?))
    }

    fn put(&mut self, at: u64, bytes: &[u8]) {
        self.0[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    }

    fn fetch(storage: &Storage, location: &Location, size: u64, ranges: &[Range<u64>]) -> Result<Sparse> {
        let mut file = Sparse::new(size)?;
        for (range, bytes) in ranges.iter().zip(storage.read_ranges(location, ranges)?) {
            file.put(range.start, &bytes);
        }
        Ok(file)
    }
}

impl AsRef<[u8]> for Sparse {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Rows from which a row group's columns are read as two tasks (`page_columns`): pyarrow and
/// Spark write a million rows and more a group, polars 262,144 and DuckDB 122,880.
const SPLIT_ROWS: usize = 1 << 19;

/// Decodes one row group: each row through the rows' layout (straight from the arrays when
/// they have the expected types); `accept` gets accepted rows, with the whole row as a JSON
/// object when `records` (then `df` must hold every column).
pub(super) fn decode(rows: &Rows, df: &DataFrame, records: bool, mut accept: impl FnMut(FullRow<'_>)) -> Result<PieceTally> {
    let columns = rows.layout.leaves.iter().map(|path| Column::from_path(df, path)).collect::<Result<Vec<_>>>()?;
    let needs_record = rows.layout.needs_record();
    let writer = (records || needs_record).then(|| RowWriter::new(df)).transpose()?;
    let mut record_json = Vec::new();
    let direct = Direct::new(rows, &columns);
    let mut dates = DateCache::default();
    let mut key = Vec::with_capacity(128);
    let mut cells: Vec<Cell> = Vec::with_capacity(columns.len());
    let mut tally = PieceTally { lines: df.height() as u64, ..PieceTally::default() };
    for i in 0..df.height() {
        let mut take = |key: &[u8], facts: RowFacts<'_>| {
            let record = match &writer {
                Some(writer) if records => Record::Row { records: writer, row: i },
                _ => Record::Text(""),
            };
            accept(FullRow { key, facts, record, aligned: rows.aligned })
        };
        if let Some(row) = direct.as_ref().and_then(|d| d.row(i, &mut key, &mut dates)) {
            rows.take_facts(&key, row, &mut tally, &mut take);
            continue;
        }
        cells.clear();
        cells.extend(columns.iter().map(|c| c.cell(i)));
        let record = match &writer {
            Some(writer) if needs_record => {
                record_json.clear();
                writer.write(i, &mut record_json);
                Some(record_json.as_slice())
            }
            _ => None,
        };
        rows.take(&cells, &mut key, &mut dates, i as u64 + 1, record, &mut tally, &mut take);
    }
    Ok(tally)
}

/// A column converted to one of the few physical shapes the profile can interpret.
pub(super) enum Column {
    Missing,
    Null,
    Str(StringChunked),
    Int(Int64Chunked),
    Float(Float64Chunked),
    Bool(BooleanChunked),
    /// Physical values and the factor to microseconds (negative: divide).
    Time(Int64Chunked, i64),
    Nested(&'static str),
}

impl Column {
    /// The column a path leads to: a top-level column, then struct fields, list elements and
    /// headers by name (in a list of `key`/`value` structs, as Parquet maps and the S3 sink's
    /// header files hold them, or of flat `name, value` strings).
    pub(super) fn from_path(df: &DataFrame, path: &[Step]) -> Result<Column> {
        let Some((Step::Key(root), rest)) = path.split_first() else { return Ok(Column::Missing) };
        let Some(col) = df.column(root).ok() else {
            return Ok(Column::Missing);
        };
        let mut series = col.as_materialized_series().clone();
        for step in rest {
            match nested::step_into(&series, step)? {
                Some(next) => series = next,
                None => return Ok(Column::Missing),
            }
        }
        Column::from_series(&series)
    }

    fn from_series(s: &polars::prelude::Series) -> Result<Column> {
        Ok(match s.dtype() {
            DataType::Null => Column::Null,
            DataType::String => Column::Str(s.str()?.rechunk().into_owned()),
            DataType::Categorical(..) | DataType::Enum(..) => Column::Str(s.cast(&DataType::String)?.str()?.rechunk().into_owned()),
            DataType::Boolean => Column::Bool(s.bool()?.rechunk().into_owned()),
            DataType::Float32 | DataType::Float64 => Column::Float(s.cast(&DataType::Float64)?.f64()?.rechunk().into_owned()),
            DataType::Datetime(unit, _) => {
                let factor = match unit {
                    TimeUnit::Nanoseconds => -1000,
                    TimeUnit::Microseconds => 1,
                    TimeUnit::Milliseconds => 1000,
                };
                Column::Time(s.cast(&DataType::Int64)?.i64()?.rechunk().into_owned(), factor)
            }
            DataType::Date => Column::Time(s.cast(&DataType::Int64)?.i64()?.rechunk().into_owned(), 86_400_000_000),
            dt if dt.is_integer() => Column::Int(s.cast(&DataType::Int64)?.i64()?.rechunk().into_owned()),
            DataType::List(_) | DataType::Struct(_) => Column::Nested("object"),
            _ => Column::Nested("binary"),
        })
    }

    pub(super) fn cell(&self, i: usize) -> Cell<'_> {
        let or_null = |v: Option<Cell<'static>>| v.unwrap_or(Cell::Null);
        match self {
            Column::Missing => Cell::Missing,
            Column::Null => Cell::Null,
            Column::Str(ca) => ca.get(i).map(|s| Cell::Str(Cow::Borrowed(s))).unwrap_or(Cell::Null),
            Column::Int(ca) => or_null(ca.get(i).map(Cell::Int)),
            Column::Float(ca) => or_null(ca.get(i).map(Cell::Float)),
            Column::Bool(ca) => or_null(ca.get(i).map(Cell::Bool)),
            Column::Time(ca, factor) => or_null(ca.get(i).map(|v| Cell::Time(micros(v, *factor)))),
            Column::Nested(kind) => Cell::Nested(kind),
        }
    }
}

pub(super) type StrArray = <StringType as PolarsDataType>::Array;
type I64Array = <Int64Type as PolarsDataType>::Array;

/// The common case read straight from the arrays: string id and signature columns, a string
/// or native time, integer or absent attempts. A row with a null (or an unreadable time)
/// returns None and goes through the generic path, which names the problem.
struct Direct<'c> {
    id: &'c StrArray,
    time: DirectTime<'c>,
    attempts: Option<&'c I64Array>,
    signature: Vec<&'c StrArray>,
    /// Whether any of these columns has a null in this row group; without one, no row's
    /// validity needs looking up.
    nulls: bool,
}

enum DirectTime<'c> {
    Text(&'c StrArray),
    Micros(&'c I64Array, i64),
}

impl<'c> Direct<'c> {
    fn new(rows: &Rows, columns: &'c [Column]) -> Option<Direct<'c>> {
        let plan = rows.layout.direct_columns()?;
        let used = [Some(plan.id), Some(plan.time), plan.attempts].into_iter().flatten().chain(plan.signature.iter().copied());
        let nulls = used.map(|i| &columns[i]).any(|c| match c {
            Column::Str(ca) => ca.null_count() > 0,
            Column::Int(ca) | Column::Time(ca, _) => ca.null_count() > 0,
            _ => false,
        });
        let text = |i: usize| match &columns[i] {
            Column::Str(ca) if ca.chunks().len() == 1 => ca.downcast_iter().next(),
            _ => None,
        };
        let time = match &columns[plan.time] {
            Column::Str(_) => DirectTime::Text(text(plan.time)?),
            Column::Time(ca, factor) if ca.chunks().len() == 1 => DirectTime::Micros(ca.downcast_iter().next()?, *factor),
            _ => return None,
        };
        let attempts = match plan.attempts.map(|i| &columns[i]) {
            None | Some(Column::Missing) => None,
            Some(Column::Int(ca)) if ca.chunks().len() == 1 => Some(ca.downcast_iter().next()?),
            Some(_) => return None,
        };
        let signature = plan.signature.iter().map(|&i| text(i)).collect::<Option<Vec<_>>>()?;
        Some(Direct { id: text(plan.id)?, time, attempts, signature, nulls })
    }

    fn row(&self, i: usize, key: &mut Vec<u8>, dates: &mut DateCache) -> Option<RowFacts<'c>> {
        if !self.nulls {
            return self.row_without_nulls(i, key, dates);
        }
        key.clear();
        for column in &self.signature {
            push_part(key, column.get(i)?);
        }
        let id = self.id.get(i)?;
        let time = match &self.time {
            DirectTime::Text(a) => dates.parse(a.get(i)?)?,
            DirectTime::Micros(a, factor) => in_calendar(micros(a.get(i)?, *factor))?,
        };
        let attempts = match self.attempts {
            None => 0,
            Some(a) => a.get(i)?,
        };
        Some(RowFacts { id: Cow::Borrowed(id), time, attempts })
    }

    /// `row` for a row group whose columns have no nulls: the same values, read without
    /// looking up validity. A copy on purpose: one reader choosing per cell costs 2.9% more
    /// of rank's instructions than these two (cachegrind, 1M Parquet rows).
    fn row_without_nulls(&self, i: usize, key: &mut Vec<u8>, dates: &mut DateCache) -> Option<RowFacts<'c>> {
        key.clear();
        for column in &self.signature {
            push_part(key, column.value(i));
        }
        let time = match &self.time {
            DirectTime::Text(a) => dates.parse(a.value(i))?,
            DirectTime::Micros(a, factor) => in_calendar(micros(a.value(i), *factor))?,
        };
        let attempts = self.attempts.map_or(0, |a| a.value(i));
        Some(RowFacts { id: Cow::Borrowed(self.id.value(i)), time, attempts })
    }
}

/// A time the calendar holds (years 1 to 9999), or None: the row then takes the generic path,
/// which rejects it naming the field.
fn in_calendar(micros: i64) -> Option<i64> {
    (crate::timestamp::MIN_MICROS..=crate::timestamp::MAX_MICROS).contains(&micros).then_some(micros)
}

/// A native time value in microseconds (`factor` negative: divide).
pub(super) fn micros(value: i64, factor: i64) -> i64 {
    // Saturating: a value no calendar holds stays out of range, for the row's check to refuse.
    if factor < 0 { value.div_euclid(-factor) } else { value.saturating_mul(factor) }
}
