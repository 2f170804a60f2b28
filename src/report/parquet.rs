//! Parquet reports for BI tools: one row per bucket, typed columns (timestamps as UTC
//! microseconds), written with polars' own writer.

use anyhow::{Context, Result};
use polars::prelude::{Column, DataFrame, DataType, IntoColumn, NamedFrom, ParquetWriter, Series, TimeUnit, TimeZone};

use crate::analyze::rank::RankReport;
use crate::timestamp;

pub fn rank(report: &RankReport) -> Result<Vec<u8>> {
    let b = &report.buckets;
    let mut columns = vec![
        Column::new("rank".into(), b.iter().map(|x| x.rank).collect::<Vec<u64>>()),
        Column::new("count".into(), b.iter().map(|x| x.count).collect::<Vec<u64>>()),
        Column::new("share".into(), b.iter().map(|x| x.share).collect::<Vec<f64>>()),
    ];
    for (i, field) in report.signature_fields.iter().enumerate() {
        let values: Vec<&str> = b.iter().map(|x| x.signature.0[i].1.as_str()).collect();
        columns.push(Column::new(field.as_str().into(), values));
    }
    columns.push(Column::new("example_id".into(), b.iter().map(|x| x.example_id.as_str()).collect::<Vec<_>>()));
    columns.push(time_column("first_seen", b.iter().map(|x| x.first_seen.as_str()))?);
    columns.push(time_column("last_seen", b.iter().map(|x| x.last_seen.as_str()))?);
    if report.category_column {
        columns.push(Column::new("category".into(), b.iter().map(|x| x.category.as_str()).collect::<Vec<_>>()));
    }
    let mut df = DataFrame::new(b.len(), columns).context("building the Parquet report (a signature field may clash with a report column)")?;
    let mut bytes = Vec::new();
    ParquetWriter::new(&mut bytes).finish(&mut df)?;
    Ok(bytes)
}

fn time_column<'a>(name: &str, values: impl Iterator<Item = &'a str>) -> Result<Column> {
    let micros: Vec<Option<i64>> = values.map(timestamp::parse_rfc3339).collect();
    let series = Series::new(name.into(), micros)
        .cast(&DataType::Datetime(TimeUnit::Microseconds, Some(TimeZone::UTC)))?;
    Ok(series.into_column())
}
