//! Personal and secret values found in free text (error messages, stack traces, any field
//! outside the payload): the shapes Presidio's recognisers and gitleaks' rules look for, each
//! confirmed by its checksum or validator where it has one, so ordinary numbers stay.

use std::str::FromStr;
use std::sync::LazyLock;

use regex::bytes::Regex;

use super::signs::Signs;

/// A value found: where it lies in the text and what it is (the token's prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub kind: &'static str,
}

/// One detector: a pattern, the group holding the value (0: the whole match), and a check
/// of the value (a checksum, a validator) that a match must pass.
struct Detector {
    kind: &'static str,
    pattern: Regex,
    group: usize,
    /// What a text must show for the pattern to be tried at all.
    gate: Gate,
    /// Cards, IBANs and phones hold seven digits at least.
    seven_digits: bool,
    confirm: fn(&[u8]) -> Option<usize>,
}

fn whole(value: &[u8]) -> Option<usize> {
    Some(value.len())
}

fn detector(kind: &'static str, pattern: &str, group: usize, gate: Gate, confirm: fn(&[u8]) -> Option<usize>) -> Detector {
    let seven_digits = matches!(kind, "card" | "iban" | "phone");
    Detector { kind, pattern: Regex::new(pattern).expect("detector patterns compile"), group, gate, seven_digits, confirm }
}

/// In the order they claim text: a secret's shape is more specific than the numbers in it.
static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    vec![
        detector("secret", r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE KEY-----|\z)", 0, Gate::PemHeader, whole),
        detector("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", 0, Gate::JwtStart, whole),
        detector("bearer", r"(?i)\b(?:bearer|basic|token)\s+([A-Za-z0-9._~+/-]{8,}=*)", 1, Gate::Keyword, credential),
        detector(
            "secret",
            r#"(?i)\b(?:password|passwd|pwd|secret|client_secret|secret_key|api[_-]?key|apikey|x-api-key|token|access[_-]?token|refresh[_-]?token|auth[_-]?token|session[_-]?id|private[_-]?key|aws_secret_access_key)\b["']?\s*[:=]\s*["']?([^\s"'&,;)}\]]{4,})"#,
            1,
            Gate::Keyword,
            whole,
        ),
        detector("awskey", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b", 0, Gate::KeyPrefix, whole),
        detector(
            "secret",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}|xox[abposr]-[A-Za-z0-9-]{10,}|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56})",
            0,
            Gate::KeyPrefix,
            whole,
        ),
        // A URL's password (`postgres://app:s3cret@db:5432/shop`), before the email its
        // `s3cret@db.internal` could be read as.
        detector("secret", r"\b[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s:/@]+:([^\s:/@]+)@", 1, Gate::At, whole),
        detector("email", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}", 0, Gate::At, whole),
        detector("iban", r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b", 0, Gate::Iban, iban),
        detector("card", r"\b[0-9](?:[ -]?[0-9]){12,18}\b", 0, Gate::CardDigits, card),
        detector(
            "phone",
            r"\+[0-9][0-9 ().-]{6,20}[0-9]|\(?\b[0-9]{3}\)?[ .-]?[0-9]{3}[ .-][0-9]{4}\b|\b0[0-9]{1,4}[ -][0-9]{3,4}[ -]?[0-9]{3,4}\b|\b[2-9][0-9]{2}[2-9][0-9]{6}\b",
            0,
            Gate::PhoneDigits,
            phone,
        ),
        // Eight groups, or fewer around a `::` (a time `10:30:00` is neither); an IPv4 address
        // after a `::` (`::ffff:192.0.2.128`, as Node and Java write a client's) is one address.
        detector(
            "ip",
            r"(?i)(?:(?:\b[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,5})?::(?:[0-9a-f]{1,4}:){0,5}(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b|\b(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}\b|(?:\b[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6}\b)?)(?:%[0-9a-z]+)?",
            0,
            Gate::Colons,
            ipv6,
        ),
        detector("ip", r"\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b", 0, Gate::DottedDigits, ipv4),
    ]
});

