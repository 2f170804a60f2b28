//! `dlqf health`: the queue monitor's question (how deep, how fast growing, how bad) answered
//! from the archive, with an exit code for cron and CI.

use std::process::ExitCode;

use anyhow::Result;
use dlqf::analyze::health::{self, DailyCounts, HealthOptions, Status, DEFAULT_CRITICAL, DEFAULT_WARN, DEFAULT_WINDOW_DAYS};
use dlqf::report::{self, OutputFormat};

use super::inputs::{InputArgs, OutputArgs};
use super::{UsageError, EXIT_ALERT};

/// Depth, failures per UTC day, growth per day and a healthy/warning/critical status.
///
/// Depth is the number of failures read (after --since/--until). At --critical or more the
/// status is critical, at --warn or more warning, else healthy. Growth is the mean number of
/// failures per day over the last --window-days days that have any span (empty days count 0).
///
/// Examples:
///   dlqf health dumps/ --since 7d
///   dlqf health dumps/ --warn 500 --critical 5000 --fail-on-critical || page-oncall
///   dlqf health 's3://dlq-archive/orders/' --profile envelope --format json
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    output: OutputArgs,

    /// Depth at which the status is warning [default: 100, or --critical if lower].
    #[arg(long, value_name = "N")]
    warn: Option<u64>,

    /// Depth at which the status is critical.
    #[arg(long, default_value_t = DEFAULT_CRITICAL, value_name = "N")]
    critical: u64,

    /// Days (the most recent ones) that growth per day averages over.
    #[arg(long, default_value_t = DEFAULT_WINDOW_DAYS, value_name = "N")]
    window_days: usize,

    /// Exit 3 when the status is critical.
    #[arg(long)]
    fail_on_critical: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let warn = args.warn.unwrap_or(DEFAULT_WARN.min(args.critical));
    if warn > args.critical {
        return Err(UsageError(format!("--warn ({warn}) must not be above --critical ({})", args.critical)).into());
    }
    if args.window_days == 0 {
        return Err(UsageError("--window-days must be at least 1".into()).into());
    }
    let format = args.output.format()?;
    let loaded = args.input.load(DailyCounts::default)?;
    let options = HealthOptions { warn, critical: args.critical, window_days: args.window_days };
    let health = health::build(loaded.acc, loaded.tally.rejected, &options)?;
    let bytes = match format {
        OutputFormat::Table => report::table::health(&health),
        OutputFormat::Json => report::json::render(&health)?,
        OutputFormat::Csv => report::csv::health(&health),
        OutputFormat::Markdown => report::markdown::health(&health),
        other => return Err(UsageError(format!("health has no {} output", other.name())).into()),
    };
    report::write_output(args.output.output.as_deref(), &bytes)?;
    let critical = health.status == Status::Critical;
    Ok(if args.fail_on_critical && critical { ExitCode::from(EXIT_ALERT) } else { ExitCode::SUCCESS })
}
