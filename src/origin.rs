//! Which record fields hold the message as it was first sent (topic, key, payload, headers,
//! and where it stood: partition and offset), and those bytes read out of a record. A profile
//! names them, `plan` resolves them into each manifest entry, `execute` sends exactly what the
//! reviewer saw, in the order the positions say when asked to keep a key's order.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::path::{Decoded, FieldExpr, Root};
use crate::raw_json;

/// Where a record came from, as field expressions (see `path`): what execute sends back, and
/// where. Any field may be absent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// The topic or queue the message failed on.
    #[serde(default)]
    pub topic: Option<String>,
    /// The message's own key.
    #[serde(default)]
    pub key: Option<String>,
    /// The payload the consumer expects; without it the whole record is the payload.
    #[serde(default)]
    pub value: Option<String>,
    /// The message's headers: a JSON object of names to values, or a header collection.
    #[serde(default)]
    pub headers: Option<String>,
    /// The partition the message was first written to (a number, or numeric text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// Its offset there: a key's messages are replayed in offset order (`execute --ordered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
    /// A field saying how the value is written: where it reads `base64`, the value is decoded
    /// from base64, else taken as it is (RabbitMQ's management API: `payload_encoding`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_encoding: Option<String>,
    /// The broker's own properties of the message, an object (AMQP's content type, message id,
    /// delivery mode, headers, …), kept for a broker target; its `headers` member without those
    /// `headers_exclude` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<String>,
    /// Headers left out of a replay by name prefix (those the dead-letter reporter added).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers_exclude: Vec<String>,
    /// Without `value`, the record is the payload: these of its top-level members left out
    /// (those dead-lettering added to the message, as Event Grid's `deadLetterReason`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub record_exclude: Vec<String>,
    /// Other key and payload fields for records read from aligned S3-sink chunks, whose
    /// converter wrote bytes as base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aligned: Option<AlignedOrigin>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlignedOrigin {
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
}

/// The roles an origin names, for messages.
pub const ROLES: [&str; 4] = ["topic", "key", "value", "headers"];

impl Origin {
    /// Whether the profile names any origin field (its entries then carry resolved origins).
    pub fn is_set(&self) -> bool {
        self.topic.is_some() || self.key.is_some() || self.value.is_some() || self.headers.is_some() || !self.record_exclude.is_empty()
    }

    /// Every expression parses and reads the record (a partition folder is no origin).
    pub fn check(&self) -> Result<(), String> {
        let aligned = self.aligned.iter().flat_map(|a| [&a.key, &a.value]);
        let fields = [&self.topic, &self.key, &self.value, &self.headers, &self.partition, &self.offset, &self.value_encoding, &self.properties];
        for text in fields.into_iter().chain(aligned).flatten() {
            let expr = FieldExpr::parse(text).map_err(|e| format!("origin: {e}"))?;
            if expr.alternatives.iter().any(|a| a.root != Root::Record) {
                return Err(format!("origin: field `{text}`: a partition folder or a segment of the input's path is not part of a message"));
            }
        }
        Ok(())
    }

    /// The parsed expressions, for records of aligned chunks or not.
    pub fn exprs(&self, aligned: bool) -> OriginExprs {
        let parse = |t: Option<&String>| t.map(|t| FieldExpr::parse(t).expect("checked when the profile was read"));
        let over = self.aligned.as_ref().filter(|_| aligned);
        OriginExprs {
            topic: parse(self.topic.as_ref()),
            key: parse(over.and_then(|a| a.key.as_ref()).or(self.key.as_ref())),
            value: parse(over.and_then(|a| a.value.as_ref()).or(self.value.as_ref())),
            headers: parse(self.headers.as_ref()),
            partition: parse(self.partition.as_ref()),
            offset: parse(self.offset.as_ref()),
            value_encoding: parse(self.value_encoding.as_ref()),
            properties: parse(self.properties.as_ref()),
            exclude: self.headers_exclude.clone(),
            record_exclude: self.record_exclude.clone(),
        }
    }
}

