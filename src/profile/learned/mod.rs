//! Learned templates: word positions seen to vary across messages of one shape, written by
//! `dlqf templates learn` as reviewable patterns, applied per message after the context-free
//! rules. Given the file, a message's template still depends on that message alone.

mod learn;

use std::collections::HashMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use learn::{learn, render};

use super::template::{Explained, Mask};

/// A learned position in a pattern: any one word of a message's template.
pub const WILDCARD: &str = "<?>";
pub const FORMAT: &str = "dlqf.templates/1";

/// One pattern of a templates file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    /// A template with `<?>` where a word varies.
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
    groups: Vec<Group>,
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
        if file.format != FORMAT {
            bail!("format `{}`: expected {FORMAT}", file.format);
        }
        let mut groups: Vec<Group> = Vec::new();
        let mut canonical = String::new();
        let mut templates: Vec<&str> = file.pattern.iter().map(|p| p.template.as_str()).collect();
        templates.sort_unstable();
        templates.dedup();
        for template in templates {
            canonical.push_str(template);
            canonical.push('\n');
            let words: Vec<&str> = template.split(' ').collect();
            let wild: Vec<usize> = words.iter().enumerate().filter(|(_, w)| **w == WILDCARD).map(|(i, _)| i).collect();
            if wild.is_empty() {
                bail!("pattern `{template}` has no {WILDCARD}");
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
        let digest = format!("sha256:{:x}", Sha256::digest(canonical.as_bytes()));
        Ok(Learned { digest, groups })
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
        None
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
        self.groups.iter().map(|g| g.by_constant.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
