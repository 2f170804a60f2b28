//! `dlqf health`: the queue monitor's question (how deep, how fast growing, how bad) answered
//! from the archive, with an exit code for cron and CI.

use std::process::ExitCode;

use anyhow::Result;
use dlqf::analyze::health::{self, DailyCounts, HealthOptions, TopicDays, DEFAULT_CRITICAL, DEFAULT_WARN, DEFAULT_WINDOW_DAYS};
use dlqf::source::Window;
use dlqf::report::{self, OutputFormat};

use super::inputs::{InputArgs, Loaded, OutputArgs, Read};
use super::{UsageError, EXIT_ALERT};

/// Depth, daily failures, growth and a healthy/warning/critical status, per DLQ topic.
///
/// Each number is given for the whole archive and for each DLQ topic, failures counted per UTC
/// day. Depth is the number of failures read (after --since/--until). At --critical or more the
/// status is critical, at --warn or more warning, else healthy. Growth is the mean number of
/// failures per day over the last --window-days days that have any span (empty days count 0).
/// With --by (default for the envelope profile: original_topic) each value of that field is
/// a topic with its own depth, days, growth and status, computed as the whole is but over
/// its failures alone; --fail-on-critical then fires when any topic or the whole is critical.
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

    /// Also report each value of this signature field as a topic [default: the profile's
    /// topic field, envelope: original_topic].
    #[arg(long, value_name = "FIELD")]
    by: Option<String>,

    /// Exit 3 when the whole or any topic is critical.
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
    let writes = [OutputFormat::Table, OutputFormat::Json, OutputFormat::Csv, OutputFormat::Markdown, OutputFormat::State];
    let format = args.output.format("health", &writes)?;
    let state_to = args.output.state_to(format)?;
    let prepared = args.input.prepare(Window::default())?;
    let fields = prepared.profile.signature_names();
    let by = args.by.clone().or_else(|| prepared.profile.origin.topic.clone().filter(|f| fields.contains(f)));
    let part = match &by {
        Some(field) => Some(fields.iter().position(|f| f == field).ok_or_else(|| {
            UsageError(format!("--by {field}: not a signature field of profile {} (fields: {})", prepared.profile.name, fields.join(", ")))
        })?),
        None => None,
    };
    let make = || (DailyCounts::default(), part.map(TopicDays::new));
    let Some(Loaded { storage, layout, read, rejected, .. }) = prepared.load(make, state_to.as_ref())? else {
        return Ok(ExitCode::SUCCESS);
    };
    let (whole, topics) = match read {
        Read::Partial(partial) => (partial.summary.days(), part.map(|p| partial.summary.topic_days(p))),
        Read::Dumps((whole, topics)) => (whole, topics.map(|t| t.finish(&layout))),
    };
    let options = HealthOptions { warn, critical: args.critical, window_days: args.window_days };
    let health = health::build(whole, by.zip(topics), rejected, &options)?;
    let bytes = match format {
        OutputFormat::Table => report::table::health(&health),
        OutputFormat::Json => report::json::render(&health)?,
        OutputFormat::Csv => report::csv::health(&health),
        OutputFormat::Markdown => report::markdown::health(&health),
        OutputFormat::Parquet | OutputFormat::Html | OutputFormat::State => unreachable!("refused by format() or written by load"),
    };
    storage.write(&args.output.destination(), &bytes)?;
    Ok(if args.fail_on_critical && health.any_critical() { ExitCode::from(EXIT_ALERT) } else { ExitCode::SUCCESS })
}
