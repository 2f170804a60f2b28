//! Keyed tokens: a value replaced by HMAC-SHA-256 of it under the key, truncated, so equal
//! values stay equal across files and runs and nothing of the value can be read back.
//! A token is shaped as the message templates treat what it replaces: a value stays a value.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::profile::classify::Classifier;

/// The fewest bytes a key file may hold (after surrounding whitespace): 128 bits.
pub const MIN_KEY_BYTES: usize = 16;

/// How a token is written, so templating treats it as the value it replaces was treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `kind_7f3a…`: a digit, a letter, a digit…, which every template masks as a value, and
    /// as one written with its own separators (`10.0.0.7`, `4111`): what stands around it
    /// (`[`, `.`) stays as it stood around that value.
    Value,
    /// `kind_f7a3…`: a letter, a digit, a letter…, masked as a part of a word is (`ord_548305`,
    /// a JWT), the punctuation around it read as around such a part.
    Part,
    /// `kind_qzkv…`: lower-case letters only, which a template keeps as a word, as it kept the
    /// word (a name) it replaces; two names stay two buckets.
    Word,
}

/// The secret tokens are keyed with.
#[derive(Clone)]
pub struct Keyed {
    mac: Hmac<Sha256>,
    /// SHA-256's state after the key's inner and outer pads: HMAC of a value that fits one
    /// block is one compression from each (most values: an id, a name, a number).
    inner: [u32; 8],
    outer: [u32; 8],
    guard: Arc<Guard>,
    /// Which key this is, for the digests each thread remembers (`Recent`).
    id: u64,
}

/// The digests of the last short values each thread drew, by value: a dump repeats a few
/// values in every record (a count, a retry number, the key the payload holds again), and a
/// lookup costs a fraction of HMAC's two compressions. A slot holds its value's bytes and
/// its key's id: a digest is only ever taken for the same value under the same key.
struct Recent {
    slots: Vec<RecentSlot>,
}

#[derive(Clone, Copy, Default)]
struct RecentSlot {
    key: u64,
    len: u8,
    value: [u8; RECENT_LONGEST],
    digest: [u8; 32],
}

/// The longest value remembered, and how many slots a thread has (a few KiB, in its cache).
const RECENT_LONGEST: usize = 16;
const RECENT_SLOTS: usize = 256;

thread_local! {
    static RECENT: std::cell::RefCell<Recent> = const { std::cell::RefCell::new(Recent { slots: Vec::new() }) };
}

/// Each `Keyed::new` a key id of its own (its clones share it).
static NEXT_KEY_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl Recent {
    /// The digest of `value` (at most `RECENT_LONGEST` bytes) under key `key`: remembered, or
    /// by `compute` and then remembered in its slot.
    fn digest(&mut self, key: u64, value: &[u8], compute: impl FnOnce() -> [u8; 32]) -> [u8; 32] {
        if self.slots.is_empty() {
            self.slots = vec![RecentSlot::default(); RECENT_SLOTS];
        }
        let mut padded = [0u8; RECENT_LONGEST];
        padded[..value.len()].copy_from_slice(value);
        let (low, high) = padded.split_at(8);
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let mixed = (word(low) ^ word(high).rotate_left(29) ^ value.len() as u64 ^ key.rotate_left(47)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let slot = &mut self.slots[(mixed >> 56) as usize % RECENT_SLOTS];
        if slot.key == key && usize::from(slot.len) == value.len() && slot.value == padded {
            return slot.digest;
        }
        let digest = compute();
        *slot = RecentSlot { key, len: value.len() as u8, value: padded, digest };
        digest
    }
}

/// SHA-256's initial state (FIPS 180-4, 5.3.3).
const SHA256_INITIAL: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// The longest value whose padded inner message (after the pad's block) fits one block.
const ONE_BLOCK: usize = 55;

/// SHA-256's state after the key block XOR `pad` (RFC 2104: a key longer than a block is its
/// digest first).
fn padded_state(key: &[u8], pad: u8) -> [u32; 8] {
    use sha2::Digest;
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    block.iter_mut().for_each(|b| *b ^= pad);
    let mut state = SHA256_INITIAL;
    sha2::compress256(&mut state, &[block.into()]);
    state
}

/// One compression of `message` (at most `ONE_BLOCK` bytes, after `prefix` bytes already
/// compressed into `state`), padded as SHA-256 pads a message's last block.
fn last_block(mut state: [u32; 8], message: &[u8], prefix: usize) -> [u32; 8] {
    let mut block = [0u8; 64];
    block[..message.len()].copy_from_slice(message);
    block[message.len()] = 0x80;
    block[56..].copy_from_slice(&(((prefix + message.len()) * 8) as u64).to_be_bytes());
    sha2::compress256(&mut state, &[block.into()]);
    state
}

fn state_bytes(state: &[u32; 8]) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for (chunk, word) in bytes.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    bytes
}

