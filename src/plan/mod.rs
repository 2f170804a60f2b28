//! `plan`: turns records into a replay manifest for review. Every message gets an idempotency
//! key, a gate decision and its attempt cap; entries follow the inputs in name order.

pub mod fix;
pub mod policy;
pub mod summary;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::manifest::{Decision, DecisionCounts};
use crate::origin::{OriginExprs, Seen};
use crate::profile::classify::CategoryRule;
use crate::profile::Profile;
use crate::signature::Signature;
use crate::source::layout::Layout;
use crate::source::{FullRow, Record};
use crate::values::push_bytes;
use fix::Fixes;
use policy::Policy;
use summary::Review;

/// `sha256(id|part|part…)` as lowercase hex, first 16 characters (the seed's key).
///
/// A message of up to 55 bytes, as most keys are, is one SHA-256 block: it is padded here and
/// compressed once, without the streaming hasher's buffering (a plan makes a key a message).
pub fn idempotency_key<S: AsRef<str>>(id: &str, parts: impl IntoIterator<Item = S>) -> IdempotencyKey {
    let mut block = [0u8; 64];
    let mut len = 0;
    let mut longer: Option<Sha256> = None;
    let mut add = |bytes: &[u8]| match &mut longer {
        Some(digest) => digest.update(bytes),
        None if len + bytes.len() <= ONE_BLOCK => {
            block[len..len + bytes.len()].copy_from_slice(bytes);
            len += bytes.len();
        }
        None => {
            let mut digest = Sha256::new();
            digest.update(&block[..len]);
            digest.update(bytes);
            longer = Some(digest);
        }
    };
    add(id.as_bytes());
    for p in parts {
        add(b"|");
        add(p.as_ref().as_bytes());
    }
    let mut head = [0u8; 8];
    match longer {
        Some(digest) => head.copy_from_slice(&digest.finalize()[..8]),
        None => {
            block[len] = 0x80;
            block[56..].copy_from_slice(&(len as u64 * 8).to_be_bytes());
            let mut state = SHA256_START;
            sha2::compress256(&mut state, &[block.into()]);
            head[..4].copy_from_slice(&state[0].to_be_bytes());
            head[4..].copy_from_slice(&state[1].to_be_bytes());
        }
    }
    let mut digits = [0; 16];
    crate::manifest::write_hex(&head, &mut digits);
    IdempotencyKey(digits)
}

/// The longest message that pads into one SHA-256 block (a 0x80 byte and its 8-byte length
/// follow it).
const ONE_BLOCK: usize = 55;

/// SHA-256's initial hash value (FIPS 180-4, 5.3.3).
const SHA256_START: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// An idempotency key's 16 hex digits, held in place: a plan makes one for every message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdempotencyKey([u8; 16]);

impl IdempotencyKey {
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hex digits")
    }

    /// The key's digits: lowercase hex, which JSON writes between quotes as they are.
    fn digits(&self) -> &[u8; 16] {
        &self.0
    }
}

pub struct Planner<'a> {
    /// The profile's origin fields, for records read as they are and from aligned chunks.
    origin: Option<[OriginExprs; 2]>,
    profile: &'a Profile,
    layout: &'a Layout,
    policy: &'a Policy,
    fixes: &'a Fixes,
    signature_fields: Vec<String>,
    /// Facts of raw keys met so far, shared by the batches (up to `KNOWN_KEYS`).
    known: Mutex<HashMap<Vec<u8>, Arc<KeyFacts<'a>>, foldhash::fast::FixedState>>,
}

/// Raw keys whose facts are kept across batches: dumps have a few hundred; a dump whose
/// every message is its own key works each out once per batch instead.
const KNOWN_KEYS: usize = 100_000;

/// Attempt counts whose gate decision a key keeps in place: most messages have a few.
const SMALL_ATTEMPTS: usize = 8;

/// Raw keys a reused batch keeps, and the review holds counts for before adding them up per
/// signature: past this (a dump of mostly one-message keys) each lets them go rather than
/// holding every key it met.
const KEPT_KEYS: usize = 16_384;

