//! One run over a manifest: `--concurrency` workers take entries in order, claim each key,
//! deliver or quarantine it, and record the outcome (an ordered run parks an entry until the
//! one before it in its key's order is done); the storm guard and signals stop them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use super::canary::Canary;
use super::evidence::{Ended, Failure, Kind, Timeline};
use super::gate::{self, Fate};
use super::guard::StormGuard;
use super::ledger::{Claim, Finish, Ledger};
use super::order::{Blocked, Order};
use super::quarantine::Sink;
use super::signals::StopSignals;
use super::target::{Delivery, Probe, Target};
use super::{ExecuteReport, Options, Outcomes, ReplayedList, Run, Stopped, REPORT_ID};
use super::message::Message;
use crate::manifest::order::Place;
use crate::manifest::{Decision, Entry, Manifest, Origin};
use crate::messages;
use crate::messages::Progress;

/// What a run works with.
pub(super) struct Parts<'a> {
    pub ledger: &'a dyn Ledger,
    pub target: &'a dyn Target,
    pub quarantine: &'a dyn Sink,
    pub options: &'a Options,
    pub progress: &'a Progress,
    pub signals: &'a StopSignals,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Replayed,
    /// Done already (in the ledger, or the target had it).
    Skipped,
    /// Quarantined already: counted as skipped, but not done.
    AlreadyQuarantined,
    PoisonAttempts,
    PoisonUncleared,
    Failed,
    /// Another executor holds the key, or this run is delivering another entry with the same
    /// key (a message dead-lettered twice): try again later.
    Deferred,
    /// Released for a later run: a target failure, a 5xx or timeout awaiting the run's
    /// verdict (`evidence`), or a delivery cut short by a stop.
    Left,
    /// Held back by a canary run, for the next.
    Held,
}

/// Failed deliveries whose cause is not printed one by one past this many.
const SHOWN_TARGET_FAILURES: u64 = 3;

struct Shared<'a> {
    parts: Parts<'a>,
    manifest: String,
    /// Which record fields are the payload, topic, key and headers (sealed in the header).
    origin: Origin,
    next_slot: Mutex<Instant>,
    guard: StormGuard,
    /// Set when the run must take no new entries.
    stop: AtomicBool,
    stopped: Mutex<Option<Stopped>>,
    /// When a stop signal was seen: deliveries in flight get `grace` from then.
    signalled_at: Mutex<Option<Instant>>,
    /// Every delivery as it ended, and the 5xx and timeouts whose cost it decides at the end.
    timeline: Timeline,
    target_failures: AtomicU64,
    last_target_failure: Mutex<Option<String>>,
    outcomes: Mutex<Outcomes>,
    /// Keys this run is handling now. The ledger grants a key to the executor already holding
    /// it, so a second entry with the same key must wait here for the first to end.
    in_flight: Mutex<HashSet<String>>,
    /// Entries left for a later run, as they were left: key, id and the last error they met.
    left: Mutex<Vec<(String, String, String)>>,
    /// A canary run's picks and counts.
    canary: Option<Canary>,
    /// The entries delivered (key, id, signature, match digest), for `dlqf returned`.
    replayed: Mutex<Vec<(String, String, crate::signature::Signature, Option<String>)>>,
    /// An ordered run's chains and parked entries.
    order: Option<Order>,
}

impl Outcome {
    /// Whether the entry is done, so the one after it in its key's order may go.
    fn is_done(self) -> bool {
        matches!(self, Outcome::Replayed | Outcome::Skipped)
    }
}

/// Entries taken in manifest order, each with its place.
struct Next<I> {
    place: Place,
    entries: I,
}

