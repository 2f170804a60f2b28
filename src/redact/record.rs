//! One record's JSON text rewritten with its values replaced, as the rules say: written
//! compact, every value left alone keeping its bytes as written (binary strings included).
//! A payload or personal value that reappears in the same record's text gets its token there.

use std::collections::HashMap;

use serde_json::Value;

use super::detect;
use super::rules::{Mode, Node};
use super::token::{Keyed, Shape};
use crate::path::{base64_decode, Step};
use crate::profile::template;
use crate::raw_json::{members_as_written as members, string_bytes, string_text as text_of};

/// Values of a record's payload and personal fields this short or shorter are not looked
/// for in its text: a quantity of 3 is not the 3 of a line number.
const MIN_NEEDLE: usize = 4;

/// A value of the record's payload or personal fields and the token it became.
struct Needle {
    value: Vec<u8>,
    token: Vec<u8>,
    /// Finds the value in a text (made once, used on each of the record's texts).
    finder: memchr::memmem::Finder<'static>,
    /// Where in the record's text the value stands, when it is a string of the payload: the
    /// writer takes its token from here rather than make it again.
    at: usize,
}

impl Needle {
    fn new(value: Vec<u8>, token: Vec<u8>) -> Needle {
        let finder = memchr::memmem::Finder::new(&value).into_owned();
        Needle { value, token, finder, at: 0 }
    }
}

/// Rewrites records under one profile's rules and one key; one per thread (a clone starts
/// with no replacements remembered).
pub struct Redactor<'r> {
    /// Where a record starts in the rules, and its mode there.
    root: Option<&'r Node>,
    root_mode: Mode,
    /// Where a record written as a bare list starts instead (a `.headers` line without its
    /// `{"headers": …}` envelope).
    list_root: Option<(Option<&'r Node>, Mode)>,
    /// `--coarsen-times`: how the time is rounded down, if it is.
    coarsen: Option<super::coarsen::Coarsen>,
    /// The profile's `keep_card_last_four`.
    card_last_four: bool,
    keyed: Keyed,
    /// Replacements made so far, by the value's digest and kind.
    made: HashMap<(u128, &'static str), String, foldhash::fast::FixedState>,
}

impl Clone for Redactor<'_> {
    fn clone(&self) -> Self {
        Redactor { made: HashMap::default(), keyed: self.keyed.clone(), ..*self }
    }
}

impl<'r> Redactor<'r> {
    pub fn new(rules: &'r Node, keyed: Keyed) -> Redactor<'r> {
        Redactor { root: Some(rules), root_mode: mode_of(Some(rules), Mode::Text), list_root: None, coarsen: None, card_last_four: false, keyed, made: HashMap::default() }
    }

    /// Card tokens that end with the card's last four digits.
    pub fn with_card_last_four(mut self, keep: bool) -> Redactor<'r> {
        self.card_last_four = keep;
        self
    }

