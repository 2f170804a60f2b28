//! `dlqf execute`: replay exactly a reviewed manifest, idempotently, behind the poison gate.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use dlqf::execute::backoff::Backoff;
use dlqf::execute::signals::StopSignals;
use dlqf::execute::target::{Halt, Retry};
use dlqf::execute::{self, quarantine, target, ExecuteReport, Options, Stopped};
use dlqf::manifest::Manifest;
use dlqf::messages;
use dlqf::storage::{Location, Storage};
use dlqf::report;
use dlqf::messages::Progress;

use super::{UsageError, EXIT_ALERT, EXIT_UNFINISHED};

/// Replay a reviewed manifest: exactly its entries, each at most once in the ledger.
///
/// Takes no planning options: the manifest is the approval. It is refused when its header or
/// entries do not match their digests, or (with --expect-digest) when it is not the reviewed
/// one. Keys done in the ledger are skipped; poison entries go to the quarantine once and
/// never to the target.
///
/// Failures: a message failure (a 4xx other than 408, 409 and 429, a non-zero exit other
/// than 75, a record the broker refuses, an SQS entry refused as the sender's fault) counts
/// against its key; after the entry's max_attempts failures the next run quarantines it. A
/// target failure (refused connection, DNS or TLS error, a command that cannot start) never
/// counts against a key, and the run takes no new entries. What an outage answers (a 502,
/// 503, 504 or other 5xx, a 408 or 429, a timeout, exit 75, a broker's passing error) counts
/// against its key only when other keys were delivered just after it, or when --health-url
/// answers 2xx at the end of the run; an HTTP 500 (the application's own error) also when the
/// target answers a GET of its URL with anything but 500, 502, 503 or 504 (a 404 or 405 of a
/// POST-only endpoint says the application is serving). Successes earlier in the run prove
/// nothing. The storm guard stops the run when more than --max-failure-ratio of the last
/// --failure-window deliveries failed (keys that failed in earlier runs left out), and no key
/// is charged for that storm; SIGTERM/SIGINT stop it gracefully (in-flight deliveries finish,
/// or are released after --timeout; a second signal exits at once). What a run leaves is
/// "unfinished" in the report, each key listed with its last error, for the next run.
///
/// Targets: every one but file gets the payload: the bytes the producer sent, as plan resolved
/// them into each entry (text as its bytes, base64 decoded, a JSON object as compact JSON, a
/// null value as a Kafka tombstone or an empty body), or the whole record when the profile
/// names no payload field.
///   http(s)://URL  POSTs it with an Idempotency-Key header, the origin key and headers as
///       X-Dlqf-Origin-Key and X-Dlqf-Origin-Header-NAME; 2xx ok, 409 already done, other
///       4xx rejected; 5xx, timeouts and connection errors retried with jittered backoff.
///   exec:CMD ARG…  runs CMD (no shell) with it on stdin and DLQF_IDEMPOTENCY_KEY,
///       DLQF_ORIGIN_KEY, DLQF_ORIGIN_HEADERS in the environment.
///   file:PATH  appends {"key", "record"} lines (the whole record), each synced before it
///       counts.
///   kafka://HOST:PORT[,HOST:PORT…][/TOPIC]  to the record's origin topic unless the URL
///       names one, with the origin key, value and headers plus a dlqf-idempotency-key
///       header; keyed records go to the partition Java's default partitioner picks; done
///       when all in-sync replicas acknowledged it.
///   sqs://QUEUE-NAME  SendMessageBatch with the standard AWS credentials and endpoint;
///       FIFO queues deduplicate on the idempotency key and group by the origin key.
///   amqp://USER:PASSWORD@HOST:PORT/VHOST[/EXCHANGE]  published to the origin exchange (or
///       EXCHANGE; else the default exchange) with the origin key as routing key, persistent,
///       the original properties and headers kept plus dlqf-idempotency-key; done when the
///       broker confirms it; unroutable or a missing exchange is the broker's setup.
///   redis://HOST:PORT/DB[/QUEUE]  a Sidekiq job pushed back on its queue as Sidekiq's retry
///       does (retry_count one less, enqueued_at now, the queue added to `queues`).
/// Quarantine: file:PATH, http(s)://URL, kafka://HOST:PORT/TOPIC or sqs://QUEUE-NAME.
///
/// Canary: --canary N sends at most N entries per signature and holds the rest for the next
/// run (which, without --canary, sends them): try a fix on a few messages of each cause first.
///
/// Ordered: --ordered sends each origin key's messages (same origin topic and key) one at a
/// time, in the order they were first produced: their original offsets where the manifest
/// has them in one partition, else their records' times, else manifest order. A message waits
/// until the one before it is done (delivered now or before; retries included); one that
/// cannot be done (failed, quarantined, left) holds the rest of its key, which the report
/// lists as blocked by it (exit 4) and a later run sends once it is done. --release-after KEY
/// lets the messages after entry KEY go without it (never the default). Other keys keep going
/// in parallel.
///
/// Exit codes: 0 all done (a canary: everything it sent), 1 error (nothing sent for a refused
/// manifest), 3 some replays failed (every entry finished), 4 entries are left for a later run
/// (a down target, the storm guard, entries an ordered run blocked; the report lists them with
/// their last error), 130/143 stopped by SIGINT/SIGTERM.
///
/// Example:
///   dlqf execute manifest.jsonl --expect-digest 3f2a… --target https://stage/replay \
///       --ledger replay.db --quarantine file:poison.jsonl --concurrency 16 --rate 200
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The manifest written by `dlqf plan` (and reviewed): a file or s3://bucket/key.
    #[arg(value_parser = super::inputs::location_parser)]
    manifest: Location,

    /// Where replayed messages go: http(s)://…, exec:CMD ARG…, file:PATH,
    /// kafka://HOST:PORT[,…][/TOPIC], sqs://QUEUE-NAME, amqp://…/VHOST[/EXCHANGE] or
    /// redis://HOST:PORT/DB[/QUEUE].
    #[arg(long, value_name = "TARGET")]
    target: String,

    /// The ledger: a SQLite file path, or postgres://USER:PASSWORD@HOST:PORT/DB to share one
    /// ledger between executors on several hosts (?sslmode=require|verify-ca|verify-full,
    /// &sslrootcert=CA.pem or system, as libpq reads them).
    #[arg(long, value_name = "PATH")]
    ledger: String,

    /// Where poison messages go: file:PATH, http(s)://…, kafka://HOST:PORT[,…]/TOPIC or
    /// sqs://QUEUE-NAME.
    #[arg(long, value_name = "SINK")]
    quarantine: String,

    /// Refuse the manifest unless its manifest_sha256 is this (the digest you reviewed, which
    /// `plan` and `show` print).
    #[arg(long, value_name = "HEX")]
    expect_digest: Option<String>,

    /// For an http(s) target: a health check whose 2xx proves the target up, so that a 503 or
    /// timeout it gave a message no other delivery outweighs is that message's (default: a GET
    /// of the target's own URL, which can prove only a 500 the message's).
    #[arg(long, value_name = "URL")]
    health_url: Option<String>,

    /// A canary run: send at most N entries per signature (the first in manifest order) and
    /// hold the rest, poison included, for the next run; the report counts per signature what
    /// was sent and held. The manifest stays the approval: the next run sends the rest of it.
    #[arg(long, value_name = "N")]
    canary: Option<u64>,

    /// Each origin key's messages one at a time, in the order they were first produced; a
    /// message that cannot be done holds the rest of its key (reported as blocked).
    #[arg(long)]
    ordered: bool,

    /// With --ordered: the messages after this entry (its idempotency key, as a report's
    /// blocked_by names it) in its key's order go without waiting for it. Repeatable.
    #[arg(long, value_name = "KEY", requires = "ordered")]
    release_after: Vec<String>,

    /// Messages in flight at once.
    #[arg(long, default_value_t = 8, value_name = "N")]
    concurrency: usize,

    /// At most this many messages per second.
    #[arg(long, value_name = "PER_SECOND")]
    rate: Option<f64>,

    /// Stop the run when more than this share of the recent deliveries fail.
    #[arg(long, default_value_t = 0.5, value_name = "RATIO")]
    max_failure_ratio: f64,

    /// How many recent deliveries the storm guard looks at (it acts once 20 are in).
    #[arg(long, default_value_t = 50, value_name = "N")]
    failure_window: usize,

    /// Seconds before a network delivery times out.
    #[arg(long, default_value_t = 10.0, value_name = "SECONDS")]
    timeout: f64,

    /// Deliveries of one message within one run, for 5xx, timeouts and connection errors.
    #[arg(long, default_value_t = 3, value_name = "N")]
    retries: u32,

    /// Seconds a claim is honoured by other executors; renewed while its delivery runs.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    lease: f64,

    /// Decide and report what would happen; send nothing, write nothing.
    #[arg(long)]
    dry_run: bool,

    /// Also write the outcome report (JSON, as printed) to this file (or s3://bucket/key).
    #[arg(long, value_name = "FILE", value_parser = super::inputs::location_parser)]
    report: Option<Location>,

    /// No progress bar, even on a terminal.
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    check_flags(&args).map_err(|e| UsageError(format!("{e:#}")))?;
    let storage = Storage::new();
    let mut manifest = Manifest::open_verified(&args.manifest.to_string(), storage.open_sequential(&args.manifest)?, args.expect_digest.as_deref())?;
    let (report, stopped) = if args.dry_run {
        (execute::dry_run(&mut manifest, &args.ledger).map_err(|e| hide_secret(e, &args.ledger))?, None)
    } else {
        let halt = Halt::default();
        let retry = Retry { attempts: args.retries.max(1), backoff: Backoff::default(), timeout: Duration::from_secs_f64(args.timeout), halt: halt.clone() };
        let target = target::parse_with_health(&args.target, retry.clone(), args.health_url.as_deref())?;
        // Quarantining what a stopped run has started still retries: poison must land.
        let sink_retry = Retry { halt: Halt::default(), ..retry.clone() };
        let quarantine = quarantine::parse(&args.quarantine, sink_retry)?;
        let busy = args.timeout * f64::from(retry.attempts);
        if busy > args.lease {
            messages::warning(format!(
                "a delivery may take --timeout × --retries = {busy} s, more than --lease {} s; claims are renewed while deliveries run, but an executor that hangs holds its keys that long",
                args.lease
            ));
        }
        let options = Options {
            concurrency: args.concurrency,
            rate: args.rate,
            max_failure_ratio: args.max_failure_ratio,
            failure_window: args.failure_window,
            guard_after: 20,
            lease_ms: (args.lease * 1000.0) as i64,
            grace: Duration::from_secs_f64(args.timeout),
            halt,
            canary: args.canary,
            ordered: args.ordered,
            release_after: args.release_after.clone(),
        };
        let signals = StopSignals::install()?;
        let progress = Progress::for_count(manifest.header.entries, !args.no_progress);
        let run = execute::execute(&mut manifest, &args.ledger, target.as_ref(), quarantine.as_ref(), &options, &progress, &signals)
            .map_err(|e| hide_secret(e, &args.ledger))?;
        (run.report, run.stopped)
    };
    // The entries delivered come last, one line each, so a long run's list stays readable.
    let bytes = report::json::render_to_depth(&report, 3)?;
    if let Some(location) = &args.report {
        storage.write(location, &bytes)?;
    }
    storage.write(&Location::Std, &bytes)?;
    if let Some(why) = &stopped {
        messages::message(describe(why, &report, args.max_failure_ratio));
    }
    if let Some(blocked) = report.blocked.filter(|b| *b > 0) {
        messages::message(format!(
            "{blocked} entries wait behind an entry of their key that is not done (listed with blocked_by): a later run sends them once it is done; --release-after KEY lets them go without it"
        ));
    }
    // What a canary holds back is left by design: only what it could not finish counts.
    let held = report.canary.as_ref().map_or(0, |c| c.held);
    if let Some(canary) = &report.canary {
        let sent: u64 = canary.signatures.iter().map(|s| s.sent).sum();
        messages::message(format!("canary: {sent} entries sent (at most {} a signature over {} signatures); {held} held for the next run", canary.limit, canary.signatures.len()));
    }
    Ok(match stopped {
        Some(Stopped::Signal(signal)) => ExitCode::from(128 + signal as u8),
        _ if report.unfinished > held => ExitCode::from(EXIT_UNFINISHED),
        _ if report.outcomes.replay_failed > 0 => ExitCode::from(EXIT_ALERT),
        _ => ExitCode::SUCCESS,
    })
}

