//! Learning: messages' templates of one word count clustered by the words they share (as
//! Drain does, but in an order fixed by the data, so the same window gives the same file),
//! then each cluster's varying positions kept only where they look like values.

use std::collections::{BTreeMap, HashMap};

use super::gaps::{self, GAP};
use super::{Learned, Pattern, FORMAT, WILDCARD};
use crate::profile::template::PLACEHOLDER;

/// A varying position is a value when it took this many values or more (two, when one of
/// them is a value the rules masked: a word where numbers also stood is a value too)…
pub(super) const MIN_VALUES: usize = 3;
/// …no one word took more than this share of the cluster's messages (`connection refused` /
/// `reset` / `closed` are three causes, and one of them is usually most)…
pub(super) const MAX_TOP_SHARE: f64 = 0.5;
/// …and its words are many, or many for its messages: words that each come back in many
/// messages (`Unknown table` / `procedure` / `collation …`) are wording of several causes.
pub(super) const MANY_VALUES: usize = 20;
pub(super) const VALUES_PER_MESSAGE: f64 = 0.3;
/// Share of a cluster's words a template must have in the same places to join it.
pub(super) const SIMILAR: f64 = 0.5;
/// Values kept in the file per position, for a reviewer.
pub(super) const SHOWN: usize = 5;

/// Patterns learned from templates and how many messages had each.
pub fn learn(templates: &HashMap<String, u64>) -> Vec<Pattern> {
    let mut sorted: Vec<(&str, u64)> = templates.iter().map(|(t, &n)| (t.as_str(), n)).collect();
    sorted.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut by_length: BTreeMap<usize, Vec<(Vec<&str>, u64)>> = BTreeMap::new();
    for (template, n) in sorted {
        let words: Vec<&str> = template.split(' ').collect();
        // A message that writes `<?>` or `<...>` itself would read back as a learned place.
        if words.contains(&WILDCARD) || words.contains(&GAP) {
            continue;
        }
        by_length.entry(words.len()).or_default().push((words, n));
    }
    let mut patterns = Vec::new();
    for templates in by_length.values() {
        for members in cluster(templates) {
            settle(templates, members, &mut patterns);
        }
    }
    let mut patterns = widen(patterns);
    // What no pattern of one word count fits, aligned by its words across counts: values of
    // several words, or of a different number each time.
    let fixed = Learned::of(&patterns);
    let mut rest: Vec<(Vec<&str>, u64)> = by_length.into_values().flatten().filter(|(words, _)| fixed.apply(&words.join(" ")).is_none()).collect();
    rest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    patterns.extend(gaps::learn(&rest));
    patterns.sort_by(|a, b| a.template.cmp(&b.template).then(b.messages.cmp(&a.messages)));
    // One pattern found twice (a cluster's and a single template's): its messages summed.
    patterns.dedup_by(|later, kept| {
        let same = later.template == kept.template;
        if same {
            kept.messages += later.messages;
        }
        same
    });
    patterns
}

/// Patterns alike but for how many words a value took (`relation <?> in` and `relation <?>
/// <?> in`) as one, each such run of `<?>` a gap (`relation <...> in`).
fn widen(patterns: Vec<Pattern>) -> Vec<Pattern> {
    let collapsed = |template: &str| -> String {
        let mut words: Vec<&str> = Vec::new();
        for word in template.split(' ') {
            let word = if word == WILDCARD { GAP } else { word };
            if !(word == GAP && words.last() == Some(&GAP)) {
                words.push(word);
            }
        }
        words.join(" ")
    };
    let mut by_form: BTreeMap<String, Vec<Pattern>> = BTreeMap::new();
    for pattern in patterns {
        by_form.entry(collapsed(&pattern.template)).or_default().push(pattern);
    }
    let mut out = Vec::new();
    for (form, mut alike) in by_form {
        if alike.len() < 2 {
            out.append(&mut alike);
            continue;
        }
        alike.sort_by(|a, b| b.messages.cmp(&a.messages).then_with(|| a.template.cmp(&b.template)));
        let messages = alike.iter().map(|p| p.messages).sum();
        // Each place's values as the most common pattern shows its run's first word.
        let mut values = Vec::new();
        let mut place = 0;
        let mut last_wild = false;
        for word in alike[0].template.split(' ') {
            let wild = word == WILDCARD;
            if wild && !last_wild {
                values.extend(alike[0].values.get(place).cloned());
            }
            place += usize::from(wild);
            last_wild = wild;
        }
        out.push(Pattern { template: form, messages, values });
    }
    out
}

