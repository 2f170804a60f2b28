//! What a target sends for one entry: the payload (the origin's value field, else the whole
//! record) as compact JSON, with the origin's topic, key and headers, read from the record by
//! the field names the sealed manifest header gives.

use serde_json::Value;

use crate::manifest::{Entry, Origin};

pub struct Message<'a> {
    /// The entry's idempotency key.
    pub key: &'a str,
    /// The message's id (the profile's id field).
    pub id: &'a str,
    /// The whole record, as planned.
    pub record: &'a Value,
    /// The payload as compact JSON (key order kept).
    pub payload: Vec<u8>,
    /// The topic (or queue) the message failed on, if the record names one.
    pub topic: Option<String>,
    /// The message's own key: a string's bytes, another value's JSON text; None when null.
    pub origin_key: Option<Vec<u8>>,
    /// The message's headers, names and value bytes, in the record's order.
    pub headers: Vec<(String, Vec<u8>)>,
}

impl<'a> Message<'a> {
    pub fn of(entry: &'a Entry, origin: &Origin) -> Message<'a> {
        let field = |name: &Option<String>| name.as_deref().and_then(|n| entry.record.get(n)).filter(|v| !v.is_null());
        let payload = serde_json::to_vec(field(&origin.value).unwrap_or(&entry.record)).expect("records serialise");
        let topic = field(&origin.topic).map(|t| String::from_utf8_lossy(&text_bytes(t)).into_owned());
        let headers = match field(&origin.headers) {
            Some(Value::Object(map)) => map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), text_bytes(v))).collect(),
            // [[name, value], …], as some tools write Kafka headers.
            Some(Value::Array(pairs)) => pairs
                .iter()
                .filter_map(|p| match p.as_array().map(Vec::as_slice) {
                    Some([Value::String(name), value]) if !value.is_null() => Some((name.clone(), text_bytes(value))),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        Message { key: &entry.key, id: &entry.id, record: &entry.record, payload, topic, origin_key: field(&origin.key).map(text_bytes), headers }
    }

    /// The origin key as text, for HTTP headers and the environment.
    pub fn origin_key_text(&self) -> Option<String> {
        self.origin_key.as_deref().map(|k| String::from_utf8_lossy(k).into_owned())
    }

    /// The origin headers as a JSON object of texts.
    pub fn headers_json(&self) -> Value {
        Value::Object(self.headers.iter().map(|(k, v)| (k.clone(), Value::String(String::from_utf8_lossy(v).into_owned()))).collect())
    }
}

/// A string's own bytes; any other value's JSON text.
fn text_bytes(value: &Value) -> Vec<u8> {
    match value {
        Value::String(s) => s.as_bytes().to_vec(),
        other => serde_json::to_vec(other).expect("values serialise"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Decision;
    use crate::signature::Signature;

    fn entry(record: Value) -> Entry {
        Entry { key: "k".into(), decision: Decision::Replay, signature: Signature(Vec::new()), id: "i".into(), attempts: 0, max_attempts: 3, record }
    }

    #[test]
    fn the_payload_is_the_value_field_else_the_whole_record() {
        let origin = Origin { topic: Some("t".into()), key: Some("k".into()), value: Some("v".into()), headers: Some("h".into()) };
        let e = entry(serde_json::json!({"t": "orders", "k": "ord-1", "v": {"b": 2, "a": [1]}, "h": {"trace": "x", "n": 3, "gone": null}}));
        let m = Message::of(&e, &origin);
        assert_eq!(m.payload, br#"{"b":2,"a":[1]}"#);
        assert_eq!(m.topic.as_deref(), Some("orders"));
        assert_eq!(m.origin_key.as_deref(), Some(&b"ord-1"[..]));
        assert_eq!(m.headers, [("trace".to_string(), b"x".to_vec()), ("n".to_string(), b"3".to_vec())]);

        let e = entry(serde_json::json!({"t": "orders", "k": null, "v": "{\"raw\":1}", "h": [["a", "1"]]}));
        let m = Message::of(&e, &origin);
        assert_eq!(m.payload, br#""{\"raw\":1}""#, "a string value is sent as the JSON string it is");
        assert_eq!(m.origin_key, None);
        assert_eq!(m.headers, [("a".to_string(), b"1".to_vec())]);

        let whole = entry(serde_json::json!({"capture_id": "c", "stage": "s"}));
        let m = Message::of(&whole, &Origin::default());
        assert_eq!(m.payload, br#"{"capture_id":"c","stage":"s"}"#);
        assert_eq!((m.topic, m.origin_key, m.headers.len()), (None, None, 0));
    }
}
