//! The replay manifest (`dlqf.manifest/1`): a header line, then one entry per message. It is
//! the approval: `manifest_sha256` seals every header field, and through `entries_sha256` the
//! entries, so `execute` runs exactly what a reviewer saw or nothing.

mod entry_scan;
mod hasher;
pub mod order;
mod read;
mod write;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

pub use crate::origin::Origin;
use crate::signature::Signature;

pub use read::Manifest;
pub use write::ManifestWriter;

pub const FORMAT: &str = "dlqf.manifest/1";

/// Failed attempts that make a message poison when the policy does not say.
pub const DEFAULT_MAX_ATTEMPTS: i64 = 3;

/// What the gate decided for one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Replay,
    PoisonAttempts,
    PoisonUncleared,
}

impl Decision {
    pub const ALL: [Decision; 3] = [Decision::Replay, Decision::PoisonAttempts, Decision::PoisonUncleared];

    pub fn name(self) -> &'static str {
        match self {
            Decision::Replay => "replay",
            Decision::PoisonAttempts => "poison_attempts",
            Decision::PoisonUncleared => "poison_uncleared",
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionCounts {
    pub replay: u64,
    pub poison_attempts: u64,
    pub poison_uncleared: u64,
}

impl DecisionCounts {
    pub fn add(&mut self, d: Decision) {
        *self.get_mut(d) += 1;
    }

    pub fn get(&self, d: Decision) -> u64 {
        match d {
            Decision::Replay => self.replay,
            Decision::PoisonAttempts => self.poison_attempts,
            Decision::PoisonUncleared => self.poison_uncleared,
        }
    }

    fn get_mut(&mut self, d: Decision) -> &mut u64 {
        match d {
            Decision::Replay => &mut self.replay,
            Decision::PoisonAttempts => &mut self.poison_attempts,
            Decision::PoisonUncleared => &mut self.poison_uncleared,
        }
    }

    /// Adds another set of counts to these.
    pub fn add_counts(&mut self, other: &DecisionCounts) {
        for d in Decision::ALL {
            *self.get_mut(d) += other.get(d);
        }
    }

    pub fn total(&self) -> u64 {
        self.replay + self.poison_attempts + self.poison_uncleared
    }
}

/// `replay 5, poison_attempts 2, poison_uncleared 1`.
impl std::fmt::Display for DecisionCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "replay {}, poison_attempts {}, poison_uncleared {}", self.replay, self.poison_attempts, self.poison_uncleared)
    }
}

/// One input as it was when the manifest was planned, so a reviewer can tell it is current.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputStamp {
    pub path: String,
    pub size: Option<u64>,
    pub modified: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub manifest: String,
    pub created_at: String,
    pub tool_version: String,
    pub profile: String,
    /// `sha256:` of the rules that decided each entry's signature (fields, normalisers,
    /// learned templates, categories), as a state's `rules` (empty in older manifests).
    #[serde(default)]
    pub rules: String,
    pub inputs: Vec<InputStamp>,
    pub policy: Value,
    /// The repairs applied at plan time (`--fix`), if any.
    #[serde(default)]
    pub fixes: Value,
    /// The category rules and routing a `routing` policy decided with (else null).
    #[serde(default)]
    pub classification: Value,
    /// The record fields execute sends back (payload, topic, key, headers).
    #[serde(default)]
    pub origin: Origin,
    pub counts: DecisionCounts,
    pub rejected: u64,
    pub entries: u64,
    /// SHA-256 of the entry lines (every byte after the header line).
    pub entries_sha256: String,
    /// SHA-256 of the header's canonical form without this field (`manifest_digest`): the
    /// digest a reviewer approves.
    pub manifest_sha256: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub key: String,
    pub decision: Decision,
    pub signature: Signature,
    pub id: String,
    pub attempts: i64,
    /// Failed replays after which execute quarantines the key: the plan's cap for this
    /// message (a category's under routing), sealed with the entry.
    pub max_attempts: i64,
    pub record: Value,
    /// What replay sends, resolved from the record by the profile's origin fields at plan time
    /// (`origin::Resolved`); absent for a profile without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Value>,
}

