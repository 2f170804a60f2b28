//! Whole records in order (inputs by name, then line or row), for tools that carry each
//! message forward (`plan`). Pieces are parsed in parallel batches and handed on in order.

use std::fs::File;

use anyhow::{Context, Result};
use polars::prelude::{DataFrame, DataType, ParallelStrategy, ParquetReader, SerReader};
use rayon::prelude::*;
use serde_json::{Map, Value};

use super::jsonl::{for_each_line, open_chunks, parse_line};
use super::parquet::Column;
use super::{Format, Input, LocalTally, Scan, Tally};
use crate::signature::{Cell, RowFacts};

/// An accepted row: its raw signature key, facts, and the full record.
pub struct FullRow<'a> {
    pub key: &'a [u8],
    pub facts: RowFacts<'a>,
    pub record: Record<'a>,
}

/// A whole record: a JSON line's own text (kept byte for byte), or a Parquet row as JSON.
pub enum Record<'a> {
    Text(&'a str),
    Object(Map<String, Value>),
}

impl Record<'_> {
    pub fn into_object(self) -> Map<String, Value> {
        match self {
            Record::Text(text) => serde_json::from_str(text).expect("a line that parsed once parses again"),
            Record::Object(map) => map,
        }
    }
}

impl Scan<'_> {
    /// Calls `map` on every accepted row (in parallel) and `sink` on the results in order:
    /// inputs as resolved (by name), lines or rows in file order. The sink runs on its own
    /// thread, so writing one batch overlaps parsing the next.
    pub fn records<T, F, S>(&self, inputs: &[Input], map: F, mut sink: S) -> Result<Tally>
    where
        T: Send,
        F: Fn(FullRow) -> T + Sync,
        S: FnMut(T) -> Result<()> + Send,
    {
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<T>>(2);
            let writer = scope.spawn(move || -> Result<()> {
                for items in rx {
                    items.into_iter().try_for_each(&mut sink)?;
                }
                Ok(())
            });
            let read = self.read_records(inputs, &map, |items| tx.send(items).is_ok());
            drop(tx);
            let written = writer.join().expect("the sink thread does not panic");
            // A sink error explains a stopped read, so it comes first.
            written?;
            read
        })
    }

    /// Reads every input in order, handing each piece's results to `emit` (false: stop).
    fn read_records<T, F>(&self, inputs: &[Input], map: &F, mut emit: impl FnMut(Vec<T>) -> bool) -> Result<Tally>
    where
        T: Send,
        F: Fn(FullRow) -> T + Sync,
    {
        let mut tally = Tally::default();
        let batch = rayon::current_num_threads().max(1) * 2;
        for input in inputs {
            match input.format {
                Format::Jsonl(compression) => {
                    let mut chunks = open_chunks(input, compression)?;
                    let mut lines_before = 0;
                    loop {
                        let pieces: Vec<(usize, Vec<u8>)> =
                            chunks.by_ref().take(batch).collect::<std::io::Result<_>>().with_context(|| format!("{}: read error", input.display))?;
                        if pieces.is_empty() {
                            break;
                        }
                        let done: Vec<_> = pieces.par_iter().map(|(_, bytes)| self.jsonl_piece(bytes, map)).collect();
                        for ((items, local, lines), (_, bytes)) in done.into_iter().zip(&pieces) {
                            self.progress.advance(bytes.len() as u64);
                            if !emit(items) {
                                return Ok(tally);
                            }
                            tally.absorb(local.into_tally(&input.display, lines_before));
                            lines_before += lines;
                        }
                    }
                }
                Format::Parquet => {
                    let local = super::LocalCopy::of(input)?;
                    let path = local.path();
                    let mut reader = ParquetReader::new(File::open(path).with_context(|| format!("{}: cannot open", input.display))?);
                    let metadata = reader.get_metadata().map_err(anyhow::Error::from).with_context(|| format!("{}: not a readable Parquet file", input.display))?.clone();
                    let mut groups = Vec::new();
                    let mut offset = 0;
                    for rg in &metadata.row_groups {
                        groups.push((offset, rg.num_rows(), rg.compressed_size() as u64));
                        offset += rg.num_rows();
                    }
                    for window in groups.chunks(batch) {
                        let done: Vec<Result<_>> = window
                            .par_iter()
                            .map(|&(offset, rows, _)| {
                                let mut reader = ParquetReader::new(File::open(path)?)
                                    .with_slice(Some((offset, rows)))
                                    .read_parallel(ParallelStrategy::None);
                                reader.set_metadata(metadata.clone());
                                let df = reader.finish().map_err(anyhow::Error::from).with_context(|| format!("{}: corrupt row group at row {}", input.display, offset + 1))?;
                                self.parquet_piece(&df, offset as u64, map)
                            })
                            .collect();
                        for (result, &(_, _, bytes)) in done.into_iter().zip(window) {
                            let (items, local) = result?;
                            self.progress.advance(bytes);
                            if !emit(items) {
                                return Ok(tally);
                            }
                            tally.absorb(local.into_tally(&input.display, 0));
                        }
                    }
                }
            }
        }
        self.progress.finish();
        Ok(tally)
    }

    fn jsonl_piece<T, F: Fn(FullRow) -> T>(&self, bytes: &[u8], map: &F) -> (Vec<T>, LocalTally, u64) {
        let names = &self.layout.columns;
        let mut picker = super::json_fields::FieldPicker::new(names);
        let mut cells = vec![Cell::Missing; names.len()];
        let mut key = Vec::new();
        let mut tally = LocalTally::default();
        let mut items = Vec::new();
        let lines = for_each_line(bytes, |line_no, line| {
            cells.iter_mut().for_each(|c| *c = Cell::Missing);
            if let Err(reason) = parse_line(line, &mut picker, &mut cells) {
                return tally.reject(line_no, reason);
            }
            match self.layout.extract(&cells, &mut key) {
                Err(reason) => tally.reject(line_no, reason),
                Ok(facts) if !self.window.contains(facts.time) => tally.outside_window += 1,
                Ok(facts) => {
                    let text = std::str::from_utf8(line).expect("checked by parse_line").trim();
                    tally.accepted += 1;
                    items.push(map(FullRow { key: &key, facts, record: Record::Text(text) }));
                }
            }
        });
        (items, tally, lines)
    }

    fn parquet_piece<T, F: Fn(FullRow) -> T>(&self, df: &DataFrame, offset: u64, map: &F) -> Result<(Vec<T>, LocalTally)> {
        let wanted = self.layout.columns.iter().map(|name| Column::from_frame(df, name)).collect::<Result<Vec<_>>>()?;
        let all: Vec<(String, polars::prelude::Series)> = df
            .columns()
            .iter()
            .map(|c| {
                let s = c.as_materialized_series();
                let s = match s.dtype() {
                    DataType::Categorical(..) | DataType::Enum(..) => s.cast(&DataType::String)?,
                    _ => s.clone(),
                };
                Ok((c.name().to_string(), s))
            })
            .collect::<Result<_>>()?;
        let mut key = Vec::new();
        let mut cells = Vec::with_capacity(wanted.len());
        let mut tally = LocalTally::default();
        let mut items = Vec::new();
        for i in 0..df.height() {
            cells.clear();
            cells.extend(wanted.iter().map(|c| c.cell(i)));
            let line = offset + i as u64 + 1;
            match self.layout.extract(&cells, &mut key) {
                Err(reason) => tally.reject(line, reason),
                Ok(facts) if !self.window.contains(facts.time) => tally.outside_window += 1,
                Ok(facts) => {
                    let mut record = Map::new();
                    for (name, series) in &all {
                        record.insert(name.clone(), crate::values::to_json(series.get(i)?));
                    }
                    tally.accepted += 1;
                    items.push(map(FullRow { key: &key, facts, record: Record::Object(record) }));
                }
            }
        }
        Ok((items, tally))
    }
}
