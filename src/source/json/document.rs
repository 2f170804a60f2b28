//! JSON documents that hold records, as command-line tools print them: an array
//! (`gcloud … --format=json`), a wrapper object (`aws sqs receive-message` prints
//! `{"Messages": […]}`, Pub/Sub's REST pull `{"receivedMessages": […]}`), pretty-printed
//! objects one after another, or one record a file. Each becomes a JSON line at the line its
//! record starts on, so the line decoder reads it and names its line.

use crate::raw_json;

/// The members whose array holds the records of a wrapper object.
pub const WRAPPERS: [&str; 7] = ["Messages", "receivedMessages", "Records", "records", "messages", "items", "Items"];

/// Whether a text that starts with `head` may be a JSON document rather than JSON lines: its
/// first line opens an object or array that the line does not close, or is whole and holds
/// records (an array of objects, a wrapper object such as `{"Messages": […]}`, as compact
/// JSON writes them). `to_lines` then decides: anything but a sequence of valid values is
/// read as lines, so a truncated first line of a JSON-lines dump stays a rejected line.
pub fn is_document(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let Some(s) = head.iter().position(|b| !b.is_ascii_whitespace()) else { return false };
    if !matches!(head[s], b'{' | b'[') {
        return false;
    }
    let line = match head[s..].iter().position(|&b| b == b'\n') {
        Some(nl) => &head[s..s + nl],
        // An array of objects, however long its first line: no line of JSON-lines records is
        // an array (`rabbitmqadmin -f raw_json get` writes a hundred messages on one line).
        None if head[s] == b'[' => return head.get(raw_json::skip_ws(head, s + 1)) == Some(&b'{'),
        // A first line longer than the head says nothing: read as lines.
        None if head.len() >= HEAD_LIMIT => return false,
        None => &head[s..],
    };
    match raw_json::value_end(line, 0) {
        None => true,
        Some(end) => holds_records(&line[..end]),
    }
}

/// Whether a whole value holds records: an array whose first element is an object, or an
/// object with a wrapper member holding an array.
fn holds_records(value: &[u8]) -> bool {
    match value.first() {
        Some(b'[') => raw_json::elements(value).next().is_some_and(|first| first.first() == Some(&b'{')),
        Some(b'{') => raw_json::members(value).any(|(k, v)| WRAPPERS.iter().any(|w| w.as_bytes() == &*k) && v.first() == Some(&b'[')),
        _ => false,
    }
}

/// A head this long without a newline may be a long first line, not the whole text.
const HEAD_LIMIT: usize = 64 << 10;

/// The records of a document as JSON lines, each on the line its record starts on (blank lines
/// before it), or None when the text is not a sequence of JSON values.
pub fn to_lines(text: &[u8]) -> Option<Vec<u8>> {
    let text_start = text.as_ptr() as usize;
    let mut out = Vec::with_capacity(text.len());
    let (mut line, mut counted_to) = (1usize, 0usize);
    let mut lines_out = 1usize;
    let mut pos = raw_json::skip_ws(text, if text.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 });
    while pos < text.len() {
        let end = raw_json::value_end(text, pos)?;
        let value = &text[pos..end];
        serde_json::from_slice::<serde::de::IgnoredAny>(value).ok()?;
        for record in records(value)? {
            let at = record.as_ptr() as usize - text_start;
            line += text[counted_to..at].iter().filter(|&&b| b == b'\n').count();
            counted_to = at;
            while lines_out < line {
                out.push(b'\n');
                lines_out += 1;
            }
            out.extend_from_slice(&raw_json::minified(record));
            out.push(b'\n');
            lines_out += 1;
        }
        pos = raw_json::skip_ws(text, end);
    }
    Some(out)
}

