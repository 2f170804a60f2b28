//! One record's JSON text rewritten with its values replaced, as the rules say: written
//! compact, every value left alone keeping its bytes as written (binary strings included).
//! A payload or personal value that reappears in the same record's text gets its token there.

use std::collections::HashMap;

use serde_json::Value;

use super::detect;
use super::rules::{Mode, Node};
use super::token::{Keyed, Shape};
use crate::json_scan::{Kernel, Parser, MAX_NESTING};
use crate::path::{base64_decode, Step};
use crate::profile::template;
use crate::raw_json::{members_as_written, string_bytes, string_text as text_of};

/// Values of a record's payload and personal fields this short or shorter are not looked
/// for in its text: a quantity of 3 is not the 3 of a line number.
const MIN_NEEDLE: usize = 4;

/// A value of the record's payload or personal fields and the token it became.
struct Needle {
    value: Vec<u8>,
    token: Vec<u8>,
}

/// What a record's walk leaves for its end: the payload values met, and the free texts whose
/// scrubbing waits for all of them (a message may come before the payload it echoes).
#[derive(Default)]
struct Pending {
    needles: Vec<Needle>,
    /// Each free text: where in the walked output it goes, and its raw text's span.
    texts: Vec<(usize, usize, usize)>,
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
    /// A record's output before its free texts go in, and what waits for them (kept to reuse
    /// their memory from record to record).
    walked: Vec<u8>,
    pending: Pending,
}

impl Clone for Redactor<'_> {
    fn clone(&self) -> Self {
        Redactor {
            root: self.root,
            root_mode: self.root_mode,
            list_root: self.list_root,
            coarsen: self.coarsen,
            card_last_four: self.card_last_four,
            keyed: self.keyed.clone(),
            made: HashMap::default(),
            walked: Vec::new(),
            pending: Pending::default(),
        }
    }
}