    /// Times rounded down as `coarsen` says.
    pub fn with_coarsen(mut self, coarsen: Option<super::coarsen::Coarsen>) -> Redactor<'r> {
        self.coarsen = coarsen;
        self
    }

    /// A redactor of the values a record holds under `member` (an S3-sink chunk's `.keys`
    /// file holds the record's `key`, one a line).
    pub fn below(&self, member: &str) -> Redactor<'r> {
        let child = self.root.and_then(|n| n.member(member.as_bytes()));
        Redactor { root: child, root_mode: member_mode(self.root, child, member.as_bytes(), self.root_mode), ..self.clone() }
    }

    /// A redactor of an S3-sink `.headers` file: its lines' `headers` member (or the line,
    /// a bare list) holds the record's headers; `envelope` is `rules::headers_envelope`.
    pub fn for_headers(&self, envelope: &'r Node) -> Redactor<'r> {
        let list = self.below("headers");
        Redactor { root: Some(envelope), root_mode: mode_of(Some(envelope), Mode::Text), list_root: Some((list.root, list.root_mode)), ..self.clone() }
    }

    /// Appends the redacted form of one record's JSON text (checked as JSON already).
    pub fn record(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        let (root, mode) = match self.list_root {
            Some(list) if raw.first() == Some(&b'[') => list,
            _ => (self.root, self.root_mode),
        };
        let mut needles = Vec::new();
        self.collect(raw, root, mode, &mut needles);
        // Longest first, so a value holding another is replaced whole.
        needles.sort_by(|a, b| b.value.len().cmp(&a.value.len()).then_with(|| a.value.cmp(&b.value)));
        needles.dedup_by(|a, b| a.value == b.value);
        self.write(raw, root, mode, &needles, out);
    }

    /// A free text with personal and secret values replaced (a line that is not JSON).
    pub fn text(&mut self, text: &[u8]) -> Vec<u8> {
        self.scrub(text, &[]).unwrap_or_else(|| text.to_vec())
    }

    /// The token of a whole line that is not JSON (whatever it holds is replaced).
    pub fn text_token(&mut self, line: &[u8]) -> String {
        self.keyed.token("line", line, Shape::Value)
    }

    /// The payload's and personal fields' values (and those inside JSON or base64 JSON held
    /// in their strings), with their tokens.
    fn collect(&mut self, raw: &[u8], node: Option<&Node>, mode: Mode, needles: &mut Vec<Needle>) {
        // Nothing below a place the rules leave alone can be a payload value.
        if !matches!(mode, Mode::Token(_)) && node.is_none_or(|n| n.children.is_empty()) {
            return;
        }
        match raw.first() {
            Some(b'{') => {
                for (_, name, value) in members(raw) {
                    let child = node.and_then(|n| n.member(&name));
                    let mode = member_mode(node, child, &name, mode);
                    self.collect(value, child, mode, needles);
                }
            }
            Some(b'[') => self.each_value(raw, node, mode, &mut |this, value, child, mode| this.collect(value, child, mode, needles)),
            Some(b'"') => {
                let Mode::Token(kind) = mode else { return };
                if matches!(kind, "key" | "header") {
                    return;
                }
                let Some(text) = text_of(raw) else { return };
                if is_needle(&text) {
                    let token = self.string_token(kind, &text);
                    self.inner_values(&text, needles);
                    needles.push(Needle { at: raw.as_ptr() as usize, ..Needle::new(text.into_owned(), token.into_bytes()) });
                }
            }
            Some(b'-' | b'0'..=b'9') if matches!(mode, Mode::Token(kind) if !matches!(kind, "key" | "header")) => {
                if raw.iter().filter(|b| b.is_ascii_digit()).count() >= MIN_NEEDLE {
                    let text = std::str::from_utf8(raw).unwrap_or_default();
                    needles.push(Needle::new(raw.to_vec(), self.keyed.number(text).into_bytes()));
                }
            }
            _ => {}
        }
    }

    /// The values of a JSON document held in a payload string, or in base64 there: echoed
    /// into messages (Jackson's `[Source: …]` excerpt) as themselves, not as the string.
    fn inner_values(&mut self, text: &[u8], needles: &mut Vec<Needle>) {
        let decoded;
        let json = match text.first() {
            Some(b'{' | b'[') => text,
            _ if text.len() >= 16 && text.iter().all(|b| b.is_ascii_alphanumeric() || b"+/=_-".contains(b)) => match base64_decode(text) {
                Some(bytes) if matches!(bytes.first(), Some(b'{' | b'[')) => {
                    decoded = bytes;
                    &decoded
                }
                _ => return,
            },
            _ => return,
        };
        let Ok(value) = serde_json::from_slice::<Value>(json) else { return };
        let mut leaves = Vec::new();
        leaf_texts(&value, &mut leaves);
        for (leaf, is_number) in leaves {
            let token = if is_number { self.keyed.number(&leaf) } else { self.string_token("value", leaf.as_bytes()) };
            needles.push(Needle::new(leaf.into_bytes(), token.into_bytes()));
        }
    }

    /// A payload's (or personal field's) string: one token when it is a document or long
    /// (a JSON payload is not prose), else shaped as `replacement` shapes it.
    /// A payload value that is wholly one detected value takes that value's kind (an email in
    /// a payload is `email_…`, as the same email in a message is: one value, one token).
    fn string_token(&mut self, kind: &'static str, text: &[u8]) -> String {
        if text.len() > 200 || matches!(text.first(), Some(b'{' | b'[')) {
            return self.keyed.token(kind, text, Shape::Value);
        }
        let kind = match kind {
            "value" | "key" | "header" => match detect::find(text).as_slice() {
                [whole] if whole.start == 0 && whole.end == text.len() => whole.kind,
                _ => kind,
            },
            personal => personal,
        };
        self.replacement(kind, text)
    }

    /// What replaces `value` so its template stays what the value's was: one value token
    /// where the value templates to one placeholder, one word token where it templates to
    /// words, and where it templates to both (`(415) 555-0100`: `(<*>) <*>`) a token for
    /// each part, its punctuation kept, so a bucket neither merges with another nor splits.
    /// (A word kept there is keyed by itself, a masked part by the value and its place.)
    fn replacement(&mut self, kind: &'static str, value: &[u8]) -> String {
        let mut made = self.shaped_replacement(kind, value);
        if kind == "card" && self.card_last_four {
            let digits: Vec<u8> = value.iter().copied().filter(u8::is_ascii_digit).collect();
            made.push('_');
            made.push_str(std::str::from_utf8(&digits[digits.len().saturating_sub(4)..]).unwrap_or_default());
        }
        made
    }

    fn shaped_replacement(&mut self, kind: &'static str, value: &[u8]) -> String {
        let text = match std::str::from_utf8(value) {
            Ok(text) if !one_value(text) => text,
            _ => return self.keyed.token(kind, value, Shape::Value),
        };
        let key = (xxhash_rust::xxh3::xxh3_128(value), kind);
        if let Some(made) = self.made.get(&key) {
            return made.clone();
        }
        let shaped = template::template(text);
        let made = if shaped == template::PLACEHOLDER {
            self.keyed.token(kind, value, Shape::Value)
        } else if !shaped.contains(template::PLACEHOLDER) {
            self.keyed.token(kind, value, Shape::Word)
        } else {
            let mut out = String::with_capacity(shaped.len() + 32);
            let mut piece = 0u32;
            let mut part = |this: &mut Self, shape| {
                let mut keyed_value = value.to_vec();
                keyed_value.extend_from_slice(&piece.to_be_bytes());
                piece += 1;
                this.keyed.token(kind, &keyed_value, shape)
            };
            for (i, word) in shaped.split(' ').enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                if word.contains(template::PLACEHOLDER) {
                    for (j, between) in word.split(template::PLACEHOLDER).enumerate() {
                        if j > 0 {
                            out.push_str(&part(self, Shape::Value));
                        }
                        out.push_str(between);
                    }
                } else {
                    // A word the template keeps is keyed by itself: `Bearer` is one word
                    // whatever token follows it, as in the template it was.
                    out.push_str(&self.keyed.token(kind, word.as_bytes(), Shape::Word));
                }
            }
            out
        };
        if self.made.len() < 1 << 20 {
            self.made.insert(key, made.clone());
        }
        made
    }

    /// Calls `each` for every value an array holds, with the node and mode it falls under: a
    /// header collection's names are skipped and its values (but nulls) reached by name.
    fn each_value(&mut self, raw: &[u8], node: Option<&Node>, mode: Mode, each: &mut dyn FnMut(&mut Self, &[u8], Option<&Node>, Mode)) {
        if node.is_some_and(|n| n.headers) {
            for (name, value) in crate::raw_json::headers(raw) {
                let child = node.and_then(|n| n.member(&name));
                if let Some(value) = value {
                    each(self, value, child, member_mode(node, child, &name, mode));
                }
            }
            return;
        }
        for (i, item) in crate::raw_json::elements(raw).enumerate() {
            let child = node.and_then(|n| n.child(&Step::Index(i)));
            each(self, item, child, mode_of(child, mode));
        }
    }

    fn write(&mut self, raw: &[u8], node: Option<&Node>, mode: Mode, needles: &[Needle], out: &mut Vec<u8>) {
        if mode == Mode::Time && !matches!(raw.first(), Some(b'{' | b'[')) {
            match self.coarsen.and_then(|c| c.value(raw)) {
                Some(rounded) => out.extend_from_slice(&rounded),
                None => out.extend_from_slice(raw),
            }
            return;
        }
        if mode == Mode::Time && node.is_none_or(|n| n.children.is_empty()) {
            out.extend_from_slice(raw);
            return;
        }
        match raw.first() {
            Some(b'{') => self.write_members(raw, out, |this, name, value, out| {
                let child = node.and_then(|n| n.member(name));
                this.write(value, child, member_mode(node, child, name, mode), needles, out);
            }),
            Some(b'[') => {
                out.push(b'[');
                if node.is_some_and(|n| n.headers) {
                    self.write_headers(raw, node, mode, needles, out);
                } else {
                    let mut first = true;
                    self.each_value(raw, node, mode, &mut |this, value, child, mode| {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        this.write(value, child, mode, needles, out);
                    });
                }
                out.push(b']');
            }
            Some(b'"') => match mode {
                Mode::Time => out.extend_from_slice(raw),
                Mode::Scrub | Mode::Text => match text_of(raw).and_then(|text| self.scrub(&text, if mode == Mode::Text { needles } else { &[] })) {
                    Some(text) => push_string(out, &text),
                    None => out.extend_from_slice(raw),
                },
                Mode::Token(kind) => match text_of(raw) {
                    Some(text) if !text.is_empty() => match needles.iter().find(|n| n.at == raw.as_ptr() as usize) {
                        Some(made) => push_string(out, &made.token),
                        None => {
                            let token = self.string_token(kind, &text);
                            push_string(out, token.as_bytes());
                        }
                    },
                    _ => out.extend_from_slice(raw),
                },
            },
            Some(b'-' | b'0'..=b'9') if matches!(mode, Mode::Token(_)) => {
                out.extend_from_slice(self.keyed.number(std::str::from_utf8(raw).unwrap_or("0")).as_bytes());
            }
            _ => out.extend_from_slice(raw),
        }
    }

    /// A header collection's elements: names as written, values by their header's rules.
    fn write_headers(&mut self, raw: &[u8], node: Option<&Node>, mode: Mode, needles: &[Needle], out: &mut Vec<u8>) {
        let items: Vec<&[u8]> = crate::raw_json::elements(raw).collect();
        let mut i = 0;
        while i < items.len() {
            if i > 0 {
                out.push(b',');
            }
            let item = items[i];
            let name = match item.first() {
                Some(b'"') => string_bytes(item),
                _ => None,
            };
            if let Some(name) = name {
                out.extend_from_slice(item);
                if let Some(value) = items.get(i + 1) {
                    out.push(b',');
                    let child = node.and_then(|n| n.member(&name));
                    self.write(value, child, member_mode(node, child, &name, mode), needles, out);
                }
                i += 2;
                continue;
            }
            match header_name(item) {
                Some(name) => {
                    let child = node.and_then(|n| n.member(&name));
                    let value_mode = member_mode(node, child, &name, mode);
                    self.write_header_item(item, child, value_mode, needles, out);
                }
                None => self.write(item, None, mode, needles, out),
            }
            i += 1;
        }
    }

    /// `{"key": name, "value": v}` or `[name, v]` with its value under the header's rules.
    fn write_header_item(&mut self, item: &[u8], child: Option<&Node>, mode: Mode, needles: &[Needle], out: &mut Vec<u8>) {
        if item.first() == Some(&b'[') {
            out.push(b'[');
            for (n, element) in crate::raw_json::elements(item).enumerate() {
                if n > 0 {
                    out.push(b',');
                    self.write(element, child, mode, needles, out);
                } else {
                    out.extend_from_slice(element);
                }
            }
            out.push(b']');
            return;
        }
        self.write_members(item, out, |this, name, value, out| match name {
            b"value" => this.write(value, child, mode, needles, out),
            b"key" | b"name" => out.extend_from_slice(value),
            _ => this.write(value, None, mode, needles, out),
        });
    }

    /// An object written compact, each member's name as written and its value by `value`.
    fn write_members(&mut self, raw: &[u8], out: &mut Vec<u8>, mut value: impl FnMut(&mut Self, &[u8], &[u8], &mut Vec<u8>)) {
        out.push(b'{');
        for (n, (written, name, member)) in members(raw).enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(written);
            out.push(b':');
            value(self, &name, member, out);
        }
        out.push(b'}');
    }

    /// `text` with the record's payload values and every detected value replaced, or None
    /// when nothing in it is.
    fn scrub(&mut self, text: &[u8], needles: &[Needle]) -> Option<Vec<u8>> {
        let replaced = replace_needles(text, needles);
        let current = replaced.as_deref().unwrap_or(text);
        let found = detect::find(current);
        if found.is_empty() {
            return replaced;
        }
        let mut out = Vec::with_capacity(current.len());
        let mut at = 0;
        for f in found {
            out.extend_from_slice(&current[at..f.start]);
            let value = &current[f.start..f.end];
            out.extend_from_slice(self.replacement(f.kind, value).as_bytes());
            at = f.end;
        }
        out.extend_from_slice(&current[at..]);
        Some(out)
    }
}

