//! A line's object read through a layout's field tree (`row::tree`) in one pass: each value
//! the tree leads to goes to its cell; what a line holds outside the tree is validated and
//! skipped, never built.

use super::picker::value_at;
use super::shape::ShapeRecorder;
use crate::source::row::layout::Cell;
use crate::source::row::tree::{FieldTree, Node, Target, NODE};
use crate::json_scan::{Parser, MAX_NESTING};

/// Reading through a field tree, what the picker and its shapes call.
pub(super) trait Walk {
    /// Reads the value the parser stands at into the cells slot `slot` leads to.
    fn read<'a>(&self, slot: usize, p: &mut Parser<'a>, cells: &mut [Cell<'a>]) -> Result<(), String>;

    /// `read`, a node's leaves taken down as steps of the shape being recorded.
    fn read_recording<'a>(&self, slot: usize, p: &mut Parser<'a>, cells: &mut [Cell<'a>], rec: Recording) -> Result<(), String>;
}

impl Walk for FieldTree {
    #[inline]
    fn read<'a>(&self, slot: usize, p: &mut Parser<'a>, cells: &mut [Cell<'a>]) -> Result<(), String> {
        self.read_recording(slot, p, cells, None)
    }

    fn read_recording<'a>(&self, slot: usize, p: &mut Parser<'a>, cells: &mut [Cell<'a>], mut rec: Recording) -> Result<(), String> {
        if slot < NODE {
            cells[slot] = value_at(p, 1)?;
            return Ok(());
        }
        for &c in &self.node_cells[slot - NODE] {
            cells[c] = Cell::Missing;
        }
        walk(&self.roots[slot - NODE].1, p, cells, 1, &mut rec)
    }
}

/// A shape being taken down while a line is walked, if one is.
type Recording<'r> = Option<&'r mut ShapeRecorder>;

/// Reads one leaf value (into a cell, or skipped), as a step of the shape being taken down.
fn leaf<'a>(rec: &mut Recording, slot: Option<usize>, p: &mut Parser<'a>, read: impl FnOnce(&mut Parser<'a>) -> Result<(), String>) -> Result<(), String> {
    if let Some(r) = rec.as_deref_mut() {
        r.value_at(p.bytes(), p.pos(), slot);
    }
    read(p)?;
    if let Some(r) = rec.as_deref_mut() {
        r.value_end(p.bytes(), p.pos());
    }
    Ok(())
}

fn spoil(rec: &mut Recording) {
    if let Some(r) = rec.as_deref_mut() {
        r.spoil();
    }
}

/// Reads the value the parser stands at (enclosed by `depth` objects and arrays) into the
/// cells `target` leads to, validating all of it. Its leaves (and what is skipped between
/// them) are the steps of the shape being taken down; names of members and headers are the
/// text between them, so a line of the same names in the same order is read by the shape.
fn walk<'a>(target: &Target, p: &mut Parser<'a>, cells: &mut [Cell<'a>], depth: usize, rec: &mut Recording) -> Result<(), String> {
    let node = match target {
        Target::Cell(c) => {
            let c = *c;
            return leaf(rec, Some(c), p, |p| {
                cells[c] = value_at(p, depth)?;
                Ok(())
            });
        }
        Target::Node(node) => node,
    };
    match p.peek() {
        Some(b'{' | b'[') if depth >= MAX_NESTING => Err(p.error("recursion limit exceeded")),
        Some(b'{') => {
            // A node that is a leaf too cannot be one step and several.
            if node.cell.is_some() {
                spoil(rec);
            }
            p.object(|p, key| match node.key(&key) {
                Some(child) => walk(child, p, cells, depth + 1, rec),
                None => leaf(rec, None, p, |p| p.skip_value(depth + 1)),
            })?;
            if let Some(c) = node.cell {
                cells[c] = Cell::Nested("object");
            }
            Ok(())
        }
        Some(b'[') => {
            if node.cell.is_some() {
                spoil(rec);
            }
            elements(node, p, cells, depth, rec)?;
            if let Some(c) = node.cell {
                cells[c] = Cell::Nested("array");
            }
            Ok(())
        }
        _ => match node.cell {
            Some(c) => leaf(rec, Some(c), p, |p| {
                cells[c] = value_at(p, depth)?;
                Ok(())
            }),
            None => leaf(rec, None, p, |p| p.skip_value(depth)),
        },
    }
}

/// An array's elements: by index, and as a header collection (kcat's flat `name, value, …`,
/// `{"key"|"name", "value"}` objects, `[name, value]` pairs) searched by name, the last
/// header of a name winning.
fn elements<'a>(node: &Node, p: &mut Parser<'a>, cells: &mut [Cell<'a>], depth: usize, rec: &mut Recording) -> Result<(), String> {
    // After a header's name in a flat collection: where its value goes (None: nowhere).
    let mut value_for: Option<Option<&Target>> = None;
    p.array(|p, i| {
        if let Some(child) = node.index(i) {
            let at = p.pos();
            walk(child, p, cells, depth + 1, rec)?;
            if node.keys.is_empty() {
                return Ok(());
            }
            // The element is also part of the header collection: read twice, out of order.
            spoil(rec);
            p.seek(at);
        }
        if let Some(target) = value_for.take() {
            return match target {
                Some(child) => walk(child, p, cells, depth + 1, rec),
                None => leaf(rec, None, p, |p| p.skip_value(depth + 1)),
            };
        }
        if node.keys.is_empty() {
            return leaf(rec, None, p, |p| p.skip_value(depth + 1));
        }
        match p.peek() {
            // A name: part of the text between the shape's steps.
            Some(b'"') => {
                let name = p.string()?;
                value_for = Some(node.key(&name));
                Ok(())
            }
            Some(b'{') if depth + 1 < MAX_NESTING => header_object(node, p, cells, depth + 1, rec),
            Some(b'[') if depth + 1 < MAX_NESTING => header_pair(node, p, cells, depth + 1, rec),
            _ => leaf(rec, None, p, |p| p.skip_value(depth + 1)),
        }
    })?;
    // A last name with no value after it: a header whose value is null.
    if let Some(Some(Target::Cell(c))) = value_for {
        cells[*c] = Cell::Null;
        spoil(rec);
    }
    Ok(())
}

/// A `{"key"|"name": …, "value": …}` header (its members in any order: a value before its
/// name is read after the name is known, out of order).
fn header_object<'a>(node: &Node, p: &mut Parser<'a>, cells: &mut [Cell<'a>], depth: usize, rec: &mut Recording) -> Result<(), String> {
    let (mut name, mut value_at_pos) = (None::<String>, None);
    p.object(|p, key| {
        match &*key {
            "key" | "name" if p.peek() == Some(b'"') => name = Some(p.string()?.into_owned()),
            "value" => match &name {
                Some(known) => match node.key(known) {
                    Some(child) => walk(child, p, cells, depth + 1, rec)?,
                    None => leaf(rec, None, p, |p| p.skip_value(depth + 1))?,
                },
                None => {
                    value_at_pos = Some(p.pos());
                    p.skip_value(depth + 1)?;
                }
            },
            _ => leaf(rec, None, p, |p| p.skip_value(depth + 1))?,
        }
        Ok(())
    })?;
    if value_at_pos.is_some() {
        spoil(rec);
    }
    revisit(node, name.as_deref(), value_at_pos, p, cells, depth + 1)
}

/// A `[name, value]` header: read once its count is known, out of order.
fn header_pair<'a>(node: &Node, p: &mut Parser<'a>, cells: &mut [Cell<'a>], depth: usize, rec: &mut Recording) -> Result<(), String> {
    spoil(rec);
    let (mut name, mut value_at_pos, mut count) = (None, None, 0);
    p.array(|p, i| {
        count += 1;
        match i {
            0 if p.peek() == Some(b'"') => name = Some(p.string()?.into_owned()),
            1 => {
                value_at_pos = Some(p.pos());
                p.skip_value(depth + 1)?;
            }
            _ => p.skip_value(depth + 1)?,
        }
        Ok(())
    })?;
    if count != 2 {
        return Ok(());
    }
    revisit(node, name.as_deref(), value_at_pos, p, cells, depth + 1)
}

/// Reads a header's value, already validated at `value_at_pos`, when its name is wanted; the
/// parser is left where it was.
fn revisit<'a>(node: &Node, name: Option<&str>, value_at_pos: Option<usize>, p: &mut Parser<'a>, cells: &mut [Cell<'a>], depth: usize) -> Result<(), String> {
    let (Some(name), Some(at)) = (name, value_at_pos) else { return Ok(()) };
    let Some(child) = node.key(name) else { return Ok(()) };
    let end = p.pos();
    p.seek(at);
    let read = walk(child, p, cells, depth, &mut None);
    p.seek(end);
    read
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::{FieldExpr, Step};
    use std::borrow::Cow;

    /// Reads one line's object through a tree of `paths` (each one leaf).
    fn read(line: &str, paths: &[&str]) -> Result<Vec<Cell<'static>>, String> {
        let leaves: Vec<Vec<Step>> = paths.iter().map(|t| FieldExpr::parse(t).unwrap().alternatives.remove(0).path).collect();
        let tree = FieldTree::new(&leaves);
        let mut cells = vec![Cell::Missing; leaves.len()];
        let mut p = Parser::new(line);
        p.object(|p, key| match tree.slot(&key) {
            Some(slot) => tree.read(slot, p, &mut cells),
            None => p.skip_value(1),
        })?;
        Ok(cells.into_iter().map(Cell::into_owned).collect())
    }

    fn s(text: &str) -> Cell<'static> {
        Cell::Str(Cow::Owned(text.to_string()))
    }

