//! The Confluent S3 sink's aligned files: with `store.kafka.keys` and `store.kafka.headers`
//! on, a chunk is a values file with a `.keys` and a `.headers` file beside it (attached to it
//! in `input`), one line (or row) each per record. Read together, line by line, as one record
//! `{"topic", "partition", "offset", "key", "value", "headers"}`.

use std::io::Read;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use polars::prelude::{Column, DataFrame, IntoColumn, IntoSeries, NamedFrom, PlSmallStr, Series, StructChunked};

use super::input::{Input, Sibling};
use super::json::{self, Chunks};
use crate::path::Step;
use crate::storage::{Location, Storage};

/// The chunk's topic, Kafka partition and start offset, from `topic+partition+offset.ext`.
fn coordinates(name: &str) -> Option<(String, i64, i64)> {
    let file = name.rsplit('/').next().unwrap_or(name);
    let (rest, offset_and_ext) = file.rsplit_once('+')?;
    let offset = &offset_and_ext[..offset_and_ext.find('.').unwrap_or(offset_and_ext.len())];
    let (topic, partition) = rest.rsplit_once('+')?;
    // Room left above the offset for any chunk's records: no record's offset can wrap.
    let offset = offset.parse::<i64>().ok().filter(|o| (0..=i64::MAX >> 1).contains(o))?;
    Some((topic.to_string(), partition.parse().ok()?, offset))
}

/// A whole file, decompressed as its first bytes say (gzip, zstd).
fn read_all(storage: &Storage, location: &Location, display: &str) -> Result<Vec<u8>> {
    let mut raw = Vec::new();
    storage.open(location)?.read_to_end(&mut raw).with_context(|| format!("{display}: read error"))?;
    let mut out = Vec::new();
    match raw.as_slice() {
        [0x1f, 0x8b, ..] => flate2::read::MultiGzDecoder::new(raw.as_slice()).read_to_end(&mut out).map(drop),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => zstd::Decoder::new(raw.as_slice())?.read_to_end(&mut out).map(drop),
        _ => return Ok(raw),
    }
    .with_context(|| format!("{display}: cannot decompress"))?;
    Ok(out)
}

/// A file's lines (a last `\r` taken off each; no line after a final newline).
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l)).collect();
    if bytes.ends_with(b"\n") || bytes.is_empty() {
        lines.pop();
    }
    lines
}

