//! `dlqf plan`: write a replay manifest for review.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use dlqf::manifest::{self, DecisionCounts, Header, InputStamp, ManifestWriter, Origin};
use dlqf::messages;
use dlqf::origin::{Seen, ROLES};
use dlqf::plan::fix::Fixes;
use dlqf::plan::policy::Policy;
use dlqf::report;
use dlqf::plan::{PlannedBatch, Planner, ReviewCounts};
use dlqf::source::{Input, Window};
use dlqf::storage::{Location, Output};
use dlqf::timestamp;

use super::inputs::InputArgs;
use super::show::SummaryFormat;
use super::UsageError;

/// Write a sealed replay manifest for review: each message's key and gate decision.
///
/// Every message gets its idempotency key, the gate's decision (replay, poison_attempts,
/// poison_uncleared) and its attempt cap; a SHA-256 digest of the whole manifest
/// (manifest_sha256: header and entries) seals it.
///
/// Entries follow the inputs in name order, then line or row, whatever order they were named
/// in: the same inputs and policy give the same entries, byte for byte. Review it with
/// `dlqf show`, then run it with `dlqf execute --expect-digest <manifest_sha256>`.
///
/// Policy (TOML): max_attempts = 3, cleared_reasons = ["timeout"], cleared_signatures =
/// [{stage = "ingestion", reject_reason = "schema_invalid"}], clear_all = false,
/// routing = false, replay_revision = "det-v8.3", [filter] since/until/signature. An empty
/// allow-list clears nothing.
///
/// Without --policy the error categories decide (routing = true): transient and dependency
/// messages replay until their max_retries (5, 10); validation, poison and unknown are held.
/// --classification FILE changes the categories' rules and routing.
///
/// Examples:
///   dlqf plan dumps/ --policy policy.toml -o manifest.jsonl
///   dlqf plan dumps/ --policy policy.toml --fix fixes.toml -o manifest.jsonl
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,

    /// The replay policy (TOML). Default: the error categories' routing.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,

    /// Repairs to apply per signature (TOML or JSON): set, remove, merge_patch.
    #[arg(long, value_name = "FILE")]
    fix: Option<PathBuf>,

    /// Where to write the manifest (JSON-lines): a file, or s3://bucket/key.
    #[arg(short = 'o', long = "output", value_name = "FILE", value_parser = super::inputs::location_parser)]
    output: Location,

    /// Format of the review summary printed on stdout.
    #[arg(long, value_enum, default_value = "table")]
    format: SummaryFormat,
}

/// Line buffers (and batches) kept for reuse: about as many as batches are alive at once
/// (decoding, waiting for the writer, being hashed), so that a batch seldom starts afresh.
const SPARE_LINES: usize = 8;