/// The records one top-level value holds.
fn records(value: &[u8]) -> Option<Vec<&[u8]>> {
    Some(match value.first()? {
        b'[' => raw_json::elements(value).collect(),
        b'{' => {
            let wrapped = raw_json::members(value).find(|(k, v)| WRAPPERS.iter().any(|w| w.as_bytes() == &**k) && v.first() == Some(&b'['));
            match wrapped {
                Some((_, list)) => raw_json::elements(list).collect(),
                None => vec![value],
            }
        }
        // A scalar is a record the decoder rejects as not an object.
        _ => vec![value],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_compact_array_of_objects_is_a_document() {
        let long: Vec<u8> = [b"[{\"a\":\"".to_vec(), vec![b'x'; HEAD_LIMIT + 10]].concat();
        assert!(is_document(&long));
        assert!(is_document(&long[..100]), "a head cut inside the first line");
        let lines: Vec<u8> = [b"{\"a\":\"".to_vec(), vec![b'x'; HEAD_LIMIT + 10]].concat();
        assert!(!is_document(&lines), "a long JSON-lines record is not");
        assert!(!is_document(b"[1,2,3"), "an array of numbers is not");
    }

    #[test]
    fn documents_are_told_from_lines() {
        assert!(is_document(b"[\n  {\"a\": 1}\n]"));
        assert!(is_document(b"  {\n  \"Messages\": []\n}"));
        assert!(!is_document(b"{\"a\":1}\n{\"a\":2}\n"));
        // A head as long as heads are, without a newline: a first line longer than it.
        let long = [&b"{\"a\":\""[..], &vec![b'x'; HEAD_LIMIT]].concat();
        assert!(!is_document(&long[..HEAD_LIMIT]));
        assert!(!is_document(b"not json\n"));
    }

    #[test]
    fn records_land_on_the_line_they_start_on() {
        let sqs = b"{\n  \"Messages\": [\n    {\n      \"MessageId\": \"m-1\",\n      \"Body\": \"a b\"\n    },\n    {\n      \"MessageId\": \"m-2\"\n    }\n  ]\n}\n";
        let lines = to_lines(sqs).unwrap();
        let text = String::from_utf8(lines).unwrap();
        let numbered: Vec<(usize, &str)> = text.lines().enumerate().filter(|(_, l)| !l.is_empty()).map(|(i, l)| (i + 1, l)).collect();
        assert_eq!(numbered, [(3, r#"{"MessageId":"m-1","Body":"a b"}"#), (7, r#"{"MessageId":"m-2"}"#)]);
        // gcloud's array, pretty objects one after another, one object, nothing.
        let gcloud = b"[\n  {\"ackId\": \"x\", \"message\": {\"data\": \"eA==\"}},\n  {\"ackId\": \"y\"}\n]";
        assert_eq!(String::from_utf8(to_lines(gcloud).unwrap()).unwrap(), "\n{\"ackId\":\"x\",\"message\":{\"data\":\"eA==\"}}\n{\"ackId\":\"y\"}\n");
        assert_eq!(String::from_utf8(to_lines(b"{\n \"a\": 1\n}\n{\n \"a\": 2\n}").unwrap()).unwrap(), "{\"a\":1}\n\n\n{\"a\":2}\n");
        assert_eq!(to_lines(b"[]").unwrap(), b"");
        assert_eq!(to_lines(b"{\"receivedMessages\": []}").unwrap(), b"");
        assert!(to_lines(b"[{\"a\": 1}").is_none());
        // A JSON-lines dump whose first line is cut short is no document.
        assert!(to_lines(b"{\"a\": 1, \"b\n{\"a\": 2}\n{\"a\": 3}\n").is_none());
        assert!(!is_document(b"[1, 2]\n{\"a\": 1}\n"));
        // Compact documents: a wrapper object, an array of records, one a line or alone.
        assert!(is_document(b"{\"Messages\":[{\"MessageId\":\"m\"}]}"));
        assert!(is_document(b"{\"Messages\":[{\"MessageId\":\"m\"}]}\n{\"Messages\":[]}\n"));
        assert!(is_document(b"[{\"ackId\":\"a\"}]"));
        assert!(!is_document(b"{\"id\":\"a\",\"items\":\"INVALID\"}\n"));
        assert_eq!(String::from_utf8(to_lines(b"{\"Messages\":[{\"a\":1},{\"a\":2}]}\n{\"Messages\":[{\"a\":3}]}\n").unwrap()).unwrap(), "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n");
    }
}