/// What the classifier looks for in messages, as tokens and numbers could spell it: a value
/// replaced in a message must neither add a pattern nor take one away, or its record changes
/// category. Tokens are `[a-z0-9_]` only, so a pattern with any other byte is never spelled;
/// nor is one byte guarded (it is in nearly every token and every message).
struct Guard {
    /// Patterns a value token could spell: across its `_`, or not two digits or two letters
    /// together (a value token's body alternates them).
    value: Patterns,
    /// Patterns a word token could spell: across its `_`, or letters only.
    word: Patterns,
    /// Every pattern of `[a-z0-9_]`, which a token's kind may hold.
    any: Patterns,
    /// Every pattern, which a value replaced whole would take away with it.
    all: Patterns,
    /// Numbers (`503`), which a number keeps where they are and never gains; and the same
    /// as one automaton, which tells at once that a number holds none.
    numbers: Vec<String>,
    numbers_found: Patterns,
}

impl Guard {
    fn of(classifier: &Classifier) -> Guard {
        let guarded: Vec<&str> = classifier.patterns().filter(|p| p.len() > 1).collect();
        let owned = |keep: &dyn Fn(&str) -> bool| -> Vec<String> { guarded.iter().filter(|p| keep(p)).map(|p| p.to_string()).collect() };
        let spellable = |p: &str| p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        let across = |p: &str| p.contains('_');
        let alternates = |p: &str| p.as_bytes().windows(2).all(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit());
        let numbers = owned(&|p| p.bytes().all(|b| b.is_ascii_digit()));
        Guard {
            value: Patterns::of(&owned(&|p| spellable(p) && (across(p) || alternates(p)))),
            word: Patterns::of(&owned(&|p| spellable(p) && (across(p) || p.bytes().all(|b| b.is_ascii_lowercase())))),
            any: Patterns::of(&owned(&spellable)),
            all: Patterns::of(&owned(&|_| true)),
            numbers_found: Patterns::of(&numbers),
            numbers,
        }
    }

    /// Where the classifier's numbers (`503`, `504`) stand in a number's text (each number's
    /// matches as `match_indices` finds them; the automaton only says whether there are any).
    fn cues_in(&self, text: &str) -> Vec<(usize, usize)> {
        let mut at = Vec::new();
        if !self.numbers_found.spelled_in(text.as_bytes()) {
            return at;
        }
        for pattern in &self.numbers {
            at.extend(text.match_indices(pattern.as_str()).map(|(i, p)| (i, p.len())));
        }
        at.sort_unstable();
        at
    }
}

/// Patterns looked for together, in one pass over a text (a token is checked each time one
/// is drawn: one automaton costs less than a search for each pattern).
struct Patterns(Option<aho_corasick::AhoCorasick>);

impl Patterns {
    fn of(patterns: &[String]) -> Patterns {
        // A DFA without a prefilter: the texts are tokens, a few bytes each.
        let build = || aho_corasick::AhoCorasick::builder().kind(Some(aho_corasick::AhoCorasickKind::DFA)).prefilter(false).build(patterns).expect("a few short patterns build");
        Patterns((!patterns.is_empty()).then(build))
    }

    /// Whether `text` holds one of the patterns.
    fn spelled_in(&self, text: &[u8]) -> bool {
        self.0.as_ref().is_some_and(|found| found.is_match(text))
    }
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