/// The name of a header written as `{"key"|"name": name, "value": …}` or `[name, value]`.
fn header_name(item: &[u8]) -> Option<Vec<u8>> {
    match item.first()? {
        b'{' => members(item).find(|(_, k, _)| **k == *b"key" || **k == *b"name").and_then(|(_, _, v)| string_bytes(v)),
        b'[' => {
            let mut elements = crate::raw_json::elements(item);
            let name = elements.next().filter(|n| n.first() == Some(&b'"')).and_then(string_bytes)?;
            (elements.next().is_some() && elements.next().is_none()).then_some(name)
        }
        _ => None,
    }
}

fn mode_of(node: Option<&Node>, inherited: Mode) -> Mode {
    node.and_then(|n| n.mode).map_or(inherited, |(m, _)| m)
}

/// The mode of a member or header: its own rule, else the parent's, a header excluded from
/// the message (the dead-letter reporter's own) scrubbed rather than replaced.
fn member_mode(parent: Option<&Node>, child: Option<&Node>, name: &[u8], inherited: Mode) -> Mode {
    if let Some((mode, _)) = child.and_then(|c| c.mode) {
        return mode;
    }
    let excluded = parent.is_some_and(|p| p.headers && p.exclude.iter().any(|prefix| name.starts_with(prefix.as_bytes())));
    if excluded && matches!(inherited, Mode::Token(_)) {
        Mode::Text
    } else {
        inherited
    }
}