pub fn hex(bytes: &[u8]) -> String {
    let mut digits = vec![0; bytes.len() * 2];
    write_hex(bytes, &mut digits);
    String::from_utf8(digits).expect("hex digits")
}

/// `bytes` as lowercase hex digits, into `out` (twice as long).
pub fn write_hex(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (b, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
}

/// The seal of a header: SHA-256 of its canonical JSON (every field except `manifest_sha256`,
/// object keys sorted by code point at every depth, no insignificant whitespace), as Python's
/// `json.dumps(h, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` writes it.
pub fn manifest_digest(header: &Map<String, Value>) -> String {
    let mut text = Vec::new();
    let sealed: Map<String, Value> = header.iter().filter(|(k, _)| *k != "manifest_sha256").map(|(k, v)| (k.clone(), v.clone())).collect();
    write_canonical(&Value::Object(sealed), &mut text);
    hex(&Sha256::digest(&text))
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut fields: Vec<(&String, &Value)> = map.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, value)) in fields.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, key).expect("strings serialise");
                out.push(b':');
                write_canonical(value, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => serde_json::to_writer(&mut *out, scalar).expect("scalars serialise"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_ignores_key_order_and_whitespace_but_not_values() {
        let a: Map<String, Value> = serde_json::from_str(r#"{"b": [1, {"y": "é", "x": null}], "a": "q\"", "manifest_sha256": "x"}"#).unwrap();
        let b: Map<String, Value> = serde_json::from_str(r#"{"a":"q\"","b":[1,{"x":null,"y":"é"}]}"#).unwrap();
        assert_eq!(manifest_digest(&a), manifest_digest(&b));
        // sha256 of `{"a":"q\"","b":[1,{"x":null,"y":"é"}]}` (UTF-8), computed with sha256sum.
        assert_eq!(manifest_digest(&a), "fc632ffd75a6ef42cd602d7b42a5e1e03bb3f2eb745566b8919c263ef2145dc4");
        let c: Map<String, Value> = serde_json::from_str(r#"{"a":"q\"","b":[1,{"x":null,"y":"e"}]}"#).unwrap();
        assert_ne!(manifest_digest(&a), manifest_digest(&c));
    }

    fn header() -> Header {
        Header {
            manifest: FORMAT.into(),
            created_at: "2026-11-29T00:00:00Z".into(),
            tool_version: "0".into(),
            profile: "vision".into(),
            rules: String::new(),
            inputs: vec![InputStamp { path: "d.jsonl".into(), size: Some(1), modified: None }],
            policy: serde_json::json!({"max_attempts": 2}),
            fixes: Value::Null,
            classification: Value::Null,
            origin: Origin::default(),
            counts: DecisionCounts::default(),
            rejected: 0,
            entries: 0,
            entries_sha256: String::new(),
            manifest_sha256: String::new(),
        }
    }

    fn entry_line(key: &str, decision: Decision) -> Vec<u8> {
        let entry = Entry { key: key.into(), decision, signature: Signature(vec![("r".into(), "x".into())]), id: key.into(), attempts: 0, max_attempts: 2, record: serde_json::json!({"id": key}), origin: None };
        let mut line = serde_json::to_vec(&entry).unwrap();
        line.push(b'\n');
        line
    }

    /// Writes a manifest of three entries; returns its bytes.
    fn written() -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let storage = crate::storage::Storage::new();
        let location = crate::storage::Location::File(dir.path().join("m.jsonl"));
        let mut writer = ManifestWriter::create(crate::storage::Output::create(&storage, &location).unwrap(), "m.jsonl", header()).unwrap();
        for (key, decision) in [("a", Decision::Replay), ("b", Decision::PoisonUncleared), ("c", Decision::Replay)] {
            writer.write(&entry_line(key, decision), decision).unwrap();
        }
        let sealed = writer.finish(4).unwrap();
        assert_eq!((sealed.entries, sealed.rejected, sealed.counts.replay, sealed.counts.poison_uncleared), (3, 4, 2, 1));
        std::fs::read(dir.path().join("m.jsonl")).unwrap()
    }

    /// A manifest of several blocks (checked in parallel) adds up every block's counts, and
    /// names its first unreadable line in file order.
    #[test]
    fn blocks_checked_in_parallel_add_up_and_the_first_bad_line_is_named() {
        let padding = "p".repeat(400);
        let decision = |i: usize| Decision::ALL[i % 7 % 3];
        let good = |i: usize| {
            let entry = Entry { key: format!("k{i}"), decision: decision(i), signature: Signature(vec![("r".into(), (i % 2).to_string())]), id: format!("i{i}"), attempts: 0, max_attempts: 2, record: serde_json::json!({"pad": padding}), origin: None };
            let mut line = serde_json::to_vec(&entry).unwrap();
            line.push(b'\n');
            line
        };
        // About 13 MB of entries: four blocks.
        let write = |bad: &[usize]| {
            let dir = tempfile::tempdir().unwrap();
            let storage = crate::storage::Storage::new();
            let location = crate::storage::Location::File(dir.path().join("m.jsonl"));
            let mut writer = ManifestWriter::create(crate::storage::Output::create(&storage, &location).unwrap(), "m.jsonl", header()).unwrap();
            for i in 0..30_000 {
                let line = if bad.contains(&i) { b"{\"key\":\"bad\"}\n".to_vec() } else { good(i) };
                writer.write(&line, decision(i)).unwrap();
            }
            writer.finish(0).unwrap();
            std::fs::read(dir.path().join("m.jsonl")).unwrap()
        };

        let (header, counts) = Manifest::summarize("m", &write(&[])[..]).unwrap();
        assert_eq!(header.entries, 30_000);
        for half in 0..2 {
            let mut want = DecisionCounts::default();
            (0..30_000).filter(|i| i % 2 == half).for_each(|i| want.add(decision(i)));
            let mut got = DecisionCounts::default();
            for (signature, c) in counts.iter().filter(|(s, _)| s.get("r") == Some(&half.to_string()[..])) {
                assert_eq!(signature.0.len(), 1);
                got.add_counts(c);
            }
            assert_eq!(got, want, "signature r={half}");
        }

        let err = format!("{:#}", Manifest::summarize("m", &write(&[29_000, 25_000])[..]).map(drop).expect_err("refused"));
        assert!(err.contains("m:25002: not a manifest entry"), "{err}");
    }

    #[test]
    fn a_written_manifest_reads_back_sealed_and_any_change_is_refused() {
        let bytes = written();
        let mut manifest = Manifest::open_verified("m", &bytes[..], None).unwrap();
        let digest = manifest.header.manifest_sha256.clone();
        let keys: Vec<String> = manifest.entries().unwrap().map(|e| e.unwrap().key).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert!(Manifest::open_verified("m", &bytes[..], Some(&digest)).is_ok());
        assert!(Manifest::open_verified("m", &bytes[..], Some(&"0".repeat(64))).is_err());

        let text = String::from_utf8(bytes).unwrap();
        let refused = |changed: String, why: &str| {
            let err = Manifest::open_verified("m", changed.as_bytes(), None).err().expect("refused");
            assert!(format!("{err:#}").contains(why), "{err:#}");
        };
        refused(text.replacen("\"max_attempts\":2", "\"max_attempts\":9", 1), "the header does not match its manifest_sha256");
        refused(text.replacen("\"decision\":\"poison_uncleared\"", "\"decision\":\"replay\"", 1), "the entries do not match entries_sha256");
        refused(text[..text.len() - 10].to_string(), "altered or truncated");
        refused(String::new(), "not a dlqf manifest header");

        // Show's one pass checks the same and counts the decisions per signature.
        let (header, seen) = Manifest::summarize("m", text.as_bytes()).unwrap();
        assert_eq!(header.manifest_sha256, digest);
        let r = Signature(vec![("r".into(), "x".into())]);
        assert_eq!(seen, [(r, DecisionCounts { replay: 2, poison_attempts: 0, poison_uncleared: 1 })]);
        let truncated = &text[..text.len() - 10];
        assert!(format!("{:#}", Manifest::summarize("m", truncated.as_bytes()).unwrap_err()).contains("altered or truncated"));
    }
}
