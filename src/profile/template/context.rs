//! Values known by the words around them: calendar names beside a date's numbers, units after
//! a number, and user names after `user` or between `for` and `from`.

use std::borrow::Cow;

use super::PLACEHOLDER;

/// Weekday and month names, and time zones, are values next to a date's numbers
/// (`Fri Jun 17 07:07:00 2005`); units are values after a number (`1190 bytes (1.16 KB)`); the
/// word after `user`, or between `for` and `from`, is a user name.
pub(super) fn mark_context(words: &[&str], tokens: &mut [Cow<str>], note: &mut impl FnMut(&'static str, &str)) {
    let mut i = 0;
    while i < tokens.len() {
        if !is_calendar(words[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < tokens.len() && is_calendar(words[i]) {
            i += 1;
        }
        let before = start > 0 && tokens[start - 1] == PLACEHOLDER;
        let after = i < tokens.len() && tokens[i] == PLACEHOLDER;
        if before || after {
            for (token, word) in tokens[start..i].iter_mut().zip(&words[start..i]) {
                note("date", word);
                *token = Cow::Borrowed(PLACEHOLDER);
            }
        }
    }
    for i in 1..tokens.len() {
        if tokens[i] == PLACEHOLDER {
            continue;
        }
        let word = words[i].trim_end_matches([')', ',', ';', '.']);
        if tokens[i - 1].ends_with(PLACEHOLDER) && UNITS.contains(&word) {
            note("unit", word);
            tokens[i] = Cow::Owned(format!("{PLACEHOLDER}{}", &words[i][word.len()..]));
        } else if words[i - 1].eq_ignore_ascii_case("user") && tokens[i - 1] != PLACEHOLDER && is_name(words[i]) {
            // (`invalid user user`: the second is the name, the word after it is not.)
            note("user", words[i]);
            tokens[i] = Cow::Borrowed(PLACEHOLDER);
        } else if words[i - 1] == "for" && words.get(i + 1) == Some(&"from") && is_name(words[i]) {
            // `Failed password for root from <*>`: who, between for and from.
            note("user", words[i]);
            tokens[i] = Cow::Borrowed(PLACEHOLDER);
        }
    }
}

const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const LONG_NAMES: [&str; 19] = [
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January", "February", "March", "April", "June",
    "July", "August", "September", "October", "November", "December", "Sept",
];
const ZONES: [&str; 13] = ["UTC", "GMT", "PST", "PDT", "MST", "MDT", "CST", "CDT", "EST", "EDT", "CET", "CEST", "BST"];
const UNITS: [&str; 24] = [
    "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "bytes", "kB", "ms", "us", "µs", "ns", "s", "sec", "secs", "seconds",
    "min", "mins", "minutes", "hours", "%",
];

/// `Fri`, `Jun`, `June`, `PDT`: a calendar word (case as dates write them).
fn is_calendar(word: &str) -> bool {
    let word = word.trim_end_matches(',');
    if !(1..=9).contains(&word.len()) || !word.as_bytes()[0].is_ascii_uppercase() {
        return false;
    }
    WEEKDAYS.contains(&word) || MONTHS.contains(&word) || LONG_NAMES.contains(&word) || ZONES.contains(&word)
}

/// A user name: a word, not a word of the sentence around it (`user not found`).
fn is_name(word: &str) -> bool {
    const NOT_NAMES: [&str; 16] =
        ["not", "is", "was", "has", "does", "did", "can", "cannot", "could", "with", "from", "for", "by", "in", "of", "unknown"];
    let core = word.trim_matches(|c: char| !c.is_alphanumeric());
    !word.starts_with(['[', '(']) && !core.is_empty() && !NOT_NAMES.contains(&core.to_ascii_lowercase().as_str()) && core.chars().all(|c| c.is_alphanumeric() || "._-".contains(c))
}
