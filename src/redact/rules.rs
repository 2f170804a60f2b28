//! What happens to each part of a record, from the profile: the message as sent (payload, key,
//! headers) and personal fields are replaced whole; the fields the signature, id and time read
//! keep their values, with only detected values replaced; the time is never touched.

use crate::path::{FieldExpr, Root, Step};
use crate::profile::{Normalizer, Profile};

/// What is done to a value and everything inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The time a rank reads: left as written, or rounded down with `--coarsen-times`.
    Time,
    /// Strings keep their text, with personal and secret values found in it replaced.
    Scrub,
    /// Free text (a message, a trace, a field nothing reads): as `Scrub`, and the record's
    /// payload and personal values repeated in it replaced by their tokens.
    Text,
    /// Every string and number replaced by its token (names and structure kept).
    Token(&'static str),
}

/// A step of the record's tree the profile names, and what applies from there down.
#[derive(Clone, Default, Debug)]
pub struct Node {
    /// The mode set here and how strongly (a later, stronger rule at the same place wins).
    pub mode: Option<(Mode, u8)>,
    pub children: Vec<(Step, Node)>,
    /// An array here is a header collection (names kept, values reached by name).
    pub headers: bool,
    /// Headers (by name prefix) that are not part of the message (the dead-letter reporter's).
    pub exclude: Vec<String>,
}

impl Node {
    pub fn child(&self, step: &Step) -> Option<&Node> {
        self.children.iter().find(|(s, _)| s == step).map(|(_, n)| n)
    }

    /// The child for a member name, or for an element: by index, else by its header's name.
    pub fn member(&self, name: &[u8]) -> Option<&Node> {
        // Asked for each member of each record: the first byte tells most names apart.
        let same = |k: &str| k.len() == name.len() && k.as_bytes().first() == name.first() && k.as_bytes() == name;
        self.children.iter().find(|(s, _)| matches!(s, Step::Key(k) if same(k))).map(|(_, n)| n)
    }

    fn at(&mut self, path: &[Step]) -> &mut Node {
        let mut node = self;
        for step in path {
            let i = match node.children.iter().position(|(s, _)| s == step) {
                Some(i) => i,
                None => {
                    node.children.push((step.clone(), Node::default()));
                    node.children.len() - 1
                }
            };
            node = &mut node.children[i].1;
        }
        node
    }

    fn set(&mut self, path: &[Step], mode: Mode, strength: u8) {
        let node = self.at(path);
        if node.mode.is_none_or(|(_, s)| s <= strength) {
            node.mode = Some((mode, strength));
        }
    }
}

// How strongly each kind of rule holds where two name the same place.
const PAYLOAD: u8 = 1;
const READ: u8 = 2;
const PERSONAL: u8 = 3;
const TIME: u8 = 4;

/// The record paths an expression reads (its alternatives that start at the record).
fn record_paths(expr: &FieldExpr) -> impl Iterator<Item = &[Step]> {
    expr.alternatives.iter().filter(|a| a.root == Root::Record).map(|a| a.path.as_slice())
}

/// The rules of an S3-sink `.headers` file's lines, `{"headers": [...]}`: its member is the
/// record's `headers`.
pub fn headers_envelope(rules: &Node) -> Node {
    let headers = rules.member(b"headers").cloned().unwrap_or_default();
    Node { mode: Some((Mode::Text, 0)), children: vec![(Step::Key("headers".into()), headers)], ..Node::default() }
}

/// The record's tree as the profile treats it.
pub fn from_profile(profile: &Profile) -> Node {
    let mut root = Node { mode: Some((Mode::Text, 0)), ..Node::default() };
    let parse = |text: &Option<String>| text.as_deref().and_then(|t| FieldExpr::parse(t).ok());
    let origin = &profile.origin;

    // The message as it was sent: its payload, key and headers.
    let aligned = origin.aligned.iter().flat_map(|a| [(parse(&a.key), "key"), (parse(&a.value), "value")]);
    for (expr, kind) in [(parse(&origin.key), "key"), (parse(&origin.value), "value")].into_iter().chain(aligned) {
        for path in expr.iter().flat_map(record_paths) {
            root.set(path, Mode::Token(kind), PAYLOAD);
        }
    }
    if origin.value.is_none() && origin.is_set() {
        // The record itself is the message (a Sidekiq job, an Event Grid event), but for what
        // dead-lettering added to it.
        root.mode = Some((Mode::Token("value"), PAYLOAD));
        for member in &origin.record_exclude {
            root.set(&[Step::Key(member.clone())], Mode::Text, READ);
        }
    }
    let headers = parse(&origin.headers).into_iter().map(|e| (e, Vec::new()));
    let properties = parse(&origin.properties).into_iter().map(|e| (e, vec![Step::Key("headers".into())]));
    for (expr, below) in headers.chain(properties) {
        for path in record_paths(&expr) {
            let path: Vec<Step> = path.iter().chain(&below).cloned().collect();
            root.set(&path, Mode::Token("header"), PAYLOAD);
            let node = root.at(&path);
            node.headers = true;
            node.exclude = origin.headers_exclude.clone();
        }
    }

    // What the analysis reads keeps its values (found personal values aside); a payload's
    // values are looked for only in messages and traces, whose templates mask or keep them
    // alike, never in a name or code the signature takes as it is.
    let mut read: Vec<FieldExpr> = Vec::new();
    let mut text: Vec<FieldExpr> = Vec::new();
    for field in &profile.signature {
        match &field.normalizer {
            Normalizer::Category { type_field, message_field } => {
                read.extend([field.expr.clone(), type_field.clone()]);
                text.push(message_field.clone());
            }
            Normalizer::Template | Normalizer::LearnedTemplate(_) | Normalizer::Stack(_) | Normalizer::RootCause => text.push(field.expr.clone()),
            _ => read.push(field.expr.clone()),
        }
    }
    read.extend(profile.id.parts.iter().cloned());
    read.extend(profile.attempts.iter().cloned());
    read.extend([parse(&origin.topic), parse(&origin.partition), parse(&origin.offset), parse(&origin.value_encoding)].into_iter().flatten());
    let names = profile.signature_names();
    read.extend(profile.key_fields.iter().filter(|k| !names.contains(k)).filter_map(|k| FieldExpr::parse(k).ok()));
    for expr in &read {
        for path in record_paths(expr) {
            root.set(path, Mode::Scrub, READ);
        }
    }
    for expr in &text {
        for path in record_paths(expr) {
            root.set(path, Mode::Text, READ);
        }
    }
    for expr in &profile.personal {
        for path in record_paths(expr) {
            root.set(path, Mode::Token(personal_kind(path)), PERSONAL);
        }
    }
    for path in record_paths(&profile.time) {
        root.set(path, Mode::Time, TIME);
    }
    root
}

/// A personal field's token prefix: its name's letters (`customer.name`: `name`), else `pii`.
fn personal_kind(path: &[Step]) -> &'static str {
    let name = path.iter().rev().find_map(|s| match s {
        Step::Key(k) => Some(k.to_ascii_lowercase().chars().filter(char::is_ascii_lowercase).collect::<String>()),
        Step::Index(_) => None,
    });
    match name.filter(|n| !n.is_empty() && n.len() <= 24) {
        Some(n) => Box::leak(n.into_boxed_str()),
        None => "pii",
    }
}
