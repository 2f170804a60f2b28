//! Which replayed messages came back into the dead-letter queue, and with which cause: the
//! answer, over later dumps, that tells a team whether a replay worked before the next one.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analyze::rank::share;
use crate::execute::message::Message;
use crate::manifest::{Entry, Origin};
use crate::path::FieldExpr;
use crate::signature::Signature;

pub const FORMAT: &str = "dlqf.returned/1";

/// The header a replay carries its idempotency key in (Kafka headers, SQS message attributes).
pub const KEY_HEADER: &str = "dlqf-idempotency-key";

/// Where else a dumped record keeps that key: SQS message attributes as ReceiveMessage
/// returns them, and as a Lambda SQS event spells them.
const KEY_PATHS: &str = r#"MessageAttributes."dlqf-idempotency-key".StringValue // messageAttributes."dlqf-idempotency-key".stringValue"#;

/// The matching rule, as every report states it.
pub const RULE: &str = "a later record came back from this replay when its dlqf-idempotency-key header (or SQS message attribute) holds a replayed key; a record without that header matches a replayed message with the same origin key and payload (SHA-256); a record whose header holds another key is not from this replay";

/// A replayed message, as it is recognised when it comes back.
#[derive(Clone, Debug)]
pub struct ReplayedMessage {
    pub key: String,
    pub signature: Signature,
    /// `Message::match_digest` of its origin key and payload.
    pub digest: Option<String>,
}

/// How a replayed message was recognised in a later dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum How {
    Header,
    Digest,
}

/// The replayed messages, and what the later dumps hold of them.
pub struct Matcher {
    replayed: Vec<ReplayedMessage>,
    by_key: HashMap<String, usize>,
    by_digest: HashMap<String, Vec<usize>>,
    /// Per replayed message: the last later record that matched it (in the dumps' canonical
    /// order: inputs by name, then line or row), its signature and how it matched.
    back: Vec<Option<(Signature, How)>>,
    key_paths: FieldExpr,
    records: u64,
    from_this_replay: u64,
}

impl Matcher {
    pub fn new(replayed: Vec<ReplayedMessage>) -> Matcher {
        let mut by_key = HashMap::new();
        let mut by_digest: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, entry) in replayed.iter().enumerate() {
            by_key.entry(entry.key.clone()).or_insert(i);
            if let Some(digest) = &entry.digest {
                by_digest.entry(digest.clone()).or_default().push(i);
            }
        }
        let back = vec![None; replayed.len()];
        let key_paths = FieldExpr::parse(KEY_PATHS).expect("the key paths parse");
        Matcher { replayed, by_key, by_digest, back, key_paths, records: 0, from_this_replay: 0 }
    }

    /// The replay entries of a manifest, as `execute` would have sent them.
    pub fn replay_entries(entry: Entry, origin: &Origin) -> Option<ReplayedMessage> {
        if entry.decision != crate::manifest::Decision::Replay {
            return None;
        }
        let digest = Message::of(&entry, origin).ok().and_then(|m| m.match_digest());
        Some(ReplayedMessage { key: entry.key, signature: entry.signature, digest })
    }

    /// What an execute report lists as delivered; an entry naming a signature the list does
    /// not have is an error.
    pub fn delivered(list: crate::execute::ReplayedList) -> Result<Vec<ReplayedMessage>, String> {
        let signatures = list.signatures;
        list.entries
            .into_iter()
            .map(|e| match signatures.get(e.signature) {
                Some(signature) => Ok(ReplayedMessage { key: e.key, signature: signature.clone(), digest: e.digest }),
                None => Err(format!("entry {} names signature {}, and the list has {}", e.key, e.signature, signatures.len())),
            })
            .collect()
    }

    /// One record of a later dump, as `plan` reads it (signature and resolved origin).
    pub fn see(&mut self, record: &Entry, origin: &Origin) {
        self.records += 1;
        let message = Message::of(record, origin).ok();
        let header = message.as_ref().and_then(|m| {
            m.headers.iter().find(|(name, _)| name.eq_ignore_ascii_case(KEY_HEADER)).and_then(|(_, v)| v.clone())
        });
        let header = header.or_else(|| self.key_paths.value_in(&record.record, &[]).ok().flatten().map(|d| d.into_bytes()));
        let matched: Vec<(usize, How)> = match header {
            Some(key) => {
                let key = String::from_utf8_lossy(&key).trim().to_string();
                self.by_key.get(&key).map(|&i| vec![(i, How::Header)]).unwrap_or_default()
            }
            None => message
                .as_ref()
                .and_then(Message::match_digest)
                .and_then(|d| self.by_digest.get(&d))
                .map(|found| found.iter().map(|&i| (i, How::Digest)).collect())
                .unwrap_or_default(),
        };
        if !matched.is_empty() {
            self.from_this_replay += 1;
        }
        for (i, how) in matched {
            self.back[i] = Some((record.signature.clone(), how));
        }
    }

    pub fn report(self, replayed_from: ReplayedFrom, profile: String, rejected: u64) -> ReturnedReport {
        let mut by_signature: BTreeMap<Vec<String>, (Signature, u64, BTreeMap<Vec<String>, (Signature, u64)>)> = BTreeMap::new();
        let (mut by_header, mut by_digest) = (0, 0);
        for (entry, back) in self.replayed.iter().zip(&self.back) {
            let values = entry.signature.values().map(str::to_string).collect::<Vec<_>>();
            let slot = by_signature.entry(values).or_insert_with(|| (entry.signature.clone(), 0, BTreeMap::new()));
            slot.1 += 1;
            if let Some((signature, how)) = back {
                *if *how == How::Header { &mut by_header } else { &mut by_digest } += 1;
                let key = signature.values().map(str::to_string).collect::<Vec<_>>();
                slot.2.entry(key).or_insert_with(|| (signature.clone(), 0)).1 += 1;
            }
        }
        let mut signatures: Vec<SignatureReturned> = by_signature
            .into_values()
            .map(|(signature, replayed, with)| {
                let mut came_back_with: Vec<CameBackWith> =
                    with.into_values().map(|(s, count)| CameBackWith { same_cause: s == signature, signature: s, count }).collect();
                // Most first; ties by signature values (the map's order, kept by a stable sort).
                came_back_with.sort_by(|a, b| b.count.cmp(&a.count));
                let came_back = came_back_with.iter().map(|c| c.count).sum();
                SignatureReturned { share: share(came_back, replayed), signature, replayed, came_back, came_back_with }
            })
            .collect();
        // Most came back first, then most replayed; ties by signature values.
        signatures.sort_by(|a, b| b.came_back.cmp(&a.came_back).then(b.replayed.cmp(&a.replayed)));
        let replayed = self.replayed.len() as u64;
        let came_back = by_header + by_digest;
        ReturnedReport {
            report: FORMAT.into(),
            replayed_from,
            profile,
            rule: RULE.into(),
            inputs: LaterInputs { records: self.records, rejected, from_this_replay: self.from_this_replay },
            replayed,
            came_back,
            share: share(came_back, replayed),
            matched: Matched { by_header, by_origin_key_and_payload: by_digest },
            signatures,
            alert: None,
        }
    }
}