/// An origin's expressions, parsed once for a run.
pub struct OriginExprs {
    pub topic: Option<FieldExpr>,
    pub key: Option<FieldExpr>,
    pub value: Option<FieldExpr>,
    pub headers: Option<FieldExpr>,
    pub partition: Option<FieldExpr>,
    pub offset: Option<FieldExpr>,
    pub value_encoding: Option<FieldExpr>,
    pub properties: Option<FieldExpr>,
    exclude: Vec<String>,
    record_exclude: Vec<String>,
}

/// A message's origin as one entry carries it: the bytes to send back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resolved {
    pub topic: Option<String>,
    /// The key's bytes; None: no key (null).
    pub key: Option<Vec<u8>>,
    pub value: Payload,
    /// Names and value bytes in the record's order (None: a null header value).
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// Where it stood among its key's messages (kept for keyed messages only).
    pub position: Position,
    /// The broker's own properties of the message (an object), where the profile names them.
    pub properties: Option<Value>,
}

/// Where a message stood when it was first written, by which a key's messages are put back in
/// order: its partition and offset where the profile names them, and the record's time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub partition: Option<i64>,
    pub offset: Option<i64>,
    /// Microseconds since 1970.
    pub time: Option<i64>,
}

/// What a message's payload is.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Payload {
    /// The profile names no payload field: the whole record is sent.
    #[default]
    Record,
    /// A null value: a Kafka tombstone, an empty body elsewhere.
    Null,
    Bytes(Vec<u8>),
}

/// Which of an origin's fields a record had, for `plan` to refuse a field no record has.
#[derive(Clone, Copy, Debug, Default)]
pub struct Seen {
    pub named: [bool; 4],
    pub found: [u64; 4],
}

impl Seen {
    pub fn add(&mut self, other: &Seen) {
        for i in 0..4 {
            self.named[i] |= other.named[i];
            self.found[i] += other.found[i];
        }
    }
}

impl OriginExprs {
    /// The origin of one record given as its JSON text (any bytes: a string stands for the
    /// bytes it holds). Err: a decoding the profile asked for failed.
    pub fn resolve(&self, record: &[u8], seen: &mut Seen) -> Result<Resolved, String> {
        let mut out = Resolved::default();
        let exprs = [&self.topic, &self.key, &self.value, &self.headers];
        for (i, expr) in exprs.iter().enumerate() {
            seen.named[i] |= expr.is_some();
        }
        if let Some(topic) = &self.topic {
            if let Some(found) = value_of(topic, record)? {
                seen.found[0] += 1;
                out.topic = Some(String::from_utf8_lossy(&found.into_bytes()).into_owned());
            }
        }
        if let Some(key) = &self.key {
            // A key that is there but null counts as found: a null key is a key's value.
            if present(key, record) {
                seen.found[1] += 1;
            }
            out.key = value_of(key, record)?.map(Decoded::into_bytes);
        }
        if let Some(value) = &self.value {
            // A payload that is not there is not an empty one: such a record is not replayed.
            if !present(value, record) {
                return Err(format!("origin value `{}` is not in the record", value.text));
            }
            seen.found[2] += 1;
            out.value = match value_of(value, record)? {
                Some(found) => Payload::Bytes(found.into_bytes()),
                // A null payload is a tombstone; one whose stages find nothing is no payload.
                None if all_null(value, record) => Payload::Null,
                None => return Err(format!("origin value `{}`: its stages find nothing in the record", value.text)),
            };
            if let (Some(encoding), Payload::Bytes(bytes)) = (&self.value_encoding, &out.value) {
                let base64 = value_of(encoding, record)?.is_some_and(|e| e.into_bytes().eq_ignore_ascii_case(b"base64"));
                if base64 {
                    let decoded = crate::path::base64_decode(bytes).ok_or_else(|| format!("origin field `{}`: not valid base64", value.text))?;
                    out.value = Payload::Bytes(decoded);
                }
            }
        } else if !self.record_exclude.is_empty() {
            out.value = Payload::Bytes(raw_json::without_members(record, |name| self.record_exclude.iter().any(|n| n.as_bytes() == name)));
        }
        if let Some(properties) = &self.properties {
            if let Some(Decoded::Json(Value::Object(mut map))) = value_of(properties, record)? {
                if let Some(Value::Object(headers)) = map.get_mut("headers") {
                    headers.retain(|name, _| !self.exclude.iter().any(|p| name.starts_with(p.as_str())));
                }
                out.properties = Some(Value::Object(map));
            }
        }
        if let Some(headers) = &self.headers {
            if let Some(raw) = headers.alternatives.iter().find_map(|a| raw_json::lookup(record, &a.path)) {
                seen.found[3] += 1;
                out.headers = self.header_list(raw);
            }
        }
        if out.key.is_some() {
            out.position.partition = integer_of(self.partition.as_ref(), record)?;
            out.position.offset = integer_of(self.offset.as_ref(), record)?;
        }
        Ok(out)
    }

