//! Field expressions: where a value lives in a record (a path into nested objects, arrays and
//! header collections), how it is decoded (base64, JSON inside a string), what stands in when
//! it is absent (`//`). A subset of jq's syntax, shared by every reader and by `plan`.
//!
//! ```text
//! expr   := access ( "//" access )*          the first alternative the record has
//! access := path ( "|" stage )*
//! stage  := "base64" | "@base64d" | "json" | "fromjson"   text to bytes, text to JSON
//!         | "int_be"                        1 to 8 bytes to a signed big-endian integer
//!         | "inflate" | "gunzip"            zlib or gzip data to the bytes it holds
//!         | "first" | "last"                an array's first or last element
//!         | "map(" path ")" | "add"         each element's path; the sum of numbers
//!         | "segment(" integer ")"           a segment of a path or URL held in a string
//!         | path                            into the value (after json, first or last)
//! path   := "$partition" ( "." name )?      a hive folder of the input (`dt=2026-11-28/`)
//!         | "$path[" integer "]"            a segment of the input's path: 0 the first,
//!                                           -1 the file's name, -2 its folder, …
//!         | ["$"] ["."] name ( "." name | "[" index "]" | "[" quoted "]" )*
//! name   := bare | quoted                   bare: no space . [ ] | " /; quoted: a JSON string
//! ```
//!
//! A name looked up in an array finds a header by name, in the shapes tools write: a list of
//! `{"key": …, "value": …}` (or `"name"`) objects, kcat's flat `[name, value, …]`, or
//! `[[name, value], …]`; the last header of that name wins, as Kafka's `lastHeader`.

use std::fmt;

use serde_json::Value;

/// One step into a nested value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// An object's member, or a header of that name in an array.
    Key(String),
    /// An array's element (0-based).
    Index(usize),
}

/// What a value is decoded with, after the path has reached it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// A base64 string (standard or URL-safe alphabet, padded or not) to its bytes.
    Base64,
    /// A string (or decoded bytes) holding a JSON document, then this path into it.
    Json(Vec<Step>),
    /// 1 to 8 bytes as a signed big-endian integer (Java's `ByteBuffer.getInt`/`getLong`, as
    /// Spring Kafka writes a dead letter's original partition, offset and timestamp).
    IntBe,
    /// zlib-deflated bytes to what they hold (Sidekiq's `error_backtrace`, after base64).
    Inflate,
    /// gzip-compressed bytes to what they hold.
    Gunzip,
    /// An array's first element, then this path into it.
    First(Vec<Step>),
    /// An array's last element, then this path into it.
    Last(Vec<Step>),
    /// The element whose value at the first path is least (numbers by value, strings by
    /// text; of equal ones the last), then the second path into it. RabbitMQ lists `x-death`
    /// most recently updated first, each table's `time` when it first dead-lettered there: the
    /// first death is the least time, the last of equal ones.
    MinBy(Vec<Step>, Vec<Step>),
    /// Each element's value at this path (elements without one left out).
    Map(Vec<Step>),
    /// The sum of an array of numbers (`x-death | map(count) | add`).
    Add,
    /// A segment of a path or URL held in a string, split at `/` (a query `?…` cut first):
    /// MassTransit's `rabbitmq://host/vhost/orders` input address names its exchange last.
    Segment(i64),
}

impl Stage {
    /// Whether the stage takes the whole value, an array or object, not a string or bytes: a
    /// source that reads only scalars then reads the value from the record's text.
    pub fn takes_whole_values(&self) -> bool {
        matches!(self, Stage::First(_) | Stage::Last(_) | Stage::MinBy(..) | Stage::Map(_) | Stage::Add)
    }
}

/// The most bytes `inflate` and `gunzip` make of one value: a hostile value stops there.
pub const MAX_INFLATED: u64 = 16 << 20;

/// Where an access starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root {
    /// The record itself.
    Record,
    /// The input's hive partition folders (`key=value/`): one of them by name, or with no
    /// name all of them (a time read from `dt=`/`date=`, `year=`…`minute=`).
    Partition(Option<String>),
    /// A segment of the input's path (split at `/`): 0 the first, -1 the file's name, -2 the
    /// folder it is in (Event Grid writes the subscription only there).
    Segment(i64),
}

/// One alternative of an expression: a path and what decodes its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    pub root: Root,
    pub path: Vec<Step>,
    pub stages: Vec<Stage>,
}

