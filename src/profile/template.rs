//! Message templates: an error message with its variable parts masked, so one cause is one
//! bucket. Every placeholder is the same `<*>`; typed placeholders split causes apart.

use std::sync::LazyLock;

use regex::Regex;

const MAX_BYTES: usize = 3000;
const MAX_TOKENS: usize = 100;
pub const PLACEHOLDER: &str = "<*>";
/// Changes whenever a rule below changes what a message's template is, so partial states made
/// under other rules are refused rather than merged into different buckets.
pub const RULES_VERSION: u32 = 1;

static QUOTED: LazyLock<Regex> = LazyLock::new(|| {
    // A quote opens only at the start or after whitespace/punctuation, so "can't" stays a word.
    Regex::new(r#"(^|[\s(\[{:=,<])(?:'[^'\n]*'|"[^"\n]*"|`[^`\n]*`)"#).unwrap()
});
static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+").unwrap());
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\x22<>]+").unwrap());
static ASSIGNED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"=[^\s,;&)\]}]+").unwrap());

/// The template of a message: first line, capped, variable tokens masked to `<*>`.
pub fn template(message: &str) -> String {
    let first_line = message.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let capped = cap_bytes(first_line, MAX_BYTES);
    let masked = QUOTED.replace_all(capped, |c: &regex::Captures| format!("{}{PLACEHOLDER}", &c[1]));
    let masked = URL.replace_all(&masked, PLACEHOLDER);
    let masked = EMAIL.replace_all(&masked, PLACEHOLDER);
    let masked = ASSIGNED.replace_all(&masked, |_: &regex::Captures| format!("={PLACEHOLDER}"));

    let mut out = String::with_capacity(masked.len());
    let mut tokens = 0;
    let mut last_was_placeholder = false;
    for token in masked.split_whitespace() {
        let variable = token == PLACEHOLDER || is_variable(token);
        if variable && last_was_placeholder {
            continue; // "2026-01-15 10:30:00" is one value, not two
        }
        if tokens == MAX_TOKENS {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(if variable { PLACEHOLDER } else { token });
        last_was_placeholder = variable;
        tokens += 1;
    }
    out
}

/// Any token with a digit (numbers, ids, IPs, UUIDs, timestamps, versions), or a long bare
/// hex string, is a value rather than part of the message's wording.
fn is_variable(token: &str) -> bool {
    if token.bytes().any(|b| b.is_ascii_digit()) {
        return true;
    }
    let core = token.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '<' | '*' | '>'));
    if core == PLACEHOLDER {
        return true;
    }
    let core = core.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    core.len() >= 8 && core.bytes().all(|b| b.is_ascii_hexdigit())
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
mod tests {
    use super::template;

    fn same(a: &str, b: &str) {
        assert_eq!(template(a), template(b), "\n{a}\n{b}");
    }

    #[test]
    fn uuids_and_hex_ids_are_masked() {
        assert_eq!(
            template("order 3f2b8c1e-9d4a-4f6b-8e2a-1c5d7e9f0a1b not found"),
            "order <*> not found"
        );
        same("trace 0x7ffd5e8c not found", "trace 0x1a not found");
        same("blob deadbeefcafebabe missing", "blob 0123456789abcdef missing");
    }

    #[test]
    fn ips_numbers_and_timestamps_are_masked() {
        assert_eq!(
            template("connection refused: 10.0.3.17:5432 after 3 attempts"),
            "connection refused: <*> after <*> attempts"
        );
        assert_eq!(template("Connection refused: [fe80::1]:8080"), "Connection refused: <*>");
        same("deadline exceeded at 2026-01-15T10:30:00Z", "deadline exceeded at 2026-11-02 08:01:59");
        same("timeout after 30s", "timeout after 1.5s");
    }

    #[test]
    fn quoted_values_emails_urls_and_assignments_are_masked() {
        assert_eq!(template("Invalid value 'abc def' for field \"qty\""), "Invalid value <*> for field <*>");
        assert_eq!(template("can't reach 'db'"), "can't reach <*>");
        assert_eq!(template("no user bob@example.com"), "no user <*>");
        assert_eq!(template("GET https://api.example.com/orders failed"), "GET <*> failed");
        assert_eq!(template("bad request user_id=usr_abc, sku=XL"), "bad request user_id=<*>, sku=<*>");
    }

    #[test]
    fn only_the_first_line_counts_and_whitespace_is_folded() {
        assert_eq!(template("  ValueError:   bad\titems\nTraceback (most recent call last):"), "ValueError: bad items");
    }

    #[test]
    fn one_cause_one_template_over_real_looking_messages() {
        let messages = [
            "Items must be a list, got 'str' for order ord_123 (user usr_456)",
            "Items must be a list, got 'int' for order ord_998 (user usr_1)",
        ];
        same(messages[0], messages[1]);
    }

    #[test]
    fn long_messages_are_capped() {
        let long = "word ".repeat(1000);
        assert_eq!(template(&long).split(' ').count(), 100);
    }
}
