//! Message templates: an error message with its variable parts masked, so one cause is one
//! bucket. Context-free (a template depends on its message alone, so nightly diffs, windows and
//! merged states agree); every placeholder is the same `<*>`, since typed ones split causes.

mod context;
mod parts;
mod quoted;
mod status;

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use crate::profile::search;

use context::mark_context;
pub(crate) use parts::is_device_name;
use parts::part_rule;

const MAX_BYTES: usize = 3000;
const MAX_TOKENS: usize = 100;
pub const PLACEHOLDER: &str = "<*>";
/// Changes whenever a rule below changes what a message's template is, so partial states made
/// under other rules are refused rather than merged into different buckets.
pub const RULES_VERSION: u32 = 8;

static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+").unwrap());
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\x22<>]+").unwrap());
static ASSIGNED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(\w*)=([^\s,;&)\]}]+)").unwrap());
/// Jackson's location of a parse error, `[Source: (byte[])"{…}"; line: 1, column: 57]`, whose
/// source is an excerpt of the payload (`[truncated N bytes]`, or `REDACTED (…)` from 2.16).
static JACKSON_SOURCE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[Source: .*?; line: -?\d+, column: -?\d+\]").unwrap());

/// A template with the values each rule masked, in order.
pub struct Explained {
    pub template: String,
    pub masks: Vec<Mask>,
}

/// One value masked, and the rule that masked it.
pub struct Mask {
    pub rule: &'static str,
    pub value: String,
}

/// The template of a message and, for a reviewer, what each rule masked.
pub fn explain(message: &str) -> Explained {
    let mut masks = Vec::new();
    let template = render(message, Some(&mut masks));
    Explained { template, masks }
}

/// The template of a message: first line, capped, variable values masked to `<*>`.
pub fn template(message: &str) -> String {
    render(message, None)
}

fn render(message: &str, mut masks: Option<&mut Vec<Mask>>) -> String {
    let first_line = first_line(message);
    let capped = cap_bytes(first_line, MAX_BYTES);
    let mut note = |rule: &'static str, value: &str| {
        if let Some(m) = masks.as_deref_mut() {
            m.push(Mask { rule, value: value.to_string() });
        }
    };
    // Each rule runs only on a message holding its sign (`[Source: `, a quote, `://`, `@`, `=`).
    let mut masked = Cow::Borrowed(capped);
    if search::find(masked.as_bytes(), b"[Source: ").is_some() {
        masked = jackson_source(masked, &mut note);
    }
    let quoted = |quoted: &str| {
        // (After a prefix, as Python's `b'…'`.)
        let open = quoted.find(['\'', '"', '`']).unwrap_or(0);
        let inner = &quoted[open + 1..quoted.len() - 1];
        // An HTTP request line keeps its method: GET and DELETE of one path are two causes.
        match inner.split_once(' ').filter(|(method, _)| HTTP_METHODS.contains(method)) {
            Some((method, rest)) => {
                note("quoted request", rest);
                format!("{}{method} {PLACEHOLDER}{}", &quoted[..open + 1], &quoted[quoted.len() - 1..])
            }
            None => {
                note("quoted", quoted);
                PLACEHOLDER.to_string()
            }
        }
    };
    if masked.contains(['\'', '"', '`']) {
        masked = match masked {
            Cow::Borrowed(text) => quoted::replace_quoted(text, quoted),
            Cow::Owned(text) => Cow::Owned(quoted::replace_quoted(&text, quoted).into_owned()),
        };
    }
    if search::find(masked.as_bytes(), b"://").is_some() {
        masked = replace(masked, &URL, |c: &regex::Captures| {
            note("url", &c[0]);
            PLACEHOLDER.to_string()
        });
    }
    if masked.contains('@') {
        masked = replace(masked, &EMAIL, |c: &regex::Captures| {
            note("email", &c[0]);
            PLACEHOLDER.to_string()
        });
    }
    let http = status::mentions_http(capped);
    if masked.contains('=') {
        masked = replace(masked, &ASSIGNED, |c: &regex::Captures| {
            // `statusCode=503` names a cause, as `status code 503` does.
            if status::is_status_key(&c[1], http) && status::code(&c[2]).is_some() {
                return c[0].to_string();
            }
            note("key=value", &c[2]);
            format!("{}={PLACEHOLDER}", &c[1])
        });
    }

    let words: Vec<&str> = words(&masked, MAX_TOKENS * 2);
    let statuses = status::status_words(&words, http);
    let mut tokens: Vec<Cow<str>> = words.iter().zip(&statuses).map(|(w, &status)| if status { Cow::Borrowed(*w) } else { shape(w, &mut note) }).collect();
    mark_context(&words, &mut tokens, &mut note);

    let mut out = String::with_capacity(masked.len());
    let mut count = 0;
    let mut last_was_placeholder = false;
    let mut skip_to = 0;
    for (i, token) in tokens.iter().enumerate() {
        if i < skip_to {
            continue;
        }
        let variable = token.as_ref() == PLACEHOLDER;
        if variable && last_was_placeholder {
            continue; // "2026-01-15 10:30:00" is one value, not two
        }
        let list = bracketed_values(&tokens[i..]);
        if let Some((end, after)) = list.filter(|_| last_was_placeholder) {
            // A value restated in brackets after it (`1190 bytes (1.16 KB)`) is the same value.
            out.push_str(after);
            skip_to = i + end;
            continue;
        }
        if count == MAX_TOKENS {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        match list {
            // A list of values is one value: `(<*> <*>)` (a date and a time), `(<*>, <*>)`.
            Some((end, after)) => {
                out.push('(');
                out.push_str(PLACEHOLDER);
                out.push(')');
                out.push_str(after);
                skip_to = i + end;
            }
            None => out.push_str(token),
        }
        last_was_placeholder = variable;
        count += 1;
    }
    out
}

