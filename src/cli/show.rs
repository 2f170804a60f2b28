//! `dlqf show`: the review summary of a manifest, after checking its digest.

use std::process::ExitCode;

use anyhow::Result;
use dlqf::manifest::order::Chains;
use dlqf::manifest::Manifest;
use dlqf::plan::summary::{KeyOrder, Review};
use dlqf::report;
use dlqf::storage::{Location, Storage};

/// Summarise a replay manifest for review: digest, counts per decision and per signature.
///
/// The header and entries are checked against their digests first; an altered or truncated
/// manifest is an error. The digest printed (manifest_sha256) is the one to approve:
/// `dlqf execute --expect-digest` refuses any other manifest. Where entries carry origin keys,
/// it also says how many keys have more than one message (what `execute --ordered` keeps in
/// order, and by what: original offsets, record times or manifest order) and the longest
/// chain.
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
    let (mut manifest, counts) = Manifest::open_for_review(&args.manifest.to_string(), storage.open_sequential(&args.manifest)?)?;
    let mut review = Review::default();
    for (signature, counts) in counts {
        review.add_counts(&signature, &counts);
    }
    if manifest.header.origin.key.is_some() {
        review.order = Some(key_order(&mut manifest)?);
    }
    let text = match args.format {
        SummaryFormat::Table => report::review::table(&review, &manifest.header),
        SummaryFormat::Markdown => report::review::markdown(&review, &manifest.header),
    };
    storage.write(&Location::Std, text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The keys an ordered replay keeps in order, and the longest chain with its origin key.
fn key_order(manifest: &mut Manifest) -> Result<KeyOrder> {
    let chains = Chains::of(manifest.entries()?)?;
    let longest = match chains.longest {
        Some((length, place)) => {
            let first = manifest.entries()?.nth(place as usize).expect("the chain's first entry is in the manifest")?;
            let key = first.origin.as_ref().and_then(|o| o.get("key")).map(|k| match k {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            });
            key.map(|key| (length, key))
        }
        None => None,
    };
    Ok(KeyOrder { keys: chains.keys, longest })
}
