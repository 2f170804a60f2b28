//! `dlqf show`: the review summary of a manifest, after checking its digest.

use std::process::ExitCode;

use anyhow::Result;
use dlqf::manifest::Manifest;
use dlqf::plan::summary::Review;
use dlqf::report;
use dlqf::storage::{Location, Storage};

/// Summarise a replay manifest for review: digest, counts per decision and per signature.
///
/// The header and entries are checked against their digests first; an altered or truncated
/// manifest is an error. The digest printed (manifest_sha256) is the one to approve:
/// `dlqf execute --expect-digest` refuses any other manifest.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The manifest written by `dlqf plan` (a file or s3://bucket/key).
    #[arg(value_parser = super::inputs::location_parser)]
    manifest: Location,

    #[arg(long, value_enum, default_value = "table")]
    format: SummaryFormat,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum SummaryFormat {
    Table,
    Markdown,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let storage = Storage::new();
    let (header, counts) = Manifest::summarize(&args.manifest.to_string(), storage.open_sequential(&args.manifest)?)?;
    let mut review = Review::default();
    for (signature, counts) in counts {
        review.add_counts(&signature, &counts);
    }
    let text = match args.format {
        SummaryFormat::Table => report::review::table(&review, &header),
        SummaryFormat::Markdown => report::review::markdown(&review, &header),
    };
    storage.write(&Location::Std, text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
