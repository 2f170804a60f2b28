//! Values read straight from a record's JSON text as bytes, which may hold invalid UTF-8 (kcat
//! writes binary keys and payloads raw): what replay sends must be the bytes the producer sent.
//! The text was checked as JSON when it was read; anything malformed here reads as absent.

use std::borrow::Cow;

use serde_json::Value;

use crate::path::{Decoded, Step};

/// The raw text of the value `path` leads to in `json` (a header collection in an array is
/// searched by name, the last header of a name winning).
pub fn lookup<'a>(json: &'a [u8], path: &[Step]) -> Option<&'a [u8]> {
    let mut at = trim(json);
    for step in path {
        at = match (at.first()?, step) {
            (b'{', Step::Key(name)) => members(at).filter(|(k, _)| **k == *name.as_bytes()).last()?.1,
            (b'[', Step::Index(i)) => elements(at).nth(*i)?,
            (b'[', Step::Key(name)) => headers(at).filter(|(k, _)| *k == *name.as_bytes()).last()?.1?,
            _ => return None,
        };
    }
    Some(at)
}

/// A raw value as decoded data: a string as the bytes it stands for, null as None, anything
/// else as JSON (compact, as serde_json writes it; its raw text without spaces if it is not
/// UTF-8).
pub fn decoded(raw: &[u8]) -> Option<Decoded> {
    match raw.first()? {
        b'"' => Some(Decoded::Bytes(string_bytes(raw)?)),
        b'n' => None,
        _ => Some(match serde_json::from_slice::<Value>(raw) {
            Ok(value) => Decoded::Json(value),
            Err(_) => Decoded::Bytes(minified(raw)),
        }),
    }
}

/// The bytes a JSON string (with its quotes) stands for, borrowed when it holds no escape.
pub fn string_text(raw: &[u8]) -> Option<Cow<'_, [u8]>> {
    let body = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    match memchr::memchr(b'\\', body) {
        None => Some(Cow::Borrowed(body)),
        Some(_) => string_bytes(raw).map(Cow::Owned),
    }
}

/// The bytes a JSON string (with its quotes) stands for: escapes decoded, every other byte
/// kept as it is, valid UTF-8 or not.
pub fn string_bytes(raw: &[u8]) -> Option<Vec<u8>> {
    let body = raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        // The run up to the next escape as it is.
        let run = memchr::memchr(b'\\', &body[i..]).unwrap_or(body.len() - i);
        out.extend_from_slice(&body[i..i + run]);
        i += run;
        if i == body.len() {
            break;
        }
        let e = *body.get(i + 1)?;
        i += 2;
        match e {
            b'u' => {
                let mut code = hex4(body.get(i..i + 4)?)?;
                i += 4;
                if (0xD800..0xDC00).contains(&code) && body.get(i..i + 2) == Some(b"\\u") {
                    let low = hex4(body.get(i + 2..i + 6)?)?;
                    if (0xDC00..0xE000).contains(&low) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                        i += 6;
                    }
                }
                let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            }
            e => out.push(crate::json_scan::two_byte_escape(e)?),
        }
    }
    Some(out)
}

