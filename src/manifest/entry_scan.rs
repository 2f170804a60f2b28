//! Checking entry lines at the speed of a scan: a line in the form `plan` writes is validated
//! by the JSON scanner and its signature parsed once per distinct text; any other form, and
//! every line the scanner doubts, is judged by serde_json, which stays the definition.

use std::collections::HashMap;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::{Decision, DecisionCounts};
use crate::json_scan::Parser;
use crate::signature::Signature;

/// What verification reads of each entry: every field an entry needs (so a run never stops
/// half way on a bad one), and its decision for the counts.
#[derive(Deserialize)]
#[allow(dead_code)]
struct EntryCheck {
    key: String,
    decision: Decision,
    signature: Signature,
    id: String,
    attempts: i64,
    max_attempts: i64,
    record: IgnoredAny,
    #[serde(default)]
    origin: Option<IgnoredAny>,
}

/// Checks entry lines and counts their decisions per signature.
#[derive(Default)]
pub struct EntryChecker {
    /// Counts per signature text, as the entries spell it.
    by_text: HashMap<Box<str>, (Signature, DecisionCounts), foldhash::fast::FixedState>,
    /// Counts of entries read by serde_json (a map: entries in another form may each carry
    /// their own signature, and a search per line would make the check quadratic).
    by_value: HashMap<Signature, DecisionCounts, foldhash::fast::FixedState>,
}

impl EntryChecker {
    /// Checks one entry line (without its newline); `text` is the same line when it is known
    /// to be UTF-8. An error is serde_json's reason the line is not an entry.
    pub fn check(&mut self, line: &[u8], text: Option<&str>) -> Result<Decision, serde_json::Error> {
        if let Some(decision) = text.and_then(|text| self.scan(text)) {
            return Ok(decision);
        }
        let entry: EntryCheck = serde_json::from_slice(line)?;
        self.by_value.entry(entry.signature).or_default().add(entry.decision);
        Ok(entry.decision)
    }

    /// The counts per signature of every line checked (a signature may come more than once:
    /// spelled two ways, or read both ways).
    pub fn into_counts(self) -> impl Iterator<Item = (Signature, DecisionCounts)> {
        self.by_text.into_values().chain(self.by_value)
    }

    /// The scanner's reading of a line in `plan`'s form: None when it is in any other form
    /// or not valid, for serde_json to judge.
    fn scan(&mut self, line: &str) -> Option<Decision> {
        let (signature, decision) = scan_entry(line)?;
        match self.by_text.get_mut(signature) {
            Some((_, counts)) => counts.add(decision),
            None => {
                let parsed: Signature = serde_json::from_str(signature).ok()?;
                let mut counts = DecisionCounts::default();
                counts.add(decision);
                self.by_text.insert(signature.into(), (parsed, counts));
            }
        }
        Some(decision)
    }
}

