//! `dlqf trend`: failures per signature per hour, day or week, and which causes are new,
//! rising, steady, falling or resolved.

use std::process::ExitCode;

use anyhow::Result;
use clap::builder::TypedValueParser;
use dlqf::analyze::trend::{self, Every, TrendGroups, TrendOptions, DEFAULT_WINDOW};
use dlqf::report::{self, OutputFormat};

use dlqf::source::Window;

use super::inputs::{InputArgs, Loaded, OutputArgs, Read};
use super::UsageError;

/// Count failures per signature per UTC hour, day or week, and say what changed.
///
/// Periods run without gaps from the first failure's period to the last one's. Each cause's
/// status compares its last --window periods with the --window periods before them:
///   new       nothing before the recent window
///   resolved  nothing in the recent window
///   rising    at least 1.5× more than the window before
///   falling   at least 1.5× less than the window before
///   steady    anything else
/// With fewer earlier periods than --window, rates per period are compared.
/// Series come in rank order (total descending, then signature values).
///
/// Examples:
///   dlqf trend dumps/ --every day                     sparkline per cause
///   dlqf trend dumps/ --every hour --since 48h --window 6
///   dlqf trend 's3://dlq-archive/vision/' --format json -o trend.json
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    output: OutputArgs,

    /// Period length: hour, day or week (weeks start on Monday, UTC).
    #[arg(long, default_value = "day", value_parser = every_parser())]
    every: Every,

    /// Periods in the recent window the status compares against the same number before it.
    #[arg(long, default_value_t = DEFAULT_WINDOW, value_name = "N")]
    window: usize,

    /// Group by the full signature, or by error category alone.
    #[arg(long, value_enum, default_value = "signature")]
    by: super::rank::GroupBy,

    /// Show only the N largest causes.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
}

fn every_parser() -> impl TypedValueParser<Value = Every> {
    clap::builder::PossibleValuesParser::new(Every::NAMES).map(|name| Every::from_name(&name).expect("listed names parse"))
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.window == 0 {
        return Err(UsageError("--window must be at least 1".into()).into());
    }
    let writes = [OutputFormat::Table, OutputFormat::Json, OutputFormat::Csv, OutputFormat::Markdown, OutputFormat::State];
    let format = args.output.format("trend", &writes)?;
    let every = args.every;
    let state_to = args.output.state_to(format)?;
    let prepared = args.input.prepare(Window::default())?;
    let Some(Loaded { storage, profile, layout, read, .. }) = prepared.load(|| TrendGroups::new(every), state_to.as_ref())? else {
        return Ok(ExitCode::SUCCESS);
    };
    let periods = match read {
        Read::Partial(partial) => partial.summary.periods(every),
        Read::Dumps(groups) => groups.finish(&layout),
    };
    let options = TrendOptions {
        profile: profile.name.clone(),
        signature_fields: profile.signature_names(),
        every,
        window: args.window,
        category_column: !profile.category_in_signature(),
    };
    let mut trend = trend::build(periods, &layout, &options)?;
    if args.by == super::rank::GroupBy::Category {
        trend = trend::by_category(trend);
    }
    // After any grouping, so the largest merged series are the ones kept.
    if let Some(n) = args.top {
        trend.series.truncate(n);
    }
    let bytes = match format {
        OutputFormat::Table => report::table::trend(&trend),
        OutputFormat::Json => report::json::render(&trend)?,
        OutputFormat::Csv => report::csv::trend(&trend),
        OutputFormat::Markdown => report::markdown::trend(&trend),
        OutputFormat::Parquet | OutputFormat::Html | OutputFormat::State => unreachable!("refused by format() or written by load"),
    };
    storage.write(&args.output.destination(), &bytes)?;
    Ok(ExitCode::SUCCESS)
}
