//! Stack signatures remembered by their trace's shape: a dump repeats a few traces with
//! different messages, and parsing each costs more than all the rest of reading its row.

use std::cell::RefCell;

use crate::profile::remember::{self, Answers};
use crate::profile::search;

/// The longest trace remembered at all (a longer one is parsed each time).
const LONGEST: usize = 64 << 10;

/// Each thread's shapes: signatures by the rules' number and a 128-bit digest of the shape
/// (`remember::digest`), and the text shaped last with its digest, so the slots that read one
/// trace (its type, and its type with frames) shape it once.
#[derive(Default)]
struct Memory {
    key: Vec<u8>,
    last: (u8, Vec<u8>, Option<u128>),
    known: Answers<(u64, u128)>,
    /// `escaped_shape`'s backslashes, kept for the next trace's.
    backslashes: Vec<u64>,
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

/// `with` given the signature of a trace under the rules numbered `rules` (see `with_digest`),
/// the trace's digest taken again from the last call when it read the same text: the slots
/// that read one trace (its type, and its type with frames) shape it once.
pub fn with_remembered<T>(rules: u64, trace: Written, compute: impl FnOnce() -> (String, bool), with: impl FnOnce(&str) -> T) -> T {
    let (text, tag) = match trace {
        Written::Text(text) => (text, b'T'),
        Written::Json(raw) => (raw, b'J'),
    };
    if !shapeable(trace) {
        return with_digest(rules, None, compute, with);
    }
    let known = MEMORY.with(|memory| {
        let memory = memory.borrow();
        (memory.last.0 == tag && memory.last.1 == text.as_bytes()).then_some(memory.last.2)
    });
    let digest = known.unwrap_or_else(|| {
        let digest = digest(trace);
        MEMORY.with(|memory| {
            let last = &mut memory.borrow_mut().last;
            last.1.clear();
            last.1.extend_from_slice(text.as_bytes());
            (last.0, last.2) = (tag, digest);
        });
        digest
    });
    with_digest(rules, digest, compute, with)
}

/// Whether a trace may be remembered by its shape at all: not very long, and (as text) with
/// no marker byte in it. (JSON text holds no raw control byte: marker bytes would be `\u`
/// escapes, which `escaped_shape` refuses.)
fn shapeable(trace: Written) -> bool {
    match trace {
        Written::Text(text) => text.len() <= LONGEST && memchr::memchr2(1, 2, text.as_bytes()).is_none(),
        Written::Json(raw) => raw.len() <= LONGEST,
    }
}

/// The digest a trace's signatures are remembered by (`with_digest`): a keyed 128-bit digest
/// of its shape, or None for a trace not remembered: one whose shape could be ambiguous
/// (marker bytes in it, a `\u` escape that could hide indentation) or that is very long. A
/// caller that reads one trace in several slots asks once.
pub fn digest(trace: Written) -> Option<u128> {
    if !shapeable(trace) {
        return None;
    }
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        let Memory { key, backslashes, .. } = &mut *memory;
        key.clear();
        let shaped = match trace {
            Written::Text(text) => {
                key.push(b'T');
                shape(text, key);
                true
            }
            Written::Json(raw) => {
                key.push(b'J');
                escaped_shape(raw, key, backslashes)
            }
        };
        shaped.then(|| remember::digest(key))
    })
}

/// `with` given the signature of the trace of `digest` under the rules numbered `rules`, from
/// memory or by `compute` (which also says whether the trace had frames), then remembered:
/// traces of one shape with frames have one signature, since a signature with frames never
/// reads an exception's message. Without a digest it is computed every time.
pub fn with_digest<T>(rules: u64, digest: Option<u128>, compute: impl FnOnce() -> (String, bool), with: impl FnOnce(&str) -> T) -> T {
    let Some(digest) = digest else {
        let (signature, _) = compute();
        return with(&signature);
    };
    MEMORY.with(|memory| {
        let mut memory = memory.borrow_mut();
        if let Some(signature) = memory.known.get(&(rules, digest)) {
            return with(signature);
        }
        let (signature, with_frames) = compute();
        let out = with(&signature);
        if with_frames {
            memory.known.remember((rules, digest), signature);
        }
        out
    })
}