pub(super) fn run_entries(runtime: &tokio::runtime::Runtime, manifest: &mut Manifest, parts: Parts) -> Result<Run> {
    let options = parts.options;
    let total = manifest.header.entries;
    let profile = manifest.header.profile.clone();
    let order = match options.ordered {
        true => Some(Order::of(manifest, &options.release_after)?),
        false => None,
    };
    let canary = match options.canary {
        Some(limit) => Some(runtime.block_on(Canary::pick(manifest, parts.ledger, limit, order.as_ref()))?),
        None => None,
    };
    let shared = Shared {
        manifest: manifest.header.manifest_sha256.clone(),
        origin: manifest.header.origin.clone(),
        next_slot: Mutex::new(Instant::now()),
        guard: StormGuard::new(options.failure_window, options.guard_after, options.max_failure_ratio),
        stop: AtomicBool::new(false),
        stopped: Mutex::new(None),
        signalled_at: Mutex::new(None),
        timeline: Timeline::default(),
        target_failures: AtomicU64::new(0),
        last_target_failure: Mutex::new(None),
        outcomes: Mutex::new(Outcomes::default()),
        in_flight: Mutex::new(HashSet::new()),
        left: Mutex::default(),
        replayed: Mutex::default(),
        canary,
        order,
        parts,
    };
    let entries = Mutex::new(Next { place: 0, entries: manifest.entries()? });
    let deferred: Mutex<VecDeque<(Place, Entry)>> = Mutex::new(VecDeque::new());
    let error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    runtime.block_on(async {
        let workers = (0..options.concurrency.max(1)).map(|_| async {
            loop {
                if shared.stopping() || error.lock().unwrap().is_some() {
                    return;
                }
                let next = {
                    let mut next = entries.lock().unwrap();
                    let place = next.place;
                    next.place += 1;
                    next.entries.next().map(|entry| entry.map(|entry| (place, entry)))
                };
                let admitted = match next {
                    None => return,
                    Some(Err(e)) => {
                        *error.lock().unwrap() = Some(e);
                        return;
                    }
                    Some(Ok((place, entry))) => shared.admit(place, entry),
                };
                let Some(first) = admitted else { continue };
                if let Err(e) = shared.drive(first, &deferred).await {
                    *error.lock().unwrap() = Some(e);
                    return;
                }
            }
        });
        futures_util::future::join_all(workers).await;
        // Keys another executor held: wait for it to finish them or for its lease to lapse.
        while !shared.stopping() && error.lock().unwrap().is_none() {
            let Some(first) = deferred.lock().unwrap().pop_front() else { break };
            match shared.drive(first, &deferred).await {
                Ok(true) => tokio::time::sleep(Duration::from_millis(100)).await,
                Ok(false) => {}
                Err(e) => {
                    *error.lock().unwrap() = Some(e);
                    break;
                }
            }
        }
        if error.lock().unwrap().is_none() {
            if let Err(e) = shared.settle_failures().await {
                *error.lock().unwrap() = Some(e);
            }
        }
        shared.parts.target.close().await;
    });
    if let Some(e) = error.into_inner().unwrap() {
        return Err(e);
    }
    shared.parts.progress.finish();
    let outcomes = shared.outcomes.into_inner().unwrap();
    let target_failures = shared.target_failures.load(Ordering::SeqCst);
    let mut stopped = shared.stopped.into_inner().unwrap();
    if stopped.is_none() && target_failures > 0 && !shared.timeline.answered() {
        let last = shared.last_target_failure.into_inner().unwrap().unwrap_or_default();
        stopped = Some(Stopped::TargetFailing(last));
    }
    // What the run left, in manifest order: the entries it released, and those it never reached
    // (their keys read from the manifest only as far as the list goes).
    let mut left = std::mem::take(&mut *shared.left.lock().unwrap());
    let unfinished = total - outcomes.total();
    let not_reached = match &stopped {
        Some(why) => format!("not reached: {}", stopped_short(why)),
        None => "not reached".to_string(),
    };
    let mut deferred = deferred.into_inner().unwrap().into_iter().map(|(_, e)| (e.key, e.id, "claimed by another executor until the run ended".to_string())).collect::<Vec<_>>();
    let mut unfinished_keys = Vec::new();
    // Those the run released first, as it left them; then the deferred; then those an ordered
    // run held back; then those never reached, in manifest order.
    for (key, id, error) in std::mem::take(&mut left) {
        unfinished_keys.push(super::UnfinishedKey { key, id, error, blocked_by: None });
    }
    for (key, id, error) in deferred.drain(..) {
        unfinished_keys.push(super::UnfinishedKey { key, id, error, blocked_by: None });
    }
    let Next { place: read, entries: rest } = entries.into_inner().unwrap();
    let blocked = shared.order.as_ref().map(Order::blocked).unwrap_or_default();
    // What a canary held holds its key's rest by design: counted as held, not listed.
    let (held, blocked): (Vec<Blocked>, Vec<Blocked>) = blocked.into_iter().partition(|b| b.by_canary);
    if let Some(canary) = &shared.canary {
        held.iter().for_each(|b| canary.hold(&b.entry));
    }
    // Entries a canary held are left by design: its report counts them, this list does not.
    let canary = shared.canary.as_ref().map(Canary::report);
    let listed = (unfinished - canary.as_ref().map_or(0, |c| c.held)) as usize;
    let room = super::LISTED_UNFINISHED.min(listed).saturating_sub(unfinished_keys.len() + blocked.len());
    let (names, not_reached_keys) = if blocked.is_empty() {
        (HashMap::new(), rest.take(room).filter_map(Result::ok).map(|e| (e.key, e.id)).collect())
    } else {
        drop(rest);
        names_and_rest(manifest, &blocked.iter().map(|b| b.by).collect(), read, room)?
    };
    for b in &blocked {
        let (key, id) = &names[&b.by];
        let error = format!("blocked: {key} ({id}), before it in its key's order, is not done");
        unfinished_keys.push(super::UnfinishedKey { key: b.entry.key.clone(), id: b.entry.id.clone(), error, blocked_by: Some(key.clone()) });
    }
    for (key, id) in not_reached_keys {
        unfinished_keys.push(super::UnfinishedKey { key, id, error: not_reached.clone(), blocked_by: None });
    }
    unfinished_keys.truncate(super::LISTED_UNFINISHED);
    let replayed = Some(ReplayedList::of(profile, shared.replayed.into_inner().unwrap()));
    let blocked = shared.order.is_some().then_some(blocked.len() as u64);
    let report = ExecuteReport { report: REPORT_ID.into(), manifest: shared.manifest, unfinished, outcomes, target_failures, blocked, unfinished_keys, canary, replayed };
    Ok(Run { report, stopped })
}