/// A JSON chunk as JSON lines, one record a line where its values line is (a blank values line
/// stays blank).
pub fn json_lines(storage: &Storage, input: &Input) -> Result<Vec<u8>> {
    let siblings = input.aligned.clone().unwrap_or_default();
    let values = read_all(storage, &input.location, &input.display)?;
    let values = lines(&values);
    let read_sibling = |s: &Option<Sibling>| -> Result<Option<Vec<u8>>> { s.as_ref().map(|s| read_all(storage, &s.location, &s.display)).transpose() };
    let (keys, headers) = (read_sibling(&siblings.keys)?, read_sibling(&siblings.headers)?);
    let keys = keys.as_deref().map(lines);
    let headers = headers.as_deref().map(lines);
    for (file, found) in [(&siblings.keys, &keys), (&siblings.headers, &headers)] {
        if let (Some(file), Some(found)) = (file, found) {
            if found.len() != values.len() {
                bail!("{}: {} lines, but {} has {}: the files of one S3-sink chunk must align line by line", file.display, found.len(), input.display, values.len());
            }
        }
    }
    let chunk = coordinates(&input.display);
    let mut out = Vec::with_capacity(values.iter().map(|l| l.len() + 64).sum());
    for (i, value) in values.iter().enumerate() {
        if !value.iter().all(u8::is_ascii_whitespace) {
            out.push(b'{');
            if let Some((topic, partition, offset)) = &chunk {
                out.extend_from_slice(b"\"topic\":");
                crate::values::write_json_string(&mut out, topic);
                out.extend_from_slice(format!(",\"partition\":{partition},\"offset\":{},", offset + i as i64).as_bytes());
            }
            out.extend_from_slice(b"\"key\":");
            match &keys {
                Some(keys) if !keys[i].trim_ascii().is_empty() => out.extend_from_slice(keys[i].trim_ascii()),
                _ => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(b",\"value\":");
            out.extend_from_slice(value.trim_ascii());
            out.extend_from_slice(b",\"headers\":");
            match &headers {
                Some(headers) => {
                    let line = headers[i].trim_ascii();
                    // The sink envelops a record's headers as {"headers": [...]}.
                    let list = if line.first() == Some(&b'{') { crate::raw_json::lookup(line, &[Step::Key("headers".into())]).unwrap_or(b"[]") } else { line };
                    out.extend_from_slice(if list.is_empty() { b"[]" } else { list });
                }
                None => out.extend_from_slice(b"[]"),
            }
            out.push(b'}');
        }
        out.push(b'\n');
    }
    Ok(out)
}

/// A JSON chunk's files as chunks of lines, one record a line (`json_lines`), for the
/// JSON-lines decoder.
pub(super) fn json_chunks(storage: &Storage, input: &Input) -> Result<Chunks> {
    let lines = json_lines(storage, input)?;
    Ok(json::chunks_of_lines(lines, &input.display))
}

/// A Parquet chunk as one frame: `topic`, `partition`, `offset` from the file name, `key` (the
/// keys file's `key` column), `value` (the values file's one column, or its columns as a
/// struct) and `headers` (the headers file's `headers` column).
pub fn parquet_frame(storage: &Storage, input: &Input) -> Result<Arc<DataFrame>> {
    let read = |location: &Location, display: &str| -> Result<DataFrame> {
        super::parquet::read_whole(read_all(storage, location, display)?.into(), display)
    };
    let values = read(&input.location, &input.display)?;
    let rows = values.height();
    let mut columns: Vec<Column> = Vec::new();
    if let Some((topic, partition, offset)) = coordinates(&input.display) {
        columns.push(Series::new("topic".into(), vec![topic; rows]).into_column());
        columns.push(Series::new("partition".into(), vec![partition; rows]).into_column());
        columns.push(Series::new("offset".into(), (0..rows as i64).map(|i| offset + i).collect::<Vec<i64>>()).into_column());
    }
    let siblings = input.aligned.clone().unwrap_or_default();
    let one = |frame: &DataFrame, name: &str, file: &str| -> Result<Series> {
        if frame.height() != rows {
            bail!("{file}: {} rows, but {} has {rows}: the files of one S3-sink chunk must align row by row", frame.height(), input.display);
        }
        let column = frame.column(name).ok().or_else(|| (frame.width() == 1).then(|| &frame.columns()[0]));
        let Some(column) = column else { bail!("{file}: no `{name}` column") };
        Ok(column.as_materialized_series().clone().with_name(PlSmallStr::from(name)))
    };
    if let Some(keys) = &siblings.keys {
        columns.push(one(&read(&keys.location, &keys.display)?, "key", &keys.display)?.into_column());
    }
    let value = if values.width() == 1 {
        values.columns()[0].as_materialized_series().clone().with_name("value".into())
    } else {
        let fields: Vec<Series> = values.columns().iter().map(|c| c.as_materialized_series().clone()).collect();
        StructChunked::from_series("value".into(), rows, fields.iter())?.into_series()
    };
    columns.push(value.into_column());
    if let Some(headers) = &siblings.headers {
        columns.push(one(&read(&headers.location, &headers.display)?, "headers", &headers.display)?.into_column());
    }
    let frame = DataFrame::new(rows, columns).with_context(|| format!("{}: cannot put its chunk's files together", input.display))?;
    Ok(Arc::new(frame))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_are_read_from_the_sinks_names() {
        assert_eq!(coordinates("dt=2026-11-28/hour=07/dlq.payments+3+0000000042.json"), Some(("dlq.payments".into(), 3, 42)));
        assert_eq!(coordinates("dump.json"), None);
    }

    #[test]
    fn lines_align_and_headers_unwrap() {
        assert_eq!(lines(b"a\r\nb\n"), [&b"a"[..], b"b"]);
        assert_eq!(lines(b"a\nb"), [&b"a"[..], b"b"]);
        assert!(lines(b"").is_empty());
    }
}