impl<'r> Redactor<'r> {
    pub fn new(rules: &'r Node, keyed: Keyed) -> Redactor<'r> {
        Redactor { root: Some(rules), root_mode: mode_of(Some(rules), Mode::Text), list_root: None, coarsen: None, card_last_four: false, keyed, made: HashMap::default(), walked: Vec::new(), pending: Pending::default() }
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
        let mut below = self.clone();
        below.root = child;
        below.root_mode = member_mode(self.root, child, member.as_bytes(), self.root_mode);
        below
    }

    /// A redactor of an S3-sink `.headers` file: its lines' `headers` member (or the line,
    /// a bare list) holds the record's headers; `envelope` is `rules::headers_envelope`.
    pub fn for_headers(&self, envelope: &'r Node) -> Redactor<'r> {
        let list = self.below("headers");
        let mut headers = self.clone();
        headers.root = Some(envelope);
        headers.root_mode = mode_of(Some(envelope), Mode::Text);
        headers.list_root = Some((list.root, list.root_mode));
        headers
    }

    /// Appends the redacted form of one record's JSON text, checked as one JSON value by the
    /// readers' own scanner as it is walked, once. Err: it is not JSON, and `out` is as it was.
    pub fn record(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let (root, mode) = match self.list_root {
            Some(list) if raw.trim_ascii_start().first() == Some(&b'[') => list,
            _ => (self.root, self.root_mode),
        };
        let mut walked = std::mem::take(&mut self.walked);
        let mut pending = std::mem::take(&mut self.pending);
        walked.clear();
        pending.needles.clear();
        pending.texts.clear();
        let mut p = Parser::over_bytes(raw, Kernel::detected());
        p.ws();
        let result = self.value(&mut p, root, mode, 0, &mut walked, &mut pending).and_then(|()| {
            p.ws();
            if p.at_end() { Ok(()) } else { Err(p.error("trailing characters")) }
        });
        if result.is_ok() {
            self.fill_texts(raw, &walked, &mut pending, out);
        }
        self.walked = walked;
        self.pending = pending;
        result
    }

    /// The walked output into `out`, each free text scrubbed in its place, now that every
    /// payload value the record holds is known.
    fn fill_texts(&mut self, raw: &[u8], walked: &[u8], pending: &mut Pending, out: &mut Vec<u8>) {
        // Longest first, so a value holding another is replaced whole.
        let needles = &mut pending.needles;
        needles.sort_by(|a, b| b.value.len().cmp(&a.value.len()).then_with(|| a.value.cmp(&b.value)));
        needles.dedup_by(|a, b| a.value == b.value);
        let mut at = 0;
        for &(place, start, end) in &pending.texts {
            out.extend_from_slice(&walked[at..place]);
            let text = &raw[start..end];
            match text_of(text).and_then(|t| self.scrub(&t, needles)) {
                Some(scrubbed) => push_string(out, &scrubbed),
                None => out.extend_from_slice(text),
            }
            at = place;
        }
        out.extend_from_slice(&walked[at..]);
    }

    /// A free text with personal and secret values replaced (a line that is not JSON).
    pub fn text(&mut self, text: &[u8]) -> Vec<u8> {
        self.scrub(text, &[]).unwrap_or_else(|| text.to_vec())
    }

    /// The token of a whole line that is not JSON (whatever it holds is replaced).
    pub fn text_token(&mut self, line: &[u8]) -> String {
        self.keyed.token("line", line, Shape::Value)
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
            needles.push(Needle { value: leaf.into_bytes(), token: token.into_bytes() });
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
        if kind == "email" {
            // An address still, so a template masks it as it masked the address, with what
            // stands around it (`[jane@example.com]` is `[<*>]`, `jane@example.com.` `<*>.`).
            made.push_str("@x.x");
        }
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
            _ => return self.keyed.token(kind, value, value_shape(value)),
        };
        let key = (xxhash_rust::xxh3::xxh3_128(value), kind);
        if let Some(made) = self.made.get(&key) {
            return made.clone();
        }
        let shaped = template::template(text);
        let words = || text.split_whitespace();
        let made = if words().nth(1).is_some() && words().all(|w| template::template(w) == template::PLACEHOLDER) {
            // Values alone, several words (`4111 1111 1111 1111`, an IBAN in groups): a token
            // each, so that punctuation after the last one templates as it did
            // (`… 1111.` is `<*> <*>.`, where one word's would be `<*>.`).
            let parts: Vec<String> = (0u32..).zip(words()).map(|(i, word)| self.keyed.token(kind, &[value, &i.to_be_bytes()].concat(), value_shape(word.as_bytes()))).collect();
            parts.join(" ")
        } else if shaped == template::PLACEHOLDER {
            self.keyed.token(kind, value, value_shape(words().last().unwrap_or(text).as_bytes()))
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

    /// One value at the parser, written as the rules say under `node` in `mode`: structure
    /// compact, names and values left alone as written, the rest replaced.
    fn value(&mut self, p: &mut Parser<'_>, node: Option<&Node>, mode: Mode, depth: usize, out: &mut Vec<u8>, pending: &mut Pending) -> Result<(), String> {
        let start = p.pos();
        let first = p.peek();
        let composite = matches!(first, Some(b'{' | b'['));
        if composite && depth >= MAX_NESTING {
            return Err(p.error("recursion limit exceeded"));
        }
        if mode == Mode::Time && (!composite || node.is_none_or(|n| n.children.is_empty())) {
            p.skip_value(depth)?;
            let raw = &p.bytes()[start..p.pos()];
            match self.coarsen.filter(|_| !composite).and_then(|c| c.value(raw)) {
                Some(rounded) => out.extend_from_slice(&rounded),
                None => out.extend_from_slice(raw),
            }
            return Ok(());
        }
        match first {
            Some(b'{') => self.object(p, out, |this, p, name, out| {
                let child = node.and_then(|n| n.member(name));
                this.value(p, child, member_mode(node, child, name, mode), depth + 1, out, pending)
            }),
            Some(b'[') if node.is_some_and(|n| n.headers) => self.headers(p, node, mode, depth, out, pending),
            Some(b'[') => self.array(p, out, |this, p, i, out| {
                let child = node.and_then(|n| n.child(&Step::Index(i)));
                this.value(p, child, mode_of(child, mode), depth + 1, out, pending)
            }),
            Some(b'"') => self.string(p, mode, out, pending),
            Some(b'-' | b'0'..=b'9') => {
                let text = p.number()?;
                match mode {
                    Mode::Token(kind) => {
                        let token = self.keyed.number(text);
                        out.extend_from_slice(token.as_bytes());
                        if echoed(kind) && is_number_needle(text) {
                            pending.needles.push(Needle { value: text.as_bytes().to_vec(), token: token.into_bytes() });
                        }
                    }
                    _ => out.extend_from_slice(text.as_bytes()),
                }
                Ok(())
            }
            _ => copy_value(p, depth, out),
        }
    }

    /// A string at the parser: a free text waits for the record's end, a read one has only
    /// detected values replaced, a payload's becomes its token (and is looked for in the texts).
    fn string(&mut self, p: &mut Parser<'_>, mode: Mode, out: &mut Vec<u8>, pending: &mut Pending) -> Result<(), String> {
        let start = p.pos();
        match mode {
            Mode::Time => copy_value(p, 0, out),
            Mode::Text => {
                p.skip_string()?;
                pending.texts.push((out.len(), start, p.pos()));
                Ok(())
            }
            Mode::Scrub => {
                let text = checked_string(p)?;
                match self.scrub(&text, &[]) {
                    Some(scrubbed) => push_string(out, &scrubbed),
                    None => out.extend_from_slice(&p.bytes()[start..p.pos()]),
                }
                Ok(())
            }
            Mode::Token(kind) => {
                let text = checked_string(p)?;
                if text.is_empty() {
                    out.extend_from_slice(b"\"\"");
                    return Ok(());
                }
                let token = self.string_token(kind, &text);
                push_string(out, token.as_bytes());
                if echoed(kind) && is_needle(&text) {
                    self.inner_values(&text, &mut pending.needles);
                    pending.needles.push(Needle { value: text.into_owned(), token: token.into_bytes() });
                }
                Ok(())
            }
        }
    }

    /// An object at the parser written compact: each member's name as written, its value by
    /// `member` (which reads it).
    fn object(&mut self, p: &mut Parser<'_>, out: &mut Vec<u8>, mut member: impl FnMut(&mut Self, &mut Parser<'_>, &[u8], &mut Vec<u8>) -> Result<(), String>) -> Result<(), String> {
        out.push(b'{');
        p.expect(b"{");
        p.ws();
        if !p.expect(b"}") {
            for n in 0.. {
                p.ws();
                match p.peek() {
                    Some(b'"') => {}
                    None => return Err(p.error("EOF while parsing an object")),
                    _ => return Err(p.error("expected a field name")),
                }
                let name_start = p.pos();
                let name = p.string()?;
                let written = &p.bytes()[name_start..p.pos()];
                p.ws();
                if !p.expect(b":") {
                    return Err(p.error("expected `:`"));
                }
                p.ws();
                if n > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(written);
                out.push(b':');
                member(self, p, name.as_bytes(), out)?;
                if p.comma_or_close(b'}')? {
                    break;
                }
            }
        }
        out.push(b'}');
        Ok(())
    }

    /// An array at the parser written compact, each element by `element` (given its index).
    fn array(&mut self, p: &mut Parser<'_>, out: &mut Vec<u8>, mut element: impl FnMut(&mut Self, &mut Parser<'_>, usize, &mut Vec<u8>) -> Result<(), String>) -> Result<(), String> {
        out.push(b'[');
        p.expect(b"[");
        p.ws();
        if !p.expect(b"]") {
            for i in 0.. {
                p.ws();
                if i > 0 {
                    out.push(b',');
                }
                element(self, p, i, out)?;
                if p.comma_or_close(b']')? {
                    break;
                }
            }
        }
        out.push(b']');
        Ok(())
    }

    /// A header collection: kcat's flat `[name, value, …]` (a name string, then its value),
    /// or `{"key"|"name": name, "value": v}` and `[name, v]` items; names as written, each
    /// value by its header's rules.
    fn headers(&mut self, p: &mut Parser<'_>, node: Option<&Node>, mode: Mode, depth: usize, out: &mut Vec<u8>, pending: &mut Pending) -> Result<(), String> {
        // A flat list's name just written: the next element is its value.
        let mut name: Option<Vec<u8>> = None;
        self.array(p, out, |this, p, _, out| {
            if let Some(name) = name.take() {
                let child = node.and_then(|n| n.member(&name));
                return this.value(p, child, member_mode(node, child, &name, mode), depth + 1, out, pending);
            }
            let start = p.pos();
            match p.peek() {
                Some(b'"') => {
                    name = Some(checked_string(p)?.into_owned());
                    out.extend_from_slice(&p.bytes()[start..p.pos()]);
                    Ok(())
                }
                Some(b'{' | b'[') => {
                    p.skip_value(depth + 1)?;
                    let named = header_name(&p.bytes()[start..p.pos()]);
                    p.seek(start);
                    let Some(name) = named else { return this.value(p, None, mode, depth + 1, out, pending) };
                    let child = node.and_then(|n| n.member(&name));
                    this.header_item(p, child, member_mode(node, child, &name, mode), depth + 1, out, pending)
                }
                _ => this.value(p, None, mode, depth + 1, out, pending),
            }
        })
    }

    /// `{"key"|"name": name, "value": v}` or `[name, v]` with its value under the header's rules.
    fn header_item(&mut self, p: &mut Parser<'_>, child: Option<&Node>, mode: Mode, depth: usize, out: &mut Vec<u8>, pending: &mut Pending) -> Result<(), String> {
        if p.peek() == Some(b'[') {
            return self.array(p, out, |this, p, i, out| if i == 0 { copy_value(p, depth + 1, out) } else { this.value(p, child, mode, depth + 1, out, pending) });
        }
        self.object(p, out, |this, p, name, out| match name {
            b"value" => this.value(p, child, mode, depth + 1, out, pending),
            b"key" | b"name" => copy_value(p, depth + 1, out),
            _ => this.value(p, None, mode, depth + 1, out, pending),
        })
    }

    /// `text` with the record's payload values and every detected value replaced, or None
    /// when nothing in it is.
    fn scrub(&mut self, text: &[u8], needles: &[Needle]) -> Option<Vec<u8>> {
        let keyed = &self.keyed;
        let replaced = replace_needles(text, needles, |value| keyed.holds_pattern(value));
        let current = replaced.as_deref().unwrap_or(text);
        let found = detect::find(current);
        if found.is_empty() {
            return replaced;
        }
        let found = widened(current, found);
        let mut out = Vec::with_capacity(current.len());
        let mut at = 0;
        for f in found {
            out.extend_from_slice(&current[at..f.start]);
            let value = &current[f.start..f.end];
            // A value written with its own separators (an address, with its port or not) is
            // one token, as `replacement` would make it without templating it (a card's last
            // four are `replacement`'s).
            if f.kind != "card" && value_shape(value) == Shape::Value {
                out.extend_from_slice(self.keyed.token(f.kind, value, Shape::Value).as_bytes());
            } else {
                out.extend_from_slice(self.replacement(f.kind, value).as_bytes());
            }
            at = f.end;
        }
        out.extend_from_slice(&current[at..]);
        Some(out)
    }
}

/// Each found value widened to the value written with its own separators that holds it
/// (`10.0.0.7:8080`, `[2001:db8::1]:443`): a template masks that whole as one value, where a
/// token inside it (`ip_…:8080`) would template as two and move the record to another bucket
/// than its neighbours' (`10.0.0.8` alone). Values that then overlap become one.
fn widened(text: &[u8], found: Vec<detect::Found>) -> Vec<detect::Found> {
    let mut out: Vec<detect::Found> = Vec::with_capacity(found.len());
    for mut f in found {
        if let Some((start, end)) = separated_value_around(text, f.start, f.end) {
            (f.start, f.end) = (start, end);
        }
        match out.last_mut() {
            Some(last) if f.start < last.end => last.end = last.end.max(f.end),
            _ => out.push(f),
        }
    }
    out
}

/// The value written with its own separators (`template::separated_value`) of the
/// whitespace word that holds `text[start..end]`, where it is more than that.
fn separated_value_around(text: &[u8], start: usize, end: usize) -> Option<(usize, usize)> {
    if text[start..end].iter().any(u8::is_ascii_whitespace) {
        return None;
    }
    let word_start = text[..start].iter().rposition(u8::is_ascii_whitespace).map_or(0, |p| p + 1);
    let word_end = text[end..].iter().position(u8::is_ascii_whitespace).map_or(text.len(), |p| end + p);
    let word = std::str::from_utf8(&text[word_start..word_end]).ok()?;
    let (s, e) = template::separated_value(word)?;
    let (s, e) = (word_start + s, word_start + e);
    (s <= start && end <= e && (s, e) != (start, end)).then_some((s, e))
}

/// The string at the parser, checked as the readers check it (their messages, their columns),
/// as the bytes it stands for.
fn checked_string<'a>(p: &mut Parser<'a>) -> Result<std::borrow::Cow<'a, [u8]>, String> {
    let start = p.pos();
    p.skip_string()?;
    let raw: &'a [u8] = &p.bytes()[start..p.pos()];
    text_of(raw).ok_or_else(|| p.error("invalid escape"))
}