/// One more pass over the manifest: the key and id of the entries at `places`, and of those
/// not reached (from place `read` on), at most `room` of them.
fn names_and_rest(manifest: &mut Manifest, places: &HashSet<Place>, read: Place, room: usize) -> Result<(HashMap<Place, (String, String)>, Vec<(String, String)>)> {
    let mut names = HashMap::new();
    let mut rest = Vec::new();
    for (place, entry) in manifest.entries()?.enumerate() {
        let place = place as Place;
        if places.contains(&place) || (place >= read && rest.len() < room) {
            let entry = entry?;
            if places.contains(&place) {
                names.insert(place, (entry.key.clone(), entry.id.clone()));
            }
            if place >= read && rest.len() < room {
                rest.push((entry.key, entry.id));
            }
        }
        if place >= read && rest.len() >= room && names.len() == places.len() {
            break;
        }
    }
    Ok((names, rest))
}

/// What the probe said of the failures no delivery around them judged, and what it proved.
fn probe_message(probe: Option<&Probe>, alone: &[&Failure]) -> Option<String> {
    let count = |kind| alone.iter().filter(|f| f.kind == kind).count();
    let (app, unavailable) = (count(Kind::AppFailed), count(Kind::Unavailable));
    Some(match probe? {
        Probe::Healthy(said) => format!("{} failed deliveries had no delivery of another key just after them, but the health URL answers ({said}): they are the messages' own", alone.len()),
        Probe::Down(why) => format!("the target does not answer its health probe ({why}): no key is charged for {} failed deliveries", alone.len()),
        Probe::Serving(said) => {
            let mut parts = Vec::new();
            if app > 0 {
                parts.push(format!("{app} deliveries the application answered with its own error (HTTP 500) had no delivery of another key just after them, but the target answers its health probe ({said}): those errors are the messages' own"));
            }
            if unavailable > 0 {
                parts.push(format!("{unavailable} deliveries failed as in an outage (a gateway's 5xx, a timeout) with no delivery of another key just after them; an answer to a GET ({said}) does not prove the target up, so no key is charged for them (a --health-url answering 2xx would)"));
            }
            parts.join("; ")
        }
    })
}

