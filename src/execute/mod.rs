//! `execute`: replays exactly a reviewed manifest. Each key is claimed in the durable ledger
//! before any side effect and marked done after, so reruns and crashes never duplicate work
//! beyond the entries in flight; poison entries go to the quarantine once.
//!
//! The failure model, in one place:
//! - a *message* failure (`Delivery::Rejected`: a 4xx other than 408, 409 and 429, a non-zero
//!   exit, a record the target refuses) counts against its key at once; a key that has failed
//!   its entry's `max_attempts` times is quarantined on the next run instead of replayed again;
//! - a *target* failure (`Delivery::Down`: a refused connection, a DNS or TLS error) never
//!   counts against a key: the key is released for a later run, and the run takes no new
//!   entries (the target is down: the rest would only fail the same way);
//! - what an outage answers (`Delivery::Unavailable`: a 502, 503 or 504, a timeout, a
//!   dropped connection, exit 75) is the key's only on positive, specific evidence that the
//!   target was up (`evidence`): other keys delivered just after it, or a health URL
//!   (`--health-url`) answering 2xx when the run ends. Successes earlier in the run prove
//!   nothing, nor does a GET answering 404: else an outage behind a gateway poisons everything;
//! - the application's own error (`Delivery::AppFailed`: an HTTP 500) is the key's beside
//!   deliveries of other keys too, and also when the target answers its probe at all (a GET
//!   answering 404 or 405 shows the application serving): poison left alone at the end of a
//!   manifest is charged and quarantined in `max_attempts` runs.
//!
//! The storm guard stops a run when most recent deliveries fail (failures of keys that failed
//! before do not count: they say nothing new of the target), whatever the target's probe says;
//! SIGTERM/SIGINT stop it gracefully. What a run leaves is `unfinished` in the report, for the
//! next run.

pub mod append;
pub mod backoff;
mod canary;
mod evidence;
mod gate;
mod guard;
pub mod ledger;
pub mod message;
mod order;
mod percent;
pub mod quarantine;
mod run;
pub mod signals;
pub mod target;

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::manifest::{Decision, Manifest};
use crate::messages::Progress;
use gate::Fate;
use ledger::{Claim, Ledger};
use quarantine::Sink;
use signals::StopSignals;
use target::Target;

pub const REPORT_ID: &str = "dlqf.execute/1";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcomes {
    pub replayed: u64,
    pub skipped_idempotent: u64,
    pub poison_attempts: u64,
    pub poison_uncleared: u64,
    pub replay_failed: u64,
}

impl Outcomes {
    fn total(&self) -> u64 {
        self.replayed + self.skipped_idempotent + self.poison_attempts + self.poison_uncleared + self.replay_failed
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecuteReport {
    pub report: String,
    pub manifest: String,
    pub outcomes: Outcomes,
    /// Entries this run left for a later one: not reached before a stop, or released after a
    /// target failure. Outcomes and unfinished add up to the manifest's entries.
    pub unfinished: u64,
    /// Deliveries that failed for the target's reasons and were charged to no key.
    pub target_failures: u64,
    /// An ordered run: the unfinished entries held back because an entry before them in
    /// their key's order is not done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<u64>,
    /// The unfinished entries (the first `LISTED_UNFINISHED`, in manifest order): each key, id
    /// and why it is left.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfinished_keys: Vec<UnfinishedKey>,
    /// A canary run (`--canary N`): what it sent and held back, per signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanaryReport>,
    /// What this run delivered, for `dlqf returned` to find when it comes back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replayed: Option<ReplayedList>,
}

/// The entries a run delivered, and the profile their signatures were made by; each
/// signature is written once, and entries name theirs by its place in `signatures`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayedList {
    pub profile: String,
    /// In the order of their values.
    pub signatures: Vec<crate::signature::Signature>,
    /// In key order.
    pub entries: Vec<ReplayedEntry>,
}

/// A delivered entry as `dlqf returned` matches it: by its key in a `dlqf-idempotency-key`
/// header, else by `Message::match_digest` of its origin key and payload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayedEntry {
    pub key: String,
    pub id: String,
    /// The entry's signature: an index into `ReplayedList::signatures`.
    pub signature: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl ReplayedList {
    /// The list of what was delivered: key, id, signature and match digest of each entry.
    pub fn of(profile: String, mut delivered: Vec<(String, String, crate::signature::Signature, Option<String>)>) -> ReplayedList {
        delivered.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let values = |s: &crate::signature::Signature| s.values().map(str::to_string).collect::<Vec<_>>();
        let mut seen = std::collections::BTreeMap::new();
        for (_, _, signature, _) in &delivered {
            seen.entry(values(signature)).or_insert_with(|| signature.clone());
        }
        // Signatures in the order of their values, each entry naming its place among them.
        let (place, signatures): (std::collections::BTreeMap<Vec<String>, usize>, Vec<_>) =
            seen.into_iter().enumerate().map(|(i, (values, signature))| ((values, i), signature)).unzip();
        let entries = delivered.into_iter().map(|(key, id, signature, digest)| ReplayedEntry { key, id, signature: place[&values(&signature)], digest }).collect();
        ReplayedList { profile, signatures, entries }
    }
}

/// What a canary run did per signature: at most `limit` entries sent, the rest held for the
/// next run (unfinished, by design).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanaryReport {
    pub limit: u64,
    /// Entries held back in all: counted in `unfinished`.
    pub held: u64,
    pub signatures: Vec<CanarySignature>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanarySignature {
    pub signature: crate::signature::Signature,
    /// Entries sent to the target (delivered or failed).
    pub sent: u64,
    /// Entries held for the next run: replays past the limit, and poison (a canary run
    /// quarantines nothing).
    pub held: u64,
}

/// An entry a run left for a later one, and the last error it met (or why it was not reached).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnfinishedKey {
    pub key: String,
    pub id: String,
    pub error: String,
    /// An ordered run: the entry before it in its key's order that is not done (the first of
    /// those that hold it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
}

