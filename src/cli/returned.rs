//! `dlqf returned`: which replayed messages came back into the dead-letter queue in later
//! dumps, per signature, and with which cause: whether the last replay worked.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use dlqf::execute::ExecuteReport;
use dlqf::manifest::{self, Manifest};
use dlqf::plan::fix::Fixes;
use dlqf::plan::policy::Policy;
use dlqf::plan::{PlannedBatch, Planner};
use dlqf::report;
use dlqf::returned::{Alert, Matcher, ReplayedFrom, ReplayedMessage};
use dlqf::source::Window;
use dlqf::storage::{Location, Storage};

use super::inputs::InputArgs;
use super::{UsageError, EXIT_ALERT};

/// Which replayed messages came back into the DLQ, per signature, and with which cause.
///
/// REPLAYED is the manifest `dlqf plan` wrote (every replay entry counts as replayed) or the
/// report `dlqf execute` printed or wrote with --report (only what that run delivered). The INPUTs are
/// later dumps (files, directories, globs, s3:// prefixes), read with the profile the
/// manifest was planned with unless --profile names another.
///
/// A later record is a replayed message back when its `dlqf-idempotency-key` header (Kafka
/// headers, the envelope's original_headers, SQS message attributes) holds a replayed key;
/// a record without that header matches a replayed message with the same origin key and
/// payload (SHA-256). A record whose header holds another key came from another replay.
/// Each replayed signature shows how many were replayed, how many came back, the share, and
/// the signatures they came back with (the same cause, or a new one).
///
/// Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 with --fail-on-returned when the share
/// that came back reaches SHARE.
///
/// Examples:
///   dlqf returned manifest.jsonl dumps/2026-12-03/
///   dlqf returned run.json s3://dlq-archive/2026-12-03/ --format json -o returned.json
///   dlqf returned manifest.jsonl next-night.jsonl --fail-on-returned 0.05
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The manifest that was replayed, or the report of an execute run.
    #[arg(value_name = "MANIFEST|REPORT", value_parser = super::inputs::location_parser)]
    replayed: Location,

    #[command(flatten)]
    input: InputArgs,

    #[arg(long, value_enum, default_value = "table")]
    format: ReturnedFormat,

    /// Write the report to this file (or s3://bucket/key) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE", value_parser = super::inputs::location_parser)]
    output: Option<Location>,

    /// Exit 3 when this share (0 to 1) of the replayed messages or more came back.
    #[arg(long, value_name = "SHARE")]
    fail_on_returned: Option<f64>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ReturnedFormat {
    Table,
    Json,
    Markdown,
}

/// The replayed set: what it was read from, the profile of its signatures, the messages.
struct Replayed {
    from: ReplayedFrom,
    profile: String,
    entries: Vec<ReplayedMessage>,
}

pub fn run(mut args: Args) -> Result<ExitCode> {
    if let Some(share) = args.fail_on_returned {
        if !(0.0..=1.0).contains(&share) {
            return Err(UsageError(format!("--fail-on-returned must be a share between 0 and 1, got {share}")).into());
        }
    }
    let storage = Storage::new();
    let replayed = read_replayed(&storage, &args.replayed)?;
    // The later dumps are read as the replayed ones were, unless --profile names another.
    if args.input.profile == "vision" && replayed.profile != "vision" {
        args.input.profile = replayed.profile.clone();
    }
    let prepared = args.input.prepare(Window::default()).map_err(|e| {
        anyhow::anyhow!("{e:#} (the replayed messages were read with profile `{}`: give it with --profile NAME|FILE)", replayed.profile)
    })?;
    prepared.refuse_states("returned")?;
    let origin = prepared.profile.origin.clone();
    let (policy, fixes) = (Policy::routing_default(), Fixes::default());
    let planner = Planner::new(&prepared.profile, &prepared.layout, &policy, &fixes);
    let mut matcher = Matcher::new(replayed.entries);
    let mut unplanned = 0;
    let tally = prepared.scan().records(&prepared.inputs, || PlannedBatch::with_lines(Vec::new()), |batch, row| planner.add(batch, row), |batch| {
        unplanned += batch.unplanned;
        for line in batch.lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let entry: manifest::Entry = serde_json::from_slice(line).context("reading back a planned record")?;
            matcher.see(&entry, &origin);
        }
        Ok(())
    })?;
    prepared.check_rejects(&tally)?;
    let mut report = matcher.report(replayed.from, prepared.profile.name.clone(), tally.rejected + unplanned);
    let alert = args.fail_on_returned.map(|share| Alert { share, alert: report.replayed > 0 && report.share >= share });
    report.alert = alert.clone();
    let bytes = match args.format {
        ReturnedFormat::Json => report::json::render(&report)?,
        ReturnedFormat::Table => report::returned::table(&report).into_bytes(),
        ReturnedFormat::Markdown => report::returned::markdown(&report).into_bytes(),
    };
    storage.write(args.output.as_ref().unwrap_or(&Location::Std), &bytes)?;
    Ok(if alert.is_some_and(|a| a.alert) { ExitCode::from(EXIT_ALERT) } else { ExitCode::SUCCESS })
}

/// Reads a manifest (checked against its digests) or an execute report with its list of
/// delivered messages.
fn read_replayed(storage: &Storage, location: &Location) -> Result<Replayed> {
    let name = location.to_string();
    let mut source = storage.open_sequential(location)?;
    // A manifest's header line opens with its format; a report names its own first. The rest
    // of a manifest streams through the verifying reader.
    let mut head = Vec::new();
    (&mut source).take(64).read_to_end(&mut head).with_context(|| format!("reading {name}"))?;
    let is_manifest = head.windows(b"dlqf.manifest/".len()).any(|w| w == b"dlqf.manifest/");
    let mut whole = std::io::Cursor::new(head).chain(source);
    if is_manifest {
        let mut manifest = Manifest::open_verified(&name, whole, None)?;
        let origin = manifest.header.origin.clone();
        let (digest, profile) = (manifest.header.manifest_sha256.clone(), manifest.header.profile.clone());
        let mut entries = Vec::new();
        for entry in manifest.entries()? {
            entries.extend(Matcher::replay_entries(entry?, &origin));
        }
        return Ok(Replayed { from: ReplayedFrom { kind: "manifest".into(), path: name, manifest: digest }, profile, entries });
    }
    let mut bytes = Vec::new();
    whole.read_to_end(&mut bytes).with_context(|| format!("reading {name}"))?;
    let report: ExecuteReport = match serde_json::from_slice(&bytes) {
        Ok(report) => report,
        Err(e) => bail!("{name}: neither a dlqf manifest nor a `dlqf execute` report ({e})"),
    };
    let Some(list) = report.replayed else {
        bail!("{name}: this execute report lists no delivered messages (a dry run's, or one written before execute listed them): give the manifest instead");
    };
    let profile = list.profile.clone();
    let entries = Matcher::delivered(list).map_err(|e| anyhow::anyhow!("{name}: replayed: {e}"))?;
    Ok(Replayed { from: ReplayedFrom { kind: "execute_report".into(), path: name, manifest: report.manifest }, profile, entries })
}
