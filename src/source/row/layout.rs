//! Turns one row's cells into its failure signature key and the facts dlqf needs (id, time,
//! attempts), or into a reject reason. Shared by every decoder, so all formats agree.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

pub use super::fields::RowContext;

use super::fields::{record_digest, resolve, FieldAt};
use super::tree::{FieldTree, RawString};
use crate::path::{FieldExpr, Step};
use crate::profile::classify::Classifier;
use crate::profile::stack::StackRules;
use crate::profile::{CategorySource, FieldType, IdMissing, Normalizer, Profile};
use crate::timestamp::{self, DateCache, TimeFormat};

/// One field's value as a source read it, before the profile interprets it.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'a> {
    Missing,
    Null,
    Str(Cow<'a, str>),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A native timestamp column, already in microseconds.
    Time(i64),
    /// An object, array or binary value.
    Nested(&'static str),
    /// A JSON string as written, its escapes in place, with its closing quote (a raw read
    /// leaves a stack trace so: most rows' signatures need no unescaped text).
    Escaped(&'a str),
    /// An array whose items are all strings, joined by newlines: a stack trace written a
    /// frame an item (Lambda's `stackTrace`). Text to a `stack` field only; an array to the rest.
    Lines(Cow<'a, str>),
    /// A string whose bytes are not UTF-8 (kcat writes binary header values raw): for a stage
    /// to decode (`int_be`, `base64`, `inflate`), never text.
    Bytes(Cow<'a, [u8]>),
    /// A binary integer a raw read decoded from a string in place (`RawString::IntBe`): only
    /// in a cell that every field reads through `int_be` alone, which takes it as it is.
    IntBe(i64),
}

impl Cell<'_> {
    pub fn kind(&self) -> &'static str {
        match self {
            Cell::Missing => "missing",
            Cell::Null => "null",
            Cell::Str(_) | Cell::Escaped(_) => "string",
            Cell::Int(_) | Cell::Float(_) | Cell::IntBe(_) => "number",
            Cell::Bool(_) => "boolean",
            Cell::Time(_) => "timestamp",
            Cell::Nested(kind) => kind,
            Cell::Lines(_) => "array",
            Cell::Bytes(_) => "bytes (not UTF-8 text: decode them with a stage, as `| int_be`)",
        }
    }

    /// The cell with its text owned.
    pub fn into_owned(self) -> Cell<'static> {
        match self {
            Cell::Str(s) => Cell::Str(Cow::Owned(s.into_owned())),
            Cell::Missing => Cell::Missing,
            Cell::Null => Cell::Null,
            Cell::Int(v) => Cell::Int(v),
            Cell::Float(v) => Cell::Float(v),
            Cell::Bool(v) => Cell::Bool(v),
            Cell::Time(v) => Cell::Time(v),
            Cell::Nested(kind) => Cell::Nested(kind),
            Cell::Lines(text) => Cell::Lines(Cow::Owned(text.into_owned())),
            Cell::Escaped(raw) => Cell::Str(Cow::Owned(unescape(raw).into_owned())),
            Cell::Bytes(bytes) => Cell::Bytes(Cow::Owned(bytes.into_owned())),
            Cell::IntBe(v) => Cell::IntBe(v),
        }
    }

    /// A parsed JSON value (or its absence) as the cell a reader makes of it.
    pub fn of_json(value: Option<&Value>) -> Cell<'static> {
        match value {
            None => Cell::Missing,
            Some(Value::Null) => Cell::Null,
            Some(Value::Bool(b)) => Cell::Bool(*b),
            Some(Value::Number(n)) => n.as_i64().map_or_else(|| Cell::Float(n.as_f64().unwrap_or(f64::NAN)), Cell::Int),
            Some(Value::String(s)) => Cell::Str(Cow::Owned(s.clone())),
            Some(Value::Array(items)) => match items.iter().map(Value::as_str).collect::<Option<Vec<&str>>>() {
                Some(lines) if !lines.is_empty() => Cell::Lines(Cow::Owned(lines.join("\n"))),
                _ => Cell::Nested("array"),
            },
            Some(Value::Object(_)) => Cell::Nested("object"),
        }
    }

    /// Whether the cell owns its text or bytes (a string that had to be unescaped or joined),
    /// which dropping it frees.
    pub fn owns(&self) -> bool {
        matches!(self, Cell::Str(Cow::Owned(_)) | Cell::Lines(Cow::Owned(_)) | Cell::Bytes(Cow::Owned(_)))
    }

    pub fn as_text(&self) -> Option<Cow<'_, str>> {
        match self {
            Cell::Str(s) => Some(Cow::Borrowed(s.as_ref())),
            Cell::Escaped(raw) => Some(unescape(raw)),
            Cell::Int(v) => Some(Cow::Owned(v.to_string())),
            Cell::Float(v) => Some(Cow::Owned(v.to_string())),
            Cell::Bool(v) => Some(Cow::Owned(v.to_string())),
            Cell::Time(v) => Some(Cow::Owned(timestamp::format_micros(*v))),
            _ => None,
        }
    }
}

