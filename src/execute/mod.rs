//! `execute`: replays exactly a reviewed manifest. Each key is claimed in the durable ledger
//! before any side effect and marked done after, so reruns and crashes never duplicate work
//! beyond the entries in flight; poison entries go to the quarantine once.

pub mod ledger;
pub mod quarantine;
pub mod target;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::manifest::{Decision, Entry, Manifest};
use crate::progress::Progress;
use ledger::{Claim, Finish, Ledger, Purpose};
use quarantine::Sink;
use target::{Delivery, Target};

pub const REPORT_ID: &str = "dlqf.execute/1";

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcomes {
    pub replayed: u64,
    pub skipped_idempotent: u64,
    pub poison_attempts: u64,
    pub poison_uncleared: u64,
    pub replay_failed: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecuteReport {
    pub report: String,
    pub manifest: String,
    pub outcomes: Outcomes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Replayed,
    Skipped,
    PoisonAttempts,
    PoisonUncleared,
    Failed,
    /// Another executor holds the key: try again later.
    Deferred,
}

pub struct Options {
    pub concurrency: usize,
    /// Messages per second, at most.
    pub rate: Option<f64>,
    pub max_failure_ratio: f64,
    /// Attempts before the storm guard may stop the run.
    pub guard_after: u64,
    /// How long another executor's claim is honoured.
    pub lease_ms: i64,
}

/// How a run ended.
pub struct Run {
    pub report: ExecuteReport,
    /// Why the storm guard stopped the run, if it did.
    pub stopped: Option<String>,
}

struct Shared<'a> {
    ledger: &'a dyn Ledger,
    target: &'a dyn Target,
    quarantine: &'a dyn Sink,
    manifest: String,
    options: &'a Options,
    next_slot: Mutex<Instant>,
    attempts: AtomicU64,
    failures: AtomicU64,
    stop: AtomicBool,
    outcomes: Mutex<Outcomes>,
    progress: &'a Progress,
}

/// Runs every entry of a verified manifest through the gate, the ledger (`--ledger` spec) and
/// the target.
pub fn execute(manifest: &mut Manifest, ledger: &str, target: &dyn Target, quarantine: &dyn Sink, options: &Options, progress: &Progress) -> Result<Run> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let ledger = runtime.block_on(ledger::open(ledger, options.lease_ms))?;
    run_entries(&runtime, manifest, ledger.as_ref(), target, quarantine, options, progress)
}