impl Access {
    /// A top-level field of the record, read as it is: what every profile named before paths.
    pub fn top_level(&self) -> Option<&str> {
        match (&self.root, self.path.as_slice(), self.stages.is_empty()) {
            (Root::Record, [Step::Key(name)], true) => Some(name),
            _ => None,
        }
    }
}

/// A parsed field expression, with the text it was written as (how messages name it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldExpr {
    pub text: String,
    pub alternatives: Vec<Access>,
}

impl fmt::Display for FieldExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FieldExpr {
    /// Parses an expression; the error says what is wrong and where.
    pub fn parse(text: &str) -> Result<FieldExpr, String> {
        let mut alternatives = Vec::new();
        for alternative in split_outside_quotes(text, "//")? {
            alternatives.push(parse_access(alternative).map_err(|e| format!("field `{}`: {e}", text.trim()))?);
        }
        Ok(FieldExpr { text: text.trim().to_string(), alternatives })
    }

    /// A plain top-level field: the expression of a name as profiles always wrote it.
    pub fn top_level(name: &str) -> FieldExpr {
        let access = Access { root: Root::Record, path: vec![Step::Key(name.to_string())], stages: Vec::new() };
        FieldExpr { text: name.to_string(), alternatives: vec![access] }
    }

    /// The one top-level field this expression reads as it is, if that is all it does.
    pub fn as_top_level(&self) -> Option<&str> {
        match self.alternatives.as_slice() {
            [only] => only.top_level(),
            _ => None,
        }
    }

    /// The expression's value in a parsed record: the first alternative that is present and
    /// not null, decoded; `partition` gives `$partition` values. Err: a decoding failed.
    pub fn value_in(&self, record: &Value, partition: &[(String, String)]) -> Result<Option<Decoded>, String> {
        let mut last_error = None;
        for access in &self.alternatives {
            let found = match &access.root {
                Root::Record => lookup(record, &access.path).filter(|v| !v.is_null()).map(|v| Decoded::Json(v.clone())),
                Root::Partition(Some(name)) => partition.iter().rev().find(|(k, _)| k == name).map(|(_, v)| Decoded::Json(Value::String(v.clone()))),
                Root::Partition(None) | Root::Segment(_) => None,
            };
            let Some(found) = found else { continue };
            match decode(found, &access.stages) {
                Ok(Some(value)) => return Ok(Some(value)),
                Ok(None) => {}
                Err(e) => last_error = Some(format!("field `{}`: {e}", self.text)),
            }
        }
        match last_error {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }
}

/// A value after its stages: JSON, or bytes decoded from base64.
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded {
    Json(Value),
    Bytes(Vec<u8>),
}

impl Decoded {
    /// The bytes a producer sent for this value: a string's UTF-8, decoded bytes as they are,
    /// anything else as compact JSON (key order kept).
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Decoded::Bytes(bytes) => bytes,
            Decoded::Json(Value::String(s)) => s.into_bytes(),
            Decoded::Json(other) => serde_json::to_vec(&other).expect("values serialise"),
        }
    }
}

/// Applies stages to a found value: None when a stage's path finds nothing.
pub fn decode(mut value: Decoded, stages: &[Stage]) -> Result<Option<Decoded>, String> {
    for stage in stages {
        value = match stage {
            Stage::Base64 => match &value {
                Decoded::Json(Value::String(s)) => Decoded::Bytes(base64_decode(s.as_bytes()).ok_or("not valid base64")?),
                Decoded::Bytes(bytes) => Decoded::Bytes(base64_decode(bytes).ok_or("not valid base64")?),
                Decoded::Json(other) => return Err(format!("base64 needs a string, got {}", kind(other))),
            },
            Stage::Json(path) => {
                let document: Value = match &value {
                    Decoded::Json(Value::String(s)) => serde_json::from_str(s).map_err(|e| format!("not a JSON document: {e}"))?,
                    Decoded::Bytes(bytes) => serde_json::from_slice(bytes).map_err(|e| format!("not a JSON document: {e}"))?,
                    Decoded::Json(other) => return Err(format!("json needs a string, got {}", kind(other))),
                };
                match lookup(&document, path).filter(|v| !v.is_null()) {
                    Some(found) => Decoded::Json(found.clone()),
                    None => return Ok(None),
                }
            }
            Stage::IntBe => Decoded::Json(Value::from(int_be(&bytes_of(&value, "int_be")?)?)),
            Stage::Inflate => Decoded::Bytes(inflate(flate2::read::ZlibDecoder::new(&bytes_of(&value, "inflate")?[..]), "zlib")?),
            Stage::Gunzip => Decoded::Bytes(inflate(flate2::read::GzDecoder::new(&bytes_of(&value, "gunzip")?[..]), "gzip")?),
            Stage::First(path) | Stage::Last(path) => {
                let items = array_of(&value, if matches!(stage, Stage::First(_)) { "first" } else { "last" })?;
                let element = if matches!(stage, Stage::First(_)) { items.first() } else { items.last() };
                match element.and_then(|e| lookup(e, path)).filter(|v| !v.is_null()) {
                    Some(found) => Decoded::Json(found.clone()),
                    None => return Ok(None),
                }
            }
            Stage::MinBy(by, path) => match least(array_of(&value, "min_by")?, by).and_then(|e| lookup(e, path)).filter(|v| !v.is_null()) {
                Some(found) => Decoded::Json(found.clone()),
                None => return Ok(None),
            },
            Stage::Map(path) => {
                let items = array_of(&value, "map")?;
                Decoded::Json(Value::Array(items.iter().filter_map(|e| lookup(e, path)).filter(|v| !v.is_null()).cloned().collect()))
            }
            Stage::Add => Decoded::Json(add(array_of(&value, "add")?)?),
            Stage::Segment(index) => {
                let text = String::from_utf8_lossy(&bytes_of(&value, "segment")?).into_owned();
                let path = text.split(['?', '#']).next().unwrap_or_default();
                match segment(path, *index) {
                    Some(found) => Decoded::Json(Value::String(found.to_string())),
                    None => return Ok(None),
                }
            }
        };
    }
    Ok(Some(value))
}

