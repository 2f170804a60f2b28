//! What a target sends for one entry: the bytes the producer sent (the payload, key and
//! headers the entry's origin resolved at plan time), or for a manifest without resolved
//! origins, the record's fields by the names the sealed header gives.

use serde_json::Value;

use crate::manifest::{Entry, Origin};
use crate::origin::{Payload, Resolved};

pub struct Message<'a> {
    /// The entry's idempotency key.
    pub key: &'a str,
    /// The message's id (the profile's id field).
    pub id: &'a str,
    /// The whole record, as planned.
    pub record: &'a Value,
    /// The payload's bytes; None: a null value (a Kafka tombstone, an empty body elsewhere).
    pub payload: Option<Vec<u8>>,
    /// The topic (or queue) the message failed on, if the record names one.
    pub topic: Option<String>,
    /// The message's own key bytes; None when null.
    pub origin_key: Option<Vec<u8>>,
    /// The message's headers, names and value bytes (None: null), in the record's order.
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// The payload is the whole record: the profile names no payload field.
    pub whole_record: bool,
    /// The broker's own properties of the message (an object), where the profile kept them.
    pub properties: Option<Value>,
}

impl<'a> Message<'a> {
    /// The message of an entry: its resolved origin, else the record's origin fields.
    pub fn of(entry: &'a Entry, origin: &Origin) -> Result<Message<'a>, String> {
        let resolved = match &entry.origin {
            Some(value) => Resolved::from_json(value)?,
            None => from_record(&entry.record, origin),
        };
        let whole_record = resolved.value == Payload::Record;
        let payload = match resolved.value {
            Payload::Record => Some(serde_json::to_vec(&entry.record).expect("records serialise")),
            Payload::Null => None,
            Payload::Bytes(bytes) => Some(bytes),
        };
        Ok(Message {
            key: &entry.key,
            id: &entry.id,
            record: &entry.record,
            payload,
            topic: resolved.topic,
            origin_key: resolved.key,
            headers: resolved.headers,
            whole_record,
            properties: resolved.properties,
        })
    }

    /// What `dlqf returned` knows a replayed message by when no header carries its key: 32 hex
    /// digits of SHA-256 over the origin key and the payload (each marked present or null, the
    /// key length-prefixed; a JSON object or array payload in a canonical form, keys sorted and
    /// no spaces, since a consumer that dead-letters it again may write it anew). None when the
    /// payload is the whole record, which a dead-letter queue rewrites each time.
    pub fn match_digest(&self) -> Option<String> {
        use sha2::{Digest, Sha256};
        if self.whole_record {
            return None;
        }
        let mut hash = Sha256::new();
        match &self.origin_key {
            Some(key) => {
                hash.update([1]);
                hash.update((key.len() as u64).to_be_bytes());
                hash.update(key);
            }
            None => hash.update([0]),
        }
        match &self.payload {
            None => hash.update([0]),
            Some(bytes) => {
                hash.update([1]);
                match canonical_json(bytes) {
                    Some(canonical) => hash.update(canonical),
                    None => hash.update(bytes),
                }
            }
        }
        Some(crate::manifest::hex(&hash.finalize()[..16]))
    }

    /// The payload as a request or process body: empty for a null value.
    pub fn body(&self) -> Vec<u8> {
        self.payload.clone().unwrap_or_default()
    }

    /// The payload's media type: JSON when it parses as JSON, text when it is UTF-8, else bytes.
    pub fn content_type(&self) -> &'static str {
        match self.payload.as_deref() {
            Some(p) if serde_json::from_slice::<serde::de::IgnoredAny>(p).is_ok() => "application/json",
            Some(p) if std::str::from_utf8(p).is_ok() => "text/plain; charset=utf-8",
            None => "application/json",
            Some(_) => "application/octet-stream",
        }
    }

    /// The origin key as text, for HTTP headers and the environment.
    pub fn origin_key_text(&self) -> Option<String> {
        self.origin_key.as_deref().map(|k| String::from_utf8_lossy(k).into_owned())
    }

    /// The origin headers as a JSON object of texts (null values as null).
    pub fn headers_json(&self) -> Value {
        Value::Object(
            self.headers
                .iter()
                .map(|(k, v)| (k.clone(), v.as_deref().map_or(Value::Null, |v| Value::String(String::from_utf8_lossy(v).into_owned()))))
                .collect(),
        )
    }
}

