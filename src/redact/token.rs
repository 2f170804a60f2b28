//! Keyed tokens: a value replaced by HMAC-SHA-256 of it under the key, truncated, so equal
//! values stay equal across files and runs and nothing of the value can be read back.
//! A token is shaped as the message templates treat what it replaces: a value stays a value.

use std::path::Path;

use anyhow::{bail, Context, Result};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::profile::classify::message_patterns;

/// The fewest bytes a key file may hold (after surrounding whitespace): 128 bits.
pub const MIN_KEY_BYTES: usize = 16;

/// How a token is written, so templating treats it as the value it replaces was treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `kind_7f3a…`: a digit, a letter, a digit…, which every template masks as a value.
    Value,
    /// `kind_qzkv…`: lower-case letters only, which a template keeps as a word, as it kept the
    /// word (a name) it replaces; two names stay two buckets.
    Word,
}

/// The secret tokens are keyed with.
#[derive(Clone)]
pub struct Keyed {
    mac: Hmac<Sha256>,
}

impl Keyed {
    /// The key in `path`: its bytes without surrounding whitespace, at least 16 of them.
    pub fn from_file(path: &Path) -> Result<Keyed> {
        let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read the key file", path.display()))?;
        let key = bytes.trim_ascii();
        if key.len() < MIN_KEY_BYTES {
            bail!("{}: a key must hold at least {MIN_KEY_BYTES} bytes (it holds {}); make one with `head -c 32 /dev/urandom | base64 > {}`", path.display(), key.len(), path.display());
        }
        Ok(Keyed::new(key))
    }

    pub fn new(key: &[u8]) -> Keyed {
        Keyed { mac: Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length") }
    }

    /// HMAC-SHA-256 of `value` under the key.
    fn digest(&self, value: &[u8]) -> [u8; 32] {
        let mut mac = self.mac.clone();
        mac.update(value);
        mac.finalize().into_bytes().into()
    }

    /// The token of a text value: `kind_` and 16 characters of its digest.
    pub fn token(&self, kind: &'static str, value: &[u8], shape: Shape) -> String {
        let mut token = String::with_capacity(kind.len() + 17);
        token.push_str(kind);
        token.push('_');
        let mut digest = self.digest(value);
        match shape {
            // Digits and letters by turns: never two digits or two letters together, so no
            // word or number a classifier looks for (`503`, `timeout`) is spelled by chance.
            Shape::Value => {
                for (i, &b) in digest[..16].iter().enumerate() {
                    token.push(if i % 2 == 0 { (b'0' + b % 10) as char } else { (b'a' + b % 26) as char });
                }
            }
            Shape::Word => {
                let start = token.len();
                for attempt in 1u32.. {
                    token.truncate(start);
                    token.extend(digest[..16].iter().map(|&b| (b'a' + b % 26) as char));
                    if !message_patterns().any(|p| token[start..].contains(p)) {
                        break;
                    }
                    digest = self.digest(&[value, &attempt.to_be_bytes()].concat());
                }
            }
        }
        token
    }

    /// A JSON number's text with each digit replaced by one of the digest's (signs, points
    /// and exponents kept, a leading non-zero digit stays non-zero): still a number of the
    /// same size, for a payload's amounts, card and phone numbers written as numbers. A number
    /// a classifier looks for (`503`) in it stays where it was and none is added, so the
    /// number echoed in a message leaves the record's category as it was.
    pub fn number(&self, text: &str) -> String {
        let kept = cues_in(text);
        let mut digest = self.digest(text.as_bytes());
        for attempt in 1u32.. {
            let mut out = digits_from(text, &digest).into_bytes();
            for &(at, len) in &kept {
                out[at..at + len].copy_from_slice(&text.as_bytes()[at..at + len]);
            }
            let out = String::from_utf8(out).expect("ASCII");
            if cues_in(&out) == kept || attempt >= 64 {
                return out;
            }
            digest = self.digest(&[text.as_bytes(), &attempt.to_be_bytes()].concat());
        }
        unreachable!("the loop returns")
    }
}

/// Where the classifier's numbers (`503`, `504`) stand in a number's text.
fn cues_in(text: &str) -> Vec<(usize, usize)> {
    let mut at = Vec::new();
    for pattern in message_patterns().filter(|p| p.bytes().all(|b| b.is_ascii_digit())) {
        at.extend(text.match_indices(pattern).map(|(i, p)| (i, p.len())));
    }
    at.sort_unstable();
    at
}

/// `text` with each digit replaced by one of `digest`'s.
fn digits_from(text: &str, digest: &[u8; 32]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut leading = true;
    for (i, c) in text.chars().enumerate() {
        if c.is_ascii_digit() {
            let byte = digest[i % 32] ^ (i / 32) as u8;
            let digit = if leading && c != '0' { 1 + byte % 9 } else { byte % 10 };
            out.push((b'0' + digit) as char);
            leading = false;
        } else {
            // A digit after `e` or `.` leads nothing; one after `-` still leads.
            leading = c == '-';
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_give_equal_tokens_and_another_key_others() {
        let a = Keyed::new(b"0123456789abcdef0123");
        let b = Keyed::new(b"another key of twenty bytes");
        let t = a.token("email", b"jane@example.com", Shape::Value);
        assert_eq!(t, a.token("email", b"jane@example.com", Shape::Value));
        assert_ne!(t, a.token("email", b"john@example.com", Shape::Value));
        assert_ne!(t, b.token("email", b"jane@example.com", Shape::Value));
        assert!(t.starts_with("email_") && t.len() == 22, "{t}");
        assert!(t.as_bytes()[6].is_ascii_digit());
        let w = a.token("name", b"Jane Doe", Shape::Word);
        assert!(w["name_".len()..].bytes().all(|b| b.is_ascii_lowercase()), "{w}");
    }

    #[test]
    fn numbers_keep_their_shape() {
        let k = Keyed::new(b"0123456789abcdef0123");
        let n = k.number("4111111111111111");
        assert_eq!(n.len(), 16);
        assert_ne!(n, "4111111111111111");
        assert!(!n.starts_with('0'));
        let f = k.number("-710.25e3");
        assert!(f.starts_with('-') && f.contains('.') && f.contains('e'), "{f}");
        assert!(f.parse::<f64>().is_ok());
        assert_eq!(k.number("0.5").as_bytes()[1], b'.');
        assert_eq!(k.number("12"), k.number("12"));
    }

    /// A token never spells what the classifier looks for in a message, and a number keeps
    /// the ones it holds: over many values, none is added or taken away.
    #[test]
    fn tokens_leave_the_classifiers_words_as_they_were() {
        let k = Keyed::new(b"0123456789abcdef0123");
        let spelled = |t: &str| message_patterns().filter(|p| t.contains(p)).collect::<Vec<_>>();
        for i in 0..20_000u32 {
            let value = format!("v{i}");
            for shape in [Shape::Value, Shape::Word] {
                let token = k.token("x", value.as_bytes(), shape);
                assert_eq!(spelled(&token), Vec::<&str>::new(), "{token}");
            }
            for number in [format!("{}", 1000 + i), format!("15030{i}"), format!("{i}5045034")] {
                assert_eq!(spelled(&k.number(&number)), spelled(&number), "{number}");
            }
        }
    }

    #[test]
    fn a_short_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "short\n").unwrap();
        let err = Keyed::from_file(&path).err().unwrap().to_string();
        assert!(err.contains("at least 16 bytes"), "{err}");
    }
}
