//! `dlqf gen`: deterministic synthetic dumps for demos, tests and benchmarks.

use dlqf::storage::Location;
use std::process::ExitCode;

use anyhow::Result;
use dlqf::gen::{self, GenFormat, GenOptions};
use dlqf::timestamp;

use super::UsageError;

/// Write a deterministic synthetic DLQ dump.
///
/// The same --profile, --rows, --seed and options give the same bytes on any machine and
/// thread count. Rows carry the mess real producers make: case and whitespace drift, a skewed
/// Pareto of causes starting and stopping over weeks, unicode, mixed timestamp offsets, and
/// (with --malformed) broken rows.
///
/// Examples:
///   dlqf gen --rows 20000 --seed 7 -o sample_data/vision.parquet
///   dlqf gen --profile envelope --rows 5000 --malformed 0.01 -o dlq.jsonl.gz
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Record shape: vision or envelope.
    #[arg(long, default_value = "vision", value_parser = ["vision", "envelope"])]
    profile: String,

    /// Number of rows.
    #[arg(long, default_value_t = 10_000)]
    rows: u64,

    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,

    /// Output file (or s3://bucket/key); .jsonl, .jsonl.gz, .jsonl.zst or .parquet.
    #[arg(short = 'o', long = "output", value_name = "PATH", value_parser = super::inputs::location_parser)]
    output: Location,

    /// Output format (default: from the file name).
    #[arg(long, value_parser = ["parquet", "jsonl"])]
    format: Option<String>,

    /// Share of malformed rows, 0 to 1.
    #[arg(long, default_value_t = 0.0, value_name = "SHARE")]
    malformed: f64,

    /// First day of failures.
    #[arg(long, default_value = "2026-10-01", value_name = "DATE")]
    start: String,

    /// Days the failures span.
    #[arg(long, default_value_t = 42)]
    days: u32,

    /// Rows per Parquet row group.
    #[arg(long, default_value_t = 262_144, value_name = "N")]
    row_group_rows: usize,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let format = match args.format.as_deref() {
        Some("parquet") => GenFormat::Parquet,
        Some(_) => GenFormat::Jsonl,
        None if args.output.file_name().to_lowercase().ends_with(".parquet") => GenFormat::Parquet,
        None => GenFormat::Jsonl,
    };
    let start = timestamp::parse_bound(&args.start, 0).map_err(UsageError)?;
    if !(0.0..=1.0).contains(&args.malformed) {
        return Err(UsageError(format!("--malformed must be between 0 and 1, got {}", args.malformed)).into());
    }
    gen::generate(&GenOptions {
        profile: args.profile,
        rows: args.rows,
        seed: args.seed,
        output: args.output,
        format,
        malformed: args.malformed,
        start,
        days: args.days,
        row_group_rows: args.row_group_rows,
    })?;
    Ok(ExitCode::SUCCESS)
}