    /// A header collection's headers, those excluded by prefix left out.
    fn header_list(&self, raw: &[u8]) -> Vec<(String, Option<Vec<u8>>)> {
        let keep = |name: &str| !self.exclude.iter().any(|p| name.starts_with(p.as_str()));
        let bytes = |v: &[u8]| raw_json::decoded(v).map(Decoded::into_bytes);
        match raw.first() {
            Some(b'{') => raw_json::members(raw).map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v)).filter(|(k, _)| keep(k)).map(|(k, v)| (k, bytes(v))).collect(),
            Some(b'[') => raw_json::headers(raw).map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v)).filter(|(k, _)| keep(k)).map(|(k, v)| (k, v.and_then(bytes))).collect(),
            _ => Vec::new(),
        }
    }
}

/// An expression's value as a whole number (a JSON number, or decimal text); None when absent.
fn integer_of(expr: Option<&FieldExpr>, record: &[u8]) -> Result<Option<i64>, String> {
    let Some(expr) = expr else { return Ok(None) };
    let number = match value_of(expr, record)? {
        None => return Ok(None),
        Some(Decoded::Json(Value::Number(n))) => n.as_i64(),
        Some(Decoded::Json(Value::String(s))) => s.trim().parse().ok(),
        Some(Decoded::Bytes(b)) => std::str::from_utf8(&b).ok().and_then(|s| s.trim().parse().ok()),
        Some(Decoded::Json(_)) => None,
    };
    number.map(Some).ok_or_else(|| format!("origin field `{}`: not a whole number", expr.text))
}

/// Whether the record has the field at all (null included).
fn present(expr: &FieldExpr, record: &[u8]) -> bool {
    expr.alternatives.iter().any(|a| raw_json::lookup(record, &a.path).is_some())
}

/// Whether every alternative the record has is null.
fn all_null(expr: &FieldExpr, record: &[u8]) -> bool {
    expr.alternatives.iter().filter_map(|a| raw_json::lookup(record, &a.path)).all(|raw| raw.starts_with(b"null"))
}

/// An expression's value in a record's JSON text: the first alternative present and not null,
/// decoded by its stages.
fn value_of(expr: &FieldExpr, record: &[u8]) -> Result<Option<Decoded>, String> {
    let mut failed = None;
    for access in &expr.alternatives {
        let Some(found) = raw_json::lookup(record, &access.path).and_then(raw_json::decoded) else { continue };
        match crate::path::decode(found, &access.stages) {
            Ok(Some(value)) => return Ok(Some(value)),
            Ok(None) => {}
            Err(e) => failed = Some(format!("origin field `{}`: {e}", expr.text)),
        }
    }
    failed.map_or(Ok(None), Err)
}