/// The value at the parser, checked and written as it is.
fn copy_value(p: &mut Parser<'_>, depth: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let start = p.pos();
    p.skip_value(depth)?;
    out.extend_from_slice(&p.bytes()[start..p.pos()]);
    Ok(())
}

/// The name of a header written as `{"key"|"name": name, "value": …}` or `[name, value]`.
fn header_name(item: &[u8]) -> Option<Vec<u8>> {
    match item.first()? {
        b'{' => members_as_written(item).find(|(_, k, _)| **k == *b"key" || **k == *b"name").and_then(|(_, _, v)| string_bytes(v)),
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

/// How a value's token is written: as a value with its own separators where the value is
/// one (`10.0.0.7`, `4111`, `[fe80::1]`), else as a part of a word (`ord_548305`, a JWT), so
/// that what stands around it templates as it did around the value.
fn value_shape(value: &[u8]) -> Shape {
    let (every, some) = classes_of(value);
    // A byte no such value holds (`o` of `ord_548305`: most values).
    if every & SEPARATED == 0 {
        return Shape::Part;
    }
    // Hex digits alone (a trace id, a count): nothing to trim, no dots, so `separated_value`
    // takes them whole when a digit is among them and they are no device name.
    if every & HEX != 0 {
        let text = std::str::from_utf8(value).expect("ASCII");
        let one = some & DIGIT != 0 && !template::is_device_name(text);
        return if one { Shape::Value } else { Shape::Part };
    }
    separated_shape(value)
}

/// `value_shape` by `template::separated_value` itself.
fn separated_shape(value: &[u8]) -> Shape {
    let separated = std::str::from_utf8(value).ok().and_then(template::separated_value).is_some_and(|(start, end)| start == 0 && end == value.len());
    if separated { Shape::Value } else { Shape::Part }
}

/// A value every template masks whole, known without templating it: one word holding a
/// digit and no delimiter (`ord_548305`, `SKU-9413`, `10.0.0.7`), not a device name (`eth0`).
fn one_value(text: &str) -> bool {
    let b = text.as_bytes();
    let (every, some) = classes_of(b);
    every & WORD != 0 && some & DIGIT != 0 && (some & DOT == 0 || !b.windows(3).any(|w| w == b"...")) && !b.starts_with(b"/") && !template::is_device_name(text)
}

/// The classes the shape checks read a value's bytes by, a bit each: a value's bytes are
/// read without a branch apiece (a trace id's digits and letters, by turns, mispredict).
const HEX: u8 = 1;
const DIGIT: u8 = 2;
/// A byte `template::separated_value` takes in a value.
const SEPARATED: u8 = 4;
/// A byte of a word `one_value` takes: ASCII letters and digits, `_-.+/@#`.
const WORD: u8 = 8;
const DOT: u8 = 16;

static BYTE_CLASSES: [u8; 256] = {
    let mut classes = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        let word = c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'+' | b'/' | b'@' | b'#');
        classes[i] = if c.is_ascii_hexdigit() { HEX } else { 0 }
            | if c.is_ascii_digit() { DIGIT } else { 0 }
            | if template::is_separated_value_byte(c) { SEPARATED } else { 0 }
            | if word { WORD } else { 0 }
            | if c == b'.' { DOT } else { 0 };
        i += 1;
    }
    classes
};

