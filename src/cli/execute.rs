//! `dlqf execute`: replay exactly a reviewed manifest, idempotently, behind the poison gate.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use dlqf::execute::target::Retry;
use dlqf::execute::{self, quarantine, target, Options};
use dlqf::manifest::Manifest;
use dlqf::report;
use dlqf::progress::Progress;

use super::{UsageError, EXIT_ALERT};

/// Replay a reviewed manifest: exactly its entries, each at most once in the ledger.
///
/// Takes no planning options: the manifest is the approval. It is refused when its entries do
/// not match its digest, or (with --expect-digest) when it is not the reviewed one. Keys done
/// in the ledger are skipped; poison entries go to the quarantine once and never to the
/// target; a replay that fails is counted against its key and, after the policy's
/// max_attempts failures, quarantined on the next run instead of looping.
///
/// Targets: http(s)://URL (POST JSON with an Idempotency-Key header; 2xx ok, 409 already
/// done, other 4xx permanent, 5xx and timeouts retried with backoff), exec:CMD ARG… (the
/// record on stdin, DLQF_IDEMPOTENCY_KEY in the environment, no shell), file:PATH (appends
/// {"key", "record"} lines). Quarantine: file:PATH or http(s)://URL.
///
/// Exit codes: 0 all done, 1 error (nothing sent for a refused manifest), 3 some replays
/// failed or the storm guard stopped the run.
///
/// Example:
///   dlqf execute manifest.jsonl --expect-digest 3f2a… --target https://stage/replay \
///       --ledger replay.db --quarantine file:poison.jsonl --concurrency 16 --rate 200
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The manifest written by `dlqf plan` (and reviewed).
    manifest: PathBuf,

    /// Where replayed messages go: http(s)://…, exec:CMD ARG…, or file:PATH.
    #[arg(long, value_name = "TARGET")]
    target: String,

    /// The ledger: a SQLite file path, or postgres://USER:PASSWORD@HOST:PORT/DB to share one
    /// ledger between executors on several hosts.
    #[arg(long, value_name = "PATH")]
    ledger: String,

    /// Where poison messages go: file:PATH or http(s)://….
    #[arg(long, value_name = "SINK")]
    quarantine: String,

    /// Refuse the manifest unless its manifest_sha256 is this (the digest you reviewed, which
    /// `plan` and `show` print).
    #[arg(long, value_name = "HEX")]
    expect_digest: Option<String>,

    /// Messages in flight at once.
    #[arg(long, default_value_t = 8, value_name = "N")]
    concurrency: usize,

    /// At most this many messages per second.
    #[arg(long, value_name = "PER_SECOND")]
    rate: Option<f64>,

    /// Stop the run when more than this share of replays fail (checked after 20 attempts).
    #[arg(long, default_value_t = 0.5, value_name = "RATIO")]
    max_failure_ratio: f64,

    /// Seconds before a network delivery times out.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    timeout: f64,

    /// Delivery attempts for transient failures (5xx, timeouts) within one run.
    #[arg(long, default_value_t = 3, value_name = "N")]
    retries: u32,

    /// Seconds another executor's claim is honoured before it is taken over.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    lease: f64,

    /// Decide and report what would happen; send nothing, write nothing.
    #[arg(long)]
    dry_run: bool,

    /// Also write the outcome report (JSON) to this file.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,

    /// No progress bar, even on a terminal.
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.concurrency == 0 || args.rate.is_some_and(|r| r <= 0.0) || !(0.0..=1.0).contains(&args.max_failure_ratio) || args.timeout <= 0.0 || args.lease <= 0.0 {
        return Err(UsageError("--concurrency, --rate, --timeout and --lease must be positive; --max-failure-ratio between 0 and 1".into()).into());
    }
    let mut manifest = Manifest::open_verified(&args.manifest, args.expect_digest.as_deref())?;
    let (report, stopped) = if args.dry_run {
        (execute::dry_run(&mut manifest, &args.ledger).map_err(|e| hide_secret(e, &args.ledger))?, None)
    } else {
        let retry = Retry { attempts: args.retries.max(1), backoff: Duration::from_millis(100), timeout: Duration::from_secs_f64(args.timeout) };
        let target = target::parse(&args.target, retry).map_err(|e| UsageError(format!("{e:#}")))?;
        let quarantine = quarantine::parse(&args.quarantine, retry).map_err(|e| UsageError(format!("{e:#}")))?;
        let options = Options {
            concurrency: args.concurrency,
            rate: args.rate,
            max_failure_ratio: args.max_failure_ratio,
            guard_after: 20,
            lease_ms: (args.lease * 1000.0) as i64,
        };
        let progress = Progress::for_count(manifest.header.entries, !args.no_progress);
        let run = execute::execute(&mut manifest, &args.ledger, target.as_ref(), quarantine.as_ref(), &options, &progress)
            .map_err(|e| hide_secret(e, &args.ledger))?;
        (run.report, run.stopped)
    };
    let bytes = report::json::render(&report)?;
    if let Some(path) = &args.report {
        report::write_output(Some(path), &bytes)?;
    }
    report::write_output(None, &bytes)?;
    if let Some(why) = &stopped {
        eprintln!("dlqf: {why}");
    }
    let failed = report.outcomes.replay_failed > 0 || stopped.is_some();
    Ok(if failed && !args.dry_run { ExitCode::from(EXIT_ALERT) } else { ExitCode::SUCCESS })
}

/// Errors never show the ledger URL's password, whatever part of the chain quoted it.
fn hide_secret(err: anyhow::Error, ledger: &str) -> anyhow::Error {
    let text = format!("{err:#}");
    let password = ledger.split_once("://").and_then(|(_, rest)| rest.rsplit_once('@')).and_then(|(userinfo, _)| userinfo.split_once(':')).map(|(_, p)| p);
    match password {
        Some(p) if !p.is_empty() && text.contains(p) => anyhow::anyhow!(text.replace(p, "***")),
        _ => err,
    }
}
