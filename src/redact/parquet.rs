//! Parquet in, Parquet out: each row redacted as the JSON object a plan would carry, and only
//! the columns whose values changed rebuilt, in their own types; the footer says redacted.

use std::io::Cursor;
use std::sync::Arc;

use anyhow::{Context, Result};
use polars::prelude::{
    DataFrame, DataType, IntoColumn, JsonFormat, JsonReader, KeyValueMetadata, NamedFrom, ParquetCompression, ParquetReader, ParquetWriter, Schema,
    SerReader, Series,
};
use rayon::prelude::*;
use serde_json::Value;

use super::{FileReport, Redactor, MARKER};
use crate::storage::{Location, Output, Storage};

pub(super) fn redact(storage: &Storage, display: &str, location: &Location, destination: &Location, redactor: &Redactor, marker: &str) -> Result<FileReport> {
    let bytes = storage.read_all(location)?;
    crate::source::check_parquet(&bytes, display)?;
    let metadata = ParquetReader::new(Cursor::new(&bytes)).get_metadata().map(|m| m.clone()).with_context(|| format!("{}: not a readable Parquet file", display))?;
    let first_chunk = metadata.row_groups.first().and_then(|g| g.parquet_columns().first().map(|c| c.compression()));
    let group_rows = metadata.row_groups.first().map(|g| g.num_rows()).filter(|&n| n > 0);
    let df = crate::contain::contained(|| ParquetReader::new(Cursor::new(&bytes)).finish())
        .map_err(|panic| anyhow::anyhow!("{}: corrupt Parquet file ({panic})", display))?
        .with_context(|| format!("{}: not a readable Parquet file", display))?;
    let mut df = redact_frame(df, redactor).with_context(|| format!("{}: cannot redact", display))?;
    let records = df.height() as u64;

    let mut output = Output::create(storage, destination)?;
    ParquetWriter::new(output.file())
        .with_compression(compression(first_chunk))
        .with_row_group_size(group_rows)
        .with_key_value_metadata(Some(KeyValueMetadata::from_static(vec![(MARKER.to_string(), marker.to_string())])))
        .finish(&mut df)
        .with_context(|| format!("{destination}: write failed"))?;
    output.commit()?;
    Ok(FileReport { records, malformed: Vec::new() })
}

/// The codec the input's columns were written with (its default level).
fn compression(codec: Option<polars_parquet::parquet::compression::Compression>) -> ParquetCompression {
    use polars_parquet::parquet::compression::Compression as C;
    match codec {
        Some(C::Uncompressed) => ParquetCompression::Uncompressed,
        Some(C::Snappy) => ParquetCompression::Snappy,
        Some(C::Gzip) => ParquetCompression::Gzip(None),
        Some(C::Brotli) => ParquetCompression::Brotli(None),
        Some(C::Lz4Raw | C::Lz4) => ParquetCompression::Lz4Raw,
        _ => ParquetCompression::Zstd(None),
    }
}

/// Each row redacted as its JSON object; the columns that changed rebuilt in their types.
fn redact_frame(df: DataFrame, redactor: &Redactor) -> Result<DataFrame> {
    let rows = crate::values::rows(&df)?;
    let redacted: Vec<serde_json::Map<String, Value>> = rows
        .par_iter()
        .map_init(
            || redactor.clone(),
            |redactor, row| {
                let text = serde_json::to_vec(row).expect("values serialise");
                let mut out = Vec::with_capacity(text.len() + 64);
                redactor.record(&text, &mut out).expect("serde_json writes JSON");
                // Never the row as it was: what a redacted object would not parse as is a bug.
                match serde_json::from_slice::<Value>(&String::from_utf8_lossy(&out).into_owned().into_bytes()) {
                    Ok(Value::Object(map)) => map,
                    _ => panic!("a redacted row is a JSON object"),
                }
            },
        )
        .collect();
    let mut columns = Vec::with_capacity(df.width());
    for column in df.columns() {
        let name = column.name().to_string();
        let changed = rows.iter().zip(&redacted).any(|(a, b)| a.get(&name) != b.get(&name));
        if !changed {
            columns.push(column.clone());
            continue;
        }
        let values: Vec<&Value> = redacted.iter().map(|r| r.get(&name).unwrap_or(&Value::Null)).collect();
        let series = rebuild(&name, column.dtype(), &values)?;
        columns.push(series.into_column());
    }
    Ok(DataFrame::new(df.height(), columns)?)
}

/// A column of `dtype` from JSON values (text for text, numbers for numbers, nested values
/// read back by polars' JSON reader with the column's own type).
fn rebuild(name: &str, dtype: &DataType, values: &[&Value]) -> Result<Series> {
    let text = |v: &Value| match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    };
    let series = match dtype {
        DataType::String => Series::new(name.into(), values.iter().map(|v| text(v)).collect::<Vec<_>>()),
        DataType::Binary => Series::new(name.into(), values.iter().map(|v| text(v).map(String::into_bytes)).collect::<Vec<_>>()),
        DataType::Boolean => Series::new(name.into(), values.iter().map(|v| v.as_bool()).collect::<Vec<_>>()),
        DataType::Float32 | DataType::Float64 => Series::new(name.into(), values.iter().map(|v| v.as_f64()).collect::<Vec<_>>()).cast(dtype)?,
        DataType::UInt64 => Series::new(name.into(), values.iter().map(|v| v.as_u64()).collect::<Vec<_>>()),
        d if d.is_integer() => Series::new(name.into(), values.iter().map(|v| v.as_i64()).collect::<Vec<_>>()).cast(dtype)?,
        _ => {
            let mut lines = Vec::new();
            for v in values {
                serde_json::to_writer(&mut lines, &serde_json::json!({ name: v }))?;
                lines.push(b'\n');
            }
            let schema = Arc::new(Schema::from_iter([(name.into(), dtype.clone())]));
            let df = JsonReader::new(Cursor::new(lines)).with_json_format(JsonFormat::JsonLines).with_schema(schema).finish()?;
            df.column(name)?.as_materialized_series().clone()
        }
    };
    Ok(series)
}
