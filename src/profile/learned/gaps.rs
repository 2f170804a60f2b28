//! Patterns with gaps: messages aligned by the words they share (their longest common
//! subsequence, as Spell does), so a value of any number of words sits in one gap and the
//! constant words around it anchor it.

use std::collections::{BTreeMap, HashMap};

// A gap is judged as a position is (`learn.rs`): a value when it took `MIN_VALUES` fills or
// more (two, when one holds a value the rules masked), no fill took more than `MAX_TOP_SHARE`
// of the messages, and the fills are many, or many for the messages; a template joins a
// cluster whose common words are `SIMILAR` of each; `SHOWN` fills a gap are kept in the file.
use super::learn::{MANY_VALUES, MAX_TOP_SHARE, MIN_VALUES, SHOWN, SIMILAR, VALUES_PER_MESSAGE};
use super::{Pattern, WILDCARD};
use crate::profile::template::PLACEHOLDER;

/// A learned place for any number of words, none included.
pub const GAP: &str = "<...>";

/// One item of a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    Word(String),
    /// `<?>`: exactly one word.
    One,
    /// `<...>`: any number of words.
    Gap,
}

/// A pattern's items, from its template text.
pub fn items(template: &str) -> Vec<Item> {
    template
        .split(' ')
        .map(|w| match w {
            WILDCARD => Item::One,
            GAP => Item::Gap,
            word => Item::Word(word.to_string()),
        })
        .collect()
}

/// Whether `words` fit `items`: each constant word in its place, one word at each `<?>` and
/// any number at each gap (wildcard matching: the last gap taken is widened on a mismatch).
pub fn fits(items: &[Item], words: &[&str]) -> bool {
    let (mut i, mut w) = (0, 0);
    let mut resume: Option<(usize, usize)> = None;
    while w < words.len() {
        match items.get(i) {
            Some(Item::Gap) => {
                resume = Some((i, w));
                i += 1;
                continue;
            }
            Some(Item::One) => {
                i += 1;
                w += 1;
                continue;
            }
            Some(Item::Word(word)) if word == words[w] => {
                i += 1;
                w += 1;
                continue;
            }
            _ => {}
        }
        match resume {
            Some((gap, from)) => {
                resume = Some((gap, from + 1));
                i = gap + 1;
                w = from + 1;
            }
            None => return false,
        }
    }
    items[i..].iter().all(|item| *item == Item::Gap)
}

/// Patterns with gaps learned from templates (each word-split, with its messages), sorted by
/// messages and then text, so the same window gives the same patterns in any order.
pub fn learn(templates: &[(Vec<&str>, u64)]) -> Vec<Pattern> {
    let mut patterns = Vec::new();
    for members in cluster(templates) {
        settle(templates, members, &mut patterns);
    }
    patterns
}

/// Templates in clusters: each joins the first cluster whose common words with it (their
/// longest common subsequence, which the cluster keeps) are at least half of each; clusters
/// are found by the words they hold.
fn cluster<'t>(templates: &[(Vec<&'t str>, u64)]) -> Vec<Vec<usize>> {
    let mut constants: Vec<Vec<&'t str>> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut by_word: HashMap<&'t str, Vec<usize>> = HashMap::new();
    let mut shared: BTreeMap<usize, usize> = BTreeMap::new();
    for (index, (words, _)) in templates.iter().enumerate() {
        shared.clear();
        let mut distinct: Vec<&str> = words.clone();
        distinct.sort_unstable();
        distinct.dedup();
        for word in &distinct {
            for &c in by_word.get(word).map(Vec::as_slice).unwrap_or_default() {
                *shared.entry(c).or_default() += 1;
            }
        }
        let enough = |common: usize, len: usize| common >= 1 && common as f64 >= SIMILAR * len as f64;
        let joined = shared.iter().filter(|(_, &n)| enough(n, distinct.len())).find_map(|(&c, _)| {
            let common = lcs(&constants[c], words);
            (enough(common.len(), words.len()) && enough(common.len(), constants[c].len())).then_some((c, common))
        });
        match joined {
            Some((c, common)) => {
                constants[c] = common;
                members[c].push(index);
            }
            None => {
                for word in distinct {
                    by_word.entry(word).or_default().push(constants.len());
                }
                constants.push(words.clone());
                members.push(vec![index]);
            }
        }
    }
    members
}

