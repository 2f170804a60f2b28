//! `dlqf diff`: two `rank --format json` reports (or partial states, ranked first) compared,
//! for the nightly message: new causes, gone ones, and how the rest moved.

use std::process::ExitCode;

use anyhow::{Context, Result};
use dlqf::analyze::diff;
use dlqf::analyze::rank::{self, RankOptions, RankReport, DEFAULT_ALERT_SHARE};
use dlqf::profile::Profile;
use dlqf::source::layout::Layout;
use dlqf::state::{self, Partial, Rules};
use dlqf::messages;
use dlqf::report::{self, OutputFormat};
use dlqf::storage::{Location, Storage};

use super::inputs::OutputArgs;
use super::{UsageError, EXIT_ALERT};

/// Compare two rankings: causes that are new, gone, or moved in rank and share.
///
/// OLD and NEW are reports written by `dlqf rank --format json` (files or s3:// objects),
/// made with the same profile, or partial states (each ranked first, as `dlqf rank` would).
/// New causes come in NEW's rank order, gone ones in OLD's, and every cause in both appears
/// under "changed" (in NEW's rank order) with its old and new rank, count and share.
///
/// Examples:
///   dlqf diff rank-2026-11-28.json rank-2026-11-29.json
///   dlqf diff yesterday.json today.json --format markdown -o nightly.md
///   dlqf diff s3://dlq-reports/rank/2026-11-28.json today.json --fail-on-new
///   dlqf diff states/dt=2026-11-28/day.state states/dt=2026-11-29/day.state
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

    /// For states: the profile they were made with [default: the one each state names].
    #[arg(long, value_name = "NAME|FILE")]
    profile: Option<String>,

    /// For states: the classification file they were made with.
    #[arg(long, value_name = "FILE")]
    classification: Option<std::path::PathBuf>,

    /// Exit 3 when NEW has a cause OLD did not.
    #[arg(long)]
    fail_on_new: bool,
}

fn read_report(storage: &Storage, name: &str, args: &Args) -> Result<RankReport> {
    let bytes = storage.read_all(&Location::parse(name)?)?;
    if bytes.starts_with(dlqf::source::STATE_HEAD) {
        return rank_states(&bytes, name, args);
    }
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

/// The ranking of the states in one file, as `dlqf rank FILE --format json` makes it.
fn rank_states(bytes: &[u8], name: &str, args: &Args) -> Result<RankReport> {
    let states = state::read(bytes, name)?;
    let mut profile = Profile::load(args.profile.as_deref().unwrap_or(&states[0].rules.profile))?;
    if let Some(path) = &args.classification {
        profile = profile.with_classification(path).map_err(|e| UsageError(format!("{e:#}")))?;
    }
    state::check_mergeable(&states, &Rules::of(&profile), &[])?;
    let mut partial = Partial::default();
    partial.merge(states.into_iter().map(|s| s.partial));
    let layout = Layout::new(&profile);
    let options = RankOptions {
        profile: profile.name.clone(),
        signature_fields: profile.signature_names(),
        alert_share: DEFAULT_ALERT_SHARE,
        top: None,
        category_column: !profile.category_in_signature(),
    };
    Ok(rank::build(&rank::ranked(partial.summary.groups(), &layout), partial.rejected(), &options))
}

pub fn run(args: Args) -> Result<ExitCode> {
    let format = args.output.format("diff", &[OutputFormat::Table, OutputFormat::Json, OutputFormat::Csv, OutputFormat::Markdown])?;
    // diff writes no state: --part is refused, as with any report format.
    args.output.state_to(format)?;
    let storage = Storage::new();
    let old = read_report(&storage, &args.old, &args)?;
    let new = read_report(&storage, &args.new, &args)?;
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