    /// A key whose tokens guard the default classification's patterns.
    pub fn new(key: &[u8]) -> Keyed {
        Keyed {
            mac: Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length"),
            inner: padded_state(key, 0x36),
            outer: padded_state(key, 0x5c),
            guard: Arc::new(Guard::of(&Classifier::default())),
            id: NEXT_KEY_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The same key, its tokens guarding `classifier`'s patterns (a classification file's,
    /// as `rank --classification` will read the output with).
    pub fn guarding(mut self, classifier: &Classifier) -> Keyed {
        self.guard = Arc::new(Guard::of(classifier));
        self
    }

    /// Whether `text` holds what the classifier looks for in a message (as it reads one: lower
    /// case), so that replacing it whole would take that away.
    pub fn holds_pattern(&self, text: &[u8]) -> bool {
        if text.is_ascii() {
            return self.guard.all.spelled_in(&text.to_ascii_lowercase());
        }
        let lower = String::from_utf8_lossy(text).to_lowercase();
        self.guard.all.spelled_in(lower.as_bytes())
    }

    /// HMAC-SHA-256 of `value` under the key (a short value's remembered by the thread).
    fn digest(&self, value: &[u8]) -> [u8; 32] {
        if value.len() <= RECENT_LONGEST {
            return RECENT.with(|recent| recent.borrow_mut().digest(self.id, value, || self.hmac(value)));
        }
        self.hmac(value)
    }

    /// HMAC-SHA-256 of `value` under the key, computed.
    fn hmac(&self, value: &[u8]) -> [u8; 32] {
        if value.len() <= ONE_BLOCK {
            let inner = state_bytes(&last_block(self.inner, value, 64));
            return state_bytes(&last_block(self.outer, &inner, 64));
        }
        let mut mac = self.mac.clone();
        mac.update(value);
        mac.finalize().into_bytes().into()
    }

    /// The token of a text value: `kind_` and 16 characters of its digest.
    pub fn token(&self, kind: &'static str, value: &[u8], shape: Shape) -> String {
        let mut token = String::with_capacity(kind.len() + 17);
        // A kind that holds a pattern itself (`email` where the rules look for `mail`) is left
        // out: the token is its 16 characters alone.
        token.push_str(kind);
        token.push('_');
        if self.guard.any.spelled_in(token.as_bytes()) {
            token.clear();
        }
        let start = token.len();
        let guarded = match shape {
            Shape::Value | Shape::Part => &self.guard.value,
            Shape::Word => &self.guard.word,
        };
        let mut digest = self.digest(value);
        for attempt in 1u32.. {
            token.truncate(start);
            let mut body = [0u8; 16];
            match shape {
                // Digits and letters by turns: never two digits or two letters together, so no
                // word or number a classifier looks for (`503`, `timeout`) is spelled by chance.
                Shape::Value | Shape::Part => {
                    let digit_at = usize::from(shape == Shape::Part);
                    for (i, (out, &b)) in body.iter_mut().zip(&digest[..16]).enumerate() {
                        *out = if i % 2 == digit_at { b'0' + b % 10 } else { b'a' + b % 26 };
                    }
                }
                Shape::Word => body.iter_mut().zip(&digest[..16]).for_each(|(out, &b)| *out = b'a' + b % 26),
            }
            token.push_str(std::str::from_utf8(&body).expect("ASCII"));
            // Drawn again in the rare case it spells a pattern anyway (after 64, the last stays).
            if !guarded.spelled_in(token.as_bytes()) || attempt >= 64 {
                break;
            }
            digest = self.digest(&[value, &attempt.to_be_bytes()].concat());
        }
        token
    }

    /// A JSON number's text with each digit replaced by one of the digest's (signs, points
    /// and exponents kept, a leading non-zero digit stays non-zero): still a number of the
    /// same size, for a payload's amounts, card and phone numbers written as numbers. A number
    /// a classifier looks for (`503`) in it stays where it was and none is added, so the
    /// number echoed in a message leaves the record's category as it was.
    pub fn number(&self, text: &str) -> String {
        let kept = self.guard.cues_in(text);
        let mut digest = self.digest(text.as_bytes());
        for attempt in 1u32.. {
            let mut out = digits_from(text, &digest).into_bytes();
            for &(at, len) in &kept {
                out[at..at + len].copy_from_slice(&text.as_bytes()[at..at + len]);
            }
            let out = String::from_utf8(out).expect("ASCII");
            if self.guard.cues_in(&out) == kept || attempt >= 64 {
                return out;
            }
            digest = self.digest(&[text.as_bytes(), &attempt.to_be_bytes()].concat());
        }
        unreachable!("the loop returns")
    }
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

    /// The one-block digest is HMAC-SHA-256 as the hmac crate computes it: keys short, of a
    /// block and longer than one, values of every length around the one-block limit.
    #[test]
    fn digests_are_hmac_sha256() {
        let mut next = crate::testing::random(0x5851_f42d_4c95_7f2d);
        for key_len in [16, 20, 32, 63, 64, 65, 100, 200] {
            let key: Vec<u8> = (0..key_len).map(|_| next() as u8).collect();
            let keyed = Keyed::new(&key);
            for len in 0..=130 {
                let value: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
                mac.update(&value);
                let want: [u8; 32] = mac.finalize().into_bytes().into();
                assert_eq!(keyed.digest(&value), want, "key {key_len} bytes, value {len}");
            }
        }
        // RFC 4231, test case 2.
        let want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let got: String = Keyed::new(b"Jefe").digest(b"what do ya want for nothing?").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, want);
    }

    /// A short value's digest remembered by the thread is its own key's: values drawn again
    /// and again under keys taken in turn (equal values, values that differ in one byte or in
    /// length, more of them than the thread remembers) each give HMAC-SHA-256 under its key.
    #[test]
    fn remembered_digests_are_their_own_keys() {
        // The first key twice: two keys of equal bytes give equal digests, each its own way.
        let raw: [&[u8]; 3] = [b"first key of sixteen+", b"second key, sixteen+", b"first key of sixteen+"];
        let keys = raw.map(Keyed::new);
        let mut next = crate::testing::random(0x2545_f491_4f6c_dd1d);
        for round in 0..4000 {
            let len = (next() % 17) as usize;
            let mut value: Vec<u8> = (0..len).map(|_| b"01ab"[(next() % 4) as usize]).collect();
            if round % 7 == 0 && !value.is_empty() {
                value.pop();
            }
            let k = (next() % 3) as usize;
            let mut mac = Hmac::<Sha256>::new_from_slice(raw[k]).unwrap();
            mac.update(&value);
            let want: [u8; 32] = mac.finalize().into_bytes().into();
            assert_eq!(keys[k].digest(&value), want, "key {k}, value {value:?}");
        }
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
        let defaults = Classifier::default();
        let spelled = |t: &str| defaults.patterns().filter(|p| t.contains(p)).collect::<Vec<_>>();
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

    /// A classification file's own patterns are guarded as the defaults are: letters, digits
    /// by turns, a number, a word across a token's `_`, and one inside a kind's name.
    #[test]
    fn tokens_leave_a_classification_files_words_as_they_were() {
        let classifier = Classifier::parse(
            r#"
            [validation]
            patterns = ["a1", "7q", "zz", "429", "mail", "x_5", "invalid email"]
            [transient]
            patterns = ["qk"]
            "#,
        )
        .unwrap();
        let k = Keyed::new(b"0123456789abcdef0123").guarding(&classifier);
        let spelled = |t: &str| classifier.patterns().filter(|p| t.contains(p)).collect::<Vec<_>>();
        for i in 0..20_000u32 {
            let value = format!("v{i}");
            for kind in ["x", "email", "name"] {
                for shape in [Shape::Value, Shape::Word] {
                    let token = k.token(kind, value.as_bytes(), shape);
                    assert_eq!(spelled(&token), Vec::<&str>::new(), "{token}");
                    // A kind holding no pattern still leads its token.
                    assert_eq!(token.starts_with(&format!("{kind}_")), kind != "email", "{token}");
                }
            }
            for number in [format!("{}", 1000 + i), format!("4290{i}"), format!("{i}42942")] {
                assert_eq!(spelled(&k.number(&number)), spelled(&number), "{number}");
            }
        }
        // Without the file's patterns, its words are spelled now and then: the test can fail.
        let unguarded = Keyed::new(b"0123456789abcdef0123");
        let spelled_unguarded = (0..20_000u32).filter(|i| !spelled(&unguarded.token("x", format!("v{i}").as_bytes(), Shape::Value)).is_empty()).count();
        assert!(spelled_unguarded > 100, "{spelled_unguarded}");
    }

    /// A pattern of one byte is in nearly every value: guarding it would keep echoes in the
    /// clear and draw every token 64 times, so it is not guarded.
    #[test]
    fn a_pattern_of_one_byte_is_not_guarded() {
        let classifier = Classifier::parse("[poison]\npatterns = [\"e\", \"5\"]\n").unwrap();
        let k = Keyed::new(b"0123456789abcdef0123").guarding(&classifier);
        assert!(!k.holds_pattern(b"Jane Doe"));
        assert_ne!(k.number("5555"), "5555");
        assert!(k.token("name", b"Jane Doe", Shape::Word).starts_with("name_"));
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