/// The text of a string a raw read left escaped (`Cell::Escaped`: checked when read).
pub fn unescape(raw: &str) -> Cow<'_, str> {
    crate::json_scan::Parser::with_kernel(raw, crate::json_scan::Kernel::detected()).string_body().expect("an escaped cell was checked when read")
}

/// What a row contributes besides its signature.
#[derive(Clone, Debug)]
pub struct RowFacts<'a> {
    pub id: Cow<'a, str>,
    pub time: i64,
    pub attempts: i64,
}

struct Slot {
    field: FieldAt,
    normalizer: Normalizer,
    /// The normaliser runs on every row, not once per distinct value after grouping. Kept
    /// rather than asked of `normalizer` on every row: that costs 0.8% of rank's instructions.
    per_row: bool,
    required: bool,
    field_type: FieldType,
    /// The error type and message, for a category normaliser.
    aux: Option<(FieldAt, FieldAt)>,
}

/// The values a source must read for a profile (leaves: paths into the records), and how to
/// interpret them.
pub struct Layout {
    /// Each leaf's path as text (a top-level leaf: the field's name), for messages and for
    /// sources that read top-level columns.
    pub columns: Vec<String>,
    /// Each leaf's path from the record's top.
    pub leaves: Vec<Vec<Step>>,
    /// The leaves as the JSON picker walks them.
    tree: FieldTree,
    id: Vec<FieldAt>,
    id_missing: IdMissing,
    id_type: FieldType,
    time: FieldAt,
    time_format: TimeFormat,
    attempts: Option<FieldAt>,
    slots: Vec<Slot>,
    /// Where the fields are when no signature field is normalised per row and every field is
    /// a top-level leaf read as it is (`direct_columns`).
    direct: Option<DirectColumns>,
    classifier: Arc<Classifier>,
    category: CategoryAt,
    /// A field's stage takes a whole array or object, read from the record's text.
    whole_values: bool,
}

/// Positions in the signature values that a bucket's category follows from.
enum CategoryAt {
    Value(usize),
    Classify { error_type: Option<usize>, message: usize },
}

