//! Stack signatures remembered by their trace's shape: a dump repeats a few traces with
//! different messages, and parsing each costs more than all the rest of reading its row.

use std::cell::RefCell;

use crate::profile::remember::{Answers, SEED};
use crate::profile::search;

/// The longest trace remembered at all (a longer one is parsed each time).
const LONGEST: usize = 64 << 10;

/// Each thread's shapes: signatures by the rules' number and a 128-bit digest of the shape
/// (`remember::SEED`), and the text shaped last with its digest, so the slots that read one
/// trace (its type, and its type with frames) shape it once.
#[derive(Default)]
struct Memory {
    key: Vec<u8>,
    last: (u8, Vec<u8>, Option<u128>),
    known: Answers<(u64, u128)>,
}

thread_local! {
    static MEMORY: RefCell<Memory> = RefCell::new(Memory::default());
}

/// How a trace is written: its text, or a JSON string's body as written (escapes in place,
/// closing quote last). Each has its own keys.
#[derive(Clone, Copy)]
pub enum Written<'t> {
    Text(&'t str),
    Json(&'t str),
}

/// `with` given the signature of a trace under the rules numbered `rules`, by `compute` (which
/// also says whether the trace had frames) or from memory: traces of one shape with frames
/// have one signature, since a signature with frames never reads an exception's message.
/// A trace whose shape could be ambiguous (marker bytes in it, a `\u` escape that could hide
/// indentation) or that is very long is computed every time.
pub fn with_remembered<T>(rules: u64, trace: Written, compute: impl FnOnce() -> (String, bool), with: impl FnOnce(&str) -> T) -> T {
    let (text, tag) = match trace {
        Written::Text(text) => (text, b'T'),
        Written::Json(raw) => (raw, b'J'),
    };
    // (JSON text holds no raw control byte: marker bytes would be `\u` escapes, which
    // `escaped_shape` refuses.)
    let shapeable = text.len() <= LONGEST && (matches!(trace, Written::Json(_)) || memchr::memchr2(1, 2, text.as_bytes()).is_none());
    if !shapeable {
        let (signature, _) = compute();
        return with(&signature);
    }
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let Memory { key, last, known } = &mut *memory;
        let digest = if last.0 == tag && last.1 == text.as_bytes() {
            last.2
        } else {
            key.clear();
            key.push(tag);
            let shaped = match trace {
                Written::Text(text) => {
                    shape(text, key);
                    true
                }
                Written::Json(raw) => escaped_shape(raw, key),
            };
            // A shape that could be ambiguous is neither looked up nor remembered.
            let digest = shaped.then(|| xxhash_rust::xxh3::xxh3_128_with_seed(key, *SEED));
            last.1.clear();
            last.1.extend_from_slice(text.as_bytes());
            (last.0, last.2) = (tag, digest);
            digest
        };
        if let Some(signature) = digest.and_then(|digest| known.get(&(rules, digest))) {
            return with(signature);
        }
        let (signature, with_frames) = compute();
        let out = with(&signature);
        if let Some(digest) = digest.filter(|_| with_frames) {
            known.remember((rules, digest), signature);
        }
        out
    })
}

/// `shape` of a JSON string's text, read as written: lines end at `\n` escapes, an escape is
/// one unit (so `\\n` is a backslash and an n), a line is indented when it starts with
/// whitespace or a `\t`, `\f` or `\r` escape. The text is kept as written, `\n` escapes
/// included, but for each unindented line's shape: runs of frames are copied at once. False
/// when the text does not end with its quote, or holds a `\u` escape (an escaped space could
/// hide an indentation).
fn escaped_shape(raw: &str, into: &mut Vec<u8>) -> bool {
    let Some(body) = raw.strip_suffix('"') else { return false };
    let bytes = body.as_bytes();
    let mut start = 0;
    let mut from = 0;
    // Where the text not yet in `into` starts: the lines since the last unindented one.
    let mut kept = 0;
    loop {
        // The next `\n` escape: backslashes are found by memchr, each taking the byte after it.
        let mut end = bytes.len();
        while let Some(at) = memchr::memchr(b'\\', bytes.get(from..).unwrap_or_default()).map(|i| from + i) {
            match bytes.get(at + 1) {
                Some(b'n') => {
                    end = at;
                    break;
                }
                Some(b'u') => return false,
                _ => {}
            }
            from = at + 2;
        }
        let line_end = end.min(body.len());
        let line = &body[start..line_end];
        let indented = line.starts_with(char::is_whitespace) || ["\\t", "\\f", "\\r"].iter().any(|e| line.starts_with(e));
        if !indented {
            into.extend_from_slice(&bytes[kept..start]);
            shape_line(line, false, into);
            kept = line_end;
        }
        if end >= bytes.len() {
            into.extend_from_slice(&bytes[kept..]);
            return true;
        }
        start = end + 2;
        from = start;
    }
}