/// The manifest entries planned from one piece of input: their lines in order, and their
/// counts per signature and decision. What the rows of one raw signature key share (the
/// signature, its category, the gate's inputs) is worked out once per batch.
pub struct PlannedBatch<'p> {
    /// Entry lines, each with its newline, in `Entry`'s field order.
    pub lines: Vec<u8>,
    pub counts: DecisionCounts,
    pub entries: u64,
    /// Which origin fields the batch's records had.
    pub origin_seen: Seen,
    /// Records left out because their origin could not be read (a decoding failed): how many,
    /// and the first few by id with the reason.
    pub unplanned: u64,
    pub unplanned_named: Vec<(String, String)>,
    keys: HashMap<Vec<u8>, usize, foldhash::fast::FixedState>,
    plans: Vec<KeyPlan<'p>>,
}

/// What every row of one raw signature key shares.
struct KeyFacts<'p> {
    signature: Signature,
    /// The signature as JSON, as it goes into each entry.
    signature_json: Vec<u8>,
    selected: bool,
    route: Option<&'p CategoryRule>,
    max_attempts: i64,
    /// The key's parts after the id, one per key field: None where it comes from the record.
    key_parts: Vec<Option<String>>,
    fixed: bool,
}

/// A raw key's facts and what one batch has seen of it.
struct KeyPlan<'p> {
    facts: Arc<KeyFacts<'p>>,
    /// The gate's decision by attempts: in place for the few counts most messages have (found
    /// behind a pointer, it was a tenth of planning an entry), as met for the rest.
    small_attempts: [Option<Decision>; SMALL_ATTEMPTS],
    decisions: Vec<(i64, Decision)>,
    counts: DecisionCounts,
}

impl<'p> PlannedBatch<'p> {
    /// An empty batch whose lines go into `lines` (cleared), to reuse its memory.
    pub fn with_lines(mut lines: Vec<u8>) -> PlannedBatch<'p> {
        lines.clear();
        PlannedBatch {
            lines,
            counts: DecisionCounts::default(),
            entries: 0,
            origin_seen: Seen::default(),
            unplanned: 0,
            unplanned_named: Vec::new(),
            keys: HashMap::default(),
            plans: Vec::new(),
        }
    }

    /// This batch emptied for another piece, its lines going into `lines` (cleared). The raw
    /// keys it met stay known with their facts and gate decisions, so that the next piece does
    /// not look each one up again (a batch of 4,096 rows meets most of a dump's keys).
    pub fn reuse(mut self, mut lines: Vec<u8>) -> PlannedBatch<'p> {
        lines.clear();
        self.lines = lines;
        self.counts = DecisionCounts::default();
        self.entries = 0;
        self.origin_seen = Seen::default();
        self.unplanned = 0;
        self.unplanned_named.clear();
        if self.plans.len() > KEPT_KEYS {
            self.keys.clear();
            self.plans.clear();
        }
        for plan in &mut self.plans {
            plan.counts = DecisionCounts::default();
        }
        self
    }
}

/// The review's counts as batches come: by raw key, each found by the address of its shared
/// facts, and added up per signature once. A batch holds most of a dump's few hundred keys;
/// finding each signature in the review's ordered map had cost 2% of a plan's CPU.
#[derive(Default)]
pub struct ReviewCounts<'p> {
    by_key: HashMap<usize, (Arc<KeyFacts<'p>>, DecisionCounts), foldhash::fast::FixedState>,
    review: Review,
}

impl<'p> ReviewCounts<'p> {
    /// Adds a batch's counts (a signature may come from two raw keys that normalise to it).
    pub fn add(&mut self, batch: &PlannedBatch<'p>) {
        for plan in batch.plans.iter().filter(|p| p.counts.total() > 0) {
            // The facts are held here, so their address names no other key meanwhile.
            let (_, counts) = self.by_key.entry(Arc::as_ptr(&plan.facts) as usize).or_insert_with(|| (plan.facts.clone(), DecisionCounts::default()));
            counts.add_counts(&plan.counts);
        }
        // A dump of mostly one-message keys holds each key's facts here only briefly.
        if self.by_key.len() > KEPT_KEYS {
            self.add_up();
        }
    }

    fn add_up(&mut self) {
        for (_, (facts, counts)) in self.by_key.drain() {
            self.review.add_counts(&facts.signature, &counts);
        }
    }

    /// The counts per signature.
    pub fn finish(mut self) -> Review {
        self.add_up();
        self.review
    }
}

