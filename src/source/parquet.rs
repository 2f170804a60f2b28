//! Parquet scanning: only the profile's columns are decoded, one row group per task, so memory
//! stays near two row groups whatever the file size. Row numbers stand in for line numbers.

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result};
use polars::prelude::{
    BooleanChunked, DataFrame, DataType, Float64Chunked, Int64Chunked, Int64Type, ParallelStrategy, ParquetReader,
    PolarsDataType, SerReader, StaticArray, StringChunked, StringType, TimeUnit,
};
use rayon::prelude::*;

use super::{Accumulator, LocalTally, Scan, Tally};
use crate::signature::{push_part, Cell, RowFacts};
use crate::timestamp;

pub(super) fn scan<A, F>(scan: &Scan, path: &Path, display: &str, make: &F) -> Result<(A, Tally)>
where
    A: Accumulator,
    F: Fn() -> A + Sync,
{
    let not_parquet = || format!("{display}: not a readable Parquet file");
    let mut reader = ParquetReader::new(File::open(path).with_context(|| format!("{display}: cannot open"))?);
    let schema = reader.schema().with_context(not_parquet)?;
    let metadata = reader.get_metadata().with_context(not_parquet)?.clone();
    let present: Vec<String> = scan.layout.columns.iter().filter(|c| schema.contains(c)).cloned().collect();

    let mut groups = Vec::new();
    let mut offset = 0;
    for rg in &metadata.row_groups {
        groups.push((offset, rg.num_rows(), rg.compressed_size() as u64));
        offset += rg.num_rows();
    }

    let folded = groups
        .par_iter()
        .map(|&(offset, rows, bytes)| -> Result<(A, LocalTally)> {
            let mut reader = ParquetReader::new(File::open(path).with_context(|| format!("{display}: cannot open"))?)
                .with_columns(Some(present.clone()))
                .with_slice(Some((offset, rows)))
                .read_parallel(ParallelStrategy::None);
            reader.set_metadata(metadata.clone());
            let df = reader.finish().with_context(|| format!("{display}: corrupt row group at row {}", offset + 1))?;
            let mut acc = make();
            let mut tally = LocalTally::default();
            fold_frame(scan, &df, offset as u64, &mut acc, &mut tally)?;
            scan.progress.advance(bytes);
            Ok((acc, tally))
        })
        .try_reduce(
            || (make(), LocalTally::default()),
            |(mut a, mut ta), (b, tb)| {
                a.merge(b);
                ta.merge_sorted(tb);
                Ok((a, ta))
            },
        )?;
    let (acc, tally) = folded;
    Ok((acc, tally.into_tally(display, 0)))
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
    pub(super) fn from_frame(df: &DataFrame, name: &str) -> Result<Column> {
        let Some(col) = df.column(name).ok() else {
            return Ok(Column::Missing);
        };
        let s = col.as_materialized_series();
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
            Column::Time(ca, factor) => or_null(ca.get(i).map(|v| Cell::Time(if *factor < 0 { v.div_euclid(-factor) } else { v * factor }))),
            Column::Nested(kind) => Cell::Nested(kind),
        }
    }
}

fn fold_frame<A: Accumulator>(scan: &Scan, df: &DataFrame, offset: u64, acc: &mut A, tally: &mut LocalTally) -> Result<()> {
    let columns = scan.layout.columns.iter().map(|name| Column::from_frame(df, name)).collect::<Result<Vec<_>>>()?;
    let direct = Direct::new(scan, &columns);
    let mut key = Vec::with_capacity(128);
    let mut cells: Vec<Cell> = Vec::with_capacity(columns.len());
    for i in 0..df.height() {
        if let Some(direct) = &direct {
            if let Some(row) = direct.row(i, &mut key) {
                if scan.window.contains(row.time) {
                    acc.add(&key, &row);
                    tally.accepted += 1;
                } else {
                    tally.outside_window += 1;
                }
                continue;
            }
        }
        cells.clear();
        cells.extend(columns.iter().map(|c| c.cell(i)));
        scan.take_row(&cells, &mut key, acc, tally, offset + i as u64 + 1);
    }
    Ok(())
}

type StrArray = <StringType as PolarsDataType>::Array;
type I64Array = <Int64Type as PolarsDataType>::Array;

/// The common case read straight from the arrays: string id and signature columns, a string
/// or native time, integer or absent attempts. A row with a null (or an unreadable time)
/// returns None and goes through the generic path, which names the problem.
struct Direct<'c> {
    id: &'c StrArray,
    time: DirectTime<'c>,
    attempts: Option<&'c I64Array>,
    signature: Vec<&'c StrArray>,
}

enum DirectTime<'c> {
    Text(&'c StrArray),
    Micros(&'c I64Array, i64),
}

impl<'c> Direct<'c> {
    fn new(scan: &Scan, columns: &'c [Column]) -> Option<Direct<'c>> {
        let plan = scan.layout.direct_columns()?;
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
        Some(Direct { id: text(plan.id)?, time, attempts, signature })
    }

    fn row(&self, i: usize, key: &mut Vec<u8>) -> Option<RowFacts<'c>> {
        key.clear();
        for column in &self.signature {
            push_part(key, column.get(i)?);
        }
        let id = self.id.get(i)?;
        let time = match &self.time {
            DirectTime::Text(a) => timestamp::parse_rfc3339(a.get(i)?)?,
            DirectTime::Micros(a, factor) => {
                let v = a.get(i)?;
                if *factor < 0 { v.div_euclid(-factor) } else { v * factor }
            }
        };
        let attempts = match self.attempts {
            None => 0,
            Some(a) => a.get(i)?,
        };
        Some(RowFacts { id: Cow::Borrowed(id), time, attempts })
    }
}