impl Resolved {
    /// As a manifest entry carries it: bytes that are UTF-8 as text, others as
    /// `{"base64": …}`; a null key or payload as null; no `value` when the record is sent.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        if let Some(topic) = &self.topic {
            map.insert("topic".into(), Value::String(topic.clone()));
        }
        map.insert("key".into(), self.key.as_deref().map_or(Value::Null, bytes_json));
        match &self.value {
            Payload::Record => {}
            Payload::Null => {
                map.insert("value".into(), Value::Null);
            }
            Payload::Bytes(b) => {
                map.insert("value".into(), bytes_json(b));
            }
        }
        let headers = self.headers.iter().map(|(k, v)| Value::Array(vec![Value::String(k.clone()), v.as_deref().map_or(Value::Null, bytes_json)]));
        map.insert("headers".into(), Value::Array(headers.collect()));
        if let Some(properties) = &self.properties {
            map.insert("properties".into(), properties.clone());
        }
        if self.key.is_some() {
            let Position { partition, offset, time } = self.position;
            for (name, number) in [("partition", partition), ("offset", offset)] {
                if let Some(n) = number {
                    map.insert(name.into(), Value::from(n));
                }
            }
            if let Some(time) = time {
                map.insert("time".into(), Value::String(crate::timestamp::format_micros(time)));
            }
        }
        Value::Object(map)
    }

    /// Reads what `to_json` wrote.
    pub fn from_json(value: &Value) -> Result<Resolved, String> {
        let Value::Object(map) = value else { return Err("an entry's origin must be an object".into()) };
        let topic = match map.get("topic") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(t.clone()),
            Some(_) => return Err("origin topic must be a string".into()),
        };
        let key = map.get("key").map(json_bytes).transpose()?.flatten();
        let value = match map.get("value") {
            None => Payload::Record,
            Some(v) => json_bytes(v)?.map_or(Payload::Null, Payload::Bytes),
        };
        let headers = match map.get("headers") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|h| match h.as_array().map(Vec::as_slice) {
                    Some([Value::String(name), v]) => Ok((name.clone(), json_bytes(v)?)),
                    _ => Err("origin headers must be [name, value] pairs".to_string()),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("origin headers must be an array".into()),
        };
        let number = |name: &str| match map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| format!("origin {name} must be a whole number")),
        };
        let time = match map.get("time") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(crate::timestamp::parse_rfc3339(t).ok_or_else(|| "origin time must be an RFC 3339 timestamp".to_string())?),
            Some(_) => return Err("origin time must be an RFC 3339 timestamp".into()),
        };
        let position = Position { partition: number("partition")?, offset: number("offset")?, time };
        let properties = match map.get("properties") {
            None | Some(Value::Null) => None,
            Some(p @ Value::Object(_)) => Some(p.clone()),
            Some(_) => return Err("origin properties must be an object".into()),
        };
        Ok(Resolved { topic, key, value, headers, position, properties })
    }
}

fn bytes_json(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => Value::String(text.to_string()),
        Err(_) => serde_json::json!({ "base64": crate::path::base64_encode(bytes) }),
    }
}