/// How many tokens a bracketed list of values at the start of `tokens` spans (`(<*>)`,
/// `(<*> <*>)`, `(<*>, <*>)`), if it is one, and the punctuation after its closing bracket.
fn bracketed_values<'t>(tokens: &'t [Cow<str>]) -> Option<(usize, &'t str)> {
    let inner = tokens.first()?.strip_prefix('(')?;
    for (n, token) in tokens.iter().enumerate() {
        let token = if n == 0 { inner } else { token.as_ref() };
        let rest = token.strip_prefix(PLACEHOLDER)?;
        if let Some(after) = rest.strip_prefix(')') {
            return after.chars().all(|c| matches!(c, ',' | '.' | ';' | ':')).then_some((n + 1, after));
        }
        if !(rest.is_empty() || rest == ",") {
            return None;
        }
    }
    None
}

/// `text` with each Jackson location's source (an excerpt of the payload) and its line and
/// column masked, or, when the message was cut before the location ends, the rest of it.
fn jackson_source<'a>(text: Cow<'a, str>, note: &mut impl FnMut(&'static str, &str)) -> Cow<'a, str> {
    const MASKED: &str = "[Source: <*>; line: <*>, column: <*>]";
    let text = replace(text, &JACKSON_SOURCE, |c: &regex::Captures| {
        note("payload excerpt", &c[0]);
        MASKED.to_string()
    });
    let start = text.rfind("[Source: ").filter(|&at| !text[at..].starts_with(MASKED));
    match start {
        Some(at) => {
            note("payload excerpt", &text[at..]);
            Cow::Owned(format!("{}[Source: {PLACEHOLDER}", &text[..at]))
        }
        None => text,
    }
}

/// `text` with every match of `re` replaced (borrowed still when nothing matched).
fn replace<'a>(text: Cow<'a, str>, re: &Regex, with: impl FnMut(&regex::Captures) -> String) -> Cow<'a, str> {
    let replaced = match re.replace_all(&text, with) {
        Cow::Owned(s) => Some(s),
        Cow::Borrowed(_) => None,
    };
    replaced.map_or(text, Cow::Owned)
}

const HTTP_METHODS: [&str; 9] = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE"];

/// The first `most` words of `text`, as `split_whitespace` cuts them; an ASCII text without a
/// vertical tab (whitespace to `char`, not to `u8`) is cut by bytes, which costs less.
fn words(text: &str, most: usize) -> Vec<&str> {
    if text.is_ascii() && !text.as_bytes().contains(&0x0b) {
        text.split_ascii_whitespace().take(most).collect()
    } else {
        text.split_whitespace().take(most).collect()
    }
}