impl Layout {
    pub fn new(profile: &Profile) -> Layout {
        let mut leaves: Vec<Vec<Step>> = Vec::new();
        let mut field = |expr: &FieldExpr| FieldAt::new(expr, &mut leaves);
        let id: Vec<FieldAt> = profile.id.parts.iter().map(&mut field).collect();
        let time = field(&profile.time);
        let attempts = profile.attempts.as_ref().map(&mut field);
        let slots: Vec<Slot> = profile
            .signature
            .iter()
            .map(|s| Slot {
                field: field(&s.expr),
                aux: match &s.normalizer {
                    Normalizer::Category { type_field, message_field } => Some((field(type_field), field(message_field))),
                    _ => None,
                },
                normalizer: s.normalizer.clone(),
                per_row: s.normalizer.is_per_row(),
                required: s.required,
                field_type: s.field_type,
            })
            .collect();
        let position = |name: &str| profile.signature.iter().position(|s| s.field == name);
        let category = match &profile.category {
            CategorySource::Field(f) => CategoryAt::Value(position(f).expect("category field is a signature field")),
            CategorySource::Classify { type_field, message_field } => CategoryAt::Classify {
                error_type: type_field.as_deref().and_then(position),
                message: position(message_field).expect("category message field is a signature field"),
            },
        };
        let columns: Vec<String> = leaves.iter().map(|path| path_text(path)).collect();
        let fields = || {
            let aux = slots.iter().flat_map(|s| s.aux.iter().flat_map(|(a, b)| [a, b]));
            id.iter().chain([&time]).chain(&attempts).chain(slots.iter().map(|s| &s.field)).chain(aux)
        };
        let whole_values = fields().any(FieldAt::needs_record);
        // Every signature field normalised after grouping, every field one top-level leaf, the
        // time RFC 3339: rows can be read from where the fields are (`direct_columns`).
        let top = |f: &FieldAt| f.plain().filter(|&leaf| leaves[leaf].len() == 1);
        let direct = (|| {
            if slots.iter().any(|s| s.per_row) || profile.time_format != TimeFormat::Rfc3339 || profile.id.missing != IdMissing::Reject {
                return None;
            }
            let [id] = id.as_slice() else { return None };
            let attempts = match &attempts {
                Some(a) => Some(top(a)?),
                None => None,
            };
            Some(DirectColumns { id: top(id)?, time: top(&time)?, attempts, signature: slots.iter().map(|s| top(&s.field)).collect::<Option<_>>()? })
        })();
        let mut tree = FieldTree::new(&leaves);
        // A stack field's strings may stay escaped (each alternative's, `a // b`): its
        // signature is remembered by the shape of the text as written.
        for slot in slots.iter().filter(|s| matches!(s.normalizer, Normalizer::Stack(_))) {
            for leaf in slot.field.unstaged_leaves() {
                tree.read_strings(leaf, RawString::Escaped);
            }
        }
        // A leaf that every field reads through `int_be` alone may be read as its integer.
        let mut int_be_only: Vec<Option<bool>> = vec![None; leaves.len()];
        for field in fields() {
            for (leaf, only) in field.leaf_uses() {
                int_be_only[leaf] = Some(int_be_only[leaf].unwrap_or(true) && only);
            }
        }
        for (leaf, only) in int_be_only.into_iter().enumerate() {
            if only == Some(true) {
                tree.read_strings(leaf, RawString::IntBe);
            }
        }
        Layout {
            columns,
            tree,
            leaves,
            id,
            id_missing: profile.id.missing,
            id_type: profile.id_type,
            time,
            time_format: profile.time_format,
            attempts,
            slots,
            direct,
            classifier: profile.classifier.clone(),
            category,
            whole_values,
        }
    }

    /// The leaves as the JSON picker walks them.
    pub fn tree(&self) -> &FieldTree {
        &self.tree
    }

    /// Whether every leaf is a top-level field (sources then read columns by name alone).
    pub fn flat(&self) -> bool {
        self.leaves.iter().all(|l| matches!(l.as_slice(), [Step::Key(_)]))
    }

    /// The top-level fields the leaves start at, each once, in leaf order.
    pub fn roots(&self) -> Vec<String> {
        let mut roots: Vec<String> = Vec::new();
        for leaf in &self.leaves {
            if let Some(Step::Key(name)) = leaf.first() {
                if !roots.contains(name) {
                    roots.push(name.clone());
                }
            }
        }
        roots
    }

    /// Whether a row's id may be its record's digest, or a field's stage takes a whole array
    /// or object (sources then hand over the record).
    pub fn needs_record(&self) -> bool {
        self.id_missing == IdMissing::Digest || self.whole_values
    }

