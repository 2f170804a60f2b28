//! A state as text: a header line, then one line per signature with its hours; several states
//! may follow one another in a file (concatenated through a pipe). JSON lines, because states
//! travel through text pipes (Spark's `RDD.pipe`, `cat`, `aws s3 cp -`) and people read them.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{InputRecord, Part, Partial, Rules, State, FORMAT};
use crate::analyze::periods::HOUR;
use crate::analyze::summary::Summary;
use crate::analyze::GroupStats;
use crate::source::Reject;
use crate::source::layout::Layout;


#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    state: String,
    tool_version: String,
    profile: String,
    signature_fields: Vec<String>,
    rules: String,
    /// Accepted failures, the sum of every hour's count.
    total: u64,
    /// Rejected rows, the sum over `inputs`.
    rejected: u64,
    inputs: Vec<InputRecord>,
    rejects: Vec<Reject>,
    /// Its place in a set written to be merged whole (`--part I/N`), if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    part: Option<Part>,
    /// How many signature lines follow.
    signatures: u64,
    /// SHA-256 of this header line written with `sha256` empty, then every signature line
    /// (newlines included): any change to the state is found.
    sha256: String,
}

/// One signature's hours: `[hour, count, first_time, first_id, last_time]`, times in
/// microseconds since the Unix epoch (UTC), hours ascending.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignatureLine {
    signature: Vec<String>,
    /// The signature's error category under the state's rules (for people and other tools).
    category: String,
    hours: Vec<(i64, u64, i64, String, i64)>,
}

/// The state of `partial`: signatures in byte order of their values, so equal partials give
/// equal bytes.
pub fn write(rules: &Rules, layout: &Layout, partial: &Partial, part: Option<Part>) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    for (values, hours) in &partial.summary.signatures {
        let line = SignatureLine {
            signature: values.clone(),
            category: layout.category_of(values),
            hours: hours.iter().map(|(&hour, s)| (hour, s.count, s.first_time, s.first_id.clone(), s.last_time)).collect(),
        };
        serde_json::to_writer(&mut body, &line)?;
        body.push(b'\n');
    }
    let header = Header {
        state: FORMAT.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        profile: rules.profile.clone(),
        signature_fields: rules.signature_fields.clone(),
        rules: rules.rules.clone(),
        total: partial.summary.total(),
        rejected: partial.rejected(),
        inputs: partial.inputs.clone(),
        rejects: partial.rejects.clone(),
        part,
        signatures: partial.summary.signatures.len() as u64,
        sha256: String::new(),
    };
    let mut hasher = Sha256::new();
    hasher.update(serde_json::to_vec(&header)?);
    hasher.update(b"\n");
    hasher.update(&body);
    let header = Header { sha256: format!("{:x}", hasher.finalize()), ..header };
    let mut out = serde_json::to_vec(&header)?;
    out.push(b'\n');
    out.extend_from_slice(&body);
    Ok(out)
}