/// The bytes a stage decodes: decoded bytes, or a string's (kcat writes binary as text where
/// it is UTF-8).
fn bytes_of(value: &Decoded, stage: &str) -> Result<Vec<u8>, String> {
    match value {
        Decoded::Bytes(bytes) => Ok(bytes.clone()),
        Decoded::Json(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Decoded::Json(other) => Err(format!("{stage} needs bytes or a string, got {}", kind(other))),
    }
}

fn array_of<'v>(value: &'v Decoded, stage: &str) -> Result<&'v [Value], String> {
    match value {
        Decoded::Json(Value::Array(items)) => Ok(items),
        Decoded::Json(other) => Err(format!("{stage} needs an array, got {}", kind(other))),
        Decoded::Bytes(_) => Err(format!("{stage} needs an array, got bytes")),
    }
}

/// 1 to 8 bytes as a signed big-endian integer.
pub fn int_be(bytes: &[u8]) -> Result<i64, String> {
    if bytes.is_empty() || bytes.len() > 8 {
        return Err(format!("int_be needs 1 to 8 bytes, got {}", bytes.len()));
    }
    // Sign-extended from the first byte, as Java reads a short, int or long.
    let mut n: i64 = if bytes[0] & 0x80 != 0 { -1 } else { 0 };
    for &b in bytes {
        n = (n << 8) | i64::from(b);
    }
    Ok(n)
}

/// Everything a decoder gives, up to `MAX_INFLATED` bytes.
fn inflate(decoder: impl std::io::Read, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut out = Vec::new();
    decoder.take(MAX_INFLATED + 1).read_to_end(&mut out).map_err(|e| format!("not {what} data: {e}"))?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(format!("{what} data inflates past {} MiB", MAX_INFLATED >> 20));
    }
    Ok(out)
}

/// The element whose number or string at `by` is least, the last of equal ones; elements
/// without one, or of the other kind than the first found, are passed over.
fn least<'v>(items: &'v [Value], by: &[Step]) -> Option<&'v Value> {
    use std::cmp::Ordering;
    let order = |a: &Value, b: &Value| match (a, b) {
        (Value::Number(a), Value::Number(b)) => a.as_f64().zip(b.as_f64()).and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    };
    let mut best: Option<(&Value, &Value)> = None;
    for item in items {
        let Some(key) = lookup(item, by) else { continue };
        match best {
            None if matches!(key, Value::Number(_) | Value::String(_)) => best = Some((item, key)),
            Some((_, least)) if matches!(order(key, least), Some(Ordering::Less | Ordering::Equal)) => best = Some((item, key)),
            _ => {}
        }
    }
    best.map(|(item, _)| item)
}