/// A value every template masks whole, known without templating it: one word holding a
/// digit and no delimiter (`ord_548305`, `SKU-9413`, `10.0.0.7`), not a device name (`eth0`).
fn one_value(text: &str) -> bool {
    let b = text.as_bytes();
    !template::is_device_name(text)
        && b.iter().any(u8::is_ascii_digit)
        && !text.contains("...")
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'+' | b'/' | b'@' | b'#'))
        && !b.starts_with(b"/")
}

/// Each occurrence of a needle in `text` that stands alone as a value is written in prose
/// (after a space, quote or bracket; before one, or before a full stop ending a sentence),
/// leftmost and longest first, replaced by its token. Not inside a dotted or slashed name:
/// `billing` stays in `com.shop.billing.Handler`, which every record's trace holds alike.
fn replace_needles(text: &[u8], needles: &[Needle]) -> Option<Vec<u8>> {
    let opens = |b: u8| b.is_ascii_whitespace() || b"\"'`([{<,;=".contains(&b);
    let closes = |b: u8| b.is_ascii_whitespace() || b"\"'`)]}>,;".contains(&b);
    let mut hits: Vec<(usize, usize, usize)> = Vec::new();
    for (i, needle) in needles.iter().enumerate() {
        for start in needle.finder.find_iter(text) {
            let end = start + needle.value.len();
            let before = start.checked_sub(1).map(|p| text[p]);
            let after = text.get(end).copied();
            let ends_sentence = matches!(after, Some(b'.' | b':' | b'!' | b'?')) && text.get(end + 1).is_none_or(|b| b.is_ascii_whitespace());
            if before.is_none_or(opens) && (after.is_none_or(closes) || ends_sentence) {
                hits.push((start, end, i));
            }
        }
    }
    if hits.is_empty() {
        return None;
    }
    hits.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)));
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    for (start, end, i) in hits {
        if start < at {
            continue;
        }
        out.extend_from_slice(&text[at..start]);
        out.extend_from_slice(&needles[i].token);
        at = end;
    }
    out.extend_from_slice(&text[at..]);
    Some(out)
}

