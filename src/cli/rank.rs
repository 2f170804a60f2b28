//! `dlqf rank`: bucket failures by signature and rank the causes.

use std::process::ExitCode;

use anyhow::Result;
use dlqf::analyze::rank::{self, RankOptions, DEFAULT_ALERT_SHARE};
use dlqf::analyze::trend::{self, Every, TrendGroups, TrendOptions, DEFAULT_WINDOW};
use dlqf::analyze::SignatureGroups;
use dlqf::messages;
use dlqf::report::{self, OutputFormat};

use dlqf::source::Window;

use super::inputs::{InputArgs, Loaded, OutputArgs, Read};
use super::{UsageError, EXIT_ALERT};

/// Rank failure signatures by count: the dominant cause first.
///
/// Each bucket shows its count, share of all accepted rows, first and last failure, and the id
/// of its earliest failure to pull as an example. Rows that cannot be read are counted as
/// `rejected` and the first ones named on stderr as file:line: reason.
///
/// Examples:
///   dlqf rank dumps/                       ranked table of every dump under dumps/
///   dlqf rank 'dumps/dt=2026-11-*' --since 7d --format json -o rank.json
///   zcat dlq.jsonl.gz | dlqf rank - --profile envelope --top 10
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,

    #[command(flatten)]
    output: OutputArgs,

    /// Show only the N largest buckets (totals still count every row).
    #[arg(long, value_name = "N")]
    top: Option<usize>,

    /// Share at which the top bucket counts as dominant.
    #[arg(long, default_value_t = DEFAULT_ALERT_SHARE, value_name = "SHARE")]
    alert_share: f64,

    /// Group by the full signature, or by error category alone.
    #[arg(long, value_enum, default_value = "signature")]
    by: GroupBy,

    /// Exit 3 when one cause dominates (its share reaches --alert-share).
    #[arg(long)]
    fail_on_dominant: bool,

    /// Instead of the ranking, show why one bucket's messages are one cause: its first five
    /// messages in input order, each templated field raw with what every rule masked. BUCKET
    /// is a rank from the ranking, or one of the bucket's signature values (e.g. a template).
    #[arg(long, value_name = "BUCKET", conflicts_with = "format")]
    explain: Option<String>,
}