/// The sum of numbers: an integer while every one is and it fits, else a float.
fn add(items: &[Value]) -> Result<Value, String> {
    let mut int = Some(0i64);
    let mut float = 0f64;
    for item in items {
        let Value::Number(n) = item else { return Err(format!("add needs numbers, got {}", kind(item))) };
        int = int.zip(n.as_i64()).and_then(|(a, b)| a.checked_add(b));
        float += n.as_f64().unwrap_or(f64::NAN);
    }
    Ok(int.map_or_else(|| Value::from(float), Value::from))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Follows `path` from `value`: members of objects, elements of arrays, headers by name.
pub fn lookup<'v>(value: &'v Value, path: &[Step]) -> Option<&'v Value> {
    let mut at = value;
    for step in path {
        at = match (at, step) {
            (Value::Object(map), Step::Key(name)) => map.get(name)?,
            (Value::Array(items), Step::Index(i)) => items.get(*i)?,
            (Value::Array(items), Step::Key(name)) => header(items, name)?,
            _ => return None,
        };
    }
    Some(at)
}

/// The value of the last header called `name` in a header collection held in an array.
pub fn header<'v>(items: &'v [Value], name: &str) -> Option<&'v Value> {
    let mut found = None;
    for (header, value) in headers(items) {
        if header == name {
            found = Some(value);
        }
    }
    found
}

/// The headers of a collection held in an array, in order: `{"key"|"name": …, "value": …}`
/// objects, `[name, value]` pairs, or kcat's flat `name, value, …` (a name is a string).
pub fn headers(items: &[Value]) -> impl Iterator<Item = (&str, &Value)> {
    const NULL: Value = Value::Null;
    let mut i = 0;
    std::iter::from_fn(move || loop {
        let item = items.get(i)?;
        i += 1;
        match item {
            Value::Object(map) => {
                let name = map.get("key").or_else(|| map.get("name"));
                if let Some(Value::String(name)) = name {
                    return Some((name.as_str(), map.get("value").unwrap_or(&NULL)));
                }
            }
            Value::Array(pair) => {
                if let [Value::String(name), value] = pair.as_slice() {
                    return Some((name.as_str(), value));
                }
            }
            Value::String(name) => {
                let value = items.get(i).unwrap_or(&NULL);
                i += 1;
                return Some((name.as_str(), value));
            }
            _ => {}
        }
    })
}

/// Decodes base64 in the standard or URL-safe alphabet, with or without padding (what
/// Jackson, gcloud and the AWS CLI write); line breaks (MIME) are skipped.
pub fn base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 3);
    let (mut acc, mut bits, mut padding) = (0u32, 0u32, 0usize);
    for &c in text {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            b'\r' | b'\n' => continue,
            _ => return None,
        };
        if padding > 0 {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be zero padding of a whole final group (2 or 4 bits), never 6.
    if bits == 6 || acc != 0 || padding > 2 {
        return None;
    }
    Some(out)
}