/// A value looked for in the record's text: long enough to mean something, and not one
/// lower-case word (`billing`, `pending`: a code, which other records' messages say too).
fn is_needle(value: &[u8]) -> bool {
    value.len() >= MIN_NEEDLE && !value.iter().all(|b| b.is_ascii_lowercase() || matches!(b, b'-' | b'_'))
}

/// The strings (at least `MIN_NEEDLE` bytes) and numbers (as many digits) of a JSON value.
fn leaf_texts(value: &Value, out: &mut Vec<(String, bool)>) {
    match value {
        Value::String(s) if is_needle(s.as_bytes()) => out.push((s.clone(), false)),
        Value::Number(n) => {
            let text = n.to_string();
            if text.bytes().filter(u8::is_ascii_digit).count() >= MIN_NEEDLE {
                out.push((text, true));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| leaf_texts(v, out)),
        Value::Object(map) => map.values().for_each(|v| leaf_texts(v, out)),
        _ => {}
    }
}

/// A JSON string of `bytes`: quotes, backslashes and control characters escaped, every other
/// byte as it is (bytes that are not UTF-8 stay raw, as kcat writes them).
pub fn push_string(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::rules;

    fn redactor(rules: &Node) -> Redactor<'_> {
        Redactor::new(rules, Keyed::new(b"a key of more than sixteen bytes"))
    }

    #[test]
    fn a_replacement_templates_as_the_value_did() {
        let rules = Node::default();
        let mut r = redactor(&rules);
        for value in ["(415) 555-0100", "4111 1111 1111 1111", "Jane Doe", "ord_548305", "Bearer abc123def456"] {
            let token = r.replacement("x", value.as_bytes());
            let message = |v: &str| template::template(&format!("card declined for {v} today"));
            let (before, after) = (message(value), message(&token));
            // Kept words become other words, one for one; values stay values.
            let kept = |t: &str| t.split(' ').filter(|w| !w.contains(template::PLACEHOLDER)).count();
            assert_eq!(before.matches(template::PLACEHOLDER).count(), after.matches(template::PLACEHOLDER).count(), "{value} -> {token}: {before} / {after}");
            assert!(kept(&after) <= kept(&before), "{value} -> {token}");
            assert!(!token.contains(value), "{token}");
        }
        assert_eq!(r.replacement("x", b"Bearer abc123def456").split(' ').next(), r.replacement("x", b"Bearer zzz999yyy888").split(' ').next(), "a kept word is keyed by itself");
    }

    #[test]
    fn a_payload_value_is_replaced_in_prose_not_inside_a_name() {
        let needles = [Needle::new(b"billing".to_vec(), b"T".to_vec()), Needle::new(b"Jane Doe".to_vec(), b"N".to_vec())];
        let replaced = |text: &str| replace_needles(text.as_bytes(), &needles).map(|b| String::from_utf8(b).unwrap());
        assert_eq!(replaced("card declined for Jane Doe."), Some("card declined for N.".into()));
        assert_eq!(replaced("'Jane Doe' failed"), Some("'N' failed".into()));
        assert_eq!(replaced("at com.shop.billing.Handler"), None);
        assert_eq!(replaced("Jane Doesn't"), None);
        assert!(!is_needle(b"billing") && !is_needle(b"eu-west") && is_needle(b"Jane Doe") && is_needle(b"ord_1234"));
    }

    #[test]
    fn header_names_stay_and_their_values_follow_their_rules() {
        let profile = crate::profile::Profile::load("kafka-connect").unwrap();
        let rules = rules::from_profile(&profile);
        let mut r = redactor(&rules);
        let line = br#"{"topic":"dlq","key":"k-1","payload":"{\"card\":\"4111111111111111\"}","headers":["__connect.errors.topic","orders","__connect.errors.exception.message","bad card 4111 1111 1111 1111","trace-id","abc-123"],"ts":1700000000000}"#;
        let mut out = Vec::new();
        r.record(line, &mut out);
        let v: Value = serde_json::from_slice(&out).unwrap();
        let headers = v["headers"].as_array().unwrap();
        assert_eq!(headers[0], "__connect.errors.topic");
        assert_eq!(headers[1], "orders", "what the id reads stays");
        assert!(headers[3].as_str().unwrap().starts_with("bad card card_"), "{}", headers[3]);
        assert_eq!(headers[4], "trace-id");
        assert!(headers[5].as_str().unwrap().starts_with("header_"));
        assert!(v["payload"].as_str().unwrap().starts_with("value_"));
        assert_eq!(v["ts"], 1700000000000u64, "the time stays");
        assert_eq!(v["topic"], "dlq");
    }
}
