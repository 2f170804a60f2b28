//! SQL over the loaded records: every input's raw columns become table `dlq`, queried with
//! polars' SQL engine, so the analyses in `queries/` also run unchanged on DuckDB or Spark.

use std::io::{Read, Write};

use anyhow::{Context, Result};
use polars::prelude::{Column, DataFrame, DataType, IntoLazy, LazyFileListReader, LazyFrame, LazyJsonLineReader, PlRefPath, ScanArgsParquet};
use polars::sql::SQLContext;

use crate::source::{for_each_line, FieldPicker, Format, Input, LocalCopy, Reject, Tally};

/// Runs `sql` with the inputs as table `dlq` (columns as in the dumps; inputs with different
/// columns are aligned by name, missing ones null). JSON lines that are not JSON objects are
/// left out of the table and counted in the returned tally, as everywhere else.
pub fn query(inputs: &[Input], sql: &str) -> Result<(DataFrame, Tally)> {
    let mut keep = Vec::new();
    let mut frames = Vec::new();
    let mut tally = Tally::default();
    for input in inputs {
        let local = local_file(input, &mut tally)?;
        let path = PlRefPath::new(local.path().to_string_lossy().as_ref());
        let frame = match input.format {
            Format::Parquet => LazyFrame::scan_parquet(path, ScanArgsParquet::default()),
            Format::Jsonl(_) => LazyJsonLineReader::new(path).with_infer_schema_length(None).finish(),
        }
        .with_context(|| format!("{}: cannot read", input.display))?;
        frames.push(frame);
        keep.push(local);
    }
    let table = match frames.len() {
        0 => anyhow::bail!("no inputs to query"),
        1 => frames.pop().expect("one frame"),
        // Several inputs are stacked into one frame: polars 0.55 fails on a bare count(*) over
        // a union plan.
        _ => stack(frames.into_iter().map(|f| f.collect()).collect::<Result<Vec<_>, _>>()?)?.lazy(),
    };
    // Standard SQL's `CAST(text AS DATE)` is how portable queries read dates; polars warns that
    // its own API prefers `str.to_date`, which is no concern of a SQL user.
    polars::error::set_warning_function(|_, _| {});
    let mut context = SQLContext::new();
    context.register("dlq", table);
    let result = context.execute(sql).context("SQL")?.collect().context("SQL")?;
    drop(keep);
    Ok((result, tally))
}

/// Stacks frames by column name: a column missing from a frame is null there, and a column
/// whose type differs is cast to the type it has in the first frame that holds it.
fn stack(frames: Vec<DataFrame>) -> Result<DataFrame> {
    let mut fields: Vec<(String, DataType)> = Vec::new();
    for df in &frames {
        for column in df.columns() {
            if !fields.iter().any(|(n, _)| n == column.name().as_str()) {
                fields.push((column.name().to_string(), column.dtype().clone()));
            }
        }
    }
    let mut stacked: Option<DataFrame> = None;
    for df in frames {
        let height = df.height();
        let columns = fields
            .iter()
            .map(|(name, dtype)| match df.column(name) {
                Ok(c) => c.cast(dtype).with_context(|| format!("column `{name}` has different types in different inputs")),
                Err(_) => Ok(Column::full_null(name.as_str().into(), height, dtype)),
            })
            .collect::<Result<Vec<_>>>()?;
        let aligned = DataFrame::new(height, columns)?;
        match &mut stacked {
            None => stacked = Some(aligned),
            Some(acc) => {
                acc.vstack_mut(&aligned)?;
            }
        }
    }
    Ok(stacked.expect("at least two frames"))
}

/// A local file polars can read: Parquet as it is (downloaded from S3 if needed); JSON-lines
/// decompressed, with every line checked and only JSON objects kept.
fn local_file<'a>(input: &'a Input, tally: &mut Tally) -> Result<LocalCopy<'a>> {
    let Format::Jsonl(compression) = input.format else {
        return LocalCopy::of(input);
    };
    let temp = crate::temp::TempFile::new();
    let mut out = std::io::BufWriter::new(std::fs::File::create(temp.path()).with_context(|| format!("{}: cannot create", temp.path().display()))?);
    let mut reader = crate::source::open_reader(input, compression)?;
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).with_context(|| format!("{}: read error", input.display))?;
    let mut picker = FieldPicker::new(&[]);
    let mut rejects = Vec::new();
    let mut write_error = None;
    for_each_line(&bytes, |line_no, line| {
        let checked = simdutf8::basic::from_utf8(line).map_err(|_| "invalid UTF-8".to_string()).and_then(|text| picker.pick(text, &mut []));
        match checked {
            Ok(()) => {
                if let Err(e) = out.write_all(line).and_then(|_| out.write_all(b"\n")) {
                    write_error.get_or_insert(e);
                }
                tally.accepted += 1;
            }
            Err(reason) => {
                tally.rejected += 1;
                if rejects.len() < crate::source::NAMED_REJECTS {
                    rejects.push(Reject { input: input.display.clone(), line: line_no, reason });
                }
            }
        }
    });
    if let Some(e) = write_error {
        return Err(e).context("writing a temporary file");
    }
    out.flush()?;
    tally.rejects.extend(rejects);
    tally.rejects.truncate(crate::source::NAMED_REJECTS);
    Ok(LocalCopy::Downloaded(temp))
}
