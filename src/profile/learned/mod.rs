//! Learned templates: word positions seen to vary across messages of one shape, written by
//! `dlqf templates learn` as reviewable patterns, applied per message after the context-free
//! rules. Given the file, a message's template still depends on that message alone.

mod gaps;
mod learn;

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use gaps::GAP;
pub use learn::{learn, render};

use super::template::{Explained, Mask};

/// A learned position in a pattern: any one word of a message's template.
pub const WILDCARD: &str = "<?>";
/// The file's format: the second adds gaps (`<...>`); a file of the first reads as it did.
pub const FORMAT: &str = "dlqf.templates/2";
const FORMATS: [&str; 2] = ["dlqf.templates/1", FORMAT];

/// One pattern of a templates file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    /// A template with `<?>` where a word varies and `<...>` where any number of words do.
    pub template: String,
    /// How many messages had this shape, and the values seen at each `<?>` (a few of them).
    #[serde(default)]
    pub messages: u64,
    #[serde(default)]
    pub values: Vec<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: String,
    #[serde(default)]
    pattern: Vec<Pattern>,
}

/// A templates file, indexed for matching: patterns by word count and the positions they
/// learned, each under its constant words.
pub struct Learned {
    /// `sha256:` of the file's patterns (what decides a template), for the rules digest.
    pub digest: String,
    /// This file's number in the process: the answers remembered for it are its own.
    pub serial: u64,
    groups: Vec<Group>,
    /// Patterns with gaps, most constant words first, then by text; and which of them each
    /// word can start (a pattern is listed under its first constant word).
    gapped: Vec<Gapped>,
    gapped_by_word: HashMap<String, Vec<usize>>,
}

struct Gapped {
    items: Vec<gaps::Item>,
    output: String,
}

struct Group {
    words: usize,
    wild: Vec<usize>,
    by_constant: HashMap<Vec<String>, String>,
}

impl std::fmt::Debug for Learned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Learned({})", self.digest)
    }
}

impl PartialEq for Learned {
    fn eq(&self, other: &Learned) -> bool {
        self.digest == other.digest
    }
}
impl Eq for Learned {}

impl Learned {
    pub fn load(path: &Path) -> Result<Learned> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read the templates file", path.display()))?;
        Learned::parse(&text).with_context(|| format!("{}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Learned> {
        let file: File = toml::from_str(text).context("not a templates file")?;
        if !FORMATS.contains(&file.format.as_str()) {
            bail!("format `{}`: expected {FORMAT}", file.format);
        }
        let gaps_allowed = file.format == FORMAT;
        for pattern in &file.pattern {
            let words: Vec<&str> = pattern.template.split(' ').collect();
            let gap = words.contains(&GAP) && gaps_allowed;
            if !words.contains(&WILDCARD) && !gap {
                bail!("pattern `{}` has no {WILDCARD}{}", pattern.template, if gaps_allowed { format!(" or {GAP}") } else { String::new() });
            }
            if words.iter().all(|w| *w == WILDCARD || *w == GAP) {
                bail!("pattern `{}` has no constant word", pattern.template);
            }
        }
        Ok(Learned::index(file.pattern.iter().map(|p| p.template.as_str()), gaps_allowed))
    }

    /// The patterns just learned, as a file of them would read.
    pub fn of(patterns: &[Pattern]) -> Learned {
        Learned::index(patterns.iter().map(|p| p.template.as_str()), true)
    }

    fn index<'p>(patterns: impl Iterator<Item = &'p str>, gaps_allowed: bool) -> Learned {
        let mut groups: Vec<Group> = Vec::new();
        let mut gapped: Vec<(usize, &str)> = Vec::new();
        let mut canonical = String::new();
        let mut templates: Vec<&str> = patterns.collect();
        templates.sort_unstable();
        templates.dedup();
        for template in templates {
            canonical.push_str(template);
            canonical.push('\n');
            let words: Vec<&str> = template.split(' ').collect();
            if gaps_allowed && words.contains(&GAP) {
                gapped.push((words.iter().filter(|w| **w != WILDCARD && **w != GAP).count(), template));
                continue;
            }
            let wild: Vec<usize> = words.iter().enumerate().filter(|(_, w)| **w == WILDCARD).map(|(i, _)| i).collect();
            if wild.is_empty() {
                continue;
            }
            let constant: Vec<String> = words.iter().filter(|w| **w != WILDCARD).map(|w| w.to_string()).collect();
            let output = words.iter().map(|w| if *w == WILDCARD { super::template::PLACEHOLDER } else { w }).collect::<Vec<_>>().join(" ");
            match groups.iter_mut().find(|g| g.words == words.len() && g.wild == wild) {
                Some(group) => {
                    group.by_constant.insert(constant, output);
                }
                None => groups.push(Group { words: words.len(), wild, by_constant: HashMap::from([(constant, output)]) }),
            }
        }
        // The most learned positions first: a pattern learned over more positions is the
        // wider cause, and is chosen when several match.
        groups.sort_by(|a, b| b.wild.len().cmp(&a.wild.len()).then_with(|| a.wild.cmp(&b.wild)).then(a.words.cmp(&b.words)));
        // A gapped pattern with more constant words says more: chosen first.
        gapped.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        let mut gapped_by_word: HashMap<String, Vec<usize>> = HashMap::new();
        let gapped: Vec<Gapped> = gapped
            .into_iter()
            .enumerate()
            .map(|(i, (_, template))| {
                let items = gaps::items(template);
                if let Some(gaps::Item::Word(first)) = items.iter().find(|item| matches!(item, gaps::Item::Word(_))) {
                    gapped_by_word.entry(first.clone()).or_default().push(i);
                }
                let output = template.split(' ').map(|w| if w == WILDCARD || w == GAP { super::template::PLACEHOLDER } else { w }).collect::<Vec<_>>().join(" ");
                Gapped { items, output }
            })
            .collect();
        let digest = format!("sha256:{:x}", Sha256::digest(canonical.as_bytes()));
        static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Learned { digest, serial, groups, gapped, gapped_by_word }
    }

    /// The pattern a context-free `template` matches, with its learned words masked, if any.
    pub fn apply(&self, template: &str) -> Option<&str> {
        let words: Vec<&str> = template.split(' ').collect();
        let mut constant: Vec<String> = Vec::with_capacity(words.len());
        for group in self.groups.iter().filter(|g| g.words == words.len()) {
            constant.clear();
            constant.extend(words.iter().enumerate().filter(|(i, _)| group.wild.binary_search(i).is_err()).map(|(_, w)| w.to_string()));
            if let Some(output) = group.by_constant.get(&constant) {
                return Some(output);
            }
        }
        // The first gapped pattern, in their order, that a word of the template can start.
        let mut candidates: Vec<usize> = Vec::new();
        for word in &words {
            candidates.extend(self.gapped_by_word.get(*word).map(Vec::as_slice).unwrap_or_default());
        }
        candidates.sort_unstable();
        candidates.dedup();
        candidates.into_iter().map(|i| &self.gapped[i]).find(|g| gaps::fits(&g.items, &words)).map(|g| g.output.as_str())
    }

    /// `explained` (a message's template and its masks) with the pattern its template
    /// matches, if any, noted as the rule `learned`.
    pub fn refine(&self, explained: &mut Explained) {
        if let Some(pattern) = self.apply(&explained.template) {
            explained.masks.push(Mask { rule: "learned", value: pattern.to_string() });
            explained.template = pattern.to_string();
        }
    }

    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.by_constant.len()).sum::<usize>() + self.gapped.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