impl<'a> Planner<'a> {
    pub fn new(profile: &'a Profile, layout: &'a Layout, policy: &'a Policy, fixes: &'a Fixes) -> Planner<'a> {
        let origin = profile.origin.is_set().then(|| [profile.origin.exprs(false), profile.origin.exprs(true)]);
        Planner { origin, profile, layout, policy, fixes, signature_fields: profile.signature_names(), known: Mutex::default() }
    }

    /// Adds the manifest entry for one record to `batch`, unless the policy's filter leaves
    /// it out.
    pub fn add(&self, batch: &mut PlannedBatch<'a>, row: FullRow) {
        let index = match batch.keys.get(row.key) {
            Some(&i) => i,
            None => {
                batch.plans.push(KeyPlan { facts: self.key_facts(row.key), small_attempts: [None; SMALL_ATTEMPTS], decisions: Vec::new(), counts: DecisionCounts::default() });
                batch.keys.insert(row.key.to_vec(), batch.plans.len() - 1);
                batch.plans.len() - 1
            }
        };
        let plan = &mut batch.plans[index];
        let facts = &*plan.facts;
        if !facts.selected {
            return;
        }
        let attempts = row.facts.attempts;
        let decide = || {
            let reason = self.profile.reason_field.as_deref().and_then(|f| facts.signature.get(f));
            self.policy.decide(attempts, reason, &facts.signature, facts.route)
        };
        let decision = match usize::try_from(attempts).ok().and_then(|a| plan.small_attempts.get_mut(a)) {
            Some(known) => *known.get_or_insert_with(decide),
            None => match plan.decisions.iter().find(|(a, _)| *a == attempts) {
                Some(&(_, d)) => d,
                None => {
                    let d = decide();
                    plan.decisions.push((attempts, d));
                    d
                }
            },
        };
        let id = &row.facts.id;
        let key = self.key(id, &facts.key_parts, &row.record);
        let record = if facts.fixed {
            let mut object = row.record.into_object();
            self.fixes.apply(&facts.signature, &mut object);
            Record::Object(object)
        } else {
            row.record
        };
        let origin = match &self.origin {
            None => None,
            Some(exprs) => match exprs[usize::from(row.aligned)].resolve(&record.raw_json(), &mut batch.origin_seen) {
                Ok(mut resolved) => {
                    // The record's time orders a key's messages where no offsets do.
                    resolved.position.time = Some(row.facts.time);
                    Some(resolved.to_json())
                }
                Err(why) => {
                    batch.unplanned += 1;
                    if batch.unplanned_named.len() < crate::source::NAMED_REJECTS {
                        batch.unplanned_named.push((id.to_string(), why));
                    }
                    return;
                }
            },
        };
        write_entry(&mut batch.lines, &key, decision, &facts.signature_json, id, attempts, facts.max_attempts, &record, origin.as_ref());
        plan.counts.add(decision);
        batch.counts.add(decision);
        batch.entries += 1;
    }

    /// A raw key's facts: worked out once, then shared.
    fn key_facts(&self, raw_key: &[u8]) -> Arc<KeyFacts<'a>> {
        if let Some(facts) = self.known.lock().expect("not poisoned").get(raw_key) {
            return facts.clone();
        }
        let facts = Arc::new(self.work_out(raw_key));
        let mut known = self.known.lock().expect("not poisoned");
        if known.len() < KNOWN_KEYS {
            known.insert(raw_key.to_vec(), facts.clone());
        }
        facts
    }

    fn work_out(&self, raw_key: &[u8]) -> KeyFacts<'a> {
        let values = self.layout.finish_signature(raw_key);
        let signature = Signature::new(&self.signature_fields, &values);
        let route = self.policy.routing.then(|| self.layout.classifier().routing(&self.layout.category_of(&values)));
        let key_parts = self
            .profile
            .key_fields
            .iter()
            .map(|field| match &self.policy.replay_revision {
                Some(r) if self.profile.revision_field.as_deref() == Some(field.as_str()) => Some(r.trim().to_string()),
                _ => signature.get(field).map(str::to_string),
            })
            .collect();
        KeyFacts {
            signature_json: serde_json::to_vec(&signature).expect("signatures serialise"),
            selected: self.policy.selects(&signature),
            route,
            max_attempts: self.policy.cap(route),
            key_parts,
            fixed: self.fixes.applies_to(&signature),
            signature,
        }
    }

    /// A record's idempotency key from its key fields' `parts`, any missing one taken from
    /// the record itself.
    fn key(&self, id: &str, parts: &[Option<String>], record: &Record) -> IdempotencyKey {
        if parts.iter().all(Option::is_some) {
            return idempotency_key(id, parts.iter().flatten());
        }
        let parts: Vec<String> = parts
            .iter()
            .zip(&self.profile.key_fields)
            .map(|(part, field)| match part {
                Some(part) => part.clone(),
                None => {
                    let value = match crate::path::FieldExpr::parse(field) {
                        Ok(expr) if expr.as_top_level().is_none() => key_field_value(&expr, record),
                        _ => record.field(field),
                    };
                    match value {
                        Some(Value::String(s)) => s.trim().to_string(),
                        Some(Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    }
                }
            })
            .collect();
        idempotency_key(id, &parts)
    }
}