/// `shape` of a JSON string's text, read as written: lines end at `\n` escapes, an escape is
/// one unit (so `\\n` is a backslash and an n), a line is indented when it starts with
/// whitespace or a `\t`, `\f` or `\r` escape. The text is kept as written, `\n` escapes
/// included, but for each unindented line's shape: runs of frames are copied at once. False
/// when the text does not end with its quote, or holds a `\u` escape (an escaped space could
/// hide an indentation). `backslashes` is scratch for where the escapes are.
fn escaped_shape(raw: &str, into: &mut Vec<u8>, backslashes: &mut Vec<u64>) -> bool {
    let Some(body) = raw.strip_suffix('"') else { return false };
    let bytes = body.as_bytes();
    // A trace has an escape every few dozen bytes (`\n\tat …`): found all in one pass, where
    // a search per escape costs more to start than the bytes it reads.
    positions(bytes, b'\\', backslashes);
    let mut start = 0;
    let mut from = 0;
    // Where the text not yet in `into` starts: the lines since the last unindented one.
    let mut kept = 0;
    loop {
        // The next `\n` escape: each backslash takes the byte after it.
        let mut end = bytes.len();
        while let Some(at) = next_position(backslashes, from) {
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
        let indented = match line.as_bytes() {
            [b'\\', b't' | b'f' | b'r', ..] => true,
            // `char::is_whitespace` of an ASCII byte, without decoding a character.
            [first, ..] if first.is_ascii() => matches!(first, b'\t'..=b'\r' | b' '),
            _ => line.starts_with(char::is_whitespace),
        };
        if !indented {
            into.extend_from_slice(&bytes[kept..start]);
            // (An empty line, as after a trace's last `\n`, adds nothing.)
            if !line.is_empty() {
                shape_line(line, false, into);
            }
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

/// One bit for each byte of `bytes`, 64 to a word, set where the byte is `byte`.
fn positions(bytes: &[u8], byte: u8, into: &mut Vec<u64>) {
    into.clear();
    let mut chunks = bytes.chunks_exact(64);
    for chunk in &mut chunks {
        into.push(word_of(chunk.try_into().expect("64 bytes"), byte));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // The last bytes padded with zeros, which are not `byte` (a search for 0 reads them one
        // at a time).
        let mut padded = [0u8; 64];
        padded[..rest.len()].copy_from_slice(rest);
        let word = if byte == 0 { word_of_bytes(rest, byte) } else { word_of(&padded, byte) };
        into.push(word);
    }
}

/// `positions` of up to 64 bytes, a byte at a time.
fn word_of_bytes(bytes: &[u8], byte: u8) -> u64 {
    bytes.iter().enumerate().fold(0, |word, (i, &b)| word | u64::from(b == byte) << i)
}

/// `positions` of 64 bytes: four 16-byte compares (SSE2, which every x86-64 CPU has).
#[cfg(target_arch = "x86_64")]
fn word_of(chunk: &[u8; 64], byte: u8) -> u64 {
    use std::arch::x86_64::*;
    let mut word = 0u64;
    for (i, part) in chunk.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of x86-64; the load reads the 16 bytes of `part`, at any alignment.
        let mask = unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(part.as_ptr().cast()), _mm_set1_epi8(byte as i8))) };
        word |= u64::from(mask as u16) << (16 * i);
    }
    word
}

#[cfg(not(target_arch = "x86_64"))]
fn word_of(chunk: &[u8; 64], byte: u8) -> u64 {
    word_of_bytes(chunk, byte)
}

