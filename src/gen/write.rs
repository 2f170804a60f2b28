//! Writes generated rows as JSON-lines (optionally .gz/.zst) or Parquet, in parallel batches
//! written in row order, through a temporary file renamed into place.

use std::fs::File;
use std::io::{BufWriter, Write};

use anyhow::{Context, Result};
use polars::prelude::*;
use rayon::prelude::*;
use serde_json::Value;

use crate::storage::{Output, Storage};

use super::{make_row, Breakage, GenFormat, GenOptions, GenRow, Generator};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    Str,
    Int,
    /// A nested object: JSON in JSON-lines, JSON text in Parquet.
    Json,
}

const JSONL_CHUNK_ROWS: u64 = 20_000;

pub fn write(options: &GenOptions, generator: &dyn Generator) -> Result<()> {
    let storage = Storage::new();
    let mut output = Output::create(&storage, &options.output)?;
    let file = output.file().try_clone().with_context(|| format!("{}: cannot write", options.output))?;
    match options.format {
        GenFormat::Jsonl => write_jsonl(options, generator, file)?,
        GenFormat::Parquet => write_parquet(options, generator, file)?,
    }
    output.commit()
}

fn write_jsonl(options: &GenOptions, generator: &dyn Generator, file: File) -> Result<()> {
    let name = options.output.file_name().to_lowercase();
    let mut out: Box<dyn Write> = if name.ends_with(".gz") {
        Box::new(flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::fast()))
    } else if name.ends_with(".zst") {
        Box::new(zstd::Encoder::new(BufWriter::new(file), 3)?.auto_finish())
    } else {
        Box::new(BufWriter::with_capacity(1 << 20, file))
    };
    let chunks = options.rows.div_ceil(JSONL_CHUNK_ROWS);
    let batch = (rayon::current_num_threads() as u64 * 4).max(1);
    let mut first = 0;
    while first < chunks {
        let last = (first + batch).min(chunks);
        let rendered: Vec<Vec<u8>> = (first..last)
            .into_par_iter()
            .map(|chunk| {
                let start = chunk * JSONL_CHUNK_ROWS;
                let end = (start + JSONL_CHUNK_ROWS).min(options.rows);
                let mut bytes = Vec::with_capacity(((end - start) * 400) as usize);
                for index in start..end {
                    let row = make_row(generator, options.seed, index, options.malformed);
                    json_line(generator, row, &mut bytes);
                }
                bytes
            })
            .collect();
        for bytes in rendered {
            out.write_all(&bytes)?;
        }
        first = last;
    }
    out.flush()?;
    drop(out);
    Ok(())
}

fn json_line(generator: &dyn Generator, row: GenRow, out: &mut Vec<u8>) {
    let columns = generator.shape().columns;
    let mut values = row.values;
    let mut skip = None;
    match row.broken {
        Some(Breakage::NotAnObject) => {
            serde_json::to_writer(&mut *out, &values).expect("serialisable");
            out.push(b'\n');
            return;
        }
        Some(Breakage::WrongType) => values[generator.shape().attempts] = Value::String("three".into()),
        Some(Breakage::MissingField) => skip = Some(generator.shape().required),
        Some(Breakage::NullField) => values[generator.shape().required] = Value::Null,
        Some(Breakage::BadTimestamp) => values[generator.shape().time] = Value::String("yesterday".into()),
        Some(Breakage::Truncated) | None => {}
    }
    let mut object = serde_json::Map::new();
    for (i, ((name, _), value)) in columns.iter().zip(values).enumerate() {
        if Some(i) != skip {
            object.insert(name.to_string(), value);
        }
    }
    let text = serde_json::to_string(&Value::Object(object)).expect("serialisable");
    if matches!(row.broken, Some(Breakage::Truncated)) {
        let mut cut = text.len() / 2;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        out.extend_from_slice(&text.as_bytes()[..cut]);
    } else {
        out.extend_from_slice(text.as_bytes());
    }
    out.push(b'\n');
}

fn write_parquet(options: &GenOptions, generator: &dyn Generator, file: File) -> Result<()> {
    let columns = generator.shape().columns;
    let schema: Schema = columns
        .iter()
        .map(|(name, kind)| Field::new((*name).into(), if *kind == ColumnKind::Int { DataType::Int64 } else { DataType::String }))
        .collect();
    let group = options.row_group_rows.max(1) as u64;
    let mut writer = ParquetWriter::new(BufWriter::new(file))
        .with_row_group_size(Some(group as usize))
        .with_compression(ParquetCompression::Zstd(None))
        .batched(&schema)?;
    let mut start = 0;
    while start < options.rows {
        let end = (start + group).min(options.rows);
        let rows: Vec<GenRow> = (start..end)
            .into_par_iter()
            .map(|index| make_row(generator, options.seed, index, options.malformed))
            .collect();
        let df = frame(generator, rows)?;
        writer.write_batch(&df)?;
        start = end;
    }
    writer.finish()?;
    Ok(())
}

/// Parquet cannot hold broken syntax or a string in an integer column: there a broken row
/// has a null required field or an unreadable timestamp instead.
fn frame(generator: &dyn Generator, rows: Vec<GenRow>) -> Result<DataFrame> {
    let columns = generator.shape().columns;
    let height = rows.len();
    let mut text: Vec<Vec<Option<String>>> = vec![Vec::with_capacity(height); columns.len()];
    let mut ints: Vec<Vec<Option<i64>>> = vec![Vec::with_capacity(height); columns.len()];
    for row in rows {
        let mut values = row.values;
        match row.broken {
            Some(Breakage::Truncated | Breakage::NotAnObject | Breakage::MissingField | Breakage::NullField) => {
                values[generator.shape().required] = Value::Null
            }
            Some(Breakage::WrongType | Breakage::BadTimestamp) => {
                values[generator.shape().time] = Value::String("yesterday".into())
            }
            None => {}
        }
        for (i, ((_, kind), value)) in columns.iter().zip(values).enumerate() {
            match (kind, value) {
                (ColumnKind::Int, v) => ints[i].push(v.as_i64()),
                (_, Value::Null) => text[i].push(None),
                (_, Value::String(s)) => text[i].push(Some(s)),
                (_, v) => text[i].push(Some(v.to_string())),
            }
        }
    }
    let cols = columns
        .iter()
        .enumerate()
        .map(|(i, (name, kind))| match kind {
            ColumnKind::Int => Column::new((*name).into(), std::mem::take(&mut ints[i])),
            _ => Column::new((*name).into(), std::mem::take(&mut text[i])),
        })
        .collect();
    Ok(DataFrame::new(height, cols)?)
}