    /// Fills `key` with the row's signature parts (per-row normalisers applied, the cheap ones
    /// deferred to `finish_signature`) and returns the row's facts, or why it is rejected.
    /// `dates` are those the caller's rows met so far (a reader keeps one cache for a piece).
    pub fn extract<'a>(&self, cells: &'a [Cell<'a>], key: &mut Vec<u8>, dates: &mut DateCache, context: &RowContext) -> Result<RowFacts<'a>, String> {
        if let Some(facts) = self.direct.as_ref().and_then(|direct| extract_plain(direct, cells, key, dates)) {
            return Ok(facts);
        }
        self.extract_any(cells, key, dates, context)
    }

    /// `extract` for any row.
    #[inline(never)]
    fn extract_any<'a>(&self, cells: &'a [Cell<'a>], key: &mut Vec<u8>, dates: &mut DateCache, context: &RowContext) -> Result<RowFacts<'a>, String> {
        key.clear();
        // The digest of the escaped trace the last stack slot read (where it is, how long it
        // is): a row's slots that read one trace (its type, its frames) shape it once. Where
        // and how long tell it within one row, whose cells do not change.
        let mut trace: Option<(usize, usize, Option<u128>)> = None;
        for slot in &self.slots {
            let cell = match resolve(&slot.field, cells, context) {
                // An optional field that holds an object or array, or cannot be decoded,
                // reads as absent: it is no text to group by.
                Ok(Cell::Lines(text)) if matches!(slot.normalizer, Normalizer::Stack(_)) => Cell::Str(text),
                Ok(Cell::Nested(_) | Cell::Lines(_)) | Err(_) if !slot.required => Cell::Missing,
                Ok(cell) => cell,
                Err(reason) => return Err(reason),
            };
            match &cell {
                // Most rows: a string kept as it is until grouping.
                Cell::Str(text) if !slot.per_row => push_part(key, text),
                // A stack trace left escaped by a raw read: its signature from the text as written.
                Cell::Escaped(raw) if let Normalizer::Stack(rules) = &slot.normalizer => {
                    let at = (raw.as_ptr() as usize, raw.len());
                    let digest = match trace {
                        Some((ptr, len, digest)) if (ptr, len) == at => digest,
                        _ => {
                            let digest = StackRules::escaped_digest(raw);
                            trace = Some((at.0, at.1, digest));
                            digest
                        }
                    };
                    rules.with_signature_escaped_by(raw, digest, |raw| unescape(raw).into_owned(), |signature| push_part(key, signature));
                }
                _ => self.signature_part(slot, &cell, cells, context, key)?,
            }
        }
        let id = self.id(cells, context)?;
        let time = self.time(cells, dates, context)?;
        let attempts = match &self.attempts {
            None => 0,
            Some(field) => match resolve(field, cells, context)? {
                Cell::Missing | Cell::Null => 0,
                Cell::Int(v) => v,
                Cell::Float(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => v as i64,
                Cell::Str(s) if s.trim().parse::<i64>().is_ok() => s.trim().parse().unwrap(),
                other => {
                    return Err(format!(
                        "field `{}`: expected an integer, got {}",
                        field.name,
                        match other {
                            Cell::Str(s) => format!("string {}", quote(&s)),
                            other => other.kind().to_string(),
                        }
                    ))
                }
            },
        };
        Ok(RowFacts { id, time, attempts })
    }

    /// A row's id: its one field, its parts joined with `/`, or its record's digest.
    fn id<'a>(&self, cells: &'a [Cell<'a>], context: &RowContext) -> Result<Cow<'a, str>, String> {
        let digest = || Cow::Owned(record_digest(context));
        match self.id.as_slice() {
            [] => return Ok(digest()),
            [field] => return Ok(self.id_part(resolve(field, cells, context)?, field)?.unwrap_or_else(digest)),
            _ => {}
        }
        // The parts written one after another into one string, an integer part (Spring's
        // binary partition and offset) in place rather than made a string of its own first.
        let mut id = String::with_capacity(64);
        for (i, field) in self.id.iter().enumerate() {
            if i > 0 {
                id.push('/');
            }
            match resolve(field, cells, context)? {
                Cell::Int(v) if self.id_type == FieldType::Scalar => id.push_str(itoa::Buffer::new().format(v)),
                cell => match self.id_part(cell, field)? {
                    Some(text) => id.push_str(&text),
                    None => return Ok(digest()),
                },
            }
        }
        Ok(Cow::Owned(id))
    }

    /// One part of a row's id as text; None when it is absent and the id is then the record's
    /// digest.
    fn id_part<'a>(&self, cell: Cell<'a>, field: &FieldAt) -> Result<Option<Cow<'a, str>>, String> {
        match into_text(cell, self.id_type, &field.name)? {
            Ok(text) => Ok(Some(text)),
            Err(_) if self.id_missing == IdMissing::Digest => Ok(None),
            Err(cell) => Err(absent(&field.name, &cell)),
        }
    }

    /// A row's time, as its field and the profile's time format say.
    fn time(&self, cells: &[Cell], dates: &mut DateCache, context: &RowContext) -> Result<i64, String> {
        let name = &self.time.name;
        let format = self.time_format;
        match resolve(&self.time, cells, context)? {
            Cell::Time(v) if (timestamp::MIN_MICROS..=timestamp::MAX_MICROS).contains(&v) => Ok(v),
            Cell::Time(v) => Err(format!("field `{name}`: timestamp {v} µs since 1970 is out of range")),
            Cell::Str(s) if format == TimeFormat::Rfc3339 => {
                dates.parse(&s).or_else(|| format.parse_text(&s)).ok_or_else(|| format!("field `{name}`: invalid timestamp {}", quote(&s)))
            }
            Cell::Str(s) => format.parse_text(&s).ok_or_else(|| format!("field `{name}`: invalid {} time {}", format.name(), quote(&s))),
            Cell::Int(v) if format != TimeFormat::Rfc3339 => format.from_int(v).ok_or_else(|| format!("field `{name}`: {v} is out of range as {}", format.name())),
            Cell::Float(v) if format != TimeFormat::Rfc3339 => format.from_float(v).ok_or_else(|| format!("field `{name}`: {v} is out of range as {}", format.name())),
            absent_value @ (Cell::Missing | Cell::Null) => Err(absent(name, &absent_value)),
            Cell::Int(_) | Cell::Float(_) => {
                Err(format!("field `{name}`: expected an RFC 3339 timestamp, got number (a profile reads epoch numbers with time_format = \"epoch_s\", \"epoch_ms\", \"epoch_us\" or \"epoch_ns\")"))
            }
            other => Err(format!("field `{name}`: expected an RFC 3339 timestamp, got {}", other.kind())),
        }
    }

    /// One signature part of a row that is not a string kept as it is: normalised now, taken
    /// from a number, or why the row is rejected.
    fn signature_part(&self, slot: &Slot, cell: &Cell, cells: &[Cell], context: &RowContext, key: &mut Vec<u8>) -> Result<(), String> {
        // (A stack trace left escaped by a raw read is `extract_any`'s.)
        let name = &slot.field.name;
        match &slot.normalizer {
            Normalizer::Category { .. } => {
                let given = text_of(cell, slot.field_type, name)?.filter(|t| !t.trim().is_empty());
                let value = match given {
                    Some(t) => t.trim().to_lowercase(),
                    None => {
                        let (ty, msg) = slot.aux.as_ref().expect("category slot has aux fields");
                        let text = |f: &FieldAt| resolve(f, cells, context).ok().and_then(|c| c.as_text().map(Cow::into_owned)).unwrap_or_default();
                        self.classifier.classify(&text(ty), &text(msg)).to_string()
                    }
                };
                push_part(key, &value);
            }
            normalizer => {
                let text = match text_of(cell, slot.field_type, name)? {
                    Some(text) => text,
                    None if !slot.required => Cow::Borrowed(""),
                    None => return Err(absent(name, cell)),
                };
                if slot.per_row {
                    normalizer.with_applied(&text, |normalized| push_part(key, normalized));
                } else {
                    push_part(key, &text);
                }
            }
        }
        Ok(())
    }

    /// Where the fields of a row are when every signature field is normalised after grouping:
    /// a source can then build keys straight from its columns for rows with no nulls and the
    /// expected types (`push_part` each signature value in order), and use `extract` for the rest.
    pub fn direct_columns(&self) -> Option<&DirectColumns> {
        self.direct.as_ref()
    }

    /// The error category of a bucket, from its normalised signature values.
    pub fn category_of(&self, values: &[String]) -> String {
        match self.category {
            CategoryAt::Value(i) => values[i].clone(),
            CategoryAt::Classify { error_type, message } => {
                self.classifier.classify(error_type.map_or("", |i| values[i].as_str()), &values[message]).to_string()
            }
        }
    }

    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    /// The normalised signature values of a key produced by `extract`.
    pub fn finish_signature(&self, key: &[u8]) -> Vec<String> {
        split_parts(key).enumerate().map(|(i, raw)| self.finish_part(i, raw)).collect()
    }

    /// One signature value of a key, normalised (signature field `index`, as `extract` left it).
    pub fn finish_part(&self, index: usize, raw: &str) -> String {
        let normalizer = &self.slots[index].normalizer;
        if normalizer.is_per_row() { raw.to_string() } else { normalizer.apply(raw) }
    }
}

/// A path as a profile writes it: names joined with `.`, quoted where they must be.
pub fn path_text(path: &[Step]) -> String {
    let mut text = String::new();
    for (i, step) in path.iter().enumerate() {
        match step {
            Step::Key(name) => {
                if i > 0 {
                    text.push('.');
                }
                let bare = !name.is_empty() && !name.bytes().any(|b| matches!(b, b'.' | b'[' | b']' | b'|' | b'"' | b'/') || b.is_ascii_whitespace());
                if bare && !(i == 0 && name.starts_with('$')) {
                    text.push_str(name);
                } else {
                    text.push_str(&serde_json::to_string(name).expect("strings serialise"));
                }
            }
            Step::Index(n) => text.push_str(&format!("[{n}]")),
        }
    }
    text
}

/// `text_of` for a cell given away: its text, or the absent cell back.
fn into_text<'a>(cell: Cell<'a>, field_type: FieldType, name: &str) -> Result<Result<Cow<'a, str>, Cell<'a>>, String> {
    match cell {
        Cell::Str(s) => Ok(Ok(s)),
        absent @ (Cell::Missing | Cell::Null) => Ok(Err(absent)),
        other => text_of(&other, field_type, name).map(|t| Ok(Cow::Owned(t.expect("present").into_owned()))),
    }
}

/// `extract` for the usual row when no signature field is normalised per row: string
/// signature values, id and time, and an integer attempt count or none. It gives what
/// `extract` gives such a row, or None for any other row (or a time that does not parse),
/// which then goes the general way (that names why it is rejected).
#[inline]
fn extract_plain<'a>(plain: &DirectColumns, cells: &'a [Cell<'a>], key: &mut Vec<u8>, dates: &mut DateCache) -> Option<RowFacts<'a>> {
    let (Cell::Str(id), Cell::Str(time)) = (&cells[plain.id], &cells[plain.time]) else {
        return None;
    };
    let attempts = match plain.attempts.map(|col| &cells[col]) {
        None | Some(Cell::Missing | Cell::Null) => 0,
        Some(Cell::Int(v)) => *v,
        Some(_) => return None,
    };
    let time = dates.parse(time)?;
    key.clear();
    for &col in &plain.signature {
        let Cell::Str(text) = &cells[col] else { return None };
        push_part(key, text);
    }
    Some(RowFacts { id: Cow::Borrowed(id.as_ref()), time, attempts })
}

/// Column positions (in `Layout::columns`) for building keys without cells.
pub struct DirectColumns {
    pub id: usize,
    pub time: usize,
    pub attempts: Option<usize>,
    pub signature: Vec<usize>,
}

/// Appends one signature part to a key, as `extract` does.
pub fn push_part(key: &mut Vec<u8>, text: &str) {
    key.extend_from_slice(&(text.len() as u32).to_le_bytes());
    crate::values::push_bytes(key, text.as_bytes());
}

/// The parts of a key, each a length-prefixed UTF-8 string written by `push_part`.
pub fn split_parts(mut key: &[u8]) -> impl Iterator<Item = &str> {
    std::iter::from_fn(move || {
        if key.len() < 4 {
            return None;
        }
        let len = u32::from_le_bytes(key[..4].try_into().unwrap()) as usize;
        let text = std::str::from_utf8(&key[4..4 + len]).expect("keys hold UTF-8");
        key = &key[4 + len..];
        Some(text)
    })
}

/// A text field's value: None when missing or null; a number or boolean only where the
/// profile says `scalar`; anything else is why the row is rejected.
fn text_of<'a>(cell: &'a Cell<'a>, field_type: FieldType, name: &str) -> Result<Option<Cow<'a, str>>, String> {
    match cell {
        Cell::Missing | Cell::Null => Ok(None),
        Cell::Str(s) => Ok(Some(Cow::Borrowed(s.as_ref()))),
        Cell::Escaped(raw) => Ok(Some(unescape(raw))),
        Cell::Int(_) | Cell::Float(_) | Cell::Bool(_) if field_type == FieldType::Scalar => Ok(cell.as_text()),
        other => Err(format!("field `{name}`: expected a string, got {}", other.kind())),
    }
}

/// Why a required field without a value rejects the row.
fn absent(name: &str, cell: &Cell) -> String {
    match cell {
        Cell::Null => format!("field `{name}` is null"),
        _ => format!("field `{name}` is missing"),
    }
}

fn quote(s: &str) -> String {
    let shown: String = s.chars().take(40).collect();
    if shown.len() < s.len() {
        format!("{:?}…", shown)
    } else {
        format!("{shown:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn vision_cells<'a>(stage: Cell<'a>, time: Cell<'a>, attempts: Cell<'a>) -> Vec<Cell<'a>> {
        // Layout order for vision: capture_id, capture_timestamp, attempts, stage, reject_reason, registry_revision
        vec![Cell::Str("cap-1".into()), time, attempts, stage, Cell::Str(" Low_Confidence ".into()), Cell::Str(" det-v8 ".into())]
    }

    #[test]
    fn vision_signature_is_normalised_after_grouping() {
        let layout = Layout::new(&Profile::load("vision").unwrap());
        assert_eq!(layout.columns, ["capture_id", "capture_timestamp", "attempts", "stage", "reject_reason", "registry_revision"]);
        let cells = vision_cells(Cell::Str("Inference".into()), Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Int(2));
        let mut key = Vec::new();
        let facts = layout.extract(&cells, &mut key, &mut DateCache::default(), &RowContext::default()).unwrap();
        assert_eq!(facts.id, "cap-1");
        assert_eq!(facts.attempts, 2);
        assert_eq!(split_parts(&key).collect::<Vec<_>>(), ["Inference", " Low_Confidence ", " det-v8 "]);
        assert_eq!(layout.finish_signature(&key), ["inference", "low_confidence", "det-v8"]);
    }

    #[test]
    fn bad_cells_give_reasons_naming_the_field() {
        let layout = Layout::new(&Profile::load("vision").unwrap());
        let mut key = Vec::new();
        let cases = [
            (vision_cells(Cell::Null, Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Int(0)), "field `stage` is null"),
            (vision_cells(Cell::Missing, Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Int(0)), "field `stage` is missing"),
            (vision_cells(Cell::Nested("object"), Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Int(0)), "field `stage`: expected a string, got object"),
            (vision_cells(Cell::Str("x".into()), Cell::Str("yesterday".into()), Cell::Int(0)), "field `capture_timestamp`: invalid timestamp \"yesterday\""),
            (vision_cells(Cell::Str("x".into()), Cell::Int(5), Cell::Int(0)), "field `capture_timestamp`: expected an RFC 3339 timestamp, got number (a profile reads epoch numbers with time_format = \"epoch_s\", \"epoch_ms\", \"epoch_us\" or \"epoch_ns\")"),
            (vision_cells(Cell::Str("x".into()), Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Str("three".into())), "field `attempts`: expected an integer, got string \"three\""),
            (vision_cells(Cell::Int(7), Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Int(0)), "field `stage`: expected a string, got number"),
            (vision_cells(Cell::Bool(true), Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Int(0)), "field `stage`: expected a string, got boolean"),
            (vision_cells(Cell::Float(0.5), Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Int(0)), "field `stage`: expected a string, got number"),
        ];
        for (cells, reason) in cases {
            assert_eq!(layout.extract(&cells, &mut key, &mut DateCache::default(), &RowContext::default()).unwrap_err(), reason);
        }
    }

    #[test]
    fn a_numeric_id_is_rejected_unless_the_profile_says_scalar() {
        let mut cells = vision_cells(Cell::Str("x".into()), Cell::Str("2026-10-01T00:00:00Z".into()), Cell::Int(0));
        cells[0] = Cell::Int(42);
        let mut key = Vec::new();
        let layout = Layout::new(&Profile::load("vision").unwrap());
        assert_eq!(layout.extract(&cells, &mut key, &mut DateCache::default(), &RowContext::default()).unwrap_err(), "field `capture_id`: expected a string, got number");

        let toml = "id = 'capture_id'\nid_type = 'scalar'\ntime = 'capture_timestamp'\nattempts = 'attempts'\n\
                    [[signature]]\nfield = 'stage'\ntype = 'scalar'\n[[signature]]\nfield = 'reject_reason'\n[[signature]]\nfield = 'registry_revision'\n";
        let layout = Layout::new(&crate::profile::from_toml(toml, "t.toml").unwrap());
        cells[3] = Cell::Int(7);
        let facts = layout.extract(&cells, &mut key, &mut DateCache::default(), &RowContext::default()).unwrap();
        assert_eq!(facts.id, "42");
        assert_eq!(split_parts(&key).next(), Some("7"));
        cells[4] = Cell::Int(7);
        assert_eq!(layout.extract(&cells, &mut key, &mut DateCache::default(), &RowContext::default()).unwrap_err(), "field `reject_reason`: expected a string, got number");
    }

    /// A raw read may take a string as its `int_be` integer only where nothing else reads it:
    /// a leaf also read as it is (here a signature field) keeps its bytes.
    #[test]
    fn only_a_leaf_read_through_int_be_alone_is_read_as_its_integer() {
        let toml = "id = ['headers.p | int_be', 'headers.o | int_be']\nid_type = 'scalar'\ntime = 'ts'\ntime_format = 'epoch_ms'\n\
                    [[signature]]\nfield = 'headers.o'\n[[signature]]\nfield = 'headers.t'\nnormalize = 'stack'\n";
        let layout = Layout::new(&crate::profile::from_toml(toml, "t.toml").unwrap());
        let how = |name: &str| {
            let leaf = layout.columns.iter().position(|c| c == name).unwrap_or_else(|| panic!("{name} not in {:?}", layout.columns));
            layout.tree.raw_string(leaf)
        };
        assert_eq!(how("headers.p"), RawString::IntBe);
        assert_eq!(how("headers.o"), RawString::Decoded);
        assert_eq!(how("headers.t"), RawString::Escaped);
        assert_eq!(how("ts"), RawString::Decoded);
    }

    #[test]
    fn attempts_default_to_zero_and_accept_numeric_strings() {
        let layout = Layout::new(&Profile::load("vision").unwrap());
        let mut key = Vec::new();
        let t = || Cell::Str("2026-10-01T00:00:00Z".into());
        assert_eq!(layout.extract(&vision_cells(Cell::Str("x".into()), t(), Cell::Missing), &mut key, &mut DateCache::default(), &RowContext::default()).unwrap().attempts, 0);
        assert_eq!(layout.extract(&vision_cells(Cell::Str("x".into()), t(), Cell::Str("3".into())), &mut key, &mut DateCache::default(), &RowContext::default()).unwrap().attempts, 3);
    }

    /// Every row the plain reading takes gets from it what the general one gives: the same
    /// key and facts, over rows whose six cells each take every kind of value.
    #[test]
    fn the_plain_reading_gives_what_the_general_one_gives() {
        let layout = Layout::new(&Profile::load("vision").unwrap());
        let plain = layout.direct_columns().expect("vision normalises after grouping");
        let choices = |text: &'static str| {
            vec![Cell::Str(text.into()), Cell::Missing, Cell::Null, Cell::Int(3), Cell::Float(2.0), Cell::Bool(true), Cell::Nested("object")]
        };
        let columns: Vec<Vec<Cell>> = vec![
            choices("cap-1"),
            [choices("2026-10-01T00:00:00Z"), vec![Cell::Str("2026-10-01T25:00:00Z".into()), Cell::Str(" 2026-10-01T00:00:00Z".into())]].concat(),
            [choices("4"), vec![Cell::Int(-7)]].concat(),
            choices(" Inference "),
            choices("timeout"),
            choices("det-v8"),
        ];
        let (mut taken, mut rows) = (0, 0);
        let mut pick = vec![0usize; columns.len()];
        loop {
            let cells: Vec<Cell> = pick.iter().zip(&columns).map(|(&i, c)| c[i].clone()).collect();
            let (mut plain_key, mut any_key) = (b"stale".to_vec(), b"old".to_vec());
            let general = layout.extract_any(&cells, &mut any_key, &mut DateCache::default(), &RowContext::default());
            if let Some(facts) = extract_plain(plain, &cells, &mut plain_key, &mut DateCache::default()) {
                let general = general.expect("a row read plainly is accepted");
                assert_eq!((&facts.id, facts.time, facts.attempts, &plain_key), (&general.id, general.time, general.attempts, &any_key), "{cells:?}");
                taken += 1;
            }
            rows += 1;
            // The next combination, the last column fastest.
            let Some(col) = (0..pick.len()).rev().find(|&c| pick[c] + 1 < columns[c].len()) else { break };
            pick[col] += 1;
            pick[col + 1..].iter_mut().for_each(|p| *p = 0);
        }
        // Missing, null or an integer attempt count (four) with every other value a string
        // and a time that parses (two: the general reading trims a time with spaces).
        assert_eq!(taken, 8);
        assert_eq!(rows, 7 * 9 * 8 * 7 * 7 * 7);
    }

    #[test]
    fn envelope_classifies_a_missing_category() {
        let layout = Layout::new(&Profile::load("envelope").unwrap());
        assert_eq!(layout.columns, ["id", "last_failed_at", "retry_count", "original_topic", "error_category", "error_type", "error_message", "stack_trace"]);
        let cells = vec![
            Cell::Str("dl-1".into()),
            Cell::Str("2026-10-01T00:00:00Z".into()),
            Cell::Int(5),
            Cell::Str("orders".into()),
            Cell::Missing,
            Cell::Str("TimeoutError".into()),
            Cell::Str("timed out after 30s talking to 10.0.0.7".into()),
            Cell::Missing,
        ];
        let mut key = Vec::new();
        layout.extract(&cells, &mut key, &mut DateCache::default(), &RowContext::default()).unwrap();
        // No stack trace: its part is empty.
        assert_eq!(layout.finish_signature(&key), ["orders", "transient", "TimeoutError", "timed out after <*> talking to <*>", ""]);
        // Null means absent too; a number is not a category.
        let mut cells = cells;
        cells[4] = Cell::Null;
        layout.extract(&cells, &mut key, &mut DateCache::default(), &RowContext::default()).unwrap();
        assert_eq!(layout.finish_signature(&key)[1], "transient");
        cells[4] = Cell::Int(3);
        assert_eq!(layout.extract(&cells, &mut key, &mut DateCache::default(), &RowContext::default()).unwrap_err(), "field `error_category`: expected a string, got number");
    }
}