/// The first line of `message` that is not blank, trimmed (as `lines()` would find it).
fn first_line(message: &str) -> &str {
    search::lines(message).map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// Where the first `...` of `text` starts.
fn find_dots(text: &str) -> Option<usize> {
    search::find(text.as_bytes(), b"...")
}

/// Characters that separate the parts of a token (`chdir(/tmp/x)`, `key:value,`, `a|b`).
fn is_delimiter(c: char) -> bool {
    matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',' | ';' | ':' | '|' | '"' | '\'' | '=')
}

/// A whitespace token as it is written: whole, masked whole, or with its value parts masked.
fn shape<'a>(token: &'a str, note: &mut impl FnMut(&'static str, &str)) -> Cow<'a, str> {
    if is_plain_word(token) {
        return Cow::Borrowed(token);
    }
    if token == PLACEHOLDER {
        return Cow::Borrowed(PLACEHOLDER);
    }
    if let Some(instance) = instance_name(token) {
        note("instance", instance);
        return Cow::Owned(format!("{PLACEHOLDER}{}", &token[instance.len()..]));
    }
    if let Some((start, end)) = separated_value(token) {
        let core = &token[start..end];
        note("number", core);
        // A sign before a number is part of it (`<1`, `~5`, `>=10`).
        let sign = matches!(&token[..start], "<" | ">" | "<=" | ">=" | "~" | "≈");
        if (start == 0 || sign) && start + core.len() == token.len() {
            return Cow::Borrowed(PLACEHOLDER);
        }
        return Cow::Owned(format!("{}{PLACEHOLDER}{}", &token[..start], &token[start + core.len()..]));
    }
    if let Some(literal) = sql_literal(token) {
        note("literal", literal);
        return Cow::Owned(token.replacen(literal, PLACEHOLDER, 1));
    }
    let mut text = String::with_capacity(token.len());
    let mut rest = token;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix(PLACEHOLDER) {
            text.push_str(PLACEHOLDER);
            rest = after;
        } else if rest.starts_with("...") {
            // Leader dots (`threshold.......0`) separate a name from its value.
            let end = rest.find(|c: char| c != '.').unwrap_or(rest.len());
            text.push_str(&rest[..end]);
            rest = &rest[end..];
        } else if is_delimiter(c) {
            // An empty pair of brackets is an empty value: `()` groups with `(host)`.
            let empty = (c == '(' && rest[1..].starts_with(')')) || (c == '[' && rest[1..].starts_with(']'));
            if empty {
                text.push(c);
                text.push_str(PLACEHOLDER);
                text.push_str(&rest[1..2]);
                rest = &rest[2..];
            } else {
                text.push(c);
                rest = &rest[c.len_utf8()..];
            }
        } else {
            // (A part ends before any delimiter, so it holds no placeholder, which starts with `<`.)
            let end = rest.find(is_delimiter).unwrap_or(rest.len());
            let end = find_dots(&rest[..end]).unwrap_or(end);
            let part = &rest[..end];
            match part_rule(part) {
                Some(rule) => {
                    note(rule, part);
                    text.push_str(PLACEHOLDER);
                }
                None => text.push_str(part),
            }
            rest = &rest[end..];
        }
    }
    // Values joined into one (`host:port`, `<*>.<*>`) are one value, as an address is.
    // Values joined into one (`host:port`, `<*>.<*>`, a list `a,b`) are one value, as an address
    // is; so is a host name before a port (`wpad:80`).
    let joined = text.split(PLACEHOLDER).all(|joiner| joiner.is_empty() || matches!(joiner, ":" | "." | "-" | "/" | "@" | "_" | ","));
    if joined && text.starts_with(PLACEHOLDER) && text.ends_with(PLACEHOLDER) {
        return Cow::Borrowed(PLACEHOLDER);
    }
    if let Some(name) = text.strip_suffix(":<*>").filter(|_| is_port(token)) {
        if !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-') {
            note("host", name);
            return Cow::Borrowed(PLACEHOLDER);
        }
    }
    Cow::Owned(text)
}