/// The first set bit of `words` at or after `from`.
fn next_position(words: &[u64], from: usize) -> Option<usize> {
    let mut index = from / 64;
    let mut bits = words.get(index)? & (u64::MAX << (from % 64));
    loop {
        if bits != 0 {
            return Some(index * 64 + bits.trailing_zeros() as usize);
        }
        index += 1;
        bits = *words.get(index)?;
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
    if indented {
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
        match type_before_colon(part) {
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

/// Where `part` has its first `: ` when the text before it is a type name (`is_type_name`):
/// bytes that may be in a name are read through a table, and only a name with a byte beyond
/// ASCII is searched and checked in full.
fn type_before_colon(part: &[u8]) -> Option<usize> {
    let name = name_length(part);
    match part.get(name) {
        // No `:` before this one, since `:` ends a name.
        Some(b':') if part.get(name + 1) == Some(&b' ') => part.first().filter(|b| b.is_ascii_alphabetic() || **b == b'_').map(|_| name),
        Some(b) if !b.is_ascii() => colon_space(part).filter(|&at| is_type_name(&part[..at])),
        // Any other byte cannot be in a name, and the first `: ` is at it or after it.
        _ => None,
    }
}

/// How many bytes `part` starts with that may be in a type name: 16 at a time (SSE2, which
/// every x86-64 CPU has), then through the table.
fn name_length(part: &[u8]) -> usize {
    let mut at = 0;
    #[cfg(target_arch = "x86_64")]
    while at + 16 <= part.len() {
        let outside = !name_bytes(&part[at..at + 16]);
        if outside != 0 {
            return at + outside.trailing_zeros() as usize;
        }
        at += 16;
    }
    at + part[at..].iter().position(|&b| !TYPE_NAME_BYTE[usize::from(b)]).unwrap_or(part.len() - at)
}

/// One bit for each of 16 bytes, set where the byte is one `TYPE_NAME_BYTE` allows.
#[cfg(target_arch = "x86_64")]
fn name_bytes(sixteen: &[u8]) -> u16 {
    use std::arch::x86_64::*;
    debug_assert_eq!(sixteen.len(), 16);
    // SAFETY: SSE2 is part of x86-64; the load reads the 16 bytes of `sixteen`, at any alignment.
    unsafe {
        let v = _mm_loadu_si128(sixteen.as_ptr().cast());
        // A range [low, low + n) is the signed bytes below -128 + n once shifted to start at -128.
        let within = |v: __m128i, low: u8, n: u8| {
            let shifted = _mm_add_epi8(v, _mm_set1_epi8(128u8.wrapping_sub(low) as i8));
            _mm_cmplt_epi8(shifted, _mm_set1_epi8((n as i8).wrapping_add(i8::MIN)))
        };
        let letter = within(_mm_or_si128(v, _mm_set1_epi8(0x20)), b'a', 26);
        let digit = within(v, b'0', 10);
        let is = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
        let sign = _mm_or_si128(_mm_or_si128(is(b'.'), is(b'_')), _mm_or_si128(_mm_or_si128(is(b'$'), is(b'+')), is(b'`')));
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), sign)) as u16
    }
}

/// The ASCII bytes of a type name: letters, digits, `.`, `_`, `$`, `+` and a backquote.
static TYPE_NAME_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'$' | b'+' | b'`');
        b += 1;
    }
    table
};

/// A type name as `parse::exception_line` takes one (a name in ASCII alone is read through
/// `TYPE_NAME_BYTE` by `type_before_colon`, which calls this for the others).
fn is_type_name(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(super::parse::is_type_name)
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
        super::escaped_shape(raw, &mut into, &mut Vec::new()).then_some(into)
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

#[cfg(test)]
mod scan_tests {
    use super::*;

    /// Random texts of the bytes these scans look for, and of a letter beyond ASCII.
    fn texts(count: usize) -> Vec<Vec<u8>> {
        let alphabet: Vec<&[u8]> = vec![b"a", b"Z", b"_", b"7", b".", b"$", b"+", b"`", b":", b" ", b": ", b"\\", b"-", b"(", b"\t", "é".as_bytes(), "ß".as_bytes(), "·".as_bytes()];
        let mut next = crate::testing::random(0x9e37_79b9_7f4a_7c15);
        (0..count)
            .map(|_| {
                let len = (next() % 90) as usize;
                let mut text = Vec::new();
                while text.len() < len {
                    let pick = next();
                    // Runs of name bytes, so names of every length meet a colon.
                    let piece = if pick % 3 == 0 { alphabet[(pick >> 8) as usize % alphabet.len()] } else { alphabet[(pick >> 8) as usize % 8] };
                    text.extend_from_slice(piece);
                }
                text
            })
            .collect()
    }

    #[test]
    fn a_type_before_its_colon_is_found_as_a_search_and_a_check_find_it() {
        let mut found = 0;
        for text in texts(100_000) {
            let expected = colon_space(&text).filter(|&at| is_type_name(&text[..at]));
            found += usize::from(expected.is_some());
            assert_eq!(type_before_colon(&text), expected, "{:?}", String::from_utf8_lossy(&text));
        }
        assert!(found > 1_000, "only {found} texts held a type before a colon");
    }

    #[test]
    fn backslashes_are_found_where_they_are() {
        let mut words = Vec::new();
        for text in texts(20_000) {
            positions(&text, b'\\', &mut words);
            for from in 0..=text.len() {
                let expected = text[from.min(text.len())..].iter().position(|&b| b == b'\\').map(|i| from + i);
                assert_eq!(next_position(&words, from), expected);
            }
        }
    }
}