/// The longest common subsequence of two word lists (the first found, scanning from the
/// ends, when several are as long).
fn lcs<'t>(a: &[&'t str], b: &[&str]) -> Vec<&'t str> {
    let (n, m) = (a.len(), b.len());
    let mut table = vec![0u16; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[at(i, j)] = if a[i] == b[j] { table[at(i + 1, j + 1)] + 1 } else { table[at(i + 1, j)].max(table[at(i, j + 1)]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(table[0] as usize);
    while i < n && j < m {
        if a[i] == b[j] {
            out.push(a[i]);
            i += 1;
            j += 1;
        } else if table[at(i + 1, j)] >= table[at(i, j + 1)] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The words of `words` between the constants, placed leftmost: one fill per gap (before the
/// first constant, between each two, after the last).
fn fills<'t>(constants: &[&str], words: &[&'t str]) -> Vec<Vec<&'t str>> {
    let mut out = Vec::with_capacity(constants.len() + 1);
    let mut from = 0;
    for constant in constants {
        let at = from + words[from..].iter().position(|w| w == constant).expect("a common word is in every member");
        out.push(words[from..at].to_vec());
        from = at + 1;
    }
    out.push(words[from..].to_vec());
    out
}

/// Why a gap's fills are not a value, and the key to split its cluster by.
enum Verdict {
    Value,
    Constant,
    SplitBy(fn(&[&str]) -> String),
}

/// The messages of `fills` by the key each fill gives.
fn tally<'f, 'w: 'f>(fills: impl IntoIterator<Item = &'f (Vec<&'w str>, u64)>, key: fn(&[&str]) -> String) -> BTreeMap<String, u64> {
    let mut by_key: BTreeMap<String, u64> = BTreeMap::new();
    for (fill, n) in fills {
        *by_key.entry(key(fill)).or_default() += n;
    }
    by_key
}

fn whole(fill: &[&str]) -> String {
    fill.join(" ")
}

/// Whether one gap's fills (each with its messages) look like a value.
fn judge(fills: &[(Vec<&str>, u64)], total: u64) -> Verdict {
    let by_fill = tally(fills, whole);
    if by_fill.len() == 1 {
        return Verdict::Constant;
    }
    let masked = by_fill.keys().any(|f| f.contains(PLACEHOLDER));
    let top = by_fill.values().copied().max().unwrap_or(0);
    let enough = by_fill.len() >= MIN_VALUES || (masked && by_fill.len() >= 2);
    let many = by_fill.len() >= MANY_VALUES || by_fill.len() as f64 >= VALUES_PER_MESSAGE * total as f64;
    if !(enough && many) || top as f64 > MAX_TOP_SHARE * total as f64 {
        return Verdict::SplitBy(whole);
    }
    // Fills that mostly start (or end) with one word hide wording of several causes behind
    // a gap (`type integer or type …` beside `relation orders`): split by that word.
    let ends: [fn(&[&str]) -> String; 2] = [|f| f.first().map_or(String::new(), |w| w.to_string()), |f| f.last().map_or(String::new(), |w| w.to_string())];
    for end in ends {
        let by_end = tally(fills.iter().filter(|(f, _)| f.len() > 1), end);
        if by_end.iter().any(|(word, &n)| word != PLACEHOLDER && n as f64 > MAX_TOP_SHARE * total as f64) {
            return Verdict::SplitBy(end);
        }
    }
    Verdict::Value
}

/// A cluster's pattern, or its parts' when a gap does not hold a value: split by that gap's
/// fills (or their first or last word), each part settled again.
fn settle(templates: &[(Vec<&str>, u64)], members: Vec<usize>, patterns: &mut Vec<Pattern>) {
    if members.len() < 2 {
        return;
    }
    let mut constants: Vec<&str> = templates[members[0]].0.clone();
    for &m in &members[1..] {
        constants = lcs(&constants, &templates[m].0);
    }
    if constants.is_empty() {
        return;
    }
    let total: u64 = members.iter().map(|&m| templates[m].1).sum();
    let placed: Vec<Vec<Vec<&str>>> = members.iter().map(|&m| fills(&constants, &templates[m].0)).collect();
    let mut judged = Vec::with_capacity(constants.len() + 1);
    for g in 0..=constants.len() {
        let fills: Vec<(Vec<&str>, u64)> = members.iter().zip(&placed).map(|(&m, p)| (p[g].clone(), templates[m].1)).collect();
        let verdict = judge(&fills, total);
        judged.push((fills, verdict));
    }
    // A gap at either end has a constant word on one side only. Values of several words are
    // trusted there only beside a gap anchored on both sides that holds values too (`of type
    // <...> or type <...>`); alone, the words after a shared beginning would be (`configured
    // with different SRIDs.` / `… hi-lo sequences.`), so only one word at a time is a value.
    let last = constants.len();
    let anchored = judged.iter().enumerate().any(|(g, (_, v))| g != 0 && g != last && matches!(v, Verdict::Value));
    let mut gaps: Vec<Option<Vec<(Vec<&str>, u64)>>> = Vec::with_capacity(constants.len() + 1);
    for (g, (fills, verdict)) in judged.into_iter().enumerate() {
        let open_ended = g == 0 || g == last;
        let verdict = match verdict {
            Verdict::Value if open_ended && !anchored && fills.iter().any(|(f, _)| f.len() != 1) => Verdict::SplitBy(whole),
            verdict => verdict,
        };
        match verdict {
            Verdict::Constant => gaps.push(None),
            Verdict::Value => gaps.push(Some(fills)),
            Verdict::SplitBy(key) => {
                let mut parts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
                for (&m, p) in members.iter().zip(&placed) {
                    parts.entry(key(&p[g])).or_default().push(m);
                }
                // A split that parts nothing learns nothing here.
                if parts.len() > 1 {
                    for part in parts.into_values() {
                        settle(templates, part, patterns);
                    }
                }
                return;
            }
        }
    }
    if gaps.iter().all(Option::is_none) {
        return;
    }
    let mut words: Vec<&str> = Vec::new();
    let mut shown = Vec::new();
    for (g, gap) in gaps.iter().enumerate() {
        match gap {
            // A gap every message filled alike: its words are constant.
            None => words.extend(placed[0][g].iter().copied()),
            Some(fills) => {
                words.push(if fills.iter().all(|(f, _)| f.len() == 1) { WILDCARD } else { GAP });
                let mut values: Vec<(String, u64)> = tally(fills, whole).into_iter().collect();
                values.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                shown.push(values.into_iter().take(SHOWN).map(|(v, _)| v).collect());
            }
        }
        if let Some(constant) = constants.get(g) {
            words.push(constant);
        }
    }
    patterns.push(Pattern { template: words.join(" "), messages: total, values: shown });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(template: &str, message: &str) -> bool {
        fits(&items(template), &message.split(' ').collect::<Vec<_>>())
    }

    #[test]
    fn a_gap_takes_any_number_of_words_and_the_constants_anchor_it() {
        assert!(fit("timeout <...> in function <?>", "timeout expired in function sp_refresh"));
        assert!(fit("timeout <...> in function <?>", "timeout canceling statement due to user request in function ev_purge"));
        assert!(fit("timeout <...> in function <?>", "timeout in function f"));
        assert!(!fit("timeout <...> in function <?>", "timeout expired in function"));
        assert!(!fit("timeout <...> in function <?>", "timeout expired in procedure f"));
        assert!(fit("<...> failed <...>", "x y failed"));
        assert!(fit("a <...> b <...> c", "a 1 b 2 b 3 c"));
        assert!(!fit("a <...> b", "a 1 b 2"));
        assert!(fit("a <?> b", "a x b") && !fit("a <?> b", "a b") && !fit("a <?> b", "a x y b"));
    }

    #[test]
    fn the_common_words_are_the_longest_common_subsequence() {
        let a: Vec<&str> = "must be owner of type bigint or type double precision".split(' ').collect();
        let b: Vec<&str> = "must be owner of type integer or type timestamp with time zone".split(' ').collect();
        assert_eq!(lcs(&a, &b), ["must", "be", "owner", "of", "type", "or", "type"]);
        let empty: Vec<&str> = Vec::new();
        let want = [empty.clone(), empty.clone(), empty.clone(), empty.clone(), empty.clone(), vec!["integer"], empty, vec!["timestamp", "with", "time", "zone"]];
        assert_eq!(fills(&lcs(&a, &b), &b), want);
    }
}
