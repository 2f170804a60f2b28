//! What a scan counts: rows accepted, outside the window or rejected (the first rejects named,
//! all by kind of reason), piece by piece, then added up in input and line order.

/// How many rejected rows are kept with their `file:line: reason`; all are counted.
pub const NAMED_REJECTS: usize = 20;

/// A row that could not be read: where, and why (also kept as such in partial states).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reject {
    pub input: String,
    pub line: u64,
    pub reason: String,
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.input, self.line, self.reason)
    }
}

/// Rejected rows counted by the kind of their reason (values, quoted text and positions taken
/// out), each kind with its first reason, so that a run that accepts nothing can say why.
#[derive(Clone, Debug, Default)]
pub struct ReasonKinds(std::collections::HashMap<String, (u64, String)>);

/// Kinds of reason told apart; past these, rejects are counted as one more kind.
const REASON_KINDS: usize = 64;

impl ReasonKinds {
    pub fn add(&mut self, reason: &str, rows: u64) {
        let mut kind = reason_kind(reason);
        if self.0.len() >= REASON_KINDS && !self.0.contains_key(&kind) {
            kind = "other reasons".into();
        }
        self.0.entry(kind).or_insert_with(|| (0, reason.to_string())).0 += rows;
    }

    pub fn merge(&mut self, other: ReasonKinds) {
        for (kind, (rows, example)) in other.0 {
            let entry = self.0.entry(kind).or_insert((0, example.clone()));
            entry.0 += rows;
            if example < entry.1 {
                entry.1 = example;
            }
        }
    }

    /// The `n` most common kinds: an example reason of each and its rows, most rows first.
    pub fn most_common(&self, n: usize) -> Vec<(&str, u64)> {
        let mut kinds: Vec<(&str, u64, &str)> = self.0.iter().map(|(kind, (rows, example))| (example.as_str(), *rows, kind.as_str())).collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.2.cmp(b.2)));
        kinds.into_iter().take(n).map(|(example, rows, _)| (example, rows)).collect()
    }
}

/// A reason without what varies from row to row: quoted text, numbers.
fn reason_kind(reason: &str) -> String {
    let mut kind = String::with_capacity(reason.len());
    let mut chars = reason.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                kind.push_str("\"…\"");
                let mut escaped = false;
                for c in chars.by_ref() {
                    match c {
                        '\\' if !escaped => escaped = true,
                        '"' if !escaped => break,
                        _ => escaped = false,
                    }
                }
            }
            c if c.is_ascii_digit() => {
                kind.push('N');
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
            }
            c => kind.push(c),
        }
    }
    kind
}

/// Counts for a scan; `rejects` holds the first `NAMED_REJECTS` in input and line order.
#[derive(Debug, Default)]
pub struct Tally {
    pub accepted: u64,
    pub outside_window: u64,
    pub rejected: u64,
    pub rejects: Vec<Reject>,
    /// Every rejected row, by kind of reason.
    pub kinds: ReasonKinds,
    /// Rejected rows of each input, in input order (`fold` only).
    pub rejected_by_input: Vec<u64>,
}

/// What one piece of an input (a chunk of lines, a row group) held, with line numbers local
/// to the piece.
#[derive(Default)]
pub(in crate::source) struct PieceTally {
    pub accepted: u64,
    pub outside_window: u64,
    pub rejected: u64,
    pub rejects: Vec<(u64, String)>,
    /// Lines (or rows) the piece spans, blank lines included.
    pub lines: u64,
    /// Rejected rows by kind of reason (`reason_kind`).
    pub kinds: ReasonKinds,
}

impl PieceTally {
    pub fn reject(&mut self, line: u64, reason: String) {
        self.rejected += 1;
        self.kinds.add(&reason, 1);
        if self.rejects.len() < NAMED_REJECTS {
            self.rejects.push((line, reason));
        }
    }
}

/// Adds the tallies of an input's pieces, in piece order, to `tally`: local line numbers
/// become the input's.
pub(in crate::source) fn absorb(tally: &mut Tally, input: &str, pieces: impl IntoIterator<Item = PieceTally>) {
    let mut lines_before = 0;
    for piece in pieces {
        tally.accepted += piece.accepted;
        tally.outside_window += piece.outside_window;
        tally.rejected += piece.rejected;
        tally.kinds.merge(piece.kinds);
        for (line, reason) in piece.rejects {
            if tally.rejects.len() < NAMED_REJECTS {
                tally.rejects.push(Reject { input: input.to_string(), line: line + lines_before, reason });
            }
        }
        lines_before += piece.lines;
    }
}