/// What the replayed set was read from.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayedFrom {
    /// `manifest` (every replay entry) or `execute_report` (what one run delivered).
    pub kind: String,
    pub path: String,
    pub manifest: String,
}

/// The `dlqf.returned/1` report.
#[derive(Clone, Debug, Serialize)]
pub struct ReturnedReport {
    pub report: String,
    pub replayed_from: ReplayedFrom,
    pub profile: String,
    pub rule: String,
    pub inputs: LaterInputs,
    pub replayed: u64,
    pub came_back: u64,
    pub share: f64,
    pub matched: Matched,
    pub signatures: Vec<SignatureReturned>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alert: Option<Alert>,
}

/// The later dumps: records read, rows rejected, records that are replayed messages back.
#[derive(Clone, Debug, Serialize)]
pub struct LaterInputs {
    pub records: u64,
    pub rejected: u64,
    pub from_this_replay: u64,
}

/// Replayed messages that came back, by how they were recognised.
#[derive(Clone, Debug, Serialize)]
pub struct Matched {
    pub by_header: u64,
    pub by_origin_key_and_payload: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SignatureReturned {
    /// The signature the messages had when they were replayed.
    pub signature: Signature,
    pub replayed: u64,
    pub came_back: u64,
    pub share: f64,
    pub came_back_with: Vec<CameBackWith>,
}

/// The signature replayed messages came back with, and how many.
#[derive(Clone, Debug, Serialize)]
pub struct CameBackWith {
    pub signature: Signature,
    pub count: u64,
    /// The same signature they were replayed with: the fix did not hold.
    pub same_cause: bool,
}

/// `--fail-on-returned SHARE`: whether the share that came back reached it.
#[derive(Clone, Debug, Serialize)]
pub struct Alert {
    pub share: f64,
    pub alert: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Decision;

    fn sig(reason: &str) -> Signature {
        Signature(vec![("reason".into(), reason.into())])
    }

    fn record(headers: Option<(&str, &str)>, key: &str, payload: &str, reason: &str) -> Entry {
        let mut origin = serde_json::json!({"key": key, "value": payload});
        if let Some((name, value)) = headers {
            origin["headers"] = serde_json::json!([[name, value]]);
        }
        Entry { key: "new".into(), decision: Decision::Replay, signature: sig(reason), id: "r".into(), attempts: 0, max_attempts: 3, record: serde_json::json!({}), origin: Some(origin) }
    }

    #[test]
    fn a_header_decides_else_origin_key_and_payload() {
        let origin = Origin::default();
        let replayed: Vec<ReplayedMessage> = [("k1", "a", "p1", "timeout"), ("k2", "b", "p2", "timeout"), ("k3", "c", "p3", "schema")]
            .iter()
            .map(|(key, okey, payload, reason)| Matcher::replay_entries(Entry { key: key.to_string(), ..record(None, okey, payload, reason) }, &origin).unwrap())
            .collect();
        let mut m = Matcher::new(replayed);
        m.see(&record(Some(("DLQF-Idempotency-Key", "k1")), "zzz", "other", "timeout"), &origin);
        m.see(&record(None, "c", "p3", "schema v2"), &origin);
        // Same key and payload as k2, but its header names a key of another replay.
        m.see(&record(Some((KEY_HEADER, "elsewhere")), "b", "p2", "timeout"), &origin);
        m.see(&record(None, "b", "p2-changed", "timeout"), &origin);
        let r = m.report(ReplayedFrom { kind: "manifest".into(), path: "m".into(), manifest: "d".into() }, "p".into(), 0);
        assert_eq!((r.replayed, r.came_back, r.matched.by_header, r.matched.by_origin_key_and_payload), (3, 2, 1, 1));
        assert_eq!((r.inputs.records, r.inputs.from_this_replay), (4, 2));
        assert_eq!(r.share, 0.6667);
        let schema = r.signatures.iter().find(|s| s.signature == sig("schema")).unwrap();
        assert_eq!((schema.came_back, schema.came_back_with[0].signature.clone(), schema.came_back_with[0].same_cause), (1, sig("schema v2"), false));
        let timeout = r.signatures.iter().find(|s| s.signature == sig("timeout")).unwrap();
        assert_eq!((timeout.replayed, timeout.came_back, timeout.share, timeout.came_back_with[0].same_cause), (2, 1, 0.5, true));
    }
}
