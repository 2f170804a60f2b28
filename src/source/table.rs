//! The inputs' raw records for SQL: every JSON-lines input's lines go through the same chunks
//! as every other reader (byte-order mark dropped, lines counted) and the JSON objects among
//! them are streamed into one temporary NDJSON file, its schema inferred chunk by chunk on the
//! way (so SQL can stream it without a second pass over all of it); Parquet inputs stay files.
//! When the SQL names the fields it reads, JSON-lines inputs become just those columns instead.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use polars::prelude::{concat, DataFrame, IntoLazy, Schema, SchemaRef, UnionArgs};
use rayon::prelude::*;

use super::aligned;
use super::input::{objects, Compression, Format, Input};
use super::json::{self, columns::Values};
use super::row::tree::FieldTree;
use super::row::tally::{self, PieceTally, Tally};
use crate::messages::Progress;
use crate::storage::{Location, Opener, Storage};
use crate::temp::TempFile;

/// What SQL reads: files polars scans, and what was left out.
pub struct RawTable {
    /// Every JSON-lines input's JSON-object lines, in input order, if there were any.
    pub ndjson: Option<Ndjson>,
    /// Or, when only named fields were read, those of every JSON-lines input's lines.
    pub columns: Option<DataFrame>,
    /// The Parquet inputs as local files (S3 objects downloaded).
    pub parquet: Vec<LocalFile>,
    /// Lines that are not JSON objects are rejected here, as everywhere.
    pub tally: Tally,
}

/// The JSON-object lines and the schema that holds every one of them: each field's type is
/// the supertype of its values over all lines, as polars infers it when it reads the whole file.
pub struct Ndjson {
    pub file: TempFile,
    pub schema: SchemaRef,
}

pub enum LocalFile {
    Path(std::path::PathBuf),
    Downloaded(TempFile),
}

impl LocalFile {
    pub fn path(&self) -> &Path {
        match self {
            LocalFile::Path(p) => p,
            LocalFile::Downloaded(t) => t.path(),
        }
    }
}

impl RawTable {
    /// The inputs with every field of the JSON-lines ones, for any SQL.
    pub fn read(storage: &Storage, inputs: &[Input], progress: &Progress) -> Result<RawTable> {
        let opener = storage.open_in_order(&objects(inputs));
        let mut tally = Tally::default();
        let mut ndjson: Option<(TempFile, BufWriter<std::fs::File>)> = None;
        let mut parquet = Vec::new();
        let mut schemas: Vec<Schema> = Vec::new();
        for input in inputs {
            let Format::Jsonl(compression) = input.format else {
                parquet.push(local_parquet(storage, input)?);
                continue;
            };
            if ndjson.is_none() {
                let temp = TempFile::new();
                let file = std::fs::File::create(temp.path()).with_context(|| format!("{}: cannot create", temp.path().display()))?;
                ndjson = Some((temp, BufWriter::with_capacity(1 << 20, file)));
            }
            let (temp, out) = ndjson.as_mut().expect("created above");
            let check = |bytes: &[u8]| {
                let mut valid = Vec::with_capacity(bytes.len());
                let piece_tally = json::check_objects(bytes, |line| {
                    valid.extend_from_slice(line);
                    valid.push(b'\n');
                });
                let schema = (!valid.is_empty()).then(|| polars::io::ndjson::infer_schema(&mut std::io::Cursor::new(&valid), None));
                (schema.transpose().map(|schema| (valid, schema)), piece_tally)
            };
            each_chunk(storage, &opener, input, compression, progress, &mut tally, check, |checked| {
                let checked: Vec<_> = checked.into_iter().collect::<polars::error::PolarsResult<_>>().with_context(|| format!("{}: cannot infer the fields' types", input.display))?;
                for (valid, schema) in checked {
                    out.write_all(&valid).with_context(|| format!("{}: cannot write", temp.path().display()))?;
                    if let Some(schema) = schema.filter(|s| !schemas.contains(s)) {
                        schemas.push(schema);
                    }
                }
                Ok(())
            })?;
        }
        progress.finish();
        let ndjson = match ndjson {
            Some((file, out)) => {
                out.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all()).with_context(|| format!("{}: cannot write", file.path().display()))?;
                Some(Ndjson { file, schema: supertype(schemas)? })
            }
            None => None,
        };
        Ok(RawTable { ndjson, columns: None, parquet, tally })
    }

    /// The inputs with only the top-level fields `names` of the JSON-lines ones (a name no
    /// line has is no column), or why those fields need `read`: one holds objects or arrays,
    /// or values of two types that only the full reader types as polars does.
    pub fn read_fields(storage: &Storage, inputs: &[Input], names: &[String], progress: &Progress) -> Result<Result<RawTable, String>> {
        let opener = storage.open_in_order(&objects(inputs));
        let tree = FieldTree::flat(names);
        let mut tally = Tally::default();
        let mut parquet = Vec::new();
        let mut picked: Vec<Vec<Values>> = Vec::new();
        let mut any_jsonl = false;
        let mut height = 0;
        for input in inputs {
            let Format::Jsonl(compression) = input.format else {
                parquet.push(local_parquet(storage, input)?);
                continue;
            };
            any_jsonl = true;
            let pick = |bytes: &[u8]| {
                let chunk = json::columns::pick(bytes, &tree);
                ((chunk.fields, chunk.tally.accepted), chunk.tally)
            };
            each_chunk(storage, &opener, input, compression, progress, &mut tally, pick, |chunks| {
                for (fields, accepted) in chunks {
                    height += accepted as usize;
                    picked.push(fields);
                }
                Ok(())
            })?;
        }
        progress.finish();
        let columns = match any_jsonl {
            true => match json::columns::columns(names, picked) {
                // A query naming no field (`count(*)`) counts the lines, over JSON-lines alone.
                Ok(columns) if columns.is_empty() && !parquet.is_empty() => return Ok(Err("no line has a field the SQL names".into())),
                Ok(columns) => Some(DataFrame::new(height, columns.into_iter().map(Into::into).collect()).context("the JSON-lines fields")?),
                Err(why) => return Ok(Err(why)),
            },
            false => None,
        };
        Ok(Ok(RawTable { ndjson: None, columns, parquet, tally }))
    }
}