/// Messages `--explain` shows.
const EXPLAINED: usize = 5;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    Signature,
    Category,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.explain.is_some() && args.by == GroupBy::Category {
        return Err(UsageError("--explain shows a signature's bucket: not with --by category".into()).into());
    }
    if !(0.0..=1.0).contains(&args.alert_share) {
        return Err(UsageError(format!("--alert-share must be between 0 and 1, got {}", args.alert_share)).into());
    }
    let format = args.output.format("rank", &OutputFormat::ALL)?;
    // The HTML page also draws trend lines: count per hour in the same scan, then choose the
    // period length that suits the data's span.
    let html = format == OutputFormat::Html;
    let prepared = args.input.prepare(Window::default())?;
    if let (Some(_), Some(state)) = (&args.explain, prepared.states.first()) {
        return Err(UsageError(format!("--explain: {} is a partial state, which keeps counts, not messages: give the dumps", state.display)).into());
    }
    let state_to = args.output.state_to(format)?;
    let make = || (SignatureGroups::default(), html.then(|| TrendGroups::new(Every::Hour)));
    let Some(Loaded { storage, profile, layout, read, rejected }) = prepared.load(make, state_to.as_ref())? else {
        return Ok(ExitCode::SUCCESS);
    };
    let (groups, hourly) = match read {
        Read::Partial(partial) => (partial.summary.groups(), html.then(|| partial.summary.periods(Every::Hour))),
        Read::Dumps((groups, hourly)) => (groups.finish(&layout), hourly.map(|h| h.finish(&layout))),
    };
    let mut buckets = rank::ranked(groups, &layout);
    // A built-in profile's optional fields may well be empty (Pub/Sub keeps no error).
    if !dlqf::profile::BUILT_IN.contains(&args.input.profile.as_str()) {
        warn_empty_fields(&profile, &buckets);
    }
    if let Some(wanted) = &args.explain {
        return explain(&args, wanted, &buckets, &profile);
    }
    let mut signature_fields = profile.signature_names();
    if args.by == GroupBy::Category {
        buckets = rank::by_category(buckets);
        signature_fields = vec!["category".into()];
    }
    let options = RankOptions {
        profile: profile.name.clone(),
        signature_fields,
        alert_share: args.alert_share,
        top: args.top,
        category_column: args.by == GroupBy::Signature && !profile.category_in_signature(),
    };
    let ranking = rank::build(&buckets, rejected, &options);
    let bytes = match format {
        OutputFormat::Table => report::table::rank(&ranking),
        OutputFormat::Json => report::json::render(&ranking)?,
        OutputFormat::Csv => report::csv::rank(&ranking),
        OutputFormat::Markdown => report::markdown::rank(&ranking),
        OutputFormat::Parquet => report::parquet::rank(&ranking)?,
        OutputFormat::Html => {
            let hourly = hourly.expect("counted per hour for html");
            let signature_fields = profile.signature_names();
            let trend_options =
                TrendOptions { profile: options.profile.clone(), signature_fields, every: Every::Hour, window: DEFAULT_WINDOW, category_column: options.category_column };
            // A span too long to draw leaves the page without trend lines, not without a report.
            let (trend, why) = trend::for_page(hourly, &layout, trend_options, args.by == GroupBy::Category);
            if let Some(e) = why {
                messages::warning(format!("no trend lines in the report: {e:#}"));
            }
            report::html::rank(&ranking, &trend)
        }
        OutputFormat::State => unreachable!("written by load"),
    };
    storage.write(&args.output.destination(), &bytes)?;
    let alert = ranking.dominant.as_ref().is_some_and(|d| d.alert);
    Ok(if args.fail_on_dominant && alert { ExitCode::from(EXIT_ALERT) } else { ExitCode::SUCCESS })
}

/// Says so when an optional signature field is empty in every row read: a path that reads
/// nothing (a typo, another layout) leaves one bucket where the causes should be.
fn warn_empty_fields(profile: &dlqf::profile::Profile, buckets: &[rank::RankedBucket]) {
    let rows: u64 = buckets.iter().map(|b| b.stats.count).sum();
    if rows == 0 {
        return;
    }
    for (i, field) in profile.signature.iter().enumerate() {
        if !field.required && buckets.iter().all(|b| b.values[i].is_empty()) {
            messages::warning(format!("signature field `{}` (`{}`) is missing or empty in all {rows} rows: check the path", field.field, field.expr));
        }
    }
}

/// `--explain`: the bucket named by rank or by one of its values, and its first messages,
/// read again from the dumps (states, which keep no messages, were refused before).
fn explain(args: &Args, wanted: &str, buckets: &[rank::RankedBucket], profile: &dlqf::profile::Profile) -> Result<ExitCode> {
    let found = match wanted.parse::<usize>() {
        Ok(n) => buckets.get(n.wrapping_sub(1)).map(|b| (n, b)),
        Err(_) => buckets.iter().enumerate().find(|(_, b)| b.values.iter().any(|v| v == wanted)).map(|(i, b)| (i + 1, b)),
    };
    let Some((rank, bucket)) = found else {
        return Err(UsageError(format!("--explain {wanted}: no bucket has this rank or signature value ({} buckets)", buckets.len())).into());
    };
    let prepared = args.input.prepare(Window::default())?;
    let examples = dlqf::analyze::explain::examples(&prepared.scan(), &prepared.inputs, profile, &bucket.values, EXPLAINED)?;
    let signature: Vec<(String, String)> = profile.signature_names().into_iter().zip(bucket.values.iter().cloned()).collect();
    let text = report::explain::text(rank, buckets.len(), bucket.stats.count, &signature, &examples);
    prepared.storage.write(&args.output.destination(), text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