fn json_bytes(value: &Value) -> Result<Option<Vec<u8>>, String> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.as_bytes().to_vec())),
        Value::Object(map) if map.len() == 1 => match map.get("base64") {
            Some(Value::String(b)) => crate::path::base64_decode(b.as_bytes()).map(Some).ok_or_else(|| "origin bytes: not valid base64".to_string()),
            _ => Err("origin bytes must be a string, {\"base64\": …} or null".into()),
        },
        _ => Err("origin bytes must be a string, {\"base64\": …} or null".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kcat_origin() -> Origin {
        Origin {
            topic: Some(r#"headers."__connect.errors.topic""#.into()),
            key: Some("key".into()),
            value: Some("payload // value | base64 // value".into()),
            headers: Some("headers".into()),
            headers_exclude: vec!["__connect.errors.".into()],
            aligned: Some(AlignedOrigin { key: Some("key | base64 // key".into()), value: None }),
            ..Origin::default()
        }
    }

    #[test]
    fn a_kcat_line_gives_the_bytes_the_producer_sent() {
        let line = b"{\"topic\":\"dlq\",\"headers\":[\"trace\",\"t-1\",\"__connect.errors.topic\",\"orders\",\"empty\",null],\"key\":\"k\xff\",\"payload\":\"\\u0000\\u0001\x96\xe8\"}";
        let mut seen = Seen::default();
        let got = kcat_origin().exprs(false).resolve(line, &mut seen).unwrap();
        assert_eq!(got.topic.as_deref(), Some("orders"));
        assert_eq!(got.key.as_deref(), Some(&b"k\xff"[..]));
        assert_eq!(got.value, Payload::Bytes(vec![0, 1, 0x96, 0xe8]));
        assert_eq!(got.headers, [("trace".to_string(), Some(b"t-1".to_vec())), ("empty".to_string(), None)]);
        assert_eq!(seen.found, [1, 1, 1, 1]);
        // Through the manifest and back: the same bytes.
        assert_eq!(Resolved::from_json(&got.to_json()).unwrap(), got);
        assert_eq!(got.to_json()["value"], serde_json::json!({"base64": "AAGW6A=="}));
    }

    #[test]
    fn tombstones_text_objects_and_aligned_chunks() {
        let origin = kcat_origin();
        let mut seen = Seen::default();
        let tombstone = origin.exprs(false).resolve(br#"{"key":"k","payload":null}"#, &mut seen).unwrap();
        assert_eq!((tombstone.key.as_deref(), &tombstone.value), (Some(&b"k"[..]), &Payload::Null));
        assert_eq!(Resolved::from_json(&tombstone.to_json()).unwrap().value, Payload::Null);
        let text = origin.exprs(false).resolve(br#"{"key":null,"payload":"plain \"text\""}"#, &mut seen).unwrap();
        assert_eq!((text.key, text.value), (None, Payload::Bytes(br#"plain "text""#.to_vec())));
        // An aligned chunk's record: base64 key and value (ByteArrayConverter), or a JSON value.
        let aligned = origin.exprs(true).resolve(br#"{"key":"b3JkZXItMQ==","value":"eyJhIjoxfQ==","headers":[{"key":"__connect.errors.topic","value":"orders"},{"key":"h","value":"v"}]}"#, &mut seen).unwrap();
        assert_eq!((aligned.key.as_deref(), &aligned.value), (Some(&b"order-1"[..]), &Payload::Bytes(br#"{"a":1}"#.to_vec())));
        assert_eq!(aligned.headers, [("h".to_string(), Some(b"v".to_vec()))]);
        let object = origin.exprs(true).resolve(br#"{"key":"k!","value":{"b" : 2, "a":[1]}}"#, &mut seen).unwrap();
        assert_eq!((object.key.as_deref(), &object.value), (Some(&b"k!"[..]), &Payload::Bytes(br#"{"b":2,"a":[1]}"#.to_vec())));
        // No value field: the record is the payload.
        let whole = Origin { topic: Some("t".into()), ..Origin::default() }.exprs(false).resolve(br#"{"t":"x"}"#, &mut seen).unwrap();
        assert_eq!(whole.value, Payload::Record);
        assert!(Resolved::from_json(&whole.to_json()).unwrap().value == Payload::Record);
    }

    #[test]
    fn a_payload_not_in_the_record_is_refused_not_sent_empty() {
        let mut seen = Seen::default();
        let why = kcat_origin().exprs(false).resolve(br#"{"key":"k","data_base64":"AAE="}"#, &mut seen).unwrap_err();
        assert!(why.contains("origin value `payload // value | base64 // value` is not in the record"), "{why}");
        assert_eq!(seen.found[2], 0);
        // There, but its stages find nothing: not a tombstone either.
        let origin = Origin { value: Some("data | json | body".into()), ..Origin::default() };
        let why = origin.exprs(false).resolve(br#"{"data":"{\"head\":1}"}"#, &mut seen).unwrap_err();
        assert!(why.contains("its stages find nothing in the record"), "{why}");
        let tombstone = origin.exprs(false).resolve(br#"{"data":null}"#, &mut seen).unwrap();
        assert_eq!(tombstone.value, Payload::Null);
    }

    #[test]
    fn the_record_as_payload_leaves_out_what_dead_lettering_added() {
        let origin = Origin { record_exclude: vec!["deadLetterReason".into(), "publishTime".into()], ..Origin::default() };
        let event = br#" {"id" : "e1", "deadLetterReason":"TimeToLiveExceeded", "data": {"n": 1.50, "s": "a \" b"},
            "publishTime":"2026-12-01T10:00:00.1234567Z", "data_base64":"AAE=", "x\u00e9":[1, 2]} "#;
        let got = origin.exprs(false).resolve(event, &mut Seen::default()).unwrap();
        // Names and values as written (1.50 stays 1.50, \u00e9 stays escaped), in the record's order.
        let want = r#"{"id":"e1","data":{"n":1.50,"s":"a \" b"},"data_base64":"AAE=","x\u00e9":[1,2]}"#;
        assert_eq!(got.value, Payload::Bytes(want.as_bytes().to_vec()));
        let nothing_left_out = origin.exprs(false).resolve(br#"{"id":"e2"}"#, &mut Seen::default()).unwrap();
        assert_eq!(nothing_left_out.value, Payload::Bytes(br#"{"id":"e2"}"#.to_vec()));
    }

    #[test]
    fn a_keyed_message_carries_its_position_and_an_unkeyed_one_none() {
        let origin = Origin { key: Some("k".into()), partition: Some("p".into()), offset: Some("o".into()), ..Origin::default() };
        let mut seen = Seen::default();
        // Numbers, or numeric text as Kafka Connect's headers hold them.
        let mut keyed = origin.exprs(false).resolve(br#"{"k":"a","p":3,"o":"1234"}"#, &mut seen).unwrap();
        assert_eq!(keyed.position, Position { partition: Some(3), offset: Some(1234), time: None });
        keyed.position.time = Some(1_790_000_000_123_000);
        let json = keyed.to_json();
        assert_eq!((&json["partition"], &json["offset"], &json["time"]), (&serde_json::json!(3), &serde_json::json!(1234), &serde_json::json!("2026-09-21T14:13:20.123Z")));
        assert_eq!(Resolved::from_json(&json).unwrap(), keyed);
        let unkeyed = origin.exprs(false).resolve(br#"{"k":null,"p":3,"o":5}"#, &mut seen).unwrap();
        assert_eq!(unkeyed.position, Position::default());
        assert!(unkeyed.to_json().get("offset").is_none());
        let bad = origin.exprs(false).resolve(br#"{"k":"a","o":"12x"}"#, &mut seen).unwrap_err();
        assert!(bad.contains("origin field `o`: not a whole number"), "{bad}");
    }

    #[test]
    fn a_payload_decoded_as_its_encoding_field_says_and_properties_kept() {
        // RabbitMQ's management API: `payload_encoding` says "string" or "base64".
        let origin = Origin {
            value: Some("payload".into()),
            value_encoding: Some("payload_encoding".into()),
            properties: Some("properties".into()),
            headers_exclude: vec!["x-death".into(), "x-first-death-".into()],
            ..Origin::default()
        };
        let mut seen = Seen::default();
        let text = origin.exprs(false).resolve(br#"{"payload":"aGk=","payload_encoding":"string"}"#, &mut seen).unwrap();
        assert_eq!(text.value, Payload::Bytes(b"aGk=".to_vec()));
        let line = br#"{"payload":"aGk=","payload_encoding":"base64","properties":{"delivery_mode":2,"headers":{"x-death":[{"count":1}],"x-first-death-queue":"q","tenant":"eu"}}}"#;
        let binary = origin.exprs(false).resolve(line, &mut seen).unwrap();
        assert_eq!(binary.value, Payload::Bytes(b"hi".to_vec()));
        assert_eq!(binary.properties, Some(serde_json::json!({"delivery_mode": 2, "headers": {"tenant": "eu"}})));
        assert_eq!(Resolved::from_json(&binary.to_json()).unwrap(), binary);
        let bad = origin.exprs(false).resolve(br#"{"payload":"%%","payload_encoding":"base64"}"#, &mut seen).unwrap_err();
        assert!(bad.contains("not valid base64"), "{bad}");
    }

    #[test]
    fn a_partition_folder_is_refused_as_an_origin() {
        let origin = Origin { topic: Some("$partition.topic".into()), ..Origin::default() };
        assert!(origin.check().unwrap_err().contains("partition folder"));
        assert!(Origin { key: Some("a[".into()), ..Origin::default() }.check().is_err());
    }
}