/// Unfinished entries listed by key in a report; `unfinished` counts them all.
pub const LISTED_UNFINISHED: usize = 1000;

pub struct Options {
    pub concurrency: usize,
    /// Messages per second, at most.
    pub rate: Option<f64>,
    /// The storm guard stops the run when more than this share of recent deliveries fail…
    pub max_failure_ratio: f64,
    /// …among the last this many…
    pub failure_window: usize,
    /// …once at least this many are in the window.
    pub guard_after: usize,
    /// How long a claim is honoured; it is renewed while its delivery runs.
    pub lease_ms: i64,
    /// How long deliveries in flight may go on after a stop signal before they are released.
    pub grace: Duration,
    /// Raised when the run stops, so deliveries in flight retry no more.
    pub halt: target::Halt,
    /// A canary run: at most this many entries sent per signature, in manifest order; the rest
    /// (poison too) held for the next run.
    pub canary: Option<u64>,
    /// Each origin key's messages in their origin order, one at a time (`--ordered`).
    pub ordered: bool,
    /// Entries (by idempotency key) whose key's later messages may go without waiting for them.
    pub release_after: Vec<String>,
}

/// Why a run stopped before the end of the manifest.
#[derive(Clone, Debug, PartialEq)]
pub enum Stopped {
    /// `failures` of the last `seen` deliveries failed.
    StormGuard { failures: usize, seen: usize },
    /// SIGTERM or SIGINT (the signal's number).
    Signal(i32),
    /// Every delivery failed for the target's reasons (the last one given), with too few to
    /// trip the storm guard.
    TargetFailing(String),
    /// A delivery proved the target unreachable (a refused connection, DNS, TLS, a command
    /// that cannot start): no new entries were taken.
    TargetDown(String),
}

/// How a run ended.
pub struct Run {
    pub report: ExecuteReport,
    pub stopped: Option<Stopped>,
}

/// Runs every entry of a verified manifest through the gate, the ledger (`--ledger` spec) and
/// the target, until the end or a stop.
pub fn execute(
    manifest: &mut Manifest,
    ledger: &str,
    target: &dyn Target,
    quarantine: &dyn Sink,
    options: &Options,
    progress: &Progress,
    signals: &StopSignals,
) -> Result<Run> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let ledger = runtime.block_on(ledger::open(ledger, options.lease_ms))?;
    let parts = run::Parts { ledger: ledger.as_ref(), target, quarantine, options, progress, signals };
    run::run_entries(&runtime, manifest, parts)
}

/// What a run would do, from the ledger's current state, sending and writing nothing.
pub fn dry_run(manifest: &mut Manifest, ledger: &str) -> Result<ExecuteReport> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let ledger = ledger::open_readonly(ledger).await?;
        dry_run_async(manifest, ledger.as_deref()).await
    })
}

async fn dry_run_async(manifest: &mut Manifest, ledger: Option<&dyn Ledger>) -> Result<ExecuteReport> {
    let digest = manifest.header.manifest_sha256.clone();
    let mut o = Outcomes::default();
    let mut seen = std::collections::HashSet::new();
    for entry in manifest.entries()? {
        let entry = entry?;
        let state = match ledger {
            Some(l) => l.peek(&entry.key).await?,
            None => None,
        };
        // A key the manifest repeats: a run handles it once, and its later entries find it done.
        let claim = if seen.insert(entry.key.clone()) { claim_now(state) } else { Claim::Done };
        match gate::fate(&entry, &claim) {
            Fate::Finished | Fate::Busy => o.skipped_idempotent += 1,
            Fate::Hold(Decision::PoisonAttempts, _) => o.poison_attempts += 1,
            Fate::Hold(_, _) => o.poison_uncleared += 1,
            Fate::Replay => o.replayed += 1,
        }
    }
    Ok(ExecuteReport { report: REPORT_ID.into(), manifest: digest, outcomes: o, unfinished: 0, target_failures: 0, blocked: None, unfinished_keys: Vec::new(), canary: None, replayed: None })
}

/// The claim a key would be granted now, from its ledger state (state and failures; none if
/// the key was never recorded).
fn claim_now(state: Option<(String, i64)>) -> Claim {
    match state {
        Some((state, _)) if state == "done" => Claim::Done,
        Some((state, _)) if state == "quarantined" => Claim::Quarantined,
        Some((_, failures)) => Claim::Granted { failures },
        None => Claim::Granted { failures: 0 },
    }
}
