//! `dlqf query`: SQL over the dumps' raw records (table `dlq`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use dlqf::analyze::sql;
use dlqf::messages::Progress;
use dlqf::report::{self, table};
use dlqf::source::{self, RawTable};
use dlqf::storage::{Location, Storage};
use serde_json::Value;

use super::UsageError;

/// Run SQL against the loaded records: every input's raw columns form table `dlq`.
///
/// The files in queries/ (rank.sql, …) are standard SQL over those raw columns, with the
/// normalisation written in SQL, so they also run unchanged on DuckDB
/// (`CREATE VIEW dlq AS SELECT * FROM read_parquet('…')`) or Spark SQL.
///
/// Examples:
///   dlqf query sample_data/vision/ --file queries/rank.sql
///   dlqf query dumps/ -e "SELECT stage, count(*) AS n FROM dlq GROUP BY stage" --format json
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Dump files, directories, globs, s3:// URLs, or - for JSON-lines on stdin.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<String>,

    /// The SQL to run.
    #[arg(short = 'e', long = "execute", value_name = "SQL", conflicts_with = "file", required_unless_present = "file")]
    sql: Option<String>,

    /// A file holding the SQL to run.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,

    /// Output format.
    #[arg(long, value_parser = ["table", "json", "csv"], default_value = "table")]
    format: String,

    /// Write the result to this file (or s3://bucket/key) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE", value_parser = super::inputs::location_parser)]
    output: Option<Location>,

    /// No progress bar, even on a terminal.
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let text = match (&args.sql, &args.file) {
        (Some(sql), _) => sql.clone(),
        (None, Some(path)) => std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?,
        (None, None) => return Err(UsageError("give the SQL with -e or --file".into()).into()),
    };
    let storage = Storage::new();
    let inputs = source::inputs(&storage, &args.inputs)?;
    super::inputs::refuse_states(&inputs, "query")?;
    let progress = || Progress::for_bytes(inputs.iter().filter_map(|i| i.size).sum(), !args.no_progress);
    let df = match picked_fields(&storage, &inputs, &text, &progress())? {
        Some(df) => df,
        None => {
            let table = RawTable::read(&storage, &inputs, &progress())?;
            super::inputs::report_rejects(table.tally.rejected, &table.tally.rejects);
            sql::query(&table, &text)?
        }
    };
    let rows = dlqf::values::rows(&df)?;
    let names: Vec<String> = df.get_column_names().iter().map(|n| n.to_string()).collect();
    let bytes = match args.format.as_str() {
        "json" => report::json::render(&rows)?,
        "csv" => report::csv::rows(&names, &rows),
        _ => {
            let cells: Vec<Vec<String>> = rows.iter().map(|r| r.values().map(cell_text).collect()).collect();
            table::render(&names, &cells, 0).into_bytes()
        }
    };
    storage.write(&args.output.unwrap_or(Location::Std), &bytes)?;
    Ok(ExitCode::SUCCESS)
}

/// The query's answer from only the fields it names, read from the JSON-lines inputs by
/// dlqf's scanner; None when it needs every field (a `*`, a field holding objects or mixed
/// types, or an error, which the full read then reports with every field named).
fn picked_fields(storage: &Storage, inputs: &[source::Input], sql: &str, progress: &Progress) -> Result<Option<polars::prelude::DataFrame>> {
    let Some(names) = sql::named_columns(sql) else { return Ok(None) };
    // stdin cannot be read a second time, should the named fields not do.
    if !inputs.iter().any(|i| matches!(i.format, source::Format::Jsonl(_))) || inputs.iter().any(|i| i.location.is_std()) {
        return Ok(None);
    }
    let Ok(table) = RawTable::read_fields(storage, inputs, &names, progress)? else { return Ok(None) };
    let Ok(df) = sql::query(&table, sql) else { return Ok(None) };
    super::inputs::report_rejects(table.tally.rejected, &table.tally.rejects);
    Ok(Some(df))
}

fn cell_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

