//! Partial states (`dlqf.state/1`): what a run read, summarised per signature and hour so it can
//! be saved, shipped and merged into the exact report of one run over every underlying dump.

mod file;
mod gather;

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::analyze::summary::Summary;
use crate::profile::Profile;
use crate::source::{Reject, Window, NAMED_REJECTS};

pub use file::{read, write};
pub use gather::gather;

pub const FORMAT: &str = "dlqf.state/1";

/// The profile a state was made with: a state merges only with states and dumps read the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    pub profile: String,
    pub signature_fields: Vec<String>,
    /// `sha256:` of everything that decides a row's signature and category: id and time
    /// fields, signature fields with their normalisers, the category rules and the templating
    /// rules' version.
    pub rules: String,
}

impl Rules {
    pub fn of(profile: &Profile) -> Rules {
        let signature: Vec<String> = profile
            .signature
            .iter()
            .map(|s| {
                // As before paths: a field read from where its name says is written by name.
                let read = if s.expr.as_top_level() == Some(s.field.as_str()) { s.field.clone() } else { format!("{}={}", s.field, s.expr.text) };
                format!("{read}|{}|{}|{:?}", s.normalizer.describe(), s.required, s.field_type)
            })
            .collect();
        let categories: Vec<(&String, &Vec<String>, &Vec<String>)> =
            profile.classifier.rules.iter().map(|(name, rule)| (name, &rule.types, &rule.patterns)).collect();
        let mut id = vec![profile.id.describe(), format!("{:?}", profile.id_type)];
        if profile.id.missing == crate::profile::IdMissing::Digest && !profile.id.parts.is_empty() {
            id.push("or the record's digest".into());
        }
        let time = match profile.time_format {
            crate::timestamp::TimeFormat::Rfc3339 => profile.time.text.clone(),
            format => format!("{} as {}", profile.time.text, format.name()),
        };
        let canonical = serde_json::json!({
            "id": id,
            "time": time,
            "signature": signature,
            "category": format!("{:?}", profile.category),
            "categories": categories,
            "templates": crate::profile::template::RULES_VERSION,
        });
        let digest = Sha256::digest(canonical.to_string().as_bytes());
        Rules { profile: profile.name.clone(), signature_fields: profile.signature_names(), rules: format!("sha256:{digest:x}") }
    }

    fn describe(&self) -> String {
        format!("profile `{}` (signature {}; rules {})", self.profile, self.signature_fields.join(", "), self.rules.chars().take(19).collect::<String>())
    }
}

/// One dump a state covers, as it was when read: enough to tell it apart from any other and to
/// see that it changed since.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputRecord {
    /// The dump's identity: an absolute path or an s3:// URL (`-` for stdin, never matched).
    pub name: String,
    pub size: Option<u64>,
    /// Local files: the modification time.
    pub modified: Option<String>,
    /// S3 objects: the ETag.
    pub etag: Option<String>,
    /// Rows of this dump that could not be read.
    pub rejected: u64,
}

/// A summary with what it covers: the body of a state file, or several merged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Partial {
    pub summary: Summary,
    /// Sorted by name.
    pub inputs: Vec<InputRecord>,
    /// The first `NAMED_REJECTS` rejected rows by input name, then line.
    pub rejects: Vec<Reject>,
}

impl Partial {
    pub fn rejected(&self) -> u64 {
        self.inputs.iter().fold(0u64, |sum, i| sum.saturating_add(i.rejected))
    }

    /// Adds other partials; the caller has checked that they all cover different dumps.
    pub fn merge(&mut self, others: impl IntoIterator<Item = Partial>) {
        for other in others {
            self.summary.merge(other.summary);
            self.inputs.extend(other.inputs);
            self.rejects.extend(other.rejects);
        }
        self.inputs.sort_by(|a, b| a.name.cmp(&b.name));
        self.rejects.sort_by(|a, b| (&a.input, a.line).cmp(&(&b.input, b.line)));
        self.rejects.truncate(NAMED_REJECTS);
    }

    /// Only what falls inside `window` (bounds on whole hours): the hours, and the rejected
    /// rows of dumps whose day partition the window keeps (as a run over the dumps would).
    pub fn within(self, window: Window) -> Partial {
        let kept = |name: &str| !crate::source::partition_outside(name, window);
        let inputs: Vec<InputRecord> = self.inputs.into_iter().map(|i| InputRecord { rejected: if kept(&i.name) { i.rejected } else { 0 }, ..i }).collect();
        let rejects = self.rejects.into_iter().filter(|r| kept(&r.input)).collect();
        Partial { summary: self.summary.within(window), inputs, rejects }
    }
}