/// The signature's text and the decision of a valid entry line whose keys are `Entry`'s, in
/// its order, without whitespace between them; None for anything else.
fn scan_entry(line: &str) -> Option<(&str, Decision)> {
    let mut p = Parser::new(line);
    if !p.expect(b"{\"key\":\"") {
        return None;
    }
    p.skip_string_body().ok()?;
    if !p.expect(b",\"decision\":\"") {
        return None;
    }
    const DECISIONS: [(&[u8], Decision); 3] = [
        (b"replay\"", Decision::Replay),
        (b"poison_attempts\"", Decision::PoisonAttempts),
        (b"poison_uncleared\"", Decision::PoisonUncleared),
    ];
    let decision = DECISIONS.into_iter().find(|(text, _)| p.expect(text)).map(|(_, d)| d)?;
    if !p.expect(b",\"signature\":") || p.peek() != Some(b'{') {
        return None;
    }
    let start = p.pos();
    p.skip_value(1).ok()?;
    let end = p.pos();
    if !p.expect(b",\"id\":\"") {
        return None;
    }
    p.skip_string_body().ok()?;
    for field in [&b",\"attempts\":"[..], b",\"max_attempts\":"] {
        if !p.expect(field) {
            return None;
        }
        // serde_json reads `-0` as a float, which an integer field refuses.
        let number = p.number().ok().filter(|n| *n != "-0")?;
        number.parse::<i64>().ok()?;
    }
    if !p.expect(b",\"record\":") {
        return None;
    }
    p.ws();
    p.skip_value(1).ok()?;
    p.ws();
    // A profile with origin fields: what replay sends, resolved at plan time.
    if p.expect(b",\"origin\":") {
        if p.peek() != Some(b'{') {
            return None;
        }
        p.skip_value(1).ok()?;
    }
    (p.expect(b"}") && p.at_end()).then(|| (&line[start..end], decision))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde_json makes of a line: its signature and decision, or nothing.
    fn reference(line: &[u8]) -> Option<(Signature, Decision)> {
        serde_json::from_slice::<EntryCheck>(line).ok().map(|e| (e.signature, e.decision))
    }

    /// The checker's reading of a line, and whether the scan (not serde_json) decided it.
    fn ours(line: &[u8]) -> (Option<(Signature, Decision)>, bool) {
        let text = std::str::from_utf8(line).ok();
        let scanned = text.and_then(scan_entry).is_some();
        let mut checker = EntryChecker::default();
        let decision = checker.check(line, text).ok();
        let signature = checker.into_counts().next().map(|(s, _)| s);
        (decision.map(|d| (signature.expect("a counted signature"), d)), scanned)
    }

    /// Entry lines as `plan` writes them, with escapes, non-ASCII text, nesting and numbers.
    const LINES: [&str; 4] = [
        r#"{"key":"961ec62ed647dc4e","decision":"replay","signature":{"stage":"inference","reject_reason":"timeout","registry_revision":"det-v8.0"},"id":"cap-09bc585a244823f2","attempts":1,"max_attempts":5,"record":{"capture_id":"cap-09bc585a244823f2","store_id":"zürich-hb-03","attempts":1,"trace_id":"851f977347ed6db7aa47e31c02e78edc"}}"#,
        r#"{"key":"0a1b","decision":"poison_uncleared","signature":{"message":"user <*> \"q\" \u00e9\ud83d\ude00","error_type":"KeyError"},"id":"m\\1","attempts":-2,"max_attempts":3,"record":{"a":[1,-2.5e-3,true,false,null,{"m":"x\/y"}],"b":{}}}"#,
        r#"{"key":"k","decision":"poison_attempts","signature":{},"id":"","attempts":0,"max_attempts":0,"record":[]}"#,
        r#"{"key":"k2","decision":"replay","signature":{"e":"x"},"id":"o/1/2","attempts":0,"max_attempts":3,"record":{"payload":"\u0000\ufffd"},"origin":{"topic":"orders","key":null,"value":{"base64":"AAGW6A=="},"headers":[["h",null]]}}"#,
    ];

    #[test]
    fn lines_in_plans_form_are_read_by_the_scan_alike() {
        for line in LINES {
            let (read, scanned) = ours(line.as_bytes());
            assert!(scanned, "the scan reads {line}");
            assert_eq!(read, reference(line.as_bytes()), "{line}");
            assert!(read.is_some());
        }
    }

    /// Every truncation and every single-byte mutation (each byte replaced by every other
    /// value) is read as serde_json reads it: the scan never accepts what serde_json refuses
    /// and never reads a signature or decision differently.
    #[test]
    fn agrees_with_serde_json_on_every_truncation_and_single_byte_mutation() {
        let mut scanned = 0;
        for line in LINES {
            let bytes = line.as_bytes();
            for cut in 0..bytes.len() {
                assert_eq!(ours(&bytes[..cut]).0, reference(&bytes[..cut]), "cut at {cut}: {line}");
            }
            for i in 0..bytes.len() {
                let mut m = bytes.to_vec();
                for r in 0..=255u8 {
                    if r == bytes[i] {
                        continue;
                    }
                    m[i] = r;
                    let (read, by_scan) = ours(&m);
                    scanned += usize::from(by_scan);
                    assert_eq!(read, reference(&m), "byte {i} as {r:#04x}: {}", String::from_utf8_lossy(&m));
                }
            }
        }
        assert!(scanned > 10_000, "mutations the scan decided: {scanned}");
    }

    #[test]
    fn other_forms_go_to_serde_json() {
        // Valid entries in another form: whitespace, another key order, an extra field.
        for line in [
            r#"{ "key":"k","decision":"replay","signature":{},"id":"i","attempts":0,"max_attempts":1,"record":{}}"#,
            r#"{"decision":"replay","key":"k","signature":{},"id":"i","attempts":0,"max_attempts":1,"record":{}}"#,
            r#"{"key":"k","decision":"replay","signature":{},"id":"i","attempts":0,"max_attempts":1,"record":{},"x":1}"#,
            r#"{"key":"k","decision":"repl\u0061y","signature":{},"id":"i","attempts":0,"max_attempts":1,"record":{}}"#,
        ] {
            let (read, scanned) = ours(line.as_bytes());
            assert!(!scanned, "{line}");
            assert_eq!(read, reference(line.as_bytes()));
            assert!(read.is_some(), "{line}");
        }
    }

    /// A record is checked as serde_json checks one it ignores, which sets no nesting limit:
    /// past the scan's limit, serde_json decides.
    #[test]
    fn deeply_nested_records_are_read_as_serde_json_reads_them() {
        for depth in [1, 126, 127, 128, 300] {
            let record = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let line = format!(r#"{{"key":"k","decision":"replay","signature":{{}},"id":"i","attempts":0,"max_attempts":1,"record":{record}}}"#);
            let (read, _) = ours(line.as_bytes());
            assert_eq!(read, reference(line.as_bytes()), "depth {depth}");
            assert!(read.is_some(), "depth {depth}");
        }
    }
}
