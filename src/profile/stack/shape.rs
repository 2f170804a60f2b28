//! Stack signatures remembered by their trace's shape: a dump repeats a few traces with
//! different messages, and parsing each costs more than all the rest of reading its row.

use std::cell::RefCell;
use std::collections::HashMap;

/// Shapes remembered per thread before the memory starts over.
const REMEMBERED: usize = 4096;

type Memory = (Vec<u8>, HashMap<Vec<u8>, String, foldhash::fast::FixedState>);

thread_local! {
    static MEMORY: RefCell<Memory> = RefCell::new((Vec::new(), HashMap::default()));
}

/// `with` given the signature of `trace` under rules written as `rules`, by `compute` (which
/// also says whether the trace had frames) or from memory: traces of one shape with frames
/// have one signature, since a signature with frames never reads an exception's message.
pub fn with_remembered<T>(rules: &[u8], trace: &str, compute: impl FnOnce() -> (String, bool), with: impl FnOnce(&str) -> T) -> T {
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let (key, known) = &mut *memory;
        key.clear();
        key.extend_from_slice(rules);
        shape(trace, key);
        if let Some(signature) = known.get(key.as_slice()) {
            return with(signature);
        }
        let (signature, with_frames) = compute();
        let out = with(&signature);
        if with_frames {
            if known.len() >= REMEMBERED {
                known.clear();
            }
            known.insert(key.clone(), signature);
        }
        out
    })
}

/// `with_remembered` for a trace written as a JSON string (escapes in place, closing quote
/// last), keyed by its shape as written (apart from the shapes of unescaped traces). A trace
/// with a `\u` escape is unescaped first: an escaped space could hide an indentation.
pub fn with_remembered_escaped<T>(rules: &[u8], raw: &str, compute: impl FnOnce() -> (String, bool), with: impl FnOnce(&str) -> T) -> T {
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let (key, known) = &mut *memory;
        key.clear();
        key.extend_from_slice(rules);
        key.push(b'E');
        let shaped = !raw.contains("\\u") && escaped_shape(raw, key);
        if shaped {
            if let Some(signature) = known.get(key.as_slice()) {
                return with(signature);
            }
        }
        let (signature, with_frames) = compute();
        let out = with(&signature);
        if shaped && with_frames {
            if known.len() >= REMEMBERED {
                known.clear();
            }
            known.insert(key.clone(), signature);
        }
        out
    })
}

/// `shape` of a JSON string's text, read as written: lines end at `\n` escapes, an escape is
/// one unit (so `\\n` is a backslash and an n), a line indented by a space or a `\t`. False
/// when the text does not end with its closing quote.
fn escaped_shape(raw: &str, into: &mut Vec<u8>) -> bool {
    let Some(body) = raw.strip_suffix('"') else { return false };
    let bytes = body.as_bytes();
    let mut start = 0;
    let mut from = 0;
    loop {
        // The next `\n` escape: backslashes are found by memchr, each taking the byte after it.
        let mut end = bytes.len();
        while let Some(at) = memchr::memchr(b'\\', bytes.get(from..).unwrap_or_default()).map(|i| from + i) {
            if bytes.get(at + 1) == Some(&b'n') {
                end = at;
                break;
            }
            from = at + 2;
        }
        let line = &body[start..end.min(body.len())];
        let line = line.strip_suffix("\\r").unwrap_or(line);
        shape_line(line, line.starts_with(' ') || line.starts_with("\\t"), into);
        into.push(b'\n');
        if end >= bytes.len() {
            return true;
        }
        start = end + 2;
        from = start;
    }
}

/// Every line of a trace as it is, except on unindented lines (where exceptions are
/// written: `Type: message`, `Caused by: Type: message`, .NET's `A: m ---> B: m`) the text
/// after each type, which is the message.
fn shape(trace: &str, into: &mut Vec<u8>) {
    for line in trace.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        shape_line(line, line.starts_with([' ', '\t']), into);
        into.push(b'\n');
    }
}

/// One line of `shape`: as it is when indented or without `: `, else its exception types.
/// (memchr and byte comparisons: `str` pattern searches cost more to set up than these lines
/// take to read.)
fn shape_line(line: &str, indented: bool, into: &mut Vec<u8>) {
    let bytes = line.as_bytes();
    if indented || colon_space(bytes).is_none() {
        into.extend_from_slice(bytes);
        return;
    }
    let mut rest = bytes;
    for marker in [&b"Caused by: "[..], b"[cause]: ", b"Suppressed: "] {
        if let Some(after) = rest.strip_prefix(marker) {
            into.extend_from_slice(marker);
            rest = after;
            break;
        }
    }
    loop {
        let arrow = arrow(rest);
        let part = &rest[..arrow.unwrap_or(rest.len())];
        match colon_space(part) {
            Some(at) => {
                into.extend_from_slice(&part[..at]);
                into.push(1);
            }
            None => {
                into.extend_from_slice(part);
                into.push(2);
            }
        }
        match arrow {
            Some(at) => rest = &rest[at + b" ---> ".len()..],
            None => return,
        }
    }
}

/// Where the first `: ` of `bytes` starts.
fn colon_space(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = memchr::memchr(b':', &bytes[from..]).map(|i| from + i) {
        if bytes.get(at + 1) == Some(&b' ') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Where the first ` ---> ` of `bytes` starts (.NET's inner exception).
fn arrow(bytes: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'>', &bytes[from..]).map(|i| from + i) {
        if at >= 4 && &bytes[at - 4..at] == b" ---" && bytes.get(at + 1) == Some(&b' ') {
            return Some(at - 4);
        }
        from = at + 1;
    }
    None
}
