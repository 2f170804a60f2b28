//! `query` over JSON-lines when the SQL names its columns: only those top-level fields are
//! picked from each line, by the scanner rank uses, straight into typed columns.

use polars::prelude::{DataType, IntoSeries, NamedFrom, PlSmallStr, Series, StringChunkedBuilder};

use crate::source::row::layout::Cell;
use crate::source::row::tally::PieceTally;
use crate::source::row::tree::FieldTree;

/// One chunk's values of each named field, and how its lines went.
pub(in crate::source) struct ChunkColumns {
    pub fields: Vec<Values>,
    pub tally: PieceTally,
}

/// Picks `tree`'s fields (a flat tree of the names) from every line of a chunk; lines that are
/// not JSON objects are counted and named in the tally, as everywhere.
pub(in crate::source) fn pick(bytes: &[u8], tree: &FieldTree) -> ChunkColumns {
    let mut fields: Vec<Values> = (0..tree.cells()).map(|_| Values::default()).collect();
    let tally = super::pick_objects(bytes, tree, |_, cells| {
        for (values, cell) in fields.iter_mut().zip(cells) {
            values.push(cell);
        }
    });
    ChunkColumns { fields, tally }
}

/// A field's values in one chunk, typed as polars' JSON reader types a field: integers, or
/// floats once any value is one, booleans, strings, or nulls alone. A field that also holds
/// objects, arrays, or values of two of those kinds is left to that reader (`Unsuited`).
pub(in crate::source) enum Values {
    /// Only nulls so far (or nothing, when `seen` is false).
    Null { count: usize, seen: bool },
    Bool(Vec<Option<bool>>),
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Str(StringChunkedBuilder),
    Unsuited(&'static str),
}

impl Default for Values {
    fn default() -> Values {
        Values::Null { count: 0, seen: false }
    }
}

impl Values {
    fn push(&mut self, cell: &Cell) {
        match (&mut *self, cell) {
            (Values::Unsuited(_), _) => {}
            (Values::Null { count, seen }, Cell::Missing | Cell::Null) => {
                *count += 1;
                *seen |= matches!(cell, Cell::Null);
            }
            (Values::Null { count, .. }, _) => {
                let nulls = *count;
                *self = match cell {
                    Cell::Bool(_) => Values::Bool(vec![None; nulls]),
                    Cell::Int(_) => Values::Int(vec![None; nulls]),
                    Cell::Float(_) => Values::Float(vec![None; nulls]),
                    Cell::Str(_) => {
                        let mut builder = StringChunkedBuilder::new(PlSmallStr::EMPTY, nulls + 1024);
                        (0..nulls).for_each(|_| builder.append_null());
                        Values::Str(builder)
                    }
                    other => Values::Unsuited(other.kind()),
                };
                self.push(cell);
            }
            (Values::Bool(v), Cell::Bool(b)) => v.push(Some(*b)),
            (Values::Int(v), Cell::Int(i)) => v.push(Some(*i)),
            (Values::Int(v), Cell::Float(_)) => {
                *self = Values::Float(v.iter().map(|i| i.map(|i| i as f64)).collect());
                self.push(cell);
            }
            (Values::Float(v), Cell::Float(f)) => v.push(Some(*f)),
            (Values::Float(v), Cell::Int(i)) => v.push(Some(*i as f64)),
            (Values::Str(builder), Cell::Str(text)) => builder.append_value(text.as_ref()),
            (Values::Bool(v), Cell::Missing | Cell::Null) => v.push(None),
            (Values::Int(v), Cell::Missing | Cell::Null) => v.push(None),
            (Values::Float(v), Cell::Missing | Cell::Null) => v.push(None),
            (Values::Str(builder), Cell::Missing | Cell::Null) => builder.append_null(),
            (_, other) => *self = Values::Unsuited(if matches!(other, Cell::Nested(_)) { "an object or array" } else { "values of two types" }),
        }
    }

    /// Whether any line has the field (a null counts).
    fn seen(&self) -> bool {
        !matches!(self, Values::Null { seen: false, .. })
    }

    fn into_series(self, name: &str) -> Result<Series, &'static str> {
        let name = PlSmallStr::from(name);
        Ok(match self {
            Values::Null { count, .. } => Series::full_null(name, count, &DataType::Null),
            Values::Bool(v) => Series::new(name, v),
            Values::Int(v) => Series::new(name, v),
            Values::Float(v) => Series::new(name, v),
            Values::Str(builder) => builder.finish().into_series().with_name(name),
            Values::Unsuited(why) => return Err(why),
        })
    }
}

/// The named fields over all chunks (in order) as columns, each of the type polars' JSON
/// reader would give it over all lines; a field no line has is no column. `Err` names a field
/// the typed columns cannot hold as that reader would, and why.
pub(in crate::source) fn columns(names: &[String], chunks: Vec<Vec<Values>>) -> Result<Vec<Series>, String> {
    let mut columns = Vec::new();
    let mut per_field: Vec<Vec<Values>> = names.iter().map(|_| Vec::with_capacity(chunks.len())).collect();
    for chunk in chunks {
        for (field, values) in per_field.iter_mut().zip(chunk) {
            field.push(values);
        }
    }
    for (name, parts) in names.iter().zip(per_field) {
        if !parts.iter().any(Values::seen) {
            continue;
        }
        let unsuited = |why: &str| format!("field `{name}` holds {why}");
        let parts: Vec<Series> = parts.into_iter().map(|p| p.into_series(name)).collect::<Result<_, _>>().map_err(unsuited)?;
        let typed: Vec<&DataType> = parts.iter().map(|s| s.dtype()).filter(|t| **t != DataType::Null).collect();
        let dtype = match typed.first() {
            None => DataType::Null,
            Some(first) if typed.iter().all(|t| t == first) => (*first).clone(),
            Some(_) if typed.iter().all(|t| matches!(t, DataType::Int64 | DataType::Float64)) => DataType::Float64,
            Some(_) => return Err(unsuited("values of two types")),
        };
        let mut column = Series::new_empty(PlSmallStr::from(name.as_str()), &dtype);
        for part in parts {
            column.append_owned(part.cast(&dtype).map_err(|e| unsuited(&e.to_string()))?).map_err(|e| unsuited(&e.to_string()))?;
        }
        columns.push(column);
    }
    Ok(columns)
}