/// Where a value written with its own separators (an address, a time, a MAC, a UUID) lies in
/// a whitespace token, the punctuation around it left out: `shape` masks it as one value.
/// Square brackets stay with it: `[fe80::1]:8080` is one address.
pub(crate) fn separated_value(token: &str) -> Option<(usize, usize)> {
    let core = token.trim_matches(|c: char| (is_delimiter(c) && c != '[' && c != ']') || c == '.');
    let b = core.as_bytes();
    let separated = b.iter().copied().all(is_separated_value_byte) && b.iter().any(u8::is_ascii_digit) && !is_device_name(core) && find_dots(core).is_none();
    let one = separated || is_redaction_token(core.trim_matches(['[', ']']));
    // Where trimming left the core: the first place its text is in the token, as what was
    // trimmed holds none of the characters the core starts with.
    let start = core.as_ptr() as usize - token.as_ptr() as usize;
    one.then_some((start, start + core.len()))
}

/// A byte a value written with its own separators may hold (hex digits, `.:-_/+`, the
/// brackets of an IPv6 address, ISO time's `T` and `Z`); every one is ASCII.
pub(crate) const fn is_separated_value_byte(c: u8) -> bool {
    c.is_ascii_hexdigit() || matches!(c, b'.' | b':' | b'-' | b'_' | b'/' | b'+' | b'[' | b']' | b'T' | b'Z')
}

/// A value's token in a redacted dump (`ip_3z8i5b0n3p7k0a6d`, `card_…_1111`: a kind, then 16
/// digits and letters by turns): one value, as what it replaced was, with the punctuation
/// around it kept as that value's was (`4111111111111111.` and its token both `<*>.`).
fn is_redaction_token(core: &str) -> bool {
    let b = core.as_bytes();
    let kind = b.iter().take_while(|c| c.is_ascii_lowercase()).count();
    let body = match b.get(kind) {
        Some(b'_') if (2..=8).contains(&kind) => &b[kind + 1..],
        _ => b,
    };
    let body = match body.len() {
        21 if body[16] == b'_' && body[17..].iter().all(u8::is_ascii_digit) => &body[..16],
        _ => body,
    };
    body.len() == 16 && body.iter().enumerate().all(|(i, c)| if i % 2 == 0 { c.is_ascii_digit() } else { c.is_ascii_lowercase() })
}

/// A literal written in a list of values (`(1, NULL,`, `true)`): a value, where the same word
/// in a sentence (`cannot be null`, `was null, expected`) is wording. A bracket beside it
/// makes any literal a value; a comma alone only SQL's upper-case ones.
fn sql_literal(token: &str) -> Option<&str> {
    const LITERALS: [&str; 10] = ["NULL", "null", "TRUE", "true", "FALSE", "false", "None", "nil", "DEFAULT", "undefined"];
    const SQL: [&str; 4] = ["NULL", "TRUE", "FALSE", "DEFAULT"];
    let core = token.trim_matches(['(', ')', ',', ';']);
    let bracketed = token.contains(['(', ')']) && LITERALS.contains(&core);
    let listed = token.ends_with(',') && SQL.contains(&core);
    (core.len() < token.len() && (bracketed || listed)).then_some(core)
}

/// An upper-case name with its number in brackets names one instance (`LOCAL(0)`, `CPU(3)`):
/// the whole is a value. Returns it without the punctuation that follows.
fn instance_name(token: &str) -> Option<&str> {
    let name = token.trim_end_matches([',', ';', '.']);
    let (head, index) = name.strip_suffix(')')?.split_once('(')?;
    let upper = head.len() >= 2 && head.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    let number = !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit());
    (upper && head.as_bytes()[0].is_ascii_uppercase() && number).then_some(name)
}

/// Whether a token ends in `:` and a port number (at most five digits).
fn is_port(token: &str) -> bool {
    let digits = token.rsplit_once(':').map_or("", |(_, port)| port);
    (1..=5).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A word no rule of `shape` touches (most words of a message): no digit, delimiter, dot,
/// slash or tilde, and too short or not hex enough to be a bare hex id, nor random letters.
fn is_plain_word(token: &str) -> bool {
    let plain = token.chars().all(|c| !(c.is_ascii_digit() || is_delimiter(c) || matches!(c, '.' | '/' | '~')));
    plain && !(token.len() >= 8 && token.bytes().all(|b| b.is_ascii_hexdigit())) && !parts::is_random_id(token)
}

fn cap_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests;