/// A key field given as a path into the record (not a signature field): its value, text as
/// text, decoded bytes as their text.
fn key_field_value(expr: &crate::path::FieldExpr, record: &Record) -> Option<Value> {
    let raw = record.raw_json();
    let parsed: Value = serde_json::from_slice(&raw).or_else(|_| serde_json::from_str(&String::from_utf8_lossy(&raw))).ok()?;
    match expr.value_in(&parsed, &[]).ok()?? {
        crate::path::Decoded::Json(v) => Some(v),
        crate::path::Decoded::Bytes(b) => Some(Value::String(String::from_utf8_lossy(&b).into_owned())),
    }
}

/// One entry as a manifest line (with its newline), in `Entry`'s field order, byte for byte
/// what serde_json writes for an `Entry`; the record goes in as it was read.
#[allow(clippy::too_many_arguments)]
fn write_entry(out: &mut Vec<u8>, key: &IdempotencyKey, decision: Decision, signature_json: &[u8], id: &str, attempts: i64, max_attempts: i64, record: &Record, origin: Option<&Value>) {
    out.extend_from_slice(b"{\"key\":\"");
    push_bytes(out, key.digits());
    out.extend_from_slice(b"\",\"decision\":\"");
    push_bytes(out, decision.name().as_bytes());
    out.extend_from_slice(b"\",\"signature\":");
    push_bytes(out, signature_json);
    out.extend_from_slice(b",\"id\":");
    crate::values::write_json_string(out, id);
    out.extend_from_slice(b",\"attempts\":");
    out.extend_from_slice(itoa::Buffer::new().format(attempts).as_bytes());
    out.extend_from_slice(b",\"max_attempts\":");
    out.extend_from_slice(itoa::Buffer::new().format(max_attempts).as_bytes());
    out.extend_from_slice(b",\"record\":");
    record.write_json(out);
    if let Some(origin) = origin {
        out.extend_from_slice(b",\"origin\":");
        serde_json::to_writer(&mut *out, origin).expect("origins serialise");
    }
    out.extend_from_slice(b"}\n");
}

#[cfg(test)]
mod tests {
    use super::idempotency_key;

    #[test]
    fn key_is_the_first_16_hex_of_sha256_of_the_seed_string() {
        // sha256("cap-1|inference|det-v8.0"), computed with coreutils' sha256sum.
        assert_eq!(idempotency_key("cap-1", ["inference", "det-v8.0"]).as_str(), "e5723547563bdd9f");
    }

    #[test]
    fn keys_of_one_block_and_longer_are_the_streaming_hashers() {
        use sha2::{Digest, Sha256};
        // Messages of 0 to 130 bytes: one block, the 55/56-byte edge, two and three blocks,
        // the overflow met in the id or in a later part.
        for total in 0..=130usize {
            for split in [0, total / 3, total.saturating_sub(1), total] {
                let text: String = (0..total).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
                let (id, rest) = text.split_at(split.min(total));
                let parts: Vec<&str> = if rest.is_empty() { vec![] } else { rest.split('|').collect() };
                let message = std::iter::once(id).chain(parts.iter().copied()).collect::<Vec<_>>().join("|");
                let want = Sha256::digest(message.as_bytes());
                let mut digits = [0; 16];
                crate::manifest::write_hex(&want[..8], &mut digits);
                assert_eq!(idempotency_key(id, &parts).as_str(), std::str::from_utf8(&digits).unwrap(), "{message:?}");
            }
        }
        // Parts that add separators past one block.
        let parts = ["x".repeat(20), "y".repeat(20), String::new(), "z".repeat(5)];
        let want = Sha256::digest(format!("{}|{}", "i".repeat(12), parts.join("|")).as_bytes());
        let mut digits = [0; 16];
        crate::manifest::write_hex(&want[..8], &mut digits);
        assert_eq!(idempotency_key(&"i".repeat(12), &parts).as_str(), std::str::from_utf8(&digits).unwrap());
    }
}
