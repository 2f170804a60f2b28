//! Where a role's value is in a row: the first of its alternatives that is there, each a leaf
//! the source fills (then decoded by its stages) or one of the input's partition folders.

use std::borrow::Cow;

use serde_json::Value;

use super::layout::Cell;
use crate::path::{Decoded, FieldExpr, Root, Stage, Step};

/// What a row is read with besides its cells: the input's hive partition folders and, when
/// the profile may need a record's digest for its id, the record's JSON text.
#[derive(Clone, Copy, Default)]
pub struct RowContext<'r> {
    pub partition: &'r [(String, String)],
    /// The input's path or URL as found, whose segments `$path[N]` reads.
    pub path: &'r str,
    pub record: Option<&'r [u8]>,
}

/// One role's field (`path::FieldExpr`) by where its alternatives are read: a leaf the source
/// fills (then its stages), or a partition folder.
#[derive(Clone, Debug)]
pub(super) struct FieldAt {
    /// The expression's text, for messages.
    pub name: String,
    alternatives: Vec<AltAt>,
}

#[derive(Clone, Debug)]
enum AltAt {
    /// A leaf and its stages; with the leaf's path when a stage takes whole values, which are
    /// read from the record's text (a source reads scalars).
    Leaf { leaf: usize, stages: Vec<Stage>, whole: Option<Vec<Step>> },
    Partition(Option<String>),
    Segment(i64),
}

impl FieldAt {
    /// A field expression's alternatives, each record path a leaf of `leaves` (added once).
    pub fn new(expr: &FieldExpr, leaves: &mut Vec<Vec<Step>>) -> FieldAt {
        let alternatives = expr
            .alternatives
            .iter()
            .map(|a| match &a.root {
                Root::Partition(name) => AltAt::Partition(name.clone()),
                Root::Segment(index) => AltAt::Segment(*index),
                Root::Record => {
                    let leaf = match leaves.iter().position(|l| *l == a.path) {
                        Some(i) => i,
                        None => {
                            leaves.push(a.path.clone());
                            leaves.len() - 1
                        }
                    };
                    let whole = a.stages.first().is_some_and(Stage::takes_whole_values).then(|| a.path.clone());
                    AltAt::Leaf { leaf, stages: a.stages.clone(), whole }
                }
            })
            .collect();
        FieldAt { name: expr.text.clone(), alternatives }
    }

    /// The leaf a field is, when it is one path read as it is.
    pub fn plain(&self) -> Option<usize> {
        match self.alternatives.as_slice() {
            [AltAt::Leaf { leaf, stages, .. }] if stages.is_empty() => Some(*leaf),
            _ => None,
        }
    }

    /// The leaves of the alternatives read as they are (no stages), in order.
    pub fn unstaged_leaves(&self) -> impl Iterator<Item = usize> + '_ {
        self.alternatives.iter().filter_map(|a| match a {
            AltAt::Leaf { leaf, stages, .. } if stages.is_empty() => Some(*leaf),
            _ => None,
        })
    }

    /// Each leaf the field reads, and whether it reads it through `int_be` alone.
    pub fn leaf_uses(&self) -> impl Iterator<Item = (usize, bool)> + '_ {
        self.alternatives.iter().filter_map(|a| match a {
            AltAt::Leaf { leaf, stages, .. } => Some((*leaf, matches!(stages.as_slice(), [Stage::IntBe]))),
            _ => None,
        })
    }

    /// Whether a stage of the field takes a whole array or object, read from the record's text.
    pub fn needs_record(&self) -> bool {
        self.alternatives.iter().any(|a| matches!(a, AltAt::Leaf { whole: Some(_), .. }))
    }
}

/// `sha256:` and the first 16 hex digits of the SHA-256 of the row's record.
pub(super) fn record_digest(context: &RowContext) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(context.record.unwrap_or_default());
    format!("sha256:{}", &crate::manifest::hex(&digest)[..16])
}