    #[test]
    fn nested_members_indexes_and_headers_in_every_shape() {
        let line = r#"{"ts":1700000000000,"a":{"b":{"c":"x"},"n":[5,{"m":true}]},"headers":["__connect.errors.topic","orders","h","1","h","2","nul",null],
            "sink":[{"key":"k","value":"v"},{"value":{"deep":"w"},"key":"o"},["p","q"],["bad"]],"s":"plain"}"#;
        let paths = [
            "ts",
            "a.b.c",
            "a.n[1].m",
            r#"headers."__connect.errors.topic""#,
            "headers.h",
            "headers.nul",
            "headers.none",
            "sink.k",
            "sink.o.deep",
            "sink.p",
            "a",
            "s.x",
            "a.n[7]",
        ];
        let got = read(line, &paths).unwrap();
        assert_eq!(
            got,
            [
                Cell::Int(1700000000000),
                s("x"),
                Cell::Bool(true),
                s("orders"),
                s("2"),
                Cell::Null,
                Cell::Missing,
                s("v"),
                s("w"),
                s("q"),
                Cell::Nested("object"),
                Cell::Missing,
                Cell::Missing,
            ]
        );
    }

    /// Whatever the tree reads, the line is validated as a whole: a bad value anywhere in a
    /// walked node is an error, as serde_json finds it.
    #[test]
    fn a_walked_value_is_validated_whole() {
        let paths = ["a.b", "h.x"];
        for line in [r#"{"a":{"b":"x","c":[1,}}"#, r#"{"h":["x","1","y",tru]}"#, r#"{"h":[{"key":"x","value":01}]}"#, r#"{"a":{"b":"x\q"}}"#] {
            assert!(read(line, &paths).is_err(), "{line}");
            assert!(serde_json::from_str::<serde_json::Value>(line).is_err(), "{line}");
        }
        let deep = format!(r#"{{"a":{{"b":{}1{}}}}}"#, "[".repeat(130), "]".repeat(130));
        assert!(read(&deep, &paths).is_err());
    }

    /// Every path into a set of documents reads what the parsed document's path finds.
    #[test]
    fn reads_agree_with_parsed_documents() {
        let docs = [
            r#"{"a":{"b":[10,{"c":"d"}],"e":null},"h":[{"key":"x","value":"1"},{"key":"x","value":"2"}],"f":"g"}"#,
            r#"{"a" : {"b" : [ 10 , { "c" : "d\"e" } ]} , "h" : ["x","1","y",{"z":true}] }"#,
            r#"{"a":[],"h":[["x",1],["y",[2]]],"f":{"\u0041":"k"}}"#,
            // A leaf holding strings only reads as their lines (a stack trace a frame an item).
            r#"{"a":{"e":["at f (x.js:1:2)","at g (\"y\".js:3:4)"]},"missing":["x",1]}"#,
        ];
        let paths = ["a", "a.b", "a.b[1].c", "a.e", "h.x", "h.y", "h[0]", "f.A", "missing"];
        for doc in docs {
            let value: serde_json::Value = serde_json::from_str(doc).unwrap();
            let got = read(doc, &paths).unwrap();
            for (path, cell) in paths.iter().zip(got) {
                let steps = FieldExpr::parse(path).unwrap().alternatives.remove(0).path;
                let want = Cell::of_json(crate::path::lookup(&value, &steps));
                assert_eq!(cell, want, "{doc} {path}");
            }
        }
    }
}