/// What every value a detector confirms shows in its text, cheaper to see than to search for
/// the value: each detector runs only over texts that show its sign.
#[derive(Clone, Copy)]
enum Gate {
    /// `-----BEGIN`.
    PemHeader,
    /// A word starting `eyJ`.
    JwtStart,
    /// An `@`.
    At,
    /// A word starting as a credential's keyword does (`Bearer`, `password`, `api_key`…), in
    /// any case.
    Keyword,
    /// A word starting as a service's key or token does (`AKIA`, `AIza`, `ghp_`, `xoxb-`,
    /// `SG.`, a Slack webhook's `hooks`…).
    KeyPrefix,
    /// A run of digits, spaces and `().+-` holding thirteen digits.
    CardDigits,
    /// What every phone pattern holds: a `+` and a phone's digits, ten digits alone, or two
    /// groups of digits as its last two are, one space, dot or dash between (a date
    /// `2026-11-02`, a time, a UUID's groups or an IPv4 address are none of these).
    PhoneDigits,
    /// A word starting with two capitals and two digits (an IBAN's country and check digits).
    Iban,
    /// A `::`, or seven colons.
    Colons,
    /// Three dots between digits.
    DottedDigits,
}

impl Signs {
    /// The gates these signs open, one bit each: most texts open none, and are done.
    fn open(&self) -> u16 {
        let gates = [
            (Gate::PemHeader, self.pem),
            (Gate::JwtStart, self.jwt),
            (Gate::At, self.at),
            (Gate::Keyword, self.keyword),
            (Gate::KeyPrefix, self.key_prefix),
            (Gate::CardDigits, self.card_digits),
            (Gate::PhoneDigits, self.plus_digit || self.ten_digits || self.digit_groups),
            (Gate::Iban, self.iban),
            (Gate::Colons, self.double_colon || self.colons >= 7),
            (Gate::DottedDigits, self.dotted_digits >= 3),
        ];
        gates.into_iter().fold(0, |open, (gate, is_open)| open | if is_open { gate.bit() } else { 0 })
    }
}

impl Gate {
    /// The gate's bit in `Signs::open`.
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// Every value found in `text`, in order, none overlapping another (an earlier detector wins).
/// Each detector runs only if the text shows its sign: most texts (a topic, a type name, a
/// version, a consumer's name) show none and are spared every pattern.
pub fn find(text: &[u8]) -> Vec<Found> {
    if too_short_to_hold_a_value(text) {
        return Vec::new();
    }
    let signs = Signs::of(text);
    let open = signs.open();
    if open == 0 {
        return Vec::new();
    }
    found_by(text, signs.digits, |d| open & d.gate.bit() != 0)
}

/// The longest text `too_short_to_hold_a_value` answers for: no value of 13 bytes or fewer
/// is found without an `@`, `:`, `=`, three dots or seven digits (a bearer credential is 14 at
/// least, a JWT 18, a service's key 15, a card 13 digits, an IBAN or a phone 7).
const SHORT: usize = 13;

/// Whether `text` is a short one (a topic, a type name, a version, a count) that no detector
/// can find anything in: most texts are, and are known so without their signs.
fn too_short_to_hold_a_value(text: &[u8]) -> bool {
    if text.len() > SHORT {
        return false;
    }
    let (mut digits, mut dots, mut marks) = (0, 0, 0);
    for &b in text {
        digits += usize::from(b.is_ascii_digit());
        dots += usize::from(b == b'.');
        marks += usize::from(matches!(b, b'@' | b':' | b'='));
    }
    digits < 7 && dots < 3 && marks == 0
}

/// Every detector `tried` lets through, in order, run over `text`.
fn found_by(text: &[u8], digits: usize, tried: impl Fn(&Detector) -> bool) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut claim = |start: usize, value: &[u8], kind: &'static str, confirm: fn(&[u8]) -> Option<usize>| {
        let Some(len) = confirm(value) else { return };
        let end = start + len;
        if !found.iter().any(|f| f.start < end && start < f.end) {
            found.push(Found { start, end, kind });
        }
    };
    for d in DETECTORS.iter() {
        if (d.seven_digits && digits < 7) || !tried(d) {
            continue;
        }
        if d.group == 0 {
            for m in d.pattern.find_iter(text) {
                claim(m.start(), m.as_bytes(), d.kind, d.confirm);
            }
        } else {
            for caps in d.pattern.captures_iter(text) {
                if let Some(m) = caps.get(d.group) {
                    claim(m.start(), m.as_bytes(), d.kind, d.confirm);
                }
            }
        }
    }
    found.sort_by_key(|f| f.start);
    found
}