/// A JSON-lines input's chunks (an S3-sink chunk's files as one record a line, as every
/// command reads them) decoded by `decode` in parallel batches, two chunks per thread to keep
/// every thread busy while the next are cut; `take` gets each batch's results in chunk order,
/// and the input's tallies go into `tally`.
#[allow(clippy::too_many_arguments)]
fn each_chunk<T: Send>(
    storage: &Storage,
    opener: &Opener,
    input: &Input,
    compression: Compression,
    progress: &Progress,
    tally: &mut Tally,
    decode: impl Fn(&[u8]) -> (T, PieceTally) + Sync,
    mut take: impl FnMut(Vec<T>) -> Result<()>,
) -> Result<()> {
    let chunks = if input.aligned.is_some() { aligned::json_chunks(storage, input)? } else { json::chunks(opener, input, compression)? };
    let batch = rayon::current_num_threads().max(1) * 2;
    let mut all = chunks.iter();
    let mut piece_tallies = Vec::new();
    loop {
        let pieces: Vec<json::ChunkBytes> = all.by_ref().take(batch).map(|piece| chunks.load(piece?.1)).collect::<Result<_>>()?;
        if pieces.is_empty() {
            break;
        }
        let decoded: Vec<(T, PieceTally)> = pieces
            .into_par_iter()
            .map(|bytes| {
                progress.advance(bytes.len() as u64);
                let decoded = decode(&bytes);
                chunks.give_back(bytes);
                decoded
            })
            .collect();
        let (results, tallies): (Vec<T>, Vec<PieceTally>) = decoded.into_iter().unzip();
        piece_tallies.extend(tallies);
        take(results)?;
    }
    tally::absorb(tally, &input.display, piece_tallies);
    Ok(())
}

/// One schema holding all of `schemas`: fields in order of first appearance, each of the
/// supertype of its types (structs merged field by field), as polars' own inference reduces
/// the lines' types. No lines at all make an empty schema.
fn supertype(schemas: Vec<Schema>) -> Result<SchemaRef> {
    if schemas.len() <= 1 {
        return Ok(std::sync::Arc::new(schemas.into_iter().next().unwrap_or_default()));
    }
    let frames: Vec<_> = schemas.iter().map(|s| DataFrame::empty_with_schema(s).lazy()).collect();
    let args = UnionArgs { diagonal: true, to_supertypes: true, ..UnionArgs::default() };
    concat(frames, args)
        .and_then(|mut stacked| stacked.collect_schema())
        .map_err(|e| anyhow!("the inputs' fields have types no one type holds: {e}"))
}

/// A Parquet input as a local file for polars' own reader, its footer and every page header
/// checked first as every other path checks them (a damaged file is this input's error).
fn local_parquet(storage: &Storage, input: &Input) -> Result<LocalFile> {
    let local = match &input.location {
        Location::File(path) => LocalFile::Path(path.clone()),
        other => {
            let temp = TempFile::new();
            let mut file = std::fs::File::create(temp.path()).with_context(|| format!("{}: cannot create", temp.path().display()))?;
            std::io::copy(&mut storage.open(other)?, &mut file).with_context(|| format!("{}: read error", input.display))?;
            LocalFile::Downloaded(temp)
        }
    };
    match crate::storage::map_file(local.path())? {
        Some(mapped) => super::parquet::check_whole(&mapped.map, &input.display)?,
        None => anyhow::bail!("{}: not a readable Parquet file (empty)", input.display),
    }
    Ok(local)
}