fn run_entries(
    runtime: &tokio::runtime::Runtime,
    manifest: &mut Manifest,
    ledger: &dyn Ledger,
    target: &dyn Target,
    quarantine: &dyn Sink,
    options: &Options,
    progress: &Progress,
) -> Result<Run> {
    let shared = Shared {
        ledger,
        target,
        quarantine,
        manifest: manifest.header.manifest_sha256.clone(),
        options,
        next_slot: Mutex::new(Instant::now()),
        attempts: AtomicU64::new(0),
        failures: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        outcomes: Mutex::new(Outcomes::default()),
        progress,
    };
    let entries = Mutex::new(manifest.entries()?);
    let deferred: Mutex<VecDeque<Entry>> = Mutex::new(VecDeque::new());
    let error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    runtime.block_on(async {
        let workers = (0..options.concurrency.max(1)).map(|_| async {
            loop {
                if shared.stop.load(Ordering::SeqCst) || error.lock().unwrap().is_some() {
                    return;
                }
                let next = entries.lock().unwrap().next();
                let entry = match next {
                    None => return,
                    Some(Err(e)) => {
                        *error.lock().unwrap() = Some(e);
                        return;
                    }
                    Some(Ok(entry)) => entry,
                };
                match shared.handle(&entry).await {
                    Ok(Outcome::Deferred) => deferred.lock().unwrap().push_back(entry),
                    Ok(outcome) => shared.count(outcome),
                    Err(e) => {
                        *error.lock().unwrap() = Some(e.context(format!("entry {}", entry.key)));
                        return;
                    }
                }
            }
        });
        futures_join_all(workers.collect()).await;
        // Keys another executor held: wait for it to finish them or for its lease to lapse.
        loop {
            let Some(entry) = deferred.lock().unwrap().pop_front() else { break };
            if shared.stop.load(Ordering::SeqCst) || error.lock().unwrap().is_some() {
                break;
            }
            match shared.handle(&entry).await {
                Ok(Outcome::Deferred) => {
                    deferred.lock().unwrap().push_back(entry);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(outcome) => shared.count(outcome),
                Err(e) => {
                    *error.lock().unwrap() = Some(e);
                    break;
                }
            }
        }
    });
    if let Some(e) = error.into_inner().unwrap() {
        return Err(e);
    }
    progress.finish();
    let stopped = shared.stop.load(Ordering::SeqCst).then(|| {
        format!(
            "storm guard: {} of {} replays failed (more than {}); the run stopped, remaining entries were not sent",
            shared.failures.load(Ordering::SeqCst),
            shared.attempts.load(Ordering::SeqCst),
            options.max_failure_ratio
        )
    });
    let outcomes = shared.outcomes.into_inner().unwrap();
    Ok(Run { report: ExecuteReport { report: REPORT_ID.into(), manifest: shared.manifest, outcomes }, stopped })
}

/// Joins futures on the current task (all run concurrently).
async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: Vec<F>) {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    std::future::poll_fn(|cx| {
        set.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if set.is_empty() { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await
}

impl Shared<'_> {
    fn count(&self, outcome: Outcome) {
        let mut o = self.outcomes.lock().unwrap();
        match outcome {
            Outcome::Replayed => o.replayed += 1,
            Outcome::Skipped => o.skipped_idempotent += 1,
            Outcome::PoisonAttempts => o.poison_attempts += 1,
            Outcome::PoisonUncleared => o.poison_uncleared += 1,
            Outcome::Failed => o.replay_failed += 1,
            Outcome::Deferred => unreachable!("deferred entries are retried"),
        }
        self.progress.advance(1);
    }

    async fn handle(&self, entry: &Entry) -> Result<Outcome> {
        match entry.decision {
            Decision::PoisonAttempts => {
                self.quarantine(entry, Outcome::PoisonAttempts, format!("attempts {} >= max {}", entry.attempts, entry.max_attempts)).await
            }
            Decision::PoisonUncleared => {
                self.quarantine(entry, Outcome::PoisonUncleared, "signature not cleared for replay".into()).await
            }
            Decision::Replay => match self.ledger.claim(&entry.key, Purpose::Replay, &self.manifest).await? {
                Claim::Done | Claim::Quarantined => Ok(Outcome::Skipped),
                Claim::Busy => Ok(Outcome::Deferred),
                Claim::Granted { failures } if failures >= entry.max_attempts => {
                    let detail = format!("replay failed {failures} times (max {})", entry.max_attempts);
                    self.quarantine(entry, Outcome::PoisonAttempts, detail).await
                }
                Claim::Granted { .. } => self.replay(entry).await,
            },
        }
    }

    async fn replay(&self, entry: &Entry) -> Result<Outcome> {
        self.wait_for_rate().await;
        let delivery = self.target.send(&entry.key, &entry.record).await;
        let attempts = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        match delivery {
            Delivery::Delivered => {
                self.ledger.finish(&entry.key, Finish::Done).await?;
                Ok(Outcome::Replayed)
            }
            Delivery::AlreadyDone => {
                self.ledger.finish(&entry.key, Finish::Done).await?;
                Ok(Outcome::Skipped)
            }
            Delivery::Failed(why) => {
                self.ledger.finish(&entry.key, Finish::Failed).await?;
                let failures = self.failures.fetch_add(1, Ordering::SeqCst) + 1;
                eprintln!("dlqf: replay of {} ({}) failed: {why}", entry.key, entry.id);
                if attempts >= self.options.guard_after && failures as f64 / attempts as f64 > self.options.max_failure_ratio {
                    self.stop.store(true, Ordering::SeqCst);
                }
                Ok(Outcome::Failed)
            }
        }
    }

    async fn quarantine(&self, entry: &Entry, outcome: Outcome, detail: String) -> Result<Outcome> {
        match self.ledger.claim(&entry.key, Purpose::Quarantine, &self.manifest).await? {
            Claim::Done | Claim::Quarantined => return Ok(Outcome::Skipped),
            Claim::Busy => return Ok(Outcome::Deferred),
            Claim::Granted { .. } => {}
        }
        let decision = if outcome == Outcome::PoisonAttempts { Decision::PoisonAttempts } else { Decision::PoisonUncleared };
        let line = json!({
            "key": entry.key, "id": entry.id, "decision": decision.name(), "detail": detail,
            "signature": entry.signature, "attempts": entry.attempts, "record": entry.record,
        });
        self.quarantine.publish(&entry.key, &line).await.with_context(|| format!("quarantining {}", entry.key))?;
        self.ledger.finish(&entry.key, Finish::Quarantined).await?;
        Ok(outcome)
    }

    async fn wait_for_rate(&self) {
        let Some(rate) = self.options.rate else { return };
        let slot = {
            let mut next = self.next_slot.lock().unwrap();
            let now = Instant::now();
            let slot = (*next).max(now);
            *next = slot + Duration::from_secs_f64(1.0 / rate);
            slot
        };
        tokio::time::sleep_until(slot.into()).await;
    }
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
    for entry in manifest.entries()? {
        let entry = entry?;
        let state = match ledger {
            Some(l) => l.peek(&entry.key).await?,
            None => None,
        };
        let finished = matches!(state.as_ref().map(|s| s.0.as_str()), Some("done" | "quarantined"));
        let failures = state.map(|s| s.1).unwrap_or(0);
        match entry.decision {
            _ if finished => o.skipped_idempotent += 1,
            Decision::PoisonAttempts => o.poison_attempts += 1,
            Decision::PoisonUncleared => o.poison_uncleared += 1,
            Decision::Replay if failures >= entry.max_attempts => o.poison_attempts += 1,
            Decision::Replay => o.replayed += 1,
        }
    }
    Ok(ExecuteReport { report: REPORT_ID.into(), manifest: digest, outcomes: o })
}