/// A JSON object or array with its keys sorted at every level, written without spaces.
fn canonical_json(bytes: &[u8]) -> Option<Vec<u8>> {
    fn sorted(value: Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' && *first != b'[' {
        return None;
    }
    let value: Value = serde_json::from_slice(bytes).ok()?;
    Some(serde_json::to_vec(&sorted(value)).expect("values serialise"))
}

/// The origin of a record by its top-level fields (manifests planned before origins were
/// resolved into entries), with the payload rule every target follows: a string's bytes, a
/// null value as null, anything else as compact JSON.
fn from_record(record: &Value, origin: &Origin) -> Resolved {
    let field = |name: &Option<String>| name.as_deref().and_then(|n| record.get(n));
    let bytes = |v: &Value| match v {
        Value::String(s) => s.as_bytes().to_vec(),
        other => serde_json::to_vec(other).expect("values serialise"),
    };
    let headers = match field(&origin.headers) {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), (!v.is_null()).then(|| bytes(v)))).collect(),
        Some(Value::Array(items)) => crate::path::headers(items).map(|(k, v)| (k.to_string(), (!v.is_null()).then(|| bytes(v)))).collect(),
        _ => Vec::new(),
    };
    Resolved {
        topic: field(&origin.topic).filter(|v| !v.is_null()).map(|t| String::from_utf8_lossy(&bytes(t)).into_owned()),
        key: field(&origin.key).filter(|v| !v.is_null()).map(bytes),
        value: match (&origin.value, field(&origin.value)) {
            (None, _) => Payload::Record,
            (Some(_), None | Some(Value::Null)) => Payload::Null,
            (Some(_), Some(v)) => Payload::Bytes(bytes(v)),
        },
        headers,
        position: Default::default(),
        properties: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Decision;
    use crate::signature::Signature;

    fn entry(record: Value, origin: Option<Value>) -> Entry {
        Entry { key: "k".into(), decision: Decision::Replay, signature: Signature(Vec::new()), id: "i".into(), attempts: 0, max_attempts: 3, record, origin }
    }

    #[test]
    fn the_payload_is_the_bytes_the_producer_sent() {
        let origin = Origin { topic: Some("t".into()), key: Some("k".into()), value: Some("v".into()), headers: Some("h".into()), ..Origin::default() };
        let e = entry(serde_json::json!({"t": "orders", "k": "ord-1", "v": {"b": 2, "a": [1]}, "h": {"trace": "x", "n": 3, "gone": null}}), None);
        let m = Message::of(&e, &origin).unwrap();
        assert_eq!(m.payload.as_deref(), Some(&br#"{"b":2,"a":[1]}"#[..]));
        assert_eq!(m.content_type(), "application/json");
        assert_eq!(m.topic.as_deref(), Some("orders"));
        assert_eq!(m.origin_key.as_deref(), Some(&b"ord-1"[..]));
        assert_eq!(m.headers, [("trace".to_string(), Some(b"x".to_vec())), ("n".to_string(), Some(b"3".to_vec())), ("gone".to_string(), None)]);

        let e = entry(serde_json::json!({"t": "orders", "k": null, "v": "{\"raw\":1} text", "h": [["a", "1"]]}), None);
        let m = Message::of(&e, &origin).unwrap();
        assert_eq!(m.payload.as_deref(), Some(&br#"{"raw":1} text"#[..]), "a string value is sent as its text, never quoted");
        assert_eq!(m.content_type(), "text/plain; charset=utf-8");
        assert_eq!(m.origin_key, None);
        assert_eq!(m.headers, [("a".to_string(), Some(b"1".to_vec()))]);

        let tombstone = entry(serde_json::json!({"t": "orders", "k": "ord-1", "v": null}), None);
        let m = Message::of(&tombstone, &origin).unwrap();
        assert_eq!((m.body(), m.payload), (Vec::new(), None), "a null value is a tombstone, never the whole record");

        let whole = entry(serde_json::json!({"capture_id": "c", "stage": "s"}), None);
        let m = Message::of(&whole, &Origin::default()).unwrap();
        assert_eq!(m.payload.as_deref(), Some(&br#"{"capture_id":"c","stage":"s"}"#[..]));
        assert_eq!((m.topic, m.origin_key, m.headers.len()), (None, None, 0));
    }

    #[test]
    fn the_match_digest_reads_json_payloads_in_any_key_order_and_spacing() {
        let digest = |key: Option<&str>, value: &str| {
            let e = entry(serde_json::json!({}), Some(serde_json::json!({"key": key, "value": value})));
            Message::of(&e, &Origin::default()).unwrap().match_digest()
        };
        assert_eq!(digest(Some("k"), r#"{"b": [1, {"d": 2, "c": 3}], "a": "x"}"#), digest(Some("k"), r#"{"a":"x","b":[1,{"c":3,"d":2}]}"#));
        assert_ne!(digest(Some("k"), r#"{"a":1}"#), digest(Some("k2"), r#"{"a":1}"#), "the key counts");
        assert_ne!(digest(None, r#"{"a":1}"#), digest(Some(""), r#"{"a":1}"#), "a null key is not an empty one");
        assert_ne!(digest(Some("k"), "a b"), digest(Some("k"), "a  b"), "text is taken byte for byte");
        let whole = entry(serde_json::json!({"a": 1}), Some(serde_json::json!({"key": "k"})));
        assert_eq!(Message::of(&whole, &Origin::default()).unwrap().match_digest(), None);
    }

    #[test]
    fn a_resolved_origin_is_sent_as_resolved() {
        let resolved = serde_json::json!({"topic": "orders", "key": {"base64": "/w=="}, "value": {"base64": "AAGW6A=="}, "headers": [["h", "v"], ["n", null]]});
        let e = entry(serde_json::json!({"payload": "ignored"}), Some(resolved));
        let m = Message::of(&e, &Origin::default()).unwrap();
        assert_eq!(m.payload.as_deref(), Some(&[0u8, 1, 0x96, 0xe8][..]));
        assert_eq!(m.content_type(), "application/octet-stream");
        assert_eq!(m.origin_key.as_deref(), Some(&[0xffu8][..]));
        assert_eq!(m.headers, [("h".to_string(), Some(b"v".to_vec())), ("n".to_string(), None)]);
        let bad = entry(serde_json::json!({}), Some(serde_json::json!({"value": 5})));
        assert!(Message::of(&bad, &Origin::default()).is_err());
    }
}