/// Every flag checked before the manifest is read, each error naming its flag.
fn check_flags(args: &Args) -> Result<()> {
    let positive = [("--concurrency", args.concurrency as f64), ("--failure-window", args.failure_window as f64), ("--timeout", args.timeout), ("--lease", args.lease)];
    if args.canary == Some(0) {
        anyhow::bail!("--canary must be at least 1 (it is how many entries a signature sends)");
    }
    for (flag, value) in positive.into_iter().chain(args.rate.map(|r| ("--rate", r))) {
        if value.is_nan() || value <= 0.0 {
            anyhow::bail!("{flag} must be positive, got {value}");
        }
    }
    if !(0.0..=1.0).contains(&args.max_failure_ratio) {
        anyhow::bail!("--max-failure-ratio must be between 0 and 1, got {}", args.max_failure_ratio);
    }
    target::check(&args.target).context("--target")?;
    quarantine::check(&args.quarantine).context("--quarantine")?;
    Ok(())
}

/// Why the run stopped, and what it left.
fn describe(stopped: &Stopped, report: &ExecuteReport, ratio: f64) -> String {
    let left = format!("{} entries are left for a later run", report.unfinished);
    match stopped {
        Stopped::StormGuard { failures, seen } => {
            format!("storm guard: {failures} of the last {seen} deliveries failed (more than {ratio}); the run stopped; {left}, and no key was charged for the target's failures")
        }
        Stopped::Signal(signal) => format!("stopped by {}: deliveries in flight finished or were released; {left}", StopSignals::name(*signal)),
        Stopped::TargetFailing(last) => format!("the target failed every delivery (last: {last}); no key was charged; {left}"),
        Stopped::TargetDown(why) => format!("the target is down ({why}): the run took no new entries; no key was charged; {left}"),
    }
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