/// Every line of a trace as it is, except on unindented lines (where exceptions are
/// written: `Type: message`, `Caused by: Type: message`, .NET's `A: m ---> B: m`) the text
/// after each type, which is the message. A line is indented as the parser trims it: any
/// whitespace first.
fn shape(trace: &str, into: &mut Vec<u8>) {
    for line in search::lines(trace) {
        shape_line(line, line.starts_with(char::is_whitespace), into);
        into.push(b'\n');
    }
}

/// One line of `shape`: as it is when indented, else with each message cut after its type,
/// where the text before the message is a type name as the parser reads one (anything else —
/// a frame, a thread name, a sentence — is kept whole). memchr and byte comparisons: `str`
/// pattern searches cost more to set up than these lines take to read.
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
        match colon_space(part).filter(|&at| is_type_name(&part[..at])) {
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

/// A type name as `parse::exception_line` takes one: a letter or `_` first, then letters,
/// digits, `.`, `_`, `$`, `+` or a backquote.
fn is_type_name(bytes: &[u8]) -> bool {
    if bytes.is_ascii() {
        let part = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'$' | b'+' | b'`');
        return bytes.first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') && bytes.iter().all(part);
    }
    std::str::from_utf8(bytes).is_ok_and(|kind| {
        kind.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_') && kind.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '$' | '+' | '`'))
    })
}

/// Where the first `: ` of `bytes` starts.
fn colon_space(bytes: &[u8]) -> Option<usize> {
    search::find(bytes, b": ")
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

#[cfg(test)]
mod tests {
    fn key(raw: &str) -> Option<Vec<u8>> {
        let mut into = Vec::new();
        super::escaped_shape(raw, &mut into).then_some(into)
    }

    #[test]
    fn escaped_traces_share_a_key_only_when_their_messages_alone_differ() {
        let a = r#"x.Wrapper: failed for order 17\n\tat a.B.c(B.java:12)\n\tat a.D.e(D.java:3)\nCaused by: x.Boom: id 9\n\tat a.F.g(F.java:40)""#;
        let other_messages = r#"x.Wrapper: failed for order 2048\n\tat a.B.c(B.java:12)\n\tat a.D.e(D.java:3)\nCaused by: x.Boom: id 77\n\tat a.F.g(F.java:40)""#;
        assert_eq!(key(a), key(other_messages));
        for different in [
            r#"x.Wrapper: failed for order 17\n\tat a.B.c(B.java:13)\n\tat a.D.e(D.java:3)\nCaused by: x.Boom: id 9\n\tat a.F.g(F.java:40)""#,
            r#"x.Wrapper: failed for order 17\n\tat a.B.c(B.java:12)\nCaused by: x.Boom: id 9\n\tat a.D.e(D.java:3)\n\tat a.F.g(F.java:40)""#,
            r#"x.Wrapper: failed for order 17\n\tat a.B.c(B.java:12)\n\tat a.D.e(D.java:3)\nCaused by: x.Bang: id 9\n\tat a.F.g(F.java:40)""#,
            r#"x.Wrapper: failed for order 17\n\tat a.B.c(B.java:12)\\n\tat a.D.e(D.java:3)\nCaused by: x.Boom: id 9\n\tat a.F.g(F.java:40)""#,
            r#"x.Wrapper: failed for order 17\n\tat a.B.c(B.java:12)\n\tat a.D.e(D.java:3)\nCaused by: x.Boom: id 9\n\tat a.F.g(F.java:40)\n""#,
        ] {
            assert_ne!(key(a), key(different), "{different}");
        }
        assert_eq!(key(r#"x.Boom: a \u0020 b""#), None, "a \\u escape is not shaped");
        assert_eq!(key("no closing quote"), None);
    }
}