/// Encodes bytes as standard padded base64.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let n = group.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Splits `text` at every `sep` that is not inside a quoted name.
fn split_outside_quotes<'t>(text: &'t str, sep: &str) -> Result<Vec<&'t str>, String> {
    let mut parts = Vec::new();
    let (mut start, mut i, mut quoted) = (0, 0, false);
    let b = text.as_bytes();
    while i < b.len() {
        match b[i] {
            b'"' => quoted = !quoted,
            b'\\' if quoted => i += 1,
            _ if !quoted && text[i..].starts_with(sep) => {
                parts.push(&text[start..i]);
                i += sep.len();
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if quoted {
        return Err(format!("field `{}`: a quoted name is not closed", text.trim()));
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn parse_access(text: &str) -> Result<Access, String> {
    let segments = split_outside_quotes(text, "|")?;
    let first = segments[0].trim();
    if first.is_empty() {
        return Err("expected a path".into());
    }
    let (root, path) = if let Some(index) = first.strip_prefix("$path[").and_then(|rest| rest.strip_suffix(']')) {
        let index = index.trim().parse::<i64>().map_err(|_| format!("`{first}`: expected `$path[N]`, N a whole number (-1: the file's name)"))?;
        (Root::Segment(index), Vec::new())
    } else if first == "$partition" || first.starts_with("$partition.") {
        let rest = &first["$partition".len()..];
        let name = match parse_path(rest)?.as_slice() {
            [] => None,
            [Step::Key(name)] => Some(name.clone()),
            _ => return Err("`$partition` takes one folder name, as `$partition.dt`".into()),
        };
        (Root::Partition(name), Vec::new())
    } else {
        let path = parse_path(first)?;
        if path.is_empty() {
            return Err("expected a path".into());
        }
        (Root::Record, path)
    };
    let mut stages: Vec<Stage> = Vec::new();
    for segment in &segments[1..] {
        match segment.trim() {
            "base64" | "@base64d" => stages.push(Stage::Base64),
            "json" | "fromjson" => stages.push(Stage::Json(Vec::new())),
            "int_be" => stages.push(Stage::IntBe),
            "inflate" => stages.push(Stage::Inflate),
            "gunzip" => stages.push(Stage::Gunzip),
            "first" => stages.push(Stage::First(Vec::new())),
            "last" => stages.push(Stage::Last(Vec::new())),
            "add" => stages.push(Stage::Add),
            "" => return Err("an empty stage after `|`".into()),
            map if map.starts_with("map(") && map.ends_with(')') => stages.push(Stage::Map(parse_path(&map[4..map.len() - 1])?)),
            min if min.starts_with("min_by(") && min.ends_with(')') => stages.push(Stage::MinBy(parse_path(&min[7..min.len() - 1])?, Vec::new())),
            cut if cut.starts_with("segment(") && cut.ends_with(')') => {
                let index = cut[8..cut.len() - 1].trim().parse().map_err(|_| format!("`{cut}`: expected segment(N), N a whole number (-1: the last)"))?;
                stages.push(Stage::Segment(index));
            }
            other => match stages.last_mut() {
                Some(Stage::Json(path) | Stage::First(path) | Stage::Last(path) | Stage::MinBy(_, path)) => path.extend(parse_path(other)?),
                _ => {
                    return Err(format!(
                        "`{other}`: a path after `|` must follow json, first, last or min_by (expected base64, json, int_be, inflate, gunzip, first, last, min_by(path), map(path), add, segment(N) or a path into JSON)"
                    ))
                }
            },
        }
    }
    if !matches!(root, Root::Record) && !stages.is_empty() {
        return Err("a folder of the input's path is text: it takes no stage".into());
    }
    Ok(Access { root, path, stages })
}

/// The segment of `path` (split at `/`, empty parts left out) at `index`: from the start,
/// or from the end when negative.
pub fn segment(path: &str, index: i64) -> Option<&str> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let at = if index < 0 { segments.len().checked_sub(index.unsigned_abs() as usize)? } else { index as usize };
    segments.get(at).copied()
}

/// A path: `a.b`, `.a."b.c"[0]`, `$.a["b"]`; an empty one (`.`, `$`) is the value itself.
fn parse_path(text: &str) -> Result<Vec<Step>, String> {
    let b = text.trim().as_bytes();
    let text = text.trim();
    let mut steps = Vec::new();
    let mut i = 0;
    if b.first() == Some(&b'$') && b.get(1).is_none_or(|c| matches!(c, b'.' | b'[')) {
        i = 1;
    }
    let mut first = true;
    while i < b.len() {
        match b[i] {
            b'.' => {
                i += 1;
                if i == b.len() && steps.is_empty() {
                    break;
                }
                let (name, end) = name_at(text, i)?;
                steps.push(Step::Key(name));
                i = end;
            }
            b'[' => {
                let close = text[i..].find(']').map(|c| i + c).ok_or_else(|| format!("`{text}`: `[` is not closed"))?;
                let inner = text[i + 1..close].trim();
                if inner.starts_with('"') {
                    let (name, end) = quoted_at(text, text[..close].rfind('"').map_or(i + 1, |_| i + 1 + (text[i + 1..].len() - text[i + 1..].trim_start().len())))?;
                    if text[end..].trim_start().as_bytes().first() != Some(&b']') {
                        return Err(format!("`{text}`: expected `]` after a quoted name"));
                    }
                    steps.push(Step::Key(name));
                    i = end + text[end..].find(']').expect("checked") + 1;
                    continue;
                }
                let index = inner.parse::<usize>().map_err(|_| format!("`{text}`: `[{inner}]` is not an index (0, 1, …) or a quoted name"))?;
                steps.push(Step::Index(index));
                i = close + 1;
            }
            _ if first => {
                let (name, end) = name_at(text, i)?;
                steps.push(Step::Key(name));
                i = end;
            }
            c => return Err(format!("`{text}`: unexpected `{}` at {}", char::from(c), i + 1)),
        }
        first = false;
    }
    Ok(steps)
}

/// A bare or quoted name starting at `at`: the name and where it ends.
fn name_at(text: &str, at: usize) -> Result<(String, usize), String> {
    let b = text.as_bytes();
    if b.get(at) == Some(&b'"') {
        return quoted_at(text, at);
    }
    let end = b[at..].iter().position(|c| matches!(c, b'.' | b'[' | b']' | b'|' | b'"' | b'/') || c.is_ascii_whitespace()).map_or(b.len(), |p| at + p);
    if end == at {
        return Err(format!("`{text}`: expected a name at {}", at + 1));
    }
    Ok((text[at..end].to_string(), end))
}

/// A quoted name (a JSON string) starting at its opening quote at `at`.
fn quoted_at(text: &str, at: usize) -> Result<(String, usize), String> {
    let b = text.as_bytes();
    let mut i = at + 1;
    while i < b.len() && b[i] != b'"' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    if i >= b.len() {
        return Err(format!("`{text}`: a quoted name is not closed"));
    }
    let name: String = serde_json::from_str(&text[at..=i]).map_err(|e| format!("`{text}`: bad quoted name: {e}"))?;
    Ok((name, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(k: &str) -> Step {
        Step::Key(k.into())
    }

    #[test]
    fn paths_take_the_forms_users_know() {
        let path = |t: &str| FieldExpr::parse(t).unwrap().alternatives.remove(0).path;
        assert_eq!(path("a"), [key("a")]);
        assert_eq!(path("a.b.c"), [key("a"), key("b"), key("c")]);
        assert_eq!(path(".a.b"), [key("a"), key("b")]);
        assert_eq!(path("$.requestContext.condition"), [key("requestContext"), key("condition")]);
        assert_eq!(path(r#"headers."__connect.errors.topic""#), [key("headers"), key("__connect.errors.topic")]);
        assert_eq!(path(r#".headers["__connect.errors.topic"]"#), [key("headers"), key("__connect.errors.topic")]);
        assert_eq!(path(r#"a[2].b[ "x]y" ]"#), [key("a"), Step::Index(2), key("b"), key("x]y")]);
        assert_eq!(path(r#""a.b"."c\"d""#), [key("a.b"), key("c\"d")]);
        assert_eq!(path("MessageAttributes.ErrorCode.StringValue"), [key("MessageAttributes"), key("ErrorCode"), key("StringValue")]);
        assert_eq!(path("a-b:c@d"), [key("a-b:c@d")]);
    }

    #[test]
    fn stages_alternatives_and_partitions_parse() {
        let e = FieldExpr::parse("message.data | base64 | json | error.type").unwrap();
        assert_eq!(e.alternatives[0].stages, [Stage::Base64, Stage::Json(vec![key("error"), key("type")])]);
        let e = FieldExpr::parse("message.data|@base64d|fromjson|.kind").unwrap();
        assert_eq!(e.alternatives[0].stages, [Stage::Base64, Stage::Json(vec![key("kind")])]);
        let e = FieldExpr::parse(r#"ts // headers."a//b" // $partition"#).unwrap();
        assert_eq!(e.alternatives.len(), 3);
        assert_eq!(e.alternatives[1].path, [key("headers"), key("a//b")]);
        assert_eq!(e.alternatives[2].root, Root::Partition(None));
        assert_eq!(FieldExpr::parse("$partition.dt").unwrap().alternatives[0].root, Root::Partition(Some("dt".into())));
        assert_eq!(FieldExpr::parse("ts").unwrap().as_top_level(), Some("ts"));
        assert_eq!(FieldExpr::parse("a.b").unwrap().as_top_level(), None);
        assert_eq!(FieldExpr::parse("a | base64").unwrap().as_top_level(), None);
    }

    #[test]
    fn bad_expressions_say_why() {
        for (text, why) in [
            ("", "expected a path"),
            (r#"a."b"#, "not closed"),
            ("a[x]", "not an index"),
            ("a | b", "must follow json"),
            ("a |", "empty stage"),
            ("a[1", "not closed"),
            ("$partition.a.b", "one folder name"),
            ("a..b", "expected a name"),
        ] {
            let err = FieldExpr::parse(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn headers_are_found_by_name_in_every_shape() {
        let record = json!({
            "kcat": ["a", "1", "__connect.errors.topic", "orders", "a", "2", "n", null],
            "sink": [{"key": "__connect.errors.topic", "value": "orders"}, {"key": "a", "value": "x"}],
            "named": [{"name": "a", "value": 7}],
            "pairs": [["a", "p"], ["b", "q"]],
            "object": {"__connect.errors.topic": "orders"},
        });
        let get = |t: &str| FieldExpr::parse(t).unwrap().value_in(&record, &[]).unwrap();
        let text = |s: &str| Some(Decoded::Json(json!(s)));
        assert_eq!(get(r#"kcat."__connect.errors.topic""#), text("orders"));
        assert_eq!(get("kcat.a"), text("2"), "the last header of a name wins");
        assert_eq!(get("kcat.n"), None, "a null header is absent");
        assert_eq!(get(r#"sink."__connect.errors.topic""#), text("orders"));
        assert_eq!(get(r#"object."__connect.errors.topic""#), text("orders"));
        assert_eq!(get("named.a"), Some(Decoded::Json(json!(7))));
        assert_eq!(get("pairs.b"), text("q"));
        assert_eq!(get("kcat[3]"), text("orders"));
        assert_eq!(get("kcat.missing // sink.a"), text("x"));
        assert_eq!(get("object.x.y"), None);
    }

    #[test]
    fn base64_and_json_inside_decode() {
        // base64 of `{"order":{"id":"o-1"},"n":2}`, computed with `base64` of coreutils.
        let record = json!({"data": "eyJvcmRlciI6eyJpZCI6Im8tMSJ9LCJuIjoyfQ==", "inner": "{\"a\":[1,{\"b\":\"c\"}]}", "bin": "/+8A"});
        let get = |t: &str| FieldExpr::parse(t).unwrap().value_in(&record, &[]);
        assert_eq!(get("data | base64 | json | order.id").unwrap(), Some(Decoded::Json(json!("o-1"))));
        assert_eq!(get("data | base64").unwrap().unwrap().into_bytes(), br#"{"order":{"id":"o-1"},"n":2}"#);
        assert_eq!(get("inner | json | a[1].b").unwrap(), Some(Decoded::Json(json!("c"))));
        assert_eq!(get("inner | json | a[5]").unwrap(), None);
        assert_eq!(get("bin | base64").unwrap(), Some(Decoded::Bytes(vec![0xff, 0xef, 0x00])));
        assert!(get("inner | base64").unwrap_err().contains("not valid base64"));
        assert!(get("data | json").unwrap_err().contains("not a JSON document"));
        assert_eq!(get("inner | json | a // data").unwrap(), Some(Decoded::Json(json!([1, {"b": "c"}]))));
    }

    #[test]
    fn base64_round_trips_every_length_and_refuses_junk() {
        for len in 0..70usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let text = base64_encode(&bytes);
            assert_eq!(base64_decode(text.as_bytes()), Some(bytes.clone()), "len {len}");
            assert_eq!(base64_decode(text.trim_end_matches('=').as_bytes()), Some(bytes.clone()), "unpadded, len {len}");
            let url: String = text.chars().map(|c| match c { '+' => '-', '/' => '_', c => c }).collect();
            assert_eq!(base64_decode(url.as_bytes()), Some(bytes), "URL-safe, len {len}");
        }
        // Known vectors (RFC 4648, section 10).
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        for bad in ["Zm9v!", "Z", "Zm9=v", "Zg===", "Zh=="] {
            assert_eq!(base64_decode(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn binary_compressed_and_array_stages_decode() {
        // zlib and gzip data made with Python's zlib.compress and gzip.compress (mtime 0).
        let record = json!({
            "bt": "eJyLVkosKNDPyk8q1q/QK0qyMjSyysxTUC9ILUrLL8pVV4oFALpbCts=",
            "gz": "H4sIAAAAAAACA8tIzcnJBwCGphA2BQAAAA==",
            "partition": "\u{0}\u{0}\u{0}\u{3}",
            "deaths": [{"count": 3, "reason": "rejected"}, {"count": 2, "reason": "expired"}, {"reason": "maxlen"}],
        });
        let get = |t: &str| FieldExpr::parse(t).unwrap().value_in(&record, &[]);
        assert_eq!(get("bt | base64 | inflate | json | [0]").unwrap(), Some(Decoded::Json(json!("app/jobs/x.rb:12:in 'perform'"))));
        assert_eq!(get("gz | base64 | gunzip").unwrap(), Some(Decoded::Bytes(b"hello".to_vec())));
        assert_eq!(get("partition | int_be").unwrap(), Some(Decoded::Json(json!(3))));
        assert_eq!(get("deaths | first | reason").unwrap(), Some(Decoded::Json(json!("rejected"))));
        assert_eq!(get("deaths | last | .reason").unwrap(), Some(Decoded::Json(json!("maxlen"))));
        assert_eq!(get("deaths | last | count").unwrap(), None, "absent in the last element");
        assert_eq!(get("deaths | map(count) | add").unwrap(), Some(Decoded::Json(json!(5))));
        assert_eq!(get("deaths | map(.reason)").unwrap(), Some(Decoded::Json(json!(["rejected", "expired", "maxlen"]))));
        assert!(get("gz | inflate").unwrap_err().contains("not zlib data"));
        assert!(get("deaths | map(reason) | add").unwrap_err().contains("add needs numbers"));
        assert!(get("partition | first").unwrap_err().contains("first needs an array"));
        let address = json!({"a": "rabbitmq://broker:5672/shop/orders?temporary=false"});
        let cut = |t: &str| FieldExpr::parse(t).unwrap().value_in(&address, &[]).unwrap();
        assert_eq!(cut("a | segment(-1)"), Some(Decoded::Json(json!("orders"))));
        assert_eq!(cut("a | segment(-2)"), Some(Decoded::Json(json!("shop"))));
        assert_eq!(cut("a | segment(9)"), None);
    }

    #[test]
    fn min_by_takes_the_least_and_the_last_of_equal_ones() {
        // As RabbitMQ orders x-death: most recently updated first, `time` each's first death.
        let record = json!({"x": [
            {"queue": "delay", "time": 1700000300, "keys": ["a"]},
            {"queue": "work", "time": 1700000100, "keys": ["b"]},
            {"queue": "parked", "time": 1700000100, "keys": ["c"]},
            {"queue": "untimed", "keys": ["d"]},
            {"queue": "texted", "time": "1", "keys": ["e"]},
        ], "names": [{"n": "b"}, {"n": "a"}, {"n": "a", "k": 2}], "empty": []});
        let get = |t: &str| FieldExpr::parse(t).unwrap().value_in(&record, &[]).unwrap();
        assert_eq!(get("x | min_by(time) | queue"), Some(Decoded::Json(json!("parked"))), "the last of equal times; other kinds passed over");
        assert_eq!(get("x | min_by(time) | keys[0]"), Some(Decoded::Json(json!("c"))));
        assert_eq!(get("names | min_by(n) | k"), Some(Decoded::Json(json!(2))), "strings by their text");
        assert_eq!(get("empty | min_by(n)"), None);
        assert_eq!(get("x | min_by(nothing)"), None);
        assert!(FieldExpr::parse("x | min_by(time) | queue").unwrap().value_in(&json!({"x": 3}), &[]).unwrap_err().contains("min_by needs an array"));
    }

    #[test]
    fn big_endian_integers_read_as_java_writes_them() {
        assert_eq!(int_be(&[0, 0, 0, 3]), Ok(3));
        assert_eq!(int_be(&[0xff, 0xff, 0xff, 0xfe]), Ok(-2), "a negative int");
        assert_eq!(int_be(&[0x80]), Ok(-128));
        // 2026-10-01T00:00:00Z in epoch ms, 1790812800000, as Python's int.to_bytes(8, "big").
        assert_eq!(int_be(&[0x00, 0x00, 0x01, 0xa0, 0xf4, 0xc2, 0xc4, 0x00]), Ok(1_790_812_800_000));
        assert_eq!(int_be(&[0xff; 8]), Ok(-1));
        assert!(int_be(&[]).is_err() && int_be(&[0; 9]).is_err());
    }

    #[test]
    fn inflating_stops_at_its_bound() {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&vec![0u8; MAX_INFLATED as usize + 1]).unwrap();
        let bomb = base64_encode(&z.finish().unwrap());
        let err = FieldExpr::parse("b | base64 | inflate").unwrap().value_in(&json!({ "b": bomb }), &[]).unwrap_err();
        assert!(err.contains("inflates past 16 MiB"), "{err}");
    }

    #[test]
    fn path_segments_count_from_either_end() {
        let path = "dumps/deadletters/ORDERS-SUB/2026/1/9/7/0f3a.json";
        assert_eq!(segment(path, -1), Some("0f3a.json"));
        assert_eq!(segment(path, -6), Some("ORDERS-SUB"));
        assert_eq!(segment(path, 0), Some("dumps"));
        assert_eq!(segment("s3://bucket/c/SUB/x.json", -3), Some("c"));
        assert_eq!((segment(path, 8), segment(path, -9)), (None, None));
        assert_eq!(FieldExpr::parse("$path[-6]").unwrap().alternatives[0].root, Root::Segment(-6));
        assert!(FieldExpr::parse("$path[x]").unwrap_err().contains("expected `$path[N]`"));
        assert!(FieldExpr::parse("$path[-1] | base64").unwrap_err().contains("takes no stage"));
    }

    #[test]
    fn partition_folders_are_values() {
        let parts = vec![("dt".to_string(), "2026-11-28".to_string()), ("hour".to_string(), "07".to_string())];
        let e = FieldExpr::parse("missing // $partition.hour").unwrap();
        assert_eq!(e.value_in(&json!({}), &parts).unwrap(), Some(Decoded::Json(json!("07"))));
    }
}