/// A credential after `Bearer`, `Basic` or `Token`: a digit or `=` in it, letters joined by a
/// `.`, `_`, `-`, `+`, `/` or `~` inside it (`abc.def-ghi`), or 20 characters at least
/// (`basic validation` is wording; so is a word before a sentence's full stop).
fn credential(value: &[u8]) -> Option<usize> {
    let joined = value.windows(2).any(|pair| matches!(pair[0], b'.' | b'_' | b'-' | b'+' | b'/' | b'~') && pair[1].is_ascii_alphanumeric());
    (value.len() >= 20 || joined || value.iter().any(|b| b.is_ascii_digit() || *b == b'=')).then_some(value.len())
}

/// A payment card number: 13 to 19 digits (spaces or dashes between) passing Luhn's check.
fn card(value: &[u8]) -> Option<usize> {
    let digits: Vec<u8> = value.iter().filter(|b| b.is_ascii_digit()).map(|b| b - b'0').collect();
    (13..=19).contains(&digits.len()).then_some(())?;
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = d as u32;
            if i % 2 == 1 {
                if d * 2 > 9 { d * 2 - 9 } else { d * 2 }
            } else {
                d
            }
        })
        .sum();
    (sum % 10 == 0).then_some(value.len())
}

/// An IBAN whose check digits hold, printed with or without spaces; the longest prefix of
/// the match that is one (a word in capitals may follow it).
fn iban(value: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(value).ok()?;
    let mut end = text.len();
    loop {
        let candidate: String = text[..end].chars().filter(|c| *c != ' ').collect();
        if iban::Iban::from_str(&candidate).is_ok() {
            return Some(end);
        }
        end = text[..end].trim_end().rfind(' ')?;
    }
}

/// A phone number libphonenumber holds valid (international, or national in the US, the UK,
/// Germany or France; ten bare digits in the US only), or written as one unmistakably: `+`
/// and 8 to 15 digits, `(415) 555-0100`.
fn phone(value: &[u8]) -> Option<usize> {
    use phonenumber::country::Id;
    let text = std::str::from_utf8(value).ok()?;
    let digits = text.bytes().filter(u8::is_ascii_digit).count();
    if !(7..=15).contains(&digits) {
        return None;
    }
    let valid = if text.starts_with('+') {
        phonenumber::parse(None, text).is_ok_and(|n| n.is_valid()) || digits >= 8
    } else if text.bytes().all(|b| b.is_ascii_digit()) {
        // Ten bare digits: a US number only where libphonenumber holds it one.
        phonenumber::parse(Some(Id::US), text).is_ok_and(|n| n.is_valid())
    } else {
        let nanp = text.len() >= 12 && !text.starts_with('0');
        nanp || [Id::US, Id::GB, Id::DE, Id::FR].into_iter().any(|c| phonenumber::parse(Some(c), text).is_ok_and(|n| n.is_valid()))
    };
    valid.then_some(value.len())
}

fn ipv4(value: &[u8]) -> Option<usize> {
    std::str::from_utf8(value).ok()?.parse::<std::net::Ipv4Addr>().ok().map(|_| value.len())
}

