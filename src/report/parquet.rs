//! Parquet reports for BI tools: one row per bucket, typed columns (timestamps as UTC
//! microseconds), written with polars' own writer.

use anyhow::{Context, Result};
use polars::prelude::{Column, DataFrame, DataType, IntoColumn, NamedFrom, ParquetWriter, Series, TimeUnit, TimeZone};

use super::columns::RankColumn;
use crate::analyze::rank::RankReport;
use crate::timestamp;

/// One row per bucket, in the report's column order, typed: counts as integers, shares as
/// doubles, times as UTC timestamps, the rest as text.
pub fn rank(report: &RankReport) -> Result<Vec<u8>> {
    let b = &report.buckets;
    let columns = RankColumn::of(report)
        .into_iter()
        .map(|c| {
            let name = c.name(report).into();
            Ok(match c {
                RankColumn::Rank => Column::new(name, b.iter().map(|x| x.rank).collect::<Vec<u64>>()),
                RankColumn::Count => Column::new(name, b.iter().map(|x| x.count).collect::<Vec<u64>>()),
                RankColumn::Share => Column::new(name, b.iter().map(|x| x.share).collect::<Vec<f64>>()),
                RankColumn::FirstSeen | RankColumn::LastSeen => time_column(c.name(report), b.iter().map(|x| c.text(x)))?,
                text => Column::new(name, b.iter().map(|x| text.text(x).into_owned()).collect::<Vec<String>>()),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut df = DataFrame::new(b.len(), columns).context("building the Parquet report (a signature field may clash with a report column)")?;
    let mut bytes = Vec::new();
    ParquetWriter::new(&mut bytes).finish(&mut df)?;
    Ok(bytes)
}

fn time_column<'a>(name: &str, values: impl Iterator<Item = std::borrow::Cow<'a, str>>) -> Result<Column> {
    let micros: Vec<Option<i64>> = values.map(|v| timestamp::parse_rfc3339(&v)).collect();
    let series = Series::new(name.into(), micros)
        .cast(&DataType::Datetime(TimeUnit::Microseconds, Some(TimeZone::UTC)))?;
    Ok(series.into_column())
}