pub fn run(args: Args) -> Result<ExitCode> {
    let policy = match &args.policy {
        Some(path) => Policy::load(path).map_err(|e| UsageError(format!("{e:#}")))?,
        None => Policy::routing_default(),
    };
    let fixes = match &args.fix {
        Some(path) => Fixes::load(path).map_err(|e| UsageError(format!("{e:#}")))?,
        None => Fixes::default(),
    };
    let now = timestamp::now_micros();
    let bound = |v: &Option<String>| v.as_deref().map(|t| timestamp::parse_bound(t, now)).transpose().map_err(UsageError);
    let filter_window = Window { since: bound(&policy.filter.since)?, until: bound(&policy.filter.until)? };
    let prepared = args.input.prepare(filter_window)?;
    prepared.refuse_states("plan")?;
    policy.check_fields(&prepared.profile.signature_names()).map_err(|e| UsageError(format!("policy: {e:#}")))?;
    let planner = Planner::new(&prepared.profile, &prepared.layout, &policy, &fixes);

    let output = Output::create(&prepared.storage, &args.output)?;
    let header = Header {
        manifest: manifest::FORMAT.into(),
        created_at: timestamp::format_micros(now - now % 1_000_000),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        profile: prepared.profile.name.clone(),
        rules: dlqf::state::Rules::of(&prepared.profile).rules,
        inputs: prepared.inputs.iter().map(stamp).collect(),
        policy: serde_json::to_value(&policy)?,
        fixes: if fixes.fix.is_empty() { serde_json::Value::Null } else { serde_json::to_value(&fixes)? },
        classification: if policy.routing { serde_json::to_value(prepared.layout.classifier())? } else { serde_json::Value::Null },
        origin: prepared.profile.origin.clone(),
        counts: DecisionCounts::default(),
        rejected: 0,
        entries: 0,
        entries_sha256: String::new(),
        manifest_sha256: String::new(),
    };
    for input in &prepared.inputs {
        if let Some(key) = dlqf::redact::redacted_by(&prepared.storage, input)? {
            anyhow::bail!("{}: written by `dlqf redact` (key {key}): its values are tokens, not the messages that failed, and cannot be replayed; plan from the original dump (no manifest written)", input.display);
        }
    }
    let mut writer = ManifestWriter::create(output, &args.output.to_string(), header)?;
    let mut review = ReviewCounts::default();
    // Line buffers written go back to be filled again: fresh memory costs page faults. A fresh
    // one starts as large as the largest batch yet, not growing (and copying) as it fills.
    let spare_lines = std::sync::Mutex::new(Vec::<Vec<u8>>::new());
    // So do batches: each keeps the raw keys it met.
    let spare_batches = std::sync::Mutex::new(Vec::<PlannedBatch>::new());
    let largest = std::sync::atomic::AtomicUsize::new(0);
    let mut origin_seen = Seen::default();
    let (mut unplanned, mut unplanned_named) = (0u64, Vec::new());
    let fresh = || Vec::with_capacity(largest.load(std::sync::atomic::Ordering::Relaxed));
    let tally = prepared.scan().records(
        &prepared.inputs,
        || {
            let lines = spare_lines.lock().expect("not poisoned").pop().unwrap_or_else(fresh);
            match spare_batches.lock().expect("not poisoned").pop() {
                Some(batch) => batch.reuse(lines),
                None => PlannedBatch::with_lines(lines),
            }
        },
        |batch, row| planner.add(batch, row),
        |mut batch| {
            let lines = std::mem::take(&mut batch.lines);
            largest.fetch_max(lines.len(), std::sync::atomic::Ordering::Relaxed);
            let hashed = writer.write_lines(lines, batch.entries, &batch.counts)?;
            {
                let mut spare = spare_lines.lock().expect("not poisoned");
                spare.extend(hashed);
                // Enough for the batches alive at once; more would only hold memory.
                spare.truncate(SPARE_LINES);
            }
            review.add(&batch);
            origin_seen.add(&batch.origin_seen);
            unplanned += batch.unplanned;
            unplanned_named.extend(batch.unplanned_named.drain(..));
            let mut batches = spare_batches.lock().expect("not poisoned");
            if batches.len() < SPARE_LINES {
                batches.push(batch);
            }
            Ok(())
        },
    )?;
    prepared.check_rejects(&tally)?;
    // Every accepted record was read for its origin, those it could not be read from too.
    check_origin(&prepared.profile.origin, &origin_seen, tally.accepted)?;
    if unplanned > 0 {
        for (id, why) in unplanned_named.iter().take(10) {
            messages::line(&format!("{id}: {why}"));
        }
        messages::message(format!("{unplanned} records left out of the manifest: their origin could not be read (counted as rejected)"));
        if prepared.strict() {
            anyhow::bail!("{unplanned} records could not be planned (--strict)");
        }
    }
    let header = writer.finish(tally.rejected + unplanned)?;
    let review = review.finish();
    let text = match args.format {
        SummaryFormat::Table => report::review::table(&review, &header),
        SummaryFormat::Markdown => report::review::markdown(&review, &header),
    };
    prepared.storage.write(&Location::Std, text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses a plan whose records all lack the origin topic or payload the profile names (replay
/// would send nowhere, or tombstones); a key or headers no record has is said, not refused.
fn check_origin(origin: &Origin, seen: &Seen, records: u64) -> Result<()> {
    if records == 0 {
        return Ok(());
    }
    let texts = [&origin.topic, &origin.key, &origin.value, &origin.headers];
    for (i, role) in ROLES.iter().enumerate() {
        if !seen.named[i] || seen.found[i] > 0 {
            continue;
        }
        let text = texts[i].as_deref().unwrap_or_default();
        match *role {
            "topic" | "value" => anyhow::bail!("origin {role} `{text}` is in none of the {records} records: check the path (no manifest written)"),
            _ => messages::warning(format!("origin {role} `{text}` is in none of the {records} records: they are replayed without one")),
        }
    }
    Ok(())
}

fn stamp(input: &Input) -> InputStamp {
    InputStamp { path: input.display.clone(), size: input.size, modified: input.modified() }
}