/// Every state in `bytes` (one file named `name`), each checked whole: a truncated, altered or
/// inconsistent state is refused with the file and line named.
pub fn read(bytes: &[u8], name: &str) -> Result<Vec<State>> {
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bail!("{name}: truncated: the last line has no end (an interrupted write?)");
    }
    // One rule for line ends, as for manifests: a line ends with LF alone. JSON escapes a CR
    // in a string, so a raw one means the file was converted (CRLF) or altered.
    if let Some(at) = memchr::memchr(b'\r', bytes) {
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        bail!("{name}:{line}: a carriage return: a state's lines end with LF alone (was the file converted to CRLF?)");
    }
    let text = std::str::from_utf8(bytes).with_context(|| format!("{name}: not a dlqf state (not UTF-8 text)"))?;
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let mut states = Vec::new();
    while let Some((at, line)) = lines.next() {
        let mut header = read_header(line).with_context(|| format!("{name}:{at}"))?;
        let claimed = std::mem::take(&mut header.sha256);
        let mut hasher = Sha256::new();
        hasher.update(serde_json::to_vec(&header)?);
        hasher.update(b"\n");
        let mut summary = Summary::default();
        for n in 0..header.signatures {
            let Some((line_no, line)) = lines.next() else {
                bail!("{name}: truncated: the state at line {at} holds {} signatures, the file ends after {n}", header.signatures);
            };
            hasher.update(line.as_bytes());
            hasher.update(b"\n");
            let (values, hours) = read_signature(line, header.signature_fields.len()).with_context(|| format!("{name}:{line_no}"))?;
            if summary.signatures.keys().next_back().is_some_and(|last| *last >= values) {
                bail!("{name}:{line_no}: signatures out of order or repeated");
            }
            summary.signatures.insert(values, hours);
        }
        if format!("{:x}", hasher.finalize()) != claimed {
            bail!("{name}: the state at line {at} was altered: it does not match its sha256");
        }
        let sum = summary.signatures.values().flat_map(|h| h.values()).try_fold(0u64, |sum, s| sum.checked_add(s.count));
        if sum != Some(header.total) {
            let sum = sum.map_or_else(|| "more than 2^64".to_string(), |s| s.to_string());
            bail!("{name}:{at}: total {} is not the sum of the hours' counts ({sum})", header.total);
        }
        if header.total > super::MAX_COUNT || header.rejected > super::MAX_COUNT {
            bail!("{name}:{at}: {} failures counted and {} rejected: more than 2^53, more than any archive holds", header.total, header.rejected);
        }
        let partial = Partial { summary, inputs: header.inputs, rejects: header.rejects };
        if partial.rejected() != header.rejected {
            bail!("{name}:{at}: rejected {} is not the sum over its inputs ({})", header.rejected, partial.rejected());
        }
        if let Some(part) = header.part {
            part.check().map_err(|e| anyhow::anyhow!("{name}:{at}: {e}"))?;
        }
        let rules = Rules { profile: header.profile, signature_fields: header.signature_fields, rules: header.rules };
        states.push(State { origin: format!("{name}:{at}"), rules, partial, part: header.part });
    }
    match states.len() {
        0 => bail!("{name}: empty: not a dlqf state"),
        1 => states[0].origin = name.to_string(),
        _ => {}
    }
    Ok(states)
}

fn read_header(line: &str) -> Result<Header> {
    #[derive(Deserialize)]
    struct Version {
        state: Option<String>,
    }
    match serde_json::from_str::<Version>(line).ok().and_then(|v| v.state) {
        Some(v) if v == FORMAT => {}
        Some(v) if v.starts_with("dlqf.state/") => bail!("a state in format {v}, from a newer dlqf (this one reads {FORMAT})"),
        _ => bail!("not a dlqf state header (expected {{\"state\":\"{FORMAT}\",…}})"),
    }
    serde_json::from_str(line).context("invalid state header")
}

