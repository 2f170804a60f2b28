//! `dlqf diff`: two `rank --format json` reports (yesterday's and today's) compared, for the
//! nightly message: new causes, gone ones, and how the rest moved.

use std::process::ExitCode;

use anyhow::{Context, Result};
use dlqf::analyze::diff;
use dlqf::analyze::rank::RankReport;
use dlqf::messages;
use dlqf::report::{self, OutputFormat};
use dlqf::storage::{Location, Storage};

use super::inputs::OutputArgs;
use super::EXIT_ALERT;

/// Compare two rankings: causes that are new, gone, or moved in rank and share.
///
/// OLD and NEW are reports written by `dlqf rank --format json` (files or s3:// objects),
/// made with the same profile. New causes come in NEW's rank order, gone ones in OLD's, and
/// every cause in both appears under "changed" (in NEW's rank order) with its old and new
/// rank, count and share.
///
/// Examples:
///   dlqf diff rank-2026-11-28.json rank-2026-11-29.json
///   dlqf diff yesterday.json today.json --format markdown -o nightly.md
///   dlqf diff s3://dlq-reports/rank/2026-11-28.json today.json --fail-on-new
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The earlier `rank --format json` report.
    #[arg(value_name = "OLD.json")]
    old: String,

    /// The later `rank --format json` report.
    #[arg(value_name = "NEW.json")]
    new: String,

    #[command(flatten)]
    output: OutputArgs,

    /// Exit 3 when NEW has a cause OLD did not.
    #[arg(long)]
    fail_on_new: bool,
}

fn read_report(storage: &Storage, name: &str) -> Result<RankReport> {
    let bytes = storage.read_all(&Location::parse(name)?)?;
    let mut report: RankReport = serde_json::from_slice(&bytes).with_context(|| format!("{name}: not a dlqf rank JSON report"))?;
    diff::check_rank_report(&report, name)?;
    diff::fill_missing(&mut report);
    if let Some(listed) = diff::listed_part(&report) {
        messages::warning(format!(
            "{name} lists {listed} of its {} failures (made with --top?): causes past its end show as new or gone",
            report.total
        ));
    }
    Ok(report)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let format = args.output.format("diff", &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Csv, OutputFormat::Markdown])?;
    let storage = Storage::new();
    let old = read_report(&storage, &args.old)?;
    let new = read_report(&storage, &args.new)?;
    let result = diff::diff(&old, &new).with_context(|| format!("{} vs {}", args.old, args.new))?;
    let bytes = match format {
        OutputFormat::Table => report::table::diff(&result, &args.old, &args.new),
        OutputFormat::Json => report::json::render(&result)?,
        OutputFormat::Csv => report::csv::diff(&result),
        OutputFormat::Markdown => report::markdown::diff(&result, &args.old, &args.new),
        OutputFormat::Parquet | OutputFormat::Html | OutputFormat::State => unreachable!("refused by format()"),
    };
    storage.write(&args.output.destination(), &bytes)?;
    Ok(if args.fail_on_new && !result.new.is_empty() { ExitCode::from(EXIT_ALERT) } else { ExitCode::SUCCESS })
}