/// A state read from a file, with where it came from for messages.
pub struct State {
    /// `file`, or `file:LINE` (its header's line) in a file holding several.
    pub origin: String,
    pub rules: Rules,
    pub partial: Partial,
    /// Its place in a set of states written to be merged whole (`--part I/N`).
    pub part: Option<Part>,
}

/// A state's place in a set written to be merged whole: part `index` (from 1) of `of`. A set
/// read with a part missing (a file cut between two states, a job that failed) is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub index: u64,
    pub of: u64,
}

impl Part {
    /// `I/N`, 1 <= I <= N.
    pub fn parse(text: &str) -> Result<Part, String> {
        let bad = || format!("`{text}`: expected I/N, the part's number from 1 and how many parts the set has");
        let (index, of) = text.split_once('/').ok_or_else(bad)?;
        let part = Part { index: index.trim().parse().map_err(|_| bad())?, of: of.trim().parse().map_err(|_| bad())? };
        part.check().map(|_| part)
    }

    pub fn check(&self) -> Result<(), String> {
        if self.index == 0 || self.index > self.of {
            return Err(format!("part {}/{}: a part's number runs from 1 to the number of parts", self.index, self.of));
        }
        Ok(())
    }
}

/// Refuses parts that do not make one whole set: every state read that names a part must be
/// of the same set size N, and parts 1 to N must each be there once.
pub fn check_parts(states: &[State]) -> Result<()> {
    let parted: Vec<(&State, Part)> = states.iter().filter_map(|s| s.part.map(|p| (s, p))).collect();
    let Some(&(first, set)) = parted.first() else { return Ok(()) };
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    for &(state, part) in &parted {
        if part.of != set.of {
            bail!("{} is part {} of {}, but {} is part {} of {}: states of one set name the same number of parts", first.origin, set.index, set.of, state.origin, part.index, part.of);
        }
        if let Some(other) = seen.insert(part.index, &state.origin) {
            bail!("part {} of {} is read twice, from {other} and {}", part.index, part.of, state.origin);
        }
    }
    let missing: Vec<String> = (1..=set.of).filter(|i| !seen.contains_key(i)).take(10).map(|i| i.to_string()).collect();
    if !missing.is_empty() {
        bail!(
            "the states are {} of a set of {}: part{} {} {} missing (a file cut between two states, or a part that was never written?)",
            seen.len(),
            set.of,
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", "),
            if missing.len() > 1 { "are" } else { "is" }
        );
    }
    Ok(())
}

/// Refuses states that cannot merge with each other and with this run's own `dumps`: one made
/// with other rules than `rules`, or a dump covered twice.
pub fn check_mergeable(states: &[State], rules: &Rules, dumps: &[InputRecord]) -> Result<()> {
    for (i, state) in states.iter().enumerate() {
        // Reaching a later state, the first one agreed with this run.
        check_rules(state, rules, (i > 0).then(|| states[0].origin.as_str()))?;
    }
    let covered = dumps.iter().map(|r| (r.name.as_str(), "this run's inputs"));
    let in_states = states.iter().flat_map(|s| s.partial.inputs.iter().map(|r| (r.name.as_str(), s.origin.as_str())));
    check_overlap(covered.chain(in_states))?;
    // Each state's counts are bounded when read; together they must be too, so that no sum,
    // difference or scaling of them downstream can wrap.
    let counted = states.iter().try_fold(0u64, |sum, s| sum.checked_add(s.partial.summary.total())?.checked_add(s.partial.rejected()));
    if counted.is_none_or(|n| n > MAX_COUNT) {
        bail!("the states together count more than 2^53 failures, more than any archive holds: one was crafted or corrupted");
    }
    Ok(())
}

/// Failures (counted or rejected) a state, or all a run's states together, may hold: 2^53,
/// the largest count every JSON reader reads exactly; no DLQ comes near it.
pub const MAX_COUNT: u64 = 1 << 53;

/// Refuses a state made with other rules than this run's, naming both rules, and the state
/// already read with this run's rules (`agreeing`), if any.
fn check_rules(state: &State, run: &Rules, agreeing: Option<&str>) -> Result<()> {
    if state.rules != *run {
        let others = agreeing.map_or("this run uses".to_string(), |origin| format!("{origin} and this run use"));
        bail!(
            "{}: made with {}, but {others} {}: states merge only with states and dumps read the same way \
             (give the same --profile and --classification)",
            state.origin,
            state.rules.describe(),
            run.describe()
        );
    }
    Ok(())
}

/// Refuses a dump covered twice (by two states, or by a state and as an input of its own),
/// which would count its failures twice. `covered` lists each dump with where it was seen.
fn check_overlap<'a>(covered: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, origin) in covered {
        if name == "-" {
            continue;
        }
        if let Some(first) = seen.insert(name, origin) {
            bail!("{name} is covered twice, by {first} and by {origin}: its failures would be counted twice (give each dump once)");
        }
    }
    Ok(())
}
