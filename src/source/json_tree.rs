//! The paths a layout reads, as a tree the JSON picker walks in one pass: a top-level field is
//! a cell or a node whose members, elements and headers lead on to cells. What a line holds
//! outside the tree is validated and skipped, never built.

use super::json_fields::value_at;
use super::json_shape::ShapeRecorder;
use super::layout::Cell;
use crate::json_scan::{Parser, MAX_NESTING};
use crate::path::Step;

/// A picker slot at or above this is a top-level node (this plus its root's index); below it,
/// a cell.
pub const NODE: usize = 1 << 30;

/// The top-level fields a layout reads, each a cell or a node.
#[derive(Debug, Default)]
pub struct FieldTree {
    roots: Vec<(String, Target)>,
    /// Each root's cells, when it is a node: set back to `Missing` before a walk, so that a
    /// header this line lacks is not the last line's.
    node_cells: Vec<Vec<usize>>,
    /// Cells whose strings a raw read may leave escaped (`Cell::Escaped`): read by a
    /// normaliser that needs no unescaped text for most rows (a stack signature).
    escaped: Vec<bool>,
}

#[derive(Debug)]
enum Target {
    Cell(usize),
    Node(Node),
}

/// A value whose parts are read: by member name (or header name, in an array), by index.
#[derive(Debug, Default)]
struct Node {
    /// The value itself is a leaf too.
    cell: Option<usize>,
    keys: Vec<(String, Target)>,
    indexes: Vec<(usize, Target)>,
}

impl Node {
    fn key(&self, name: &str) -> Option<&Target> {
        self.keys.iter().find(|(k, _)| k == name).map(|(_, t)| t)
    }

    fn index(&self, i: usize) -> Option<&Target> {
        self.indexes.iter().find(|(n, _)| *n == i).map(|(_, t)| t)
    }
}

impl FieldTree {
    /// The tree of `leaves` (cell `i` is leaf `i`); a leaf that does not start with a name is
    /// never found (records are objects).
    pub fn new(leaves: &[Vec<Step>]) -> FieldTree {
        let mut tree = FieldTree::default();
        for (cell, path) in leaves.iter().enumerate() {
            let Some((Step::Key(name), rest)) = path.split_first() else { continue };
            let at = match tree.roots.iter().position(|(k, _)| k == name) {
                Some(i) => i,
                None => {
                    tree.roots.push((name.clone(), Target::Node(Node::default())));
                    tree.roots.len() - 1
                }
            };
            insert(&mut tree.roots[at].1, rest, cell);
        }
        // A root that is only a cell is read as a plain cell.
        for (_, target) in &mut tree.roots {
            if let Target::Node(Node { cell: Some(c), keys, indexes }) = target {
                if keys.is_empty() && indexes.is_empty() {
                    *target = Target::Cell(*c);
                }
            }
        }
        tree.node_cells = tree.roots.iter().map(|(_, t)| if matches!(t, Target::Node(_)) { cells_of(t) } else { Vec::new() }).collect();
        tree.escaped = vec![false; leaves.len()];
        tree
    }

    /// Lets raw reads leave cell `cell`'s strings escaped.
    pub fn keep_escaped(&mut self, cell: usize) {
        self.escaped[cell] = true;
    }

    pub(super) fn keeps_escaped(&self, cell: usize) -> bool {
        self.escaped.get(cell).copied().unwrap_or(false)
    }

    /// A tree of top-level fields only: cell `i` is `names[i]`.
    pub fn flat(names: &[String]) -> FieldTree {
        FieldTree { roots: names.iter().enumerate().map(|(i, n)| (n.clone(), Target::Cell(i))).collect(), node_cells: vec![Vec::new(); names.len()], escaped: vec![false; names.len()] }
    }

    /// How many cells the tree fills: one more than its highest.
    pub fn cells(&self) -> usize {
        self.roots.iter().flat_map(|(_, t)| cells_of(t)).max().map_or(0, |h| h + 1)
    }

    /// The slot a top-level field fills: its cell, or `NODE` plus its root's index.
    pub fn slot(&self, key: &str) -> Option<usize> {
        let i = self.roots.iter().position(|(k, _)| k == key)?;
        Some(match &self.roots[i].1 {
            Target::Cell(c) => *c,
            Target::Node(_) => NODE + i,
        })
    }

    /// Reads the value the parser stands at into the cells slot `slot` leads to.
    #[inline]
    pub fn read<'a>(&self, slot: usize, p: &mut Parser<'a>, cells: &mut [Cell<'a>]) -> Result<(), String> {
        self.read_recording(slot, p, cells, None)
    }

    /// `read`, a node's leaves taken down as steps of the shape being recorded.
    pub(super) fn read_recording<'a>(&self, slot: usize, p: &mut Parser<'a>, cells: &mut [Cell<'a>], mut rec: Recording) -> Result<(), String> {
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

/// Every cell a target leads to.
fn cells_of(target: &Target) -> Vec<usize> {
    match target {
        Target::Cell(c) => vec![*c],
        Target::Node(node) => {
            let children = node.keys.iter().map(|(_, t)| t).chain(node.indexes.iter().map(|(_, t)| t));
            children.flat_map(cells_of).chain(node.cell).collect()
        }
    }
}

fn insert(target: &mut Target, path: &[Step], cell: usize) {
    let Target::Node(node) = target else {
        let Target::Cell(c) = *target else { unreachable!() };
        *target = Target::Node(Node { cell: Some(c), ..Node::default() });
        return insert(target, path, cell);
    };
    let Some((step, rest)) = path.split_first() else {
        node.cell = Some(cell);
        return;
    };
    let children = match step {
        Step::Key(name) => {
            if node.key(name).is_none() {
                node.keys.push((name.clone(), Target::Node(Node::default())));
            }
            node.keys.iter_mut().find(|(k, _)| k == name).map(|(_, t)| t)
        }
        Step::Index(i) => {
            if node.index(*i).is_none() {
                node.indexes.push((*i, Target::Node(Node::default())));
            }
            node.indexes.iter_mut().find(|(n, _)| n == i).map(|(_, t)| t)
        }
    };
    let child = children.expect("just inserted");
    insert(child, rest, cell);
    // A child that is only a cell is a plain cell.
    if let Target::Node(Node { cell: Some(c), keys, indexes }) = child {
        if keys.is_empty() && indexes.is_empty() {
            *child = Target::Cell(*c);
        }
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
    use crate::path::FieldExpr;
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
