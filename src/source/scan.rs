//! The drivers: each input cut into pieces (chunks of lines, row groups, slices of rows)
//! decoded in parallel, accepted rows folded in any order (`fold`) or handed on in order (`records`).

use std::sync::Arc;

use anyhow::Result;
use polars::prelude::DataFrame;
use rayon::prelude::*;

use super::aligned;
use super::input::{objects, Format, Input, InputContext, Window};
use super::json::{self, Chunks};
use super::parquet::{self, Group, ParquetSource};
use super::row::layout::Layout;
use super::row::rows::{FullRow, Record, Rows};
use super::row::tally::{self, PieceTally, Tally};
use super::row::{Accumulator, FirstTimes};
use crate::messages::Progress;
use crate::storage::{Opener, Storage};

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
    Chunk(usize, json::ChunkBytes),
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
        Rows { layout: self.layout, window: self.window, partition: &input.partition, path: &input.path, aligned: input.aligned }
    }

    fn pieces<'s>(&'s self, opener: &Opener, input: &Input) -> Result<Pieces<'s>> {
        Ok(match input.format {
            Format::State => anyhow::bail!("{}: a partial state holds counts, not rows: rank, trend and health read it", input.display),
            Format::Jsonl(_) if input.aligned.is_some() => Pieces::Lines(aligned::json_chunks(self.storage, input)?),
            Format::Jsonl(compression) => Pieces::Lines(json::chunks(opener, input, compression)?),
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
                let mut decoder = json::LineDecoder::new(&rows);
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
        let tally = parquet::fold_pages(&self.rows(&InputContext::default()), plan, &columns, first_times, acc);
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
                    // dlqf's page reader hands polars' decoders the pages: contained as
                    // polars' own reader is, a panic there is the row group's corruption.
                    (Pieces::Groups(source, _), Piece::Group(group)) => crate::contain::contained(|| self.fold_pages(source, *group, &first_times, &mut part))
                        .unwrap_or_else(|panic| Err(source.corrupt_group(*group, &panic)))?,
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
            tally::absorb(&mut tally, &input.display, piece_tallies.into_iter().map(|(_, t)| t));
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
            tally::absorb(&mut tally, &input.display, piece_tallies);
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

type Folded<A> = (A, Vec<(usize, PieceTally)>);

fn merge<A: Accumulator>((mut a, mut ta): Folded<A>, (b, tb): Folded<A>) -> Result<Folded<A>> {
    a.merge(b);
    ta.extend(tb);
    Ok((a, ta))
}