fn hex4(digits: &[u8]) -> Option<u32> {
    u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// The headers of a header collection held in a JSON array (`[{"key"|"name", "value"}, …]`,
/// `[[name, value], …]` or kcat's flat `[name, value, …]`), names and raw values (None: null).
pub fn headers(array: &[u8]) -> impl Iterator<Item = (Vec<u8>, Option<&[u8]>)> {
    let mut items = elements(array);
    std::iter::from_fn(move || loop {
        let item = items.next()?;
        fn null(v: &[u8]) -> Option<&[u8]> {
            if v.first() == Some(&b'n') { None } else { Some(v) }
        }
        match item.first()? {
            b'{' => {
                let (mut name, mut value) = (None, None);
                for (k, v) in members(item) {
                    match &*k {
                        b"key" | b"name" if v.first() == Some(&b'"') => name = string_bytes(v),
                        b"value" => value = Some(v),
                        _ => {}
                    }
                }
                if let Some(name) = name {
                    return Some((name, value.and_then(null)));
                }
            }
            b'[' => {
                let mut pair = elements(item);
                if let (Some(name), Some(value), None) = (pair.next(), pair.next(), pair.next()) {
                    if let Some(name) = (name.first() == Some(&b'"')).then(|| string_bytes(name)).flatten() {
                        return Some((name, null(value)));
                    }
                }
            }
            b'"' => {
                let name = string_bytes(item)?;
                return Some((name, items.next().and_then(null)));
            }
            _ => {}
        }
    })
}

/// The members of an object's raw text: each name's bytes and its value's raw text.
pub fn members(object: &[u8]) -> impl Iterator<Item = (Cow<'_, [u8]>, &[u8])> {
    members_as_written(object).map(|(_, name, value)| (name, value))
}

/// Each member of an object's raw text: its name as written (quotes included), the bytes the
/// name stands for (borrowed where it holds no escape), and the raw text of its value.
pub fn members_as_written(object: &[u8]) -> impl Iterator<Item = (&[u8], Cow<'_, [u8]>, &[u8])> {
    let mut pos = if object.first() == Some(&b'{') { 1 } else { object.len() };
    std::iter::from_fn(move || {
        pos = skip_ws(object, pos);
        if object.get(pos)? == &b',' {
            pos = skip_ws(object, pos + 1);
        }
        if object.get(pos)? != &b'"' {
            return None;
        }
        let (key_start, key_end) = (pos, value_end(object, pos)?);
        let key = string_text(&object[key_start..key_end])?;
        pos = skip_ws(object, key_end);
        if object.get(pos)? != &b':' {
            return None;
        }
        let start = skip_ws(object, pos + 1);
        let end = value_end(object, start)?;
        pos = end;
        Some((&object[key_start..key_end], key, &object[start..end]))
    })
}

/// The raw text of each element of an array's raw text.
pub fn elements(array: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut pos = if array.first() == Some(&b'[') { 1 } else { array.len() };
    std::iter::from_fn(move || {
        pos = skip_ws(array, pos);
        if array.get(pos)? == &b',' {
            pos = skip_ws(array, pos + 1);
        }
        if matches!(array.get(pos)?, b']') {
            return None;
        }
        let end = value_end(array, pos)?;
        let item = &array[pos..end];
        pos = end;
        Some(item)
    })
}

/// Where the value starting at `start` ends (one past its last byte).
pub fn value_end(s: &[u8], start: usize) -> Option<usize> {
    match s.get(start)? {
        b'"' => {
            // To the next quote or backslash at a time: a string's text is most of a record.
            let mut i = start + 1;
            loop {
                i += memchr::memchr2(b'"', b'\\', s.get(i..)?)?;
                match s[i] {
                    b'"' => return Some(i + 1),
                    _ => i += 2,
                }
            }
        }
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match s.get(i)? {
                    b'"' => {
                        i = value_end(s, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => Some(start + s[start..].iter().position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')).unwrap_or(s.len() - start)),
    }
}

pub fn skip_ws(s: &[u8], mut pos: usize) -> usize {
    while matches!(s.get(pos), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        pos += 1;
    }
    pos
}

fn trim(s: &[u8]) -> &[u8] {
    let start = skip_ws(s, 0);
    let end = s.len() - s[start..].iter().rev().take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n')).count();
    &s[start..end]
}

/// An object's text without the members `drop` names, the others' names and values as
/// written (whitespace between them left out); any other value minified.
pub fn without_members(object: &[u8], drop: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let object = trim(object);
    if object.first() != Some(&b'{') {
        return minified(object);
    }
    let mut out = vec![b'{'];
    for (written, _, value) in members_as_written(object).filter(|(_, name, _)| !drop(name)) {
        if out.len() > 1 {
            out.push(b',');
        }
        out.extend_from_slice(written);
        out.push(b':');
        out.extend(minified(value));
    }
    out.push(b'}');
    out
}

/// JSON text without the whitespace between its tokens (strings kept byte for byte).
pub fn minified(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'"' => {
                let end = value_end(raw, i).unwrap_or(raw.len());
                out.extend_from_slice(&raw[i..end]);
                i = end;
            }
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_decode_to_the_bytes_they_stand_for() {
        // kcat's escaping (yajl): control characters as uppercase \u00XX, bytes above 0x7f raw.
        assert_eq!(string_bytes(b"\"\\u0000\x02\\u001F\xff\xfe\\\"\\\\/\"").unwrap(), b"\x00\x02\x1f\xff\xfe\"\\/");
        assert_eq!(string_bytes(br#""caf\u00e9 \ud83e\udd80 \n""#).unwrap(), "café 🦀 \n".as_bytes());
        assert_eq!(string_bytes(r#""é""#.as_bytes()).unwrap(), "é".as_bytes());
        assert_eq!(string_bytes(br#""bad \q""#), None);
    }

    #[test]
    fn strings_agree_with_serde_json_on_valid_text() {
        for text in [r#""plain""#, r#""\u00e9\t\"q\"""#, r#""\ud83d\ude00 x""#, r#""""#, r#""a\/b""#] {
            let want: String = serde_json::from_str(text).unwrap();
            assert_eq!(string_bytes(text.as_bytes()).unwrap(), want.as_bytes(), "{text}");
        }
    }

    #[test]
    fn paths_and_headers_reach_values_in_lines_with_raw_bytes() {
        let line = b"{\"topic\":\"dlq\",\"headers\":[\"a\",\"1\",\"__connect.errors.topic\",\"orders\",\"n\",null,\"a\",\"2\"],\"key\":\"k\xff\",\"payload\":\"\\u0000\x01\x96\xe8\",\"nested\" : { \"list\" : [ 1 , {\"x\":\"y\"} ] }}";
        let key = |k: &str| Step::Key(k.into());
        assert_eq!(lookup(line, &[key("topic")]), Some(&b"\"dlq\""[..]));
        assert_eq!(lookup(line, &[key("headers"), key("__connect.errors.topic")]), Some(&b"\"orders\""[..]));
        assert_eq!(lookup(line, &[key("headers"), key("a")]), Some(&b"\"2\""[..]));
        assert_eq!(lookup(line, &[key("headers"), key("n")]), None);
        assert_eq!(lookup(line, &[key("nested"), key("list"), Step::Index(1), key("x")]), Some(&b"\"y\""[..]));
        assert_eq!(decoded(lookup(line, &[key("payload")]).unwrap()), Some(Decoded::Bytes(vec![0, 1, 0x96, 0xe8])));
        assert_eq!(decoded(lookup(line, &[key("key")]).unwrap()), Some(Decoded::Bytes(b"k\xff".to_vec())));
        let all: Vec<(Vec<u8>, Option<&[u8]>)> = headers(lookup(line, &[key("headers")]).unwrap()).collect();
        assert_eq!(all.len(), 4);
        assert_eq!(all[2], (b"n".to_vec(), None));
        let sink = br#"[{"key":"a","value":"x"},{"value":"y","key":"b"},{"key":"c","value":null},["d","z"]]"#;
        let all: Vec<(Vec<u8>, Option<&[u8]>)> = headers(sink).collect();
        assert_eq!(all, [(b"a".to_vec(), Some(&b"\"x\""[..])), (b"b".to_vec(), Some(&b"\"y\""[..])), (b"c".to_vec(), None), (b"d".to_vec(), Some(&b"\"z\""[..]))]);
        assert_eq!(decoded(b"{ \"b\" : [1, 2] , \"a\":null}"), Some(Decoded::Json(serde_json::json!({"b": [1, 2], "a": null}))));
        assert_eq!(minified(b"{ \"b\" : \"x y\xff\" }"), b"{\"b\":\"x y\xff\"}");
    }

    /// Every path into a set of documents finds what serde_json's own walk finds.
    #[test]
    fn lookups_agree_with_parsed_documents() {
        let docs = [
            r#"{"a":{"b":[10,{"c":"d"}],"e":null},"h":[{"key":"x","value":"1"},{"key":"x","value":"2"}],"f":"g"}"#,
            r#"  {"a" : {"b" : [ 10 , { "c" : "d\"e" } ]} , "h" : ["x","1","y",{"z":true}] }  "#,
            r#"{"a":[],"h":[["x",1],["y",[2]]],"f":{"\u0041":"k"}}"#,
        ];
        let key = |k: &str| Step::Key(k.into());
        let paths = vec![
            vec![key("a")],
            vec![key("a"), key("b")],
            vec![key("a"), key("b"), Step::Index(1), key("c")],
            vec![key("a"), key("e")],
            vec![key("h"), key("x")],
            vec![key("h"), key("y")],
            vec![key("h"), Step::Index(0)],
            vec![key("f"), key("A")],
            vec![key("missing")],
        ];
        for doc in docs {
            let value: Value = serde_json::from_str(doc).unwrap();
            for path in &paths {
                let want = crate::path::lookup(&value, path).filter(|v| !v.is_null()).cloned();
                let got = lookup(doc.as_bytes(), path).and_then(decoded).map(|d| match d {
                    Decoded::Bytes(b) => Value::String(String::from_utf8(b).unwrap()),
                    Decoded::Json(v) => v,
                });
                assert_eq!(got, want, "{doc} {path:?}");
            }
        }
    }
}