/// Templates of one length in clusters (indexes into `templates`): each joins the first
/// cluster it shares at least half its words with, in place.
fn cluster(templates: &[(Vec<&str>, u64)]) -> Vec<Vec<usize>> {
    let mut shapes: Vec<Vec<Option<&str>>> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (index, (words, _)) in templates.iter().enumerate() {
        let n = words.len();
        let joined = shapes.iter().position(|shape| {
            let same = shape.iter().zip(words).filter(|(s, w)| **s == Some(**w)).count();
            same >= 1 && same as f64 >= SIMILAR * n as f64
        });
        match joined {
            Some(c) => {
                for (slot, word) in shapes[c].iter_mut().zip(words) {
                    if *slot != Some(*word) {
                        *slot = None;
                    }
                }
                members[c].push(index);
            }
            None => {
                shapes.push(words.iter().map(|w| Some(*w)).collect());
                members.push(vec![index]);
            }
        }
    }
    members
}

/// A cluster's pattern, or its parts' when a varying position does not look like a value:
/// split by that position's words, each part settled again.
fn settle(templates: &[(Vec<&str>, u64)], members: Vec<usize>, patterns: &mut Vec<Pattern>) {
    if members.len() < 2 {
        // One template: where the rules masked a value, a word may stand another time.
        if let Some(&m) = members.first() {
            let (words, n) = &templates[m];
            if *n >= 2 && words.contains(&PLACEHOLDER) && words.iter().any(|w| *w != PLACEHOLDER) {
                let template = words.iter().map(|w| if *w == PLACEHOLDER { WILDCARD } else { w }).collect::<Vec<_>>().join(" ");
                let values = words.iter().filter(|w| **w == PLACEHOLDER).map(|_| vec![PLACEHOLDER.to_string()]).collect();
                patterns.push(Pattern { template, messages: *n, values });
            }
        }
        return;
    }
    let n = templates[members[0]].0.len();
    let total: u64 = members.iter().map(|&m| templates[m].1).sum();
    let mut varying = Vec::new();
    let mut worst: Option<(usize, usize)> = None;
    for i in 0..n {
        let mut values: HashMap<&str, u64> = HashMap::new();
        for &m in &members {
            *values.entry(templates[m].0[i]).or_default() += templates[m].1;
        }
        if values.len() == 1 {
            continue;
        }
        let masked = values.contains_key(PLACEHOLDER);
        let top = values.iter().filter(|(v, _)| **v != PLACEHOLDER).map(|(_, n)| *n).max().unwrap_or(0);
        let enough = values.len() >= MIN_VALUES || (masked && values.len() >= 2);
        let many = values.len() >= MANY_VALUES || values.len() as f64 >= VALUES_PER_MESSAGE * total as f64;
        let value_like = enough && many && (top as f64) <= MAX_TOP_SHARE * total as f64;
        if !value_like && worst.is_none_or(|(_, d)| values.len() < d) {
            worst = Some((i, values.len()));
        }
        varying.push((i, values));
    }
    if let Some((i, _)) = worst {
        let mut parts: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for &m in &members {
            parts.entry(templates[m].0[i]).or_default().push(m);
        }
        for part in parts.into_values() {
            settle(templates, part, patterns);
        }
        return;
    }
    if varying.is_empty() || varying.len() == n {
        return;
    }
    let mut words: Vec<&str> = templates[members[0]].0.clone();
    let mut shown = Vec::new();
    let mut varying = varying.into_iter().peekable();
    for i in 0..n {
        // A value the rules masked in every message is a place a word may stand too.
        if words[i] == PLACEHOLDER && varying.peek().is_none_or(|(v, _)| *v != i) {
            words[i] = WILDCARD;
            shown.push(vec![PLACEHOLDER.to_string()]);
            continue;
        }
        let Some((_, values)) = varying.next_if(|(v, _)| *v == i) else { continue };
        words[i] = WILDCARD;
        let mut values: Vec<(&str, u64)> = values.into_iter().collect();
        values.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        shown.push(values.into_iter().take(SHOWN).map(|(v, _)| v.to_string()).collect());
    }
    patterns.push(Pattern { template: words.join(" "), messages: total, values: shown });
}

/// A templates file: a comment for its reviewer, then the patterns.
pub fn render(patterns: &[Pattern], messages: u64, inputs: usize) -> String {
    #[derive(serde::Serialize)]
    struct File<'p> {
        format: &'static str,
        pattern: &'p [Pattern],
    }
    let mut out = format!(
        "# Learned by `dlqf templates learn` from {messages} messages in {inputs} input(s): {} patterns.\n\
         # Each {WILDCARD} is a word, and each {GAP} any number of words, seen to vary among messages otherwise\n\
         # alike ({MIN_VALUES} values or more, none in more than half of them); a message whose template has the\n\
         # other words in place is grouped under the pattern. Delete a pattern whose {WILDCARD} or {GAP} is\n\
         # wording rather than a value.\n",
        patterns.len()
    );
    out.push_str(&toml::to_string(&File { format: FORMAT, pattern: patterns }).expect("patterns serialise"));
    out
}