/// The classes every byte of `value` is in, and those some byte is in.
fn classes_of(value: &[u8]) -> (u8, u8) {
    value.iter().fold((u8::MAX, 0), |(every, some), &c| (every & BYTE_CLASSES[usize::from(c)], some | BYTE_CLASSES[usize::from(c)]))
}

/// Each occurrence of a needle in `text` that stands alone as a value is written in prose
/// (after a space, quote or bracket; before one, or before a full stop ending a sentence),
/// leftmost and longest first, replaced by its token. Not inside a dotted or slashed name:
/// `billing` stays in `com.shop.billing.Handler`, which every record's trace holds alike.
/// Nor where `holds_pattern` says the needle holds what the classifier looks for (`Gateway
/// Timeout`): replaced, it would take that from the message and change the record's category.
fn replace_needles(text: &[u8], needles: &[Needle], holds_pattern: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
    let opens = |b: u8| b.is_ascii_whitespace() || b"\"'`([{<,;=".contains(&b);
    let closes = |b: u8| b.is_ascii_whitespace() || b"\"'`)]}>,;".contains(&b);
    let mut hits: Vec<(usize, usize, usize)> = Vec::new();
    for (i, needle) in needles.iter().enumerate() {
        for start in occurrences(text, &needle.value) {
            let end = start + needle.value.len();
            let before = start.checked_sub(1).map(|p| text[p]);
            let after = text.get(end).copied();
            let ends_sentence = matches!(after, Some(b'.' | b':' | b'!' | b'?')) && text.get(end + 1).is_none_or(|b| b.is_ascii_whitespace());
            if before.is_none_or(opens) && (after.is_none_or(closes) || ends_sentence) && !holds_pattern(&needle.value) {
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

/// Where `needle` (not empty) stands in `text`, leftmost first, each after the last one's end.
/// (Texts and needles are short: a byte search and a compare cost less than a searcher made
/// for each needle of each record.)
fn occurrences<'t>(text: &'t [u8], needle: &'t [u8]) -> impl Iterator<Item = usize> + 't {
    let mut from = 0;
    std::iter::from_fn(move || {
        while from + needle.len() <= text.len() {
            let at = from + memchr::memchr(needle[0], &text[from..=text.len() - needle.len()])?;
            // The last bytes compared first: most places a first byte matches (`o` of `ord_…`
            // in `consumer`) are told apart without a call to compare the rest.
            if text[at + needle.len() - 1] == needle[needle.len() - 1] && text[at..].starts_with(needle) {
                from = at + needle.len();
                return Some(at);
            }
            from = at + 1;
        }
        None
    })
}

/// A value looked for in the record's text: long enough to mean something, and not one
/// lower-case word (`billing`, `pending`: a code, which other records' messages say too).
fn is_needle(value: &[u8]) -> bool {
    value.len() >= MIN_NEEDLE && !value.iter().all(|b| b.is_ascii_lowercase() || matches!(b, b'-' | b'_'))
}

/// A number looked for in the record's text: `MIN_NEEDLE` digits at least.
fn is_number_needle(text: &str) -> bool {
    text.bytes().filter(u8::is_ascii_digit).count() >= MIN_NEEDLE
}

/// Whether a token's value of this kind is looked for in the record's texts: the payload's
/// and personal fields' are, the origin key's and headers' are not (docs/redact.md).
fn echoed(kind: &str) -> bool {
    !matches!(kind, "key" | "header")
}

/// The strings (at least `MIN_NEEDLE` bytes) and numbers (as many digits) of a JSON value.
fn leaf_texts(value: &Value, out: &mut Vec<(String, bool)>) {
    match value {
        Value::String(s) if is_needle(s.as_bytes()) => out.push((s.clone(), false)),
        Value::Number(n) => {
            let text = n.to_string();
            if is_number_needle(&text) {
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
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut at = 0;
    loop {
        let stop = crate::json_scan::escape_stop(bytes, at);
        out.extend_from_slice(&bytes[at..stop]);
        let Some(&b) = bytes.get(stop) else { break };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
        }
        at = stop + 1;
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

    /// The shortcuts give the shape `separated_value` does: a byte it never takes, hex digits.
    #[test]
    fn shortcuts_take_the_shape_separated_value_gives() {
        let mut next = crate::testing::random(0x9e37_79b9_7f4a_7c15);
        let mut random = move |n: usize| (next() % n as u64) as usize;
        let (mut values, mut parts) = (0, 0);
        for i in 0..60_000 {
            let alphabet: &[u8] = match i % 3 {
                0 => b"0123456789abcdefABCDEF",
                1 => b"0abcdef1",
                _ => b"0123456789abcdefg.:-_/+[]TZ ,@",
            };
            let value: Vec<u8> = (0..random(13)).map(|_| alphabet[random(alphabet.len())]).collect();
            let shape = value_shape(&value);
            let reference = if value.iter().all(|&c| c.is_ascii_hexdigit() || b".:-_/+[]TZ".contains(&c)) { separated_shape(&value) } else { Shape::Part };
            assert_eq!(shape, reference, "{}", String::from_utf8_lossy(&value));
            if shape == Shape::Value { values += 1 } else { parts += 1 }
        }
        // Both answers were given (`abc1`, `dead`: parts).
        assert!(values > 1000 && parts > 1000, "{values} {parts}");
    }

    /// `one_value` in one pass says what each of its conditions says.
    #[test]
    fn one_value_is_its_conditions_together() {
        let by_conditions = |text: &str| {
            let b = text.as_bytes();
            !template::is_device_name(text)
                && b.iter().any(u8::is_ascii_digit)
                && !b.windows(3).any(|w| w == b"...")
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'+' | b'/' | b'@' | b'#'))
                && !b.starts_with(b"/")
        };
        let mut next = crate::testing::random(0x2545_f491_4f6c_dd1d);
        let mut random = move |n: usize| (next() % n as u64) as usize;
        let alphabet = ["a", "eth", "Z", "0", "7", ".", ".", "_", "-", "/", "@", "#", "+", " ", ":", "é"];
        let mut ones = 0;
        for _ in 0..100_000 {
            let text: String = (0..random(8)).map(|_| alphabet[random(alphabet.len())]).collect();
            assert_eq!(one_value(&text), by_conditions(&text), "{text:?}");
            ones += usize::from(one_value(&text));
        }
        assert!(ones > 5_000, "{ones}");
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

    /// An address written with its port (or in brackets) templates as one value, as the
    /// address alone does: its token covers the whole, so `10.1.2.3:8080` and `10.1.2.4`
    /// stay in one bucket, and so do differently written ones that were. And a value of
    /// several words, or with a sentence's punctuation around it, templates as it did.
    #[test]
    fn a_found_value_templates_as_it_did_where_it_stands() {
        let rules = Node::default();
        let mut r = redactor(&rules);
        let addresses = [
            ("10.1.2.3:8080", "10.1.2.3"), ("[2001:db8::1]:443", "2001:db8::1"), ("10.1.2.4", "10.1.2.4"), ("2001:db8::2", "2001:db8::2"),
            ("(198.51.100.7:5432)", "198.51.100.7"), ("203.0.113.9:80,", "203.0.113.9"),
        ];
        for (address, ip) in addresses {
            let text = format!("dial tcp {address}: connect: connection refused");
            let scrubbed = String::from_utf8(r.text(text.as_bytes())).unwrap();
            assert_eq!(template::template(&scrubbed), template::template(&text), "{text} -> {scrubbed}");
            assert!(!scrubbed.contains(ip), "{scrubbed}");
        }
        // Any value, with the punctuation a sentence puts around it, templates as it did.
        let values = ["4111 1111 1111 1111", "4111111111111111", "DE89 3704 0044 0532 0130 00", "jane.doe@example.com", "+44 20 7946 0958", "203.0.113.9", "::ffff:192.0.2.128"];
        for value in values {
            for (before, after) in [("", ""), ("", "."), ("", ","), ("", ":"), ("", ";"), ("(", ")"), ("[", "]"), ("'", "'"), ("<", ">"), ("{", "}.")] {
                let text = format!("declined {before}{value}{after} by the gateway");
                let scrubbed = String::from_utf8(r.text(text.as_bytes())).unwrap();
                assert_eq!(template::template(&scrubbed), template::template(&text), "{text} -> {scrubbed}");
                assert!(!scrubbed.contains(value.split(' ').next_back().unwrap()), "{scrubbed}");
            }
        }
        let scrubbed = String::from_utf8(r.text(b"from 10.1.2.3:8080 and 10.1.2.3:8080")).unwrap();
        let words: Vec<&str> = scrubbed.split(' ').collect();
        assert_eq!(words[1], words[3], "one address and port, one token");
        assert!(words[1].starts_with("ip_") && !scrubbed.contains("8080"), "{scrubbed}");
    }

    #[test]
    fn a_payload_value_is_replaced_in_prose_not_inside_a_name() {
        let needles = [Needle { value: b"billing".to_vec(), token: b"T".to_vec() }, Needle { value: b"Jane Doe".to_vec(), token: b"N".to_vec() }];
        let replaced = |text: &str| replace_needles(text.as_bytes(), &needles, |_| false).map(|b| String::from_utf8(b).unwrap());
        assert_eq!(replaced("card declined for Jane Doe."), Some("card declined for N.".into()));
        assert_eq!(replaced("'Jane Doe' failed"), Some("'N' failed".into()));
        assert_eq!(replaced("at com.shop.billing.Handler"), None);
        assert_eq!(replaced("Jane Doesn't"), None);
        assert!(!is_needle(b"billing") && !is_needle(b"eu-west") && is_needle(b"Jane Doe") && is_needle(b"ord_1234"));
    }

    /// An echoed value holding what the classifier looks for stays, and the message's category
    /// with it; the values beside it are replaced as ever.
    #[test]
    fn a_payload_value_holding_a_classifiers_word_stays_in_the_message() {
        let profile = crate::profile::Profile::load("envelope").unwrap();
        let rules = rules::from_profile(&profile);
        let mut r = redactor(&rules);
        let line = br#"{"id":"m-1","original_value":{"status":"Gateway Timeout","customer":"Jane Doe"},"error_message":"upstream said Gateway Timeout for Jane Doe","error_type":"HTTPError","last_failed_at":"2026-11-01T10:00:00Z"}"#;
        let mut out = Vec::new();
        r.record(line, &mut out).expect("a JSON record");
        let v: Value = serde_json::from_slice(&out).unwrap();
        let message = v["error_message"].as_str().unwrap();
        assert!(message.starts_with("upstream said Gateway Timeout for ") && !message.contains("Jane"), "{message}");
        assert!(!v["original_value"]["status"].as_str().unwrap().contains("Timeout"), "the payload's own value is a token");
        let classifier = crate::profile::classify::Classifier::default();
        assert_eq!(classifier.classify("HTTPError", message), classifier.classify("HTTPError", "upstream said Gateway Timeout for Jane Doe"));
    }

    #[test]
    fn header_names_stay_and_their_values_follow_their_rules() {
        let profile = crate::profile::Profile::load("kafka-connect").unwrap();
        let rules = rules::from_profile(&profile);
        let mut r = redactor(&rules);
        let line = br#"{"topic":"dlq","key":"k-1","payload":"{\"card\":\"4111111111111111\"}","headers":["__connect.errors.topic","orders","__connect.errors.exception.message","bad card 4111 1111 1111 1111","trace-id","abc-123"],"ts":1700000000000}"#;
        let mut out = Vec::new();
        r.record(line, &mut out).expect("a JSON record");
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