/// An IPv6 address (a zone `%eth0` kept with it) holding a digit; not `::` alone, a time
/// `10:30:00` nor a path of code `a::b`.
fn ipv6(value: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(value).ok()?;
    let address = text.split('%').next()?;
    let groups = address.split(':').filter(|g| !g.is_empty()).count();
    let plausible = (address.contains("::") || groups == 8) && address.bytes().any(|b| b.is_ascii_digit());
    (plausible && groups >= 2 && address.parse::<std::net::Ipv6Addr>().is_ok()).then_some(value.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(&'static str, String)> {
        find(text.as_bytes()).into_iter().map(|f| (f.kind, text[f.start..f.end].to_string())).collect()
    }

    #[test]
    fn finds_each_kind_and_confirms_it() {
        let text = "card 4111 1111 1111 1111 declined for jane.doe@example.com from 203.0.113.7 and fe80::1ff:fe23:4567:890a, \
                    IBAN DE89 3704 0044 0532 0130 00, call +44 20 7946 0958 or (415) 555-0100, key AKIAIOSFODNN7EXAMPLE, \
                    Authorization: Bearer abcDEF123456ghiJKL, password=hunter22, or 6502530000 or (650)253-0000";
        let got = kinds(text);
        let want = [
            ("card", "4111 1111 1111 1111"),
            ("email", "jane.doe@example.com"),
            ("ip", "203.0.113.7"),
            ("ip", "fe80::1ff:fe23:4567:890a"),
            ("iban", "DE89 3704 0044 0532 0130 00"),
            ("phone", "+44 20 7946 0958"),
            ("phone", "(415) 555-0100"),
            ("awskey", "AKIAIOSFODNN7EXAMPLE"),
            ("bearer", "abcDEF123456ghiJKL"),
            ("secret", "hunter22"),
            ("phone", "6502530000"),
            ("phone", "(650)253-0000"),
        ];
        assert_eq!(got, want.map(|(k, v)| (k, v.to_string())));
    }

    /// A URL's password, a SendGrid key and a Slack webhook are secrets; the URL's user and
    /// host stay (an address host is an address).
    #[test]
    fn url_passwords_and_service_keys_are_found() {
        assert_eq!(kinds("connect postgres://app:s3cret@db.internal:5432/shop refused"), vec![("secret", "s3cret".to_string())]);
        assert_eq!(kinds("mysql://root:pw1234@10.0.0.5/db"), vec![("secret", "pw1234".to_string()), ("ip", "10.0.0.5".to_string())]);
        let sendgrid = "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";
        assert_eq!(kinds(&format!("key {sendgrid} rejected")), vec![("secret", sendgrid.to_string())]);
        let webhook = "hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX";
        assert_eq!(kinds(&format!("POST https://{webhook} failed")), vec![("secret", webhook.to_string())]);
        assert_eq!(kinds("see https://example.com/a:b and mailto:ops@example.com"), vec![("email", "ops@example.com".to_string())]);
    }

    /// A credential of letters alone, shorter than 20, is one by the joins inside it.
    #[test]
    fn a_credential_of_joined_letters_is_found() {
        for credential in ["abc.def-ghi_jkl", "abcd/efgh+ijkl", "sess~abcdefg"] {
            assert_eq!(kinds(&format!("Authorization: Bearer {credential} rejected")), vec![("bearer", credential.to_string())], "{credential}");
        }
    }

    #[test]
    fn ordinary_numbers_times_and_words_stay() {
        for text in [
            "Invalid item quantity 11 for order ord_77504 at offset 1239344",
            "orders 1000000000 and 2000000000 at 1700000000",
            "Expecting value: line 1 column 282 (char 185)",
            "timeout after 30000 ms at 2026-11-08T16:55:29Z in 10:30:00",
            "card 4111 1111 1111 1112 fails Luhn",
            "std::vector<int> and a::b",
            "IBAN DE00 3704 0044 0532 0130 00 has a bad checksum",
            "basic validation failed", "refresh token expired.", "Bearer authorization. Retry",
        ] {
            assert_eq!(kinds(text), vec![], "{text}");
        }
    }

    #[test]
    fn ipv6_addresses_in_their_forms_and_not_times() {
        for address in ["2001:db8::1", "1:2:3:4:5:6:7:8", "fe80::1%eth0", "2001:DB8:0:0:8:800:200C:417A", "::ffff:192.0.2.128", "64:ff9b::203.0.113.7"] {
            assert_eq!(kinds(&format!("from {address} refused")), vec![("ip", address.to_string())], "{address}");
        }
        assert_eq!(kinds("at 10:30:00 and 16:55:29.123 on Net::ReadTimeout"), vec![]);
    }

    /// The signs' tests never spare a text in which a detector finds something: `find` finds
    /// what every detector tried on every text finds, on random texts of the bytes detectors
    /// look for, and on each kind's values cut short and set among such bytes.
    #[test]
    fn texts_without_the_signs_hold_nothing() {
        let words: &[u8] = b"0123456789aAbBeEgGhikKlnNoOpPrRsStTuUxXyYzZ .-_@:=+()/\t\xc2\xa0";
        let numbers: &[u8] = b"0123456789012345678901234567890123456789 .-:()+AEfD";
        let mut next = crate::testing::random(0x9e37_79b9_7f4a_7c15);
        let mut random = move |n: usize| (next() % n as u64) as usize;
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for i in 0..200_000 {
            let alphabet = if i % 2 == 0 { words } else { numbers };
            texts.push((0..1 + random(40)).map(|_| alphabet[random(alphabet.len())]).collect());
        }
        let values = [
            "4111 1111 1111 1111", "4111-1111-1111-1111", "jane@example.com", "203.0.113.7", "fe80::1", "1:2:3:4:5:6:7:8", "DE89 3704 0044 0532 0130 00",
            "GB82WEST12345698765432", "+44 20 7946 0958", "(415) 555-0100", "6502530000", "030 1234 5678", "AKIAIOSFODNN7EXAMPLE",
            "Bearer abcDEF123456ghiJKL", "token abcdefghijklmnopqrstuv", "to\u{212a}en abcdefghijklmnopqrstuv", "password=hunter22", "API_KEY: s3cr3tvalue",
            "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "github_pat_aaaaaaaaaaaaaaaaaaaaaaaa", "xoxb-aaaaaaaaaaaa", "sk_live_aaaaaaaaaaaaaaaaaa",
            "AIzaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "glpat-aaaaaaaaaaaaaaaaaaaa", "npm_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "-----BEGIN RSA PRIVATE KEY-----abc", "eyJhbGciOi.eyJzdWIiOi.abc", "Basic\u{a0}abcdefghijklmnopqrstu", "token abcdefg1", "10.0.0.1", "+683 4002", "+12345678",
            "refresh_token=abcd1234", "x-api-key: abcd1234", "session_id=abcd1234", "client_secret=abcd1234", "auth_token=abcd1234",
            "access_token=abcd1234", "private_key=abcd1234", "aws_secret_access_key=abcd1234", "passwd=abcd1234", "pwd=abcd1234",
            "apikey=abcd1234", "api-key=abcd1234", "secret=abcd1234", "postgres://app:s3cret@db:5432/shop", "::ffff:192.0.2.128",
            "SG.aaaaaaaaaaaaaaaaaaaaaa.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "hooks.slack.com/services/T0/B0/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ];
        for value in values {
            for end in 1..=value.len() {
                let cut = &value.as_bytes()[..end];
                texts.push(cut.to_vec());
                for _ in 0..3 {
                    let mut text: Vec<u8> = (0..random(6)).map(|_| words[random(words.len())]).collect();
                    text.extend_from_slice(cut);
                    text.extend((0..random(6)).map(|_| words[random(words.len())]));
                    texts.push(text);
                }
            }
        }
        let mut found = 0;
        for text in texts {
            let digits = text.iter().filter(|b| b.is_ascii_digit()).count();
            let every = found_by(&text, digits, |_| true);
            found += every.len();
            assert_eq!(find(&text), every, "{:?}", String::from_utf8_lossy(&text));
        }
        assert!(found > 300, "the texts hold values to find ({found})");
    }

    #[test]
    fn a_jwt_is_one_value() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
        assert_eq!(kinds(&format!("token {jwt} expired")), vec![("jwt", jwt.to_string())]);
    }
}