/// Why a run stopped, in a few words, for the entries it never reached.
fn stopped_short(stopped: &Stopped) -> String {
    match stopped {
        Stopped::StormGuard { failures, seen } => format!("the storm guard stopped the run ({failures} of the last {seen} deliveries failed)"),
        Stopped::Signal(signal) => format!("the run was stopped by {}", StopSignals::name(*signal)),
        Stopped::TargetFailing(last) | Stopped::TargetDown(last) => format!("the target was failing ({last})"),
    }
}

impl Shared<'_> {
    /// Whether to take no new entries: the storm guard tripped or a stop signal came.
    fn stopping(&self) -> bool {
        if let Some(signal) = self.parts.signals.received() {
            let mut at = self.signalled_at.lock().unwrap();
            if at.is_none() {
                *at = Some(Instant::now());
                self.stopped.lock().unwrap().get_or_insert(Stopped::Signal(signal));
                self.halt();
            }
        }
        self.stop.load(Ordering::SeqCst)
    }

    fn count(&self, outcome: Outcome) {
        let mut o = self.outcomes.lock().unwrap();
        match outcome {
            Outcome::Replayed => o.replayed += 1,
            Outcome::Skipped | Outcome::AlreadyQuarantined => o.skipped_idempotent += 1,
            Outcome::PoisonAttempts => o.poison_attempts += 1,
            Outcome::PoisonUncleared => o.poison_uncleared += 1,
            Outcome::Failed => o.replay_failed += 1,
            Outcome::Left | Outcome::Held => {}
            Outcome::Deferred => unreachable!("deferred entries are retried"),
        }
        self.parts.progress.advance(1);
    }

    /// An entry taken from the manifest: itself when it may go now (always, unless ordered),
    /// else None, parked until the entry before it in its key's order is done.
    fn admit(&self, place: Place, entry: Entry) -> Option<(Place, Entry)> {
        match &self.order {
            Some(order) => order.admit(place, entry).map(|entry| (place, entry)),
            None => Some((place, entry)),
        }
    }

    /// Handles an admitted entry, then, in an ordered run, each entry of its key that its end
    /// lets go, one after another. True when one had to be deferred (another executor holds
    /// its key): it waits in `deferred`.
    async fn drive(&self, first: (Place, Entry), deferred: &Mutex<VecDeque<(Place, Entry)>>) -> Result<bool> {
        let mut next = Some(first);
        while let Some((place, entry)) = next.take() {
            let outcome = self.handle(&entry).await.with_context(|| format!("entry {}", entry.key))?;
            if outcome == Outcome::Deferred {
                deferred.lock().unwrap().push_back((place, entry));
                return Ok(true);
            }
            self.count(outcome);
            let Some(order) = &self.order else { break };
            next = order.ended(place, outcome.is_done(), outcome == Outcome::Held);
            if self.stopping() {
                // Its turn came as the run stops: it waits for the next run.
                if let Some((_, entry)) = next.take() {
                    self.leave(&entry, "not reached: the run stopped");
                }
            }
        }
        Ok(false)
    }

    async fn handle(&self, entry: &Entry) -> Result<Outcome> {
        if !self.in_flight.lock().unwrap().insert(entry.key.clone()) {
            return Ok(Outcome::Deferred);
        }
        let outcome = self.claim_and_handle(entry).await;
        self.in_flight.lock().unwrap().remove(&entry.key);
        outcome
    }

    async fn claim_and_handle(&self, entry: &Entry) -> Result<Outcome> {
        let claim = self.parts.ledger.claim(&entry.key, gate::purpose(entry), &self.manifest).await?;
        match gate::fate(entry, &claim) {
            Fate::Finished if claim == Claim::Quarantined => Ok(Outcome::AlreadyQuarantined),
            Fate::Finished => Ok(Outcome::Skipped),
            Fate::Busy => Ok(Outcome::Deferred),
            fate @ (Fate::Hold(..) | Fate::Replay) if self.canary.as_ref().is_some_and(|c| !c.takes(entry, &fate)) => {
                self.parts.ledger.finish(&entry.key, Finish::Released).await?;
                Ok(Outcome::Held)
            }
            Fate::Hold(decision, detail) => self.quarantine(entry, decision, detail).await,
            Fate::Replay => {
                let failures = match claim {
                    Claim::Granted { failures } => failures,
                    _ => 0,
                };
                self.replay(entry, failures).await
            }
        }
    }

    /// Delivers a claimed entry whose key has failed `failures` times before.
    async fn replay(&self, entry: &Entry, failures: i64) -> Result<Outcome> {
        let (ledger, key) = (self.parts.ledger, entry.key.as_str());
        // A key that failed before and fails again tells nothing new of the target: only the
        // failures of keys without one feed the storm guard, so poison left at the end of a
        // manifest is judged in every run rather than taken for an outage.
        let news = failures == 0;
        self.wait_for_rate().await;
        let message = match Message::of(entry, &self.origin) {
            Ok(message) => message,
            Err(why) => {
                ledger.finish(key, Finish::Failed).await?;
                self.record(true, news);
                messages::message(format!("replay of {key} ({}) failed: {why}", entry.id));
                return Ok(Outcome::Failed);
            }
        };
        let started = self.timeline.start();
        let Some(delivery) = self.while_claimed(key, self.parts.target.send(&message)).await? else {
            // Stopped, and the grace ran out: the target may or may not have it. Released, so
            // a later run sends it again under the same Idempotency-Key.
            ledger.finish(key, Finish::Released).await?;
            self.leave(entry, "in flight when the run was stopped: released, to be sent again with the same key");
            return Ok(Outcome::Left);
        };
        match delivery {
            Delivery::Delivered | Delivery::AlreadyDone => {
                ledger.finish(key, Finish::Done).await?;
                if delivery == Delivery::Delivered {
                    self.replayed.lock().unwrap().push((key.to_string(), entry.id.clone(), entry.signature.clone(), message.match_digest()));
                }
                self.timeline.end(key, started, Ended::Delivered);
                self.record(false, news);
                Ok(if delivery == Delivery::Delivered { Outcome::Replayed } else { Outcome::Skipped })
            }
            Delivery::Rejected(why) => {
                ledger.finish(key, Finish::Failed).await?;
                self.timeline.end(key, started, Ended::Refused);
                self.record(true, news);
                messages::message(format!("replay of {key} ({}) failed: {why}", entry.id));
                Ok(Outcome::Failed)
            }
            Delivery::AppFailed(ref why) | Delivery::Unavailable(ref why) => {
                let kind = if matches!(delivery, Delivery::AppFailed(_)) { Kind::AppFailed } else { Kind::Unavailable };
                ledger.finish(key, Finish::Released).await?;
                self.timeline.fail(key, &entry.id, why, kind, started);
                self.record(true, news);
                self.leave(entry, why);
                Ok(Outcome::Left)
            }
            Delivery::Down(why) => {
                ledger.finish(key, Finish::Released).await?;
                self.timeline.end(key, started, Ended::Failed);
                self.leave(entry, &why);
                // The target is down: the rest would fail the same way. No new entries.
                self.stopped.lock().unwrap().get_or_insert(Stopped::TargetDown(why.clone()));
                self.halt();
                self.target_failure(why);
                Ok(Outcome::Left)
            }
        }
    }

    /// Notes an entry left for a later run, with the error it met.
    fn leave(&self, entry: &Entry, why: &str) {
        self.left.lock().unwrap().push((entry.key.clone(), entry.id.clone(), why.to_string()));
    }

    /// Feeds the storm guard a delivery's outcome (a failure only when it is `news`: of a key
    /// that had not failed before). A trip stops the run, whatever the target says when asked:
    /// most recent deliveries failing is an outage, or poison enough that a person should look.
    fn record(&self, failed: bool, news: bool) {
        if failed && !news {
            return;
        }
        let Some(tripped) = self.guard.record(failed) else { return };
        if self.stop.load(Ordering::SeqCst) {
            return;
        }
        self.stopped.lock().unwrap().get_or_insert(Stopped::StormGuard { failures: tripped.failures, seen: tripped.seen });
        self.halt();
    }

    /// No new entries, and no more retries for the deliveries in flight.
    fn halt(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.parts.options.halt.raise();
    }

    fn target_failure(&self, why: String) {
        let n = self.target_failures.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= SHOWN_TARGET_FAILURES {
            messages::message(format!("target failure (no key charged): {why}"));
        }
        *self.last_target_failure.lock().unwrap() = Some(why);
    }

    /// The verdict on 5xx and timeouts (`evidence`): a failure other keys were delivered just
    /// after is the message's. The rest, when the run ran to its end, by the target's probe: a
    /// health URL answering 2xx proves it up for every failure, any other answer of a server
    /// only for the application's own errors (HTTP 500). Whatever is not proved is the target's.
    async fn settle_failures(&self) -> Result<()> {
        let failures = self.timeline.take_failures();
        let alone: Vec<&Failure> = failures.iter().filter(|f| !f.beside_deliveries()).collect();
        let probe = match alone.is_empty() || self.stop.load(Ordering::SeqCst) {
            true => None,
            false => self.parts.target.probe().await,
        };
        let proves = |kind: Kind| match &probe {
            Some(Probe::Healthy(_)) => true,
            Some(Probe::Serving(_)) => kind == Kind::AppFailed,
            _ => false,
        };
        if let Some(said) = probe_message(probe.as_ref(), &alone) {
            messages::message(said);
        }
        let mut charged = HashSet::new();
        for failure in failures {
            if failure.beside_deliveries() || proves(failure.kind) {
                self.parts.ledger.charge(&failure.key).await?;
                self.outcomes.lock().unwrap().replay_failed += 1;
                messages::message(format!("replay of {} ({}) failed: {}", failure.key, failure.id, failure.why));
                charged.insert(failure.key);
            } else {
                self.target_failure(failure.why);
            }
        }
        self.left.lock().unwrap().retain(|(key, _, _)| !charged.contains(key));
        Ok(())
    }

    /// Runs `work` while keeping the claim on `key`: renewed every third of a lease. Returns
    /// None when a stop signal's grace ran out first.
    async fn while_claimed<T>(&self, key: &str, work: impl std::future::Future<Output = T>) -> Result<Option<T>> {
        let renew_every = Duration::from_millis((self.parts.options.lease_ms / 3).max(10) as u64);
        let mut renew_at = Instant::now() + renew_every;
        tokio::pin!(work);
        loop {
            // Wake at least every 100 ms to notice a signal.
            let wake = renew_at.min(Instant::now() + Duration::from_millis(100));
            tokio::select! {
                out = &mut work => return Ok(Some(out)),
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
            self.stopping();
            if self.signalled_at.lock().unwrap().is_some_and(|at| at.elapsed() >= self.parts.options.grace) {
                return Ok(None);
            }
            if Instant::now() >= renew_at {
                self.parts.ledger.renew(key).await?;
                renew_at = Instant::now() + renew_every;
            }
        }
    }

    /// Publishes a claimed entry to the quarantine, once, and records it.
    async fn quarantine(&self, entry: &Entry, decision: Decision, detail: String) -> Result<Outcome> {
        let ledger = self.parts.ledger;
        let line = json!({
            "key": entry.key, "id": entry.id, "decision": decision.name(), "detail": detail,
            "signature": entry.signature, "attempts": entry.attempts, "record": entry.record,
        });
        if let Err(e) = self.parts.quarantine.publish(&entry.key, &line).await {
            ledger.finish(&entry.key, Finish::Released).await?;
            return Err(e).with_context(|| format!("quarantining {}", entry.key));
        }
        ledger.finish(&entry.key, Finish::Quarantined).await?;
        Ok(if decision == Decision::PoisonAttempts { Outcome::PoisonAttempts } else { Outcome::PoisonUncleared })
    }

    async fn wait_for_rate(&self) {
        let Some(rate) = self.parts.options.rate else { return };
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
