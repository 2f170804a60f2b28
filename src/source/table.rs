//! The inputs' raw records for SQL: every JSON-lines input's lines go through the same chunks
//! as every other reader (byte-order mark dropped, lines counted) and the JSON objects among
//! them are streamed into one temporary NDJSON file; Parquet inputs stay files.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use rayon::prelude::*;

use super::{jsonl, objects, rows, Format, Input, Piece, Tally};
use crate::messages::Progress;
use crate::storage::{Location, Storage};
use crate::temp::TempFile;

/// What SQL reads: files polars scans, and what was left out.
pub struct RawTable {
    /// Every JSON-lines input's JSON-object lines, in input order, if there were any.
    pub ndjson: Option<TempFile>,
    /// The Parquet inputs as local files (S3 objects downloaded).
    pub parquet: Vec<LocalFile>,
    /// Lines that are not JSON objects are rejected here, as everywhere.
    pub tally: Tally,
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
    pub fn read(storage: &Storage, inputs: &[Input], progress: &Progress) -> Result<RawTable> {
        let opener = storage.open_in_order(&objects(inputs));
        let mut tally = Tally::default();
        let mut ndjson: Option<(TempFile, BufWriter<std::fs::File>)> = None;
        let mut parquet = Vec::new();
        let batch = rayon::current_num_threads().max(1) * 2;
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
            let chunks = jsonl::chunks(&opener, input, compression)?;
            let mut all = chunks.iter(&input.display);
            let mut piece_tallies = Vec::new();
            loop {
                let pieces: Vec<Piece> = all.by_ref().take(batch).collect::<Result<_>>()?;
                if pieces.is_empty() {
                    break;
                }
                let checked: Vec<(Vec<u8>, rows::PieceTally)> = pieces
                    .into_par_iter()
                    .map(|piece| {
                        let Piece::Chunk(_, bytes) = piece else { unreachable!("lines come in chunks") };
                        progress.advance(bytes.len() as u64);
                        let mut valid = Vec::with_capacity(bytes.len());
                        let piece_tally = jsonl::check_objects(&bytes, |line| {
                            valid.extend_from_slice(line);
                            valid.push(b'\n');
                        });
                        chunks.give_back(bytes);
                        (valid, piece_tally)
                    })
                    .collect();
                for (valid, piece_tally) in checked {
                    out.write_all(&valid).with_context(|| format!("{}: cannot write", temp.path().display()))?;
                    piece_tallies.push(piece_tally);
                }
            }
            rows::absorb(&mut tally, &input.display, piece_tallies);
        }
        progress.finish();
        let ndjson = match ndjson {
            Some((temp, out)) => {
                out.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all()).with_context(|| format!("{}: cannot write", temp.path().display()))?;
                Some(temp)
            }
            None => None,
        };
        Ok(RawTable { ndjson, parquet, tally })
    }
}

fn local_parquet(storage: &Storage, input: &Input) -> Result<LocalFile> {
    match &input.location {
        Location::File(path) => Ok(LocalFile::Path(path.clone())),
        other => {
            let temp = TempFile::new();
            let mut file = std::fs::File::create(temp.path()).with_context(|| format!("{}: cannot create", temp.path().display()))?;
            std::io::copy(&mut storage.open(other)?, &mut file).with_context(|| format!("{}: read error", input.display))?;
            Ok(LocalFile::Downloaded(temp))
        }
    }
}
