//! The paths a layout reads, as a tree: a top-level field is a cell or a node whose members,
//! elements and headers lead on to cells. The JSON picker walks it in one pass (`json::walk`).

use crate::path::Step;

/// A picker slot at or above this is a top-level node (this plus its root's index); below it,
/// a cell.
pub const NODE: usize = 1 << 30;

/// The top-level fields a layout reads, each a cell or a node.
#[derive(Debug, Default)]
pub struct FieldTree {
    pub(in crate::source) roots: Vec<(String, Target)>,
    /// Each root's cells, when it is a node: set back to `Missing` before a walk, so that a
    /// header this line lacks is not the last line's.
    pub(in crate::source) node_cells: Vec<Vec<usize>>,
    /// How a raw read leaves each cell's string when it has an escape.
    strings: Vec<RawString>,
}

/// How a raw read (`json::shape`) leaves a cell's string that has an escape in it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum RawString {
    /// Decoded: its text, or its bytes where they are not UTF-8.
    #[default]
    Decoded,
    /// Left escaped (`Cell::Escaped`): read by a normaliser that needs no unescaped text for
    /// most rows (a stack signature).
    Escaped,
    /// Decoded to the integer its bytes are (`Cell::IntBe`), none of them kept: every field
    /// reads the cell through `int_be` alone (Spring's binary partition and offset).
    IntBe,
}

#[derive(Debug)]
pub(in crate::source) enum Target {
    Cell(usize),
    Node(Node),
}

/// A value whose parts are read: by member name (or header name, in an array), by index.
#[derive(Debug, Default)]
pub(in crate::source) struct Node {
    /// The value itself is a leaf too.
    pub(in crate::source) cell: Option<usize>,
    pub(in crate::source) keys: Vec<(String, Target)>,
    pub(in crate::source) indexes: Vec<(usize, Target)>,
}

impl Node {
    pub(in crate::source) fn key(&self, name: &str) -> Option<&Target> {
        self.keys.iter().find(|(k, _)| k == name).map(|(_, t)| t)
    }

    pub(in crate::source) fn index(&self, i: usize) -> Option<&Target> {
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
        tree.strings = vec![RawString::Decoded; leaves.len()];
        tree
    }

    /// Lets raw reads leave cell `cell`'s strings with escapes as `how` says.
    pub fn read_strings(&mut self, cell: usize, how: RawString) {
        self.strings[cell] = how;
    }

    pub(in crate::source) fn raw_string(&self, cell: usize) -> RawString {
        self.strings.get(cell).copied().unwrap_or_default()
    }

    /// A tree of top-level fields only: cell `i` is `names[i]`.
    pub fn flat(names: &[String]) -> FieldTree {
        FieldTree { roots: names.iter().enumerate().map(|(i, n)| (n.clone(), Target::Cell(i))).collect(), node_cells: vec![Vec::new(); names.len()], strings: vec![RawString::Decoded; names.len()] }
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