/// A field's value in a row: the first alternative present and not null, decoded by its
/// stages. Err: a decoding the profile asked for failed.
#[inline(always)]
pub(super) fn resolve<'a>(field: &FieldAt, cells: &'a [Cell<'a>], context: &RowContext) -> Result<Cell<'a>, String> {
    // Most fields' first alternative is a leaf read as it is (or a binary integer, Spring's
    // partition and offset), and there: taken at once.
    if let Some(AltAt::Leaf { leaf, stages, .. }) = field.alternatives.first() {
        let cell = &cells[*leaf];
        match (stages.as_slice(), cell) {
            (_, Cell::Missing | Cell::Null) => {}
            ([], cell) => return Ok(reborrow(cell)),
            ([Stage::IntBe], cell) => {
                if let Some(Ok(v)) = int_be_in_place(cell) {
                    return Ok(Cell::Int(v));
                }
            }
            _ => {}
        }
    }
    resolve_alternatives(field, cells, context)
}

/// `resolve` trying each alternative in turn.
fn resolve_alternatives<'a>(field: &FieldAt, cells: &'a [Cell<'a>], context: &RowContext) -> Result<Cell<'a>, String> {
    let mut last = Cell::Missing;
    let mut failed = None;
    for alternative in &field.alternatives {
        let cell = match alternative {
            AltAt::Leaf { leaf, stages, .. } if stages.is_empty() => reborrow(&cells[*leaf]),
            AltAt::Leaf { leaf, stages, whole } => match decode_cell(&cells[*leaf], stages, whole.as_deref(), context) {
                Ok(cell) => cell,
                Err(e) => {
                    failed = Some(format!("field `{}`: {e}", field.name));
                    continue;
                }
            },
            AltAt::Partition(Some(name)) => match context.partition.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => Cell::Str(Cow::Owned(v.clone())),
                None => Cell::Missing,
            },
            AltAt::Partition(None) => crate::timestamp::partition_time(context.partition).map_or(Cell::Missing, Cell::Time),
            AltAt::Segment(index) => crate::path::segment(context.path, *index).map_or(Cell::Missing, |s| Cell::Str(Cow::Owned(s.to_string()))),
        };
        match cell {
            Cell::Missing | Cell::Null => last = cell,
            found => return Ok(found),
        }
    }
    match failed {
        Some(e) if matches!(last, Cell::Missing) => Err(e),
        _ => Ok(last),
    }
}

/// A cell seen again, its text borrowed from it.
fn reborrow<'a>(cell: &'a Cell<'a>) -> Cell<'a> {
    match cell {
        Cell::Str(s) => Cell::Str(Cow::Borrowed(s.as_ref())),
        Cell::Missing => Cell::Missing,
        Cell::Null => Cell::Null,
        Cell::Int(v) => Cell::Int(*v),
        Cell::Float(v) => Cell::Float(*v),
        Cell::Bool(v) => Cell::Bool(*v),
        Cell::Time(v) => Cell::Time(*v),
        Cell::Nested(kind) => Cell::Nested(kind),
        Cell::Lines(text) => Cell::Lines(Cow::Borrowed(text.as_ref())),
        Cell::Escaped(raw) => Cell::Escaped(raw),
        Cell::Bytes(bytes) => Cell::Bytes(Cow::Borrowed(bytes.as_ref())),
        Cell::IntBe(v) => Cell::IntBe(*v),
    }
}

/// A binary integer alone (Spring's partition and offset on every row) read in place from a
/// string's or bytes' cell; None for any other cell, which the stages decode.
fn int_be_in_place(cell: &Cell) -> Option<Result<i64, String>> {
    match cell {
        Cell::Bytes(bytes) => Some(crate::path::int_be(bytes)),
        Cell::Str(text) => Some(crate::path::int_be(text.as_bytes())),
        Cell::IntBe(v) => Some(Ok(*v)),
        _ => None,
    }
}

/// A leaf's value through its stages: a string, bytes or (for stages that take them, read
/// from the record's text at `whole`) an array or object in, a cell out.
fn decode_cell(cell: &Cell, stages: &[Stage], whole: Option<&[Step]>, context: &RowContext) -> Result<Cell<'static>, String> {
    if let ([Stage::IntBe], Some(read)) = (stages, int_be_in_place(cell)) {
        return read.map(Cell::Int);
    }
    let value = match (cell, whole) {
        (Cell::Missing | Cell::Null, _) => return Ok(Cell::Missing),
        (Cell::Str(s), _) => Decoded::Json(Value::String(s.to_string())),
        (Cell::Escaped(raw), _) => Decoded::Json(Value::String(super::layout::unescape(raw).into_owned())),
        (Cell::Bytes(bytes), _) => Decoded::Bytes(bytes.to_vec()),
        (Cell::Nested(_) | Cell::Lines(_), Some(path)) => {
            let raw = context.record.and_then(|record| crate::raw_json::lookup(record, path)).ok_or("the record's value was not at hand")?;
            Decoded::Json(serde_json::from_slice(raw).map_err(|e| format!("not JSON: {e}"))?)
        }
        (Cell::Int(v), _) => Decoded::Json(Value::from(*v)),
        (other, _) => return Err(format!("expected a string to decode, got {}", other.kind())),
    };
    match crate::path::decode(value, stages)? {
        None => Ok(Cell::Missing),
        Some(Decoded::Bytes(bytes)) => String::from_utf8(bytes).map(|s| Cell::Str(Cow::Owned(s))).map_err(|_| "decoded bytes are not UTF-8 text".to_string()),
        Some(Decoded::Json(value)) => Ok(Cell::of_json(Some(&value))),
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    /// A field taken at once from its first alternative is what trying each in turn gives:
    /// present, absent, null, undecodable, with stages or none.
    #[test]
    fn the_first_alternative_taken_at_once_is_what_the_loop_takes() {
        let exprs = ["a // b", "a | int_be // b", "a | int_be // b | int_be", "a | base64 // b"];
        let values = || {
            let cells: [Cell<'static>; 8] = [
                Cell::Missing,
                Cell::Null,
                Cell::Str(Cow::Borrowed("x")),
                Cell::Str(Cow::Owned("\0\0\u{1}".to_string())),
                Cell::Bytes(Cow::Borrowed(&[0, 0, 0, 5])),
                Cell::Bytes(Cow::Owned(vec![1; 9])),
                Cell::Int(7),
                Cell::Escaped("q\"rest"),
            ];
            cells
        };
        let context = RowContext::default();
        for expr in exprs {
            let mut leaves = Vec::new();
            let field = FieldAt::new(&crate::path::FieldExpr::parse(expr).unwrap(), &mut leaves);
            for a in values() {
                for b in values() {
                    let cells = vec![a.clone(), b];
                    assert_eq!(resolve(&field, &cells, &context), resolve_alternatives(&field, &cells, &context), "{expr}: {cells:?}");
                }
            }
        }
    }

    /// A binary integer read in place is what the stages make of the same bytes, as bytes and
    /// as text, errors included.
    #[test]
    fn int_be_read_in_place_agrees_with_the_stages() {
        let values: [&[u8]; 7] = [&[0, 0, 0, 5], &[0xff], &[0, 0, 0, 0, 0, 0x0f, 0x42, 0x40], &[], &[1; 9], &[0x80, 0], b"7"];
        for bytes in values {
            let staged = crate::path::decode(Decoded::Bytes(bytes.to_vec()), &[Stage::IntBe]).map(|d| match d {
                Some(Decoded::Json(v)) => Cell::of_json(Some(&v)),
                other => panic!("{other:?}"),
            });
            let context = RowContext::default();
            assert_eq!(decode_cell(&Cell::Bytes(Cow::Borrowed(bytes)), &[Stage::IntBe], None, &context), staged, "{bytes:?}");
            if let Ok(text) = std::str::from_utf8(bytes) {
                assert_eq!(decode_cell(&Cell::Str(Cow::Borrowed(text)), &[Stage::IntBe], None, &context), staged, "{bytes:?}");
            }
        }
    }
}