fn read_signature(line: &str, fields: usize) -> Result<(Vec<String>, BTreeMap<i64, GroupStats>)> {
    let parsed: SignatureLine = serde_json::from_str(line).context("invalid signature line")?;
    if parsed.signature.len() != fields {
        bail!("the signature has {} values, the header names {fields} fields", parsed.signature.len());
    }
    let mut hours = BTreeMap::new();
    for (hour, count, first_time, first_id, last_time) in parsed.hours {
        let in_hour = |t: i64| (hour..hour.saturating_add(HOUR)).contains(&t);
        let in_calendar = (crate::timestamp::MIN_MICROS..=crate::timestamp::MAX_MICROS).contains(&hour);
        if !in_calendar || hour.rem_euclid(HOUR) != 0 || count == 0 || !in_hour(first_time) || !in_hour(last_time) || first_time > last_time {
            bail!("hour {hour}: not a whole hour of years 1 to 9999 with a positive count and its failures inside it");
        }
        if hours.keys().next_back().is_some_and(|&last| last >= hour) {
            bail!("hour {hour}: hours out of order or repeated");
        }
        hours.insert(hour, GroupStats { count, first_time, first_id, last_time });
    }
    if hours.is_empty() {
        bail!("a signature with no hours");
    }
    Ok((parsed.signature, hours))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn sample() -> (Rules, Layout, Partial) {
        let profile = Profile::load("vision").unwrap();
        let stats = |count, first_time, id: &str, last_time| GroupStats { count, first_time, first_id: id.into(), last_time };
        let mut summary = Summary::default();
        let values = |reason: &str| vec!["inference".to_string(), reason.to_string(), "det-v8.2".to_string()];
        summary.signatures.insert(values("timeout"), BTreeMap::from([(0, stats(2, 5, "b", 9)), (HOUR, stats(1, HOUR + 1, "a", HOUR + 1))]));
        summary.signatures.insert(values("gpu_oom \"x\""), BTreeMap::from([(-HOUR, stats(3, -HOUR, "c", -1))]));
        let inputs = vec![InputRecord { name: "/d/dt=2026-10-01/a.jsonl".into(), size: Some(10), modified: None, etag: None, rejected: 1 }];
        let rejects = vec![Reject { input: "a.jsonl".into(), line: 3, reason: "field `stage` is missing".into() }];
        (Rules::of(&profile), Layout::new(&profile), Partial { summary, inputs, rejects })
    }

    #[test]
    fn a_written_state_reads_back_equal_and_concatenated_states_read_apart() {
        let (rules, layout, partial) = sample();
        let bytes = write(&rules, &layout, &partial, None).unwrap();
        let states = read(&bytes, "a.state").unwrap();
        assert_eq!(states.len(), 1);
        assert_eq!((states[0].origin.as_str(), &states[0].rules, &states[0].partial), ("a.state", &rules, &partial));
        let twice = [bytes.clone(), bytes].concat();
        let states = read(&twice, "b.state").unwrap();
        assert_eq!(states.iter().map(|s| s.origin.as_str()).collect::<Vec<_>>(), ["b.state:1", "b.state:4"]);
    }

    /// Counts no archive holds are refused, alone (past 2^53) or together, so that no sum of
    /// them downstream can wrap (two sealed states of 2^63 each used to rank as 0 failures).
    #[test]
    fn counts_past_2_53_are_refused_alone_and_together() {
        let (rules, layout, partial) = sample();
        let with_count = |count: u64| {
            let mut partial = partial.clone();
            let hours = partial.summary.signatures.values_mut().next().unwrap();
            hours.values_mut().next().unwrap().count = count;
            write(&rules, &layout, &partial, None).unwrap()
        };
        let error = read(&with_count(1 << 63), "big.state").err().expect("refused").to_string();
        assert!(error.contains("more than 2^53"), "{error}");
        let half = || read(&with_count(1 << 52), "half.state").unwrap();
        super::super::check_mergeable(&half(), &rules, &[]).unwrap();
        let mut both = half();
        both[0].partial.inputs[0].name = "/d/other.jsonl".into();
        both.extend(half());
        let error = super::super::check_mergeable(&both, &rules, &[]).unwrap_err().to_string();
        assert!(error.contains("more than 2^53"), "{error}");
    }

    /// Any cut and any changed byte is refused (the header and every line are sealed).
    #[test]
    fn every_truncation_and_byte_change_is_refused() {
        let (rules, layout, partial) = sample();
        let bytes = write(&rules, &layout, &partial, None).unwrap();
        for cut in 0..bytes.len() {
            assert!(read(&bytes[..cut], "s").is_err(), "truncated at {cut} accepted");
        }
        for at in 0..bytes.len() {
            for replacement in [b'0', b'9', b'"', b'\n', b' ', b'a', b'}'] {
                if bytes[at] == replacement {
                    continue;
                }
                let mut changed = bytes.clone();
                changed[at] = replacement;
                assert!(read(&changed, "s").is_err(), "byte {at} changed to {:?} accepted: {}", replacement as char, String::from_utf8_lossy(&bytes[at.saturating_sub(30)..at + 10]));
            }
        }
    }
}
