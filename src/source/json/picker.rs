//! A validating JSON object scanner that keeps only named top-level fields. It checks the whole
//! line's syntax like a full parser, but never builds values it does not need.

use std::borrow::Cow;
use super::shape::{Shape, ShapeRecorder};
use super::walk::Walk;
use crate::source::row::layout::Cell;
use crate::source::row::tree::{FieldTree, NODE};
use crate::json_scan::{Kernel, Parser};

/// How many line shapes a picker keeps: enough for a dump whose lines have a few optional
/// fields, few enough that a line of a new shape costs little more than its full parse.
const SHAPES: usize = 4;

/// After this many lines in a row that no kept shape reads (keys in no stable order, say),
/// the next `PAUSE` lines are parsed in full without trying or taking down shapes, so such a
/// dump costs little more than its full parse; then `TRIES_AFTER_PAUSE` lines try again.
const MISSES_BEFORE_PAUSE: u32 = 64;
const PAUSE: u32 = 256;
const TRIES_AFTER_PAUSE: u32 = 4;

/// Parses lines as JSON objects: the fields (and paths into them) of a `FieldTree` are stored
/// in `cells`, everything else is validated and skipped. A line that is not UTF-8 is read too
/// (`pick_bytes`): only the strings it keeps must be.
///
/// Picks named fields from many lines. Lines of one dump repeat their key order, so the key
/// seen at each position last time is tried first, as it was written: one comparison of
/// bytes instead of scanning the key and searching for it.
pub struct FieldPicker<'n> {
    tree: &'n FieldTree,
    order: Vec<SeenKey>,
    /// The shapes of the last lines parsed in full, the one that matched last first.
    shapes: Vec<Shape>,
    /// Lines in a row that no kept shape read.
    misses: u32,
    /// Lines still to parse in full without trying shapes.
    paused: u32,
    /// What the cells the last line left hold (see `LastCells`).
    last_cells: LastCells,
    kernel: Kernel,
}

/// What the cells given with the picker's last line hold.
#[derive(Clone, Copy, PartialEq)]
enum LastCells {
    /// Anything: reset before a line is read into them.
    Any,
    /// The last line was read raw by the first kept shape: the cells it left are that shape's
    /// fields and `Missing`, so a line read raw by the same shape overwrites every cell that is
    /// not `Missing`. When `owning`, some own a string (an escaped value, decoded): those are
    /// dropped first, the others need no drop.
    FirstShape { owning: bool },
}

/// The key seen at a position of the last line, and the cell it fills (if any).
struct SeenKey {
    key: String,
    /// The key in quotes, when that is how JSON spells it (nothing in it needs escaping).
    quoted: Option<Vec<u8>>,
    slot: Option<usize>,
}

impl<'n> FieldPicker<'n> {
    pub fn new(tree: &'n FieldTree) -> FieldPicker<'n> {
        FieldPicker::with_kernel(tree, Kernel::detected())
    }

    /// A picker whose parser scans strings with `kernel` (one of `Kernel::available()`).
    pub fn with_kernel(tree: &'n FieldTree, kernel: Kernel) -> FieldPicker<'n> {
        // Its shapes run the kernel's code: a kernel this CPU lacks is refused here, once.
        assert!(kernel.runs_here(), "the {kernel:?} kernel does not run on this CPU");
        FieldPicker { tree, order: Vec::new(), shapes: Vec::new(), misses: 0, paused: 0, last_cells: LastCells::Any, kernel }
    }

    /// Sets `cells` to the named fields of `line` (`Missing` where absent), or says why the
    /// line is not a JSON object. Lines of a shape seen before are read by it.
    pub fn pick<'a>(&mut self, line: &'a str, cells: &mut [Cell<'a>]) -> Result<(), String> {
        self.pick_with(Parser::with_kernel(line, self.kernel), cells)
    }

    /// `pick` for a line that is not UTF-8: a string it keeps that is not is an error, the
    /// others are not checked.
    pub fn pick_bytes<'a>(&mut self, line: &'a [u8], cells: &mut [Cell<'a>]) -> Result<(), String> {
        self.pick_with(Parser::over_bytes(line, self.kernel), cells)
    }

    fn pick_with<'a>(&mut self, mut p: Parser<'a>, cells: &mut [Cell<'a>]) -> Result<(), String> {
        let line = p.bytes();
        self.last_cells = LastCells::Any;
        if self.paused > 0 {
            self.paused -= 1;
            cells.iter_mut().for_each(|c| *c = Cell::Missing);
            return self.parse(&mut p, cells, None);
        }
        for i in 0..self.shapes.len() {
            cells.iter_mut().for_each(|c| *c = Cell::Missing);
            if self.shapes[i].read(&mut p, cells, self.tree) {
                self.shapes[..=i].rotate_right(1);
                self.misses = 0;
                return Ok(());
            }
            p.rewind();
        }
        self.misses += 1;
        if self.misses == MISSES_BEFORE_PAUSE {
            self.misses -= TRIES_AFTER_PAUSE;
            self.paused = PAUSE;
        }
        cells.iter_mut().for_each(|c| *c = Cell::Missing);
        let mut shape = ShapeRecorder::default();
        self.parse(&mut p, cells, Some(&mut shape))?;
        // A line whose shape could not be taken down (a header's value before its name).
        let Some(shape) = shape.finish(line) else { return Ok(()) };
        if self.shapes.len() == SHAPES {
            self.shapes.pop();
        }
        self.shapes.insert(0, shape);
        Ok(())
    }

    /// Reads the line from `start` of `chunk` by a kept shape straight from its bytes (see
    /// `Shape::read_raw`): where the line ends and whether it is UTF-8, or None to leave it to
    /// `pick`. `cells` are the ones given with the picker's last line, or all `Missing`.
    #[inline]
    pub fn read_raw<'a>(&mut self, chunk: &'a [u8], start: usize, cells: &mut [Cell<'a>]) -> Option<(usize, bool)> {
        // Most lines have the last line's shape, read raw: its cells are all overwritten.
        #[cfg(target_arch = "x86_64")]
        if let LastCells::FirstShape { owning } = self.last_cells {
            if owning {
                cells.iter_mut().filter(|c| c.owns()).for_each(|c| *c = Cell::Missing);
            }
            // SAFETY: the last line was read raw, so the kernel is AVX2, only ever chosen on a
            // CPU that has AVX2 and BMI1.
            if let Some(line) = unsafe { self.shapes[0].read_raw(chunk, start, cells, self.tree) } {
                self.last_cells = LastCells::FirstShape { owning: !line.borrowed };
                return Some((line.end, line.text));
            }
            return self.read_raw_by_other_shapes(chunk, start, cells, 1);
        }
        self.read_raw_by_other_shapes(chunk, start, cells, 0)
    }

    /// `read_raw` by the kept shapes from the `from`th on, each on cells reset first.
    #[inline(never)]
    fn read_raw_by_other_shapes<'a>(&mut self, chunk: &'a [u8], start: usize, cells: &mut [Cell<'a>], from: usize) -> Option<(usize, bool)> {
        #[cfg(target_arch = "x86_64")]
        if self.kernel == Kernel::Avx2 && self.paused == 0 {
            for i in from..self.shapes.len() {
                cells.iter_mut().for_each(|c| *c = Cell::Missing);
                // SAFETY: `Kernel::Avx2` is only ever chosen on a CPU that has AVX2 and BMI1.
                if let Some(line) = unsafe { self.shapes[i].read_raw(chunk, start, cells, self.tree) } {
                    self.shapes[..=i].rotate_right(1);
                    self.misses = 0;
                    self.last_cells = LastCells::FirstShape { owning: !line.borrowed };
                    return Some((line.end, line.text));
                }
            }
        }
        self.last_cells = LastCells::Any;
        let _ = (chunk, start, cells, from);
        None
    }

    /// The full parse of a line, key by key, taking down its shape if given a recorder.
    fn parse<'a>(&mut self, p: &mut Parser<'a>, cells: &mut [Cell<'a>], shape: Option<&mut ShapeRecorder>) -> Result<(), String> {
        p.ws();
        let kind = match p.peek() {
            Some(b'{') => None,
            Some(b'[') => Some("an array"),
            Some(b'"') => Some("a string"),
            Some(b'-' | b'0'..=b'9') => Some("a number"),
            Some(b't' | b'f') => Some("a boolean"),
            Some(b'n') => Some("null"),
            _ => return Err(p.error("expected a JSON object")),
        };
        if let Some(kind) = kind {
            // Only valid JSON is named by its type: `not json` is a syntax error, not null.
            p.skip_value(0)?;
            p.ws();
            if !p.at_end() {
                return Err(p.error("trailing characters"));
            }
            return Err(format!("expected a JSON object, got {kind}"));
        }
        self.members(p, cells, shape)?;
        p.ws();
        if !p.at_end() {
            return Err(p.error("trailing characters"));
        }
        Ok(())
    }

    /// The object's members, from its `{` to its `}`, checked as `Parser::object` checks
    /// them. A walker of its own: the picker's first try at each key is raw bytes, and the
    /// same loop through `Parser::object`'s closure costs 6% more of rank's instructions
    /// (cachegrind, 100,000 lines).
    fn members<'a>(&mut self, p: &mut Parser<'a>, cells: &mut [Cell<'a>], mut shape: Option<&mut ShapeRecorder>) -> Result<(), String> {
        p.expect(b"{");
        p.ws();
        if p.expect(b"}") {
            return Ok(());
        }
        for position in 0.. {
            p.ws();
            let slot = match self.order.get(position) {
                Some(SeenKey { quoted: Some(quoted), slot, .. }) if p.expect(quoted) => *slot,
                _ => {
                    match p.peek() {
                        Some(b'"') => {}
                        None => return Err(p.error("EOF while parsing an object")),
                        _ => return Err(p.error("expected a field name")),
                    }
                    let key = p.string()?;
                    match self.order.get(position) {
                        Some(seen) if seen.key == key => seen.slot,
                        _ => {
                            let slot = self.tree.slot(&key);
                            let quoted = (!key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)).then(|| format!("\"{key}\"").into_bytes());
                            self.order.truncate(position);
                            self.order.push(SeenKey { key: key.into_owned(), quoted, slot });
                            slot
                        }
                    }
                }
            };
            p.ws();
            if !p.expect(b":") {
                return Err(p.error("expected `:`"));
            }
            p.ws();
            match slot {
                // A node's leaves are the shape's steps, taken down as the tree walks them.
                Some(i) if i >= NODE => self.tree.read_recording(i, p, cells, shape.as_deref_mut())?,
                _ => {
                    if let Some(shape) = shape.as_deref_mut() {
                        shape.value_at(p.bytes(), p.pos(), slot);
                    }
                    match slot {
                        Some(i) => self.tree.read(i, p, cells)?,
                        // Most unnamed values are strings: skipped here without `skip_value`'s call.
                        None if p.peek() == Some(b'"') => p.skip_string()?,
                        None => p.skip_value(1)?,
                    }
                    if let Some(shape) = shape.as_deref_mut() {
                        shape.value_end(p.bytes(), p.pos());
                    }
                }
            }
            if p.comma_or_close(b'}')? {
                break;
            }
        }
        Ok(())
    }
}

/// A value that `depth` objects and arrays enclose, as a cell: scalars kept, objects and
/// arrays validated and named.
pub(super) fn value_at<'a>(p: &mut Parser<'a>, depth: usize) -> Result<Cell<'a>, String> {
    Ok(match p.peek() {
        // Over bytes that are not all UTF-8, a string that is not is read as its bytes.
        Some(b'"') if p.over_bytes_mode() => {
            let start = p.pos();
            match p.string() {
                Ok(text) => Cell::Str(text),
                Err(_) => {
                    p.seek(start);
                    Cell::Bytes(p.string_bytes()?)
                }
            }
        }
        Some(b'"') => Cell::Str(p.string()?),
        Some(b'-' | b'0'..=b'9') => {
            let text = p.number()?;
            match text.parse::<i64>() {
                // serde_json reads `-0` as the double -0.0.
                Ok(v) if text != "-0" => Cell::Int(v),
                _ => Cell::Float(text.parse().map_err(|_| p.error("invalid number"))?),
            }
        }
        Some(b't') => {
            p.literal(b"true")?;
            Cell::Bool(true)
        }
        Some(b'f') => {
            p.literal(b"false")?;
            Cell::Bool(false)
        }
        Some(b'n') => {
            p.literal(b"null")?;
            Cell::Null
        }
        Some(b'{') => {
            p.skip_value(depth)?;
            Cell::Nested("object")
        }
        Some(b'[') => {
            let start = p.pos();
            match string_items(p) {
                Some(lines) => Cell::Lines(lines),
                None => {
                    p.seek(start);
                    p.skip_value(depth)?;
                    Cell::Nested("array")
                }
            }
        }
        None => return Err(p.error("EOF while parsing a value")),
        _ => return Err(p.error("expected a value")),
    })
}

/// A non-empty array of strings at the parser, its items joined by newlines; None (the
/// parser left anywhere) for any other array.
fn string_items<'a>(p: &mut Parser<'a>) -> Option<Cow<'a, str>> {
    p.seek(p.pos() + 1);
    p.ws();
    let mut items: Vec<Cow<'a, str>> = Vec::new();
    if p.peek() == Some(b']') {
        return None; // no line at all: an empty array
    }
    loop {
        if p.peek() != Some(b'"') {
            return None;
        }
        p.seek(p.pos() + 1);
        items.push(p.string_body().ok()?);
        p.ws();
        match p.peek()? {
            b',' => {
                p.seek(p.pos() + 1);
                p.ws();
            }
            b']' => {
                p.seek(p.pos() + 1);
                break;
            }
            _ => return None,
        }
    }
    Some(match items.len() {
        1 => items.pop().expect("one item"),
        _ => Cow::Owned(items.join("\n")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Top-level field names, and the tree a picker reads them with.
    struct Names {
        list: Vec<String>,
        tree: FieldTree,
    }

    impl std::ops::Deref for Names {
        type Target = [String];
        fn deref(&self) -> &[String] {
            &self.list
        }
    }

    fn names(list: &[&str]) -> Names {
        let list: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        Names { tree: FieldTree::flat(&list), list }
    }

    /// What serde_json makes of the same line: valid or not, and the same named values.
    fn reference(line: &str, names: &[String]) -> Option<Vec<Cell<'static>>> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let obj = v.as_object()?;
        Some(
            names
                .iter()
                .map(|n| Cell::of_json(obj.get(n)))
                .collect(),
        )
    }

    /// Picks with a fresh picker on every kernel this CPU runs; they must agree.
    fn pick_fields<'a>(line: &'a str, names: &[String], cells: &mut [Cell<'a>]) -> Result<(), String> {
        let tree = FieldTree::flat(names);
        let mut results = Kernel::available().into_iter().map(|kernel| {
            let mut picked = cells.to_vec();
            let result = FieldPicker::with_kernel(&tree, kernel).pick(line, &mut picked);
            (result, picked)
        });
        let (result, picked) = results.next().expect("the portable kernel");
        for (other, other_picked) in results {
            assert_eq!((&other, &other_picked), (&result, &picked), "kernels disagree on {line:?}");
        }
        cells.clone_from_slice(&picked);
        result
    }

    /// The line after the one read from a chunk, long enough that no line is read within 64
    /// bytes of the chunk's end (which `read_raw` leaves to `pick`).
    const NEXT_LINE: &[u8] = br#"{"a":"the next line, long enough to keep the line before from the chunk's end","b":2,"c":null}"#;

    /// Reads `line` as a chunk's decoder does: raw when a kept shape fits it, with another
    /// line after it in the chunk (or none, if `last`), else checked as UTF-8 and picked.
    /// The named cells when it is valid.
    fn decode_line(picker: &mut FieldPicker, line: &[u8], last: bool) -> Option<Vec<Cell<'static>>> {
        let chunk = if last { line.to_vec() } else { [line, b"\n", NEXT_LINE].concat() };
        let mut cells = vec![Cell::Missing; picker.tree.cells()];
        let picked = match picker.read_raw(&chunk, 0, &mut cells) {
            Some((end, text)) => {
                assert_eq!(text, std::str::from_utf8(&chunk[..end]).is_ok(), "a line read raw says whether it is UTF-8");
                // Before a last `\r`, as the decoder cuts lines.
                let want = line.len() - usize::from(line.ends_with(b"\r"));
                assert_eq!(end, want, "a line read raw ends at its end: {:?}", String::from_utf8_lossy(line));
                Ok(())
            }
            None => {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                match std::str::from_utf8(line) {
                    Ok(text) => picker.pick(text, &mut cells),
                    Err(_) => picker.pick_bytes(line, &mut cells),
                }
            }
        };
        picked.ok().map(|_| cells.into_iter().map(Cell::into_owned).collect())
    }

    /// Checks what the decoder made of a line of bytes against serde_json: a UTF-8 line as
    /// serde_json reads it; one that is not, if accepted, as serde_json reads it with each bad
    /// byte replaced, a named string that holds one as its bytes (whose lossy text that is).
    fn assert_read_as_serde_json(got: Option<Vec<Cell<'static>>>, line: &[u8], names: &[String]) {
        let shown = String::from_utf8_lossy(line);
        match std::str::from_utf8(line) {
            Ok(text) => assert_eq!(got, reference(text, names), "line: {shown:?}"),
            Err(_) => {
                if let Some(got) = got {
                    assert_eq!(Some(lossy(got)), reference(&shown, names), "line: {shown:?}");
                }
            }
        }
    }

    /// Cells with each `Bytes` as its lossy text.
    pub(super) fn lossy(cells: Vec<Cell<'static>>) -> Vec<Cell<'static>> {
        cells
            .into_iter()
            .map(|c| match c {
                Cell::Bytes(b) => Cell::Str(Cow::Owned(String::from_utf8_lossy(&b).into_owned())),
                other => other,
            })
            .collect()
    }

    /// Checks one line with a picker that has seen the lines before it (so the key-order
    /// cache and the shapes are exercised too), read as the decoder reads it: raw from a
    /// chunk, with the next line after it and, again, as the chunk's last line.
    fn check_with(picker: &mut FieldPicker, line: &str) {
        let names = names(&["a", "b", "c"]);
        for last in [false, true] {
            assert_eq!(decode_line(picker, line.as_bytes(), last), reference(line, &names), "line: {line:?}, last: {last}");
        }
    }

    fn check(line: &str) {
        let names = names(&["a", "b", "c"]);
        let mut cells = vec![Cell::Missing; 3];
        let ours = pick_fields(line, &names, &mut cells).ok().map(|_| cells.clone());
        let theirs = reference(line, &names);
        // serde_json keeps the last of duplicate keys, as we do.
        assert_eq!(ours, theirs, "line: {line:?}");
    }

    #[test]
    fn agrees_with_serde_json_on_handwritten_lines() {
        for line in [
            r#"{"a":"x","b":1,"c":null}"#,
            r#" { "a" : "x\"y\\z\u00e9\ud83d\ude00" , "z": {"deep": [1, 2.5e3, {"k": []}]}, "b": -0.5 } "#,
            r#"{"a":true,"b":false,"c":[]}"#,
            r#"{}"#,
            r#"{"a":"x","a":"y"}"#,
            r#"{"b":12345678901234567890}"#,
            r#"{"a":"tab	inside"}"#,
            r#"{"a":"x",}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":tru}"#,
            r#"{"a":"x"} {}"#,
            r#"{"a" "x"}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":{"b":1,}}"#,
            r#"{a:1}"#,
            r#"[1,2]"#,
            r#""str""#,
            r#"{"a":"unterminated"#,
            r#"{"a":1"#,
            r#"{"a":[1,2"#,
            r#"{"z":nul}"#,
            r#"{"a":1e5,"b":1E-2,"c":-7}"#,
            r#"{"a":-0,"b":-0.0,"c":0}"#,
            r#"{"a":1e400}"#,
            r#"{"z":[1e-400,-1E+309]}"#,
            r#"{"b":123456789012345678901234567890}"#,
        ] {
            check(line);
        }
    }

    #[test]
    fn agrees_with_serde_json_on_every_truncation_and_many_mutations() {
        let base = r#"{"a":"caf\u00e9 \"q\"","z":{"n":[1,-2.5e-3,true,false,null,{"m":"x"}]},"b":42,"c":"a longer value, well past eight bytes"}"#;
        for cut in 0..=base.len() {
            if base.is_char_boundary(cut) {
                check(&base[..cut]);
            }
        }
        let bytes = base.as_bytes();
        let alphabet = b"{}[]\",:\\ 0-1eE.tfnu\tabcz";
        let names = names(&["a", "b", "c"]);
        for kernel in Kernel::available() {
            let mut shared = FieldPicker::with_kernel(&names.tree, kernel);
            for i in 0..bytes.len() {
                for &r in alphabet {
                    let mut m = bytes.to_vec();
                    m[i] = r;
                    if let Ok(s) = std::str::from_utf8(&m) {
                        check(s);
                        check_with(&mut shared, s);
                        check_with(&mut shared, base);
                    }
                }
            }
        }
    }

    /// Every truncation and every single-byte mutation (each byte replaced by each other
    /// value, UTF-8 or not) of real dump lines, on every kernel, read as the decoder reads
    /// them: the same valid lines and the same fields as serde_json.
    #[test]
    fn agrees_with_serde_json_on_every_truncation_and_byte_mutation_of_real_lines() {
        let envelope = include_str!("../../../sample_data/envelope/dlq.jsonl").lines().next().expect("a line");
        let vision = r#"{"capture_id":"cap-09bc585a244823f2","store_id":"zürich-hb-03","fixture_id":"fx-zürich-hb-03-28","planogram_id":"pg-0005","image_uri":"s3://vision-captures/zürich-hb-03/2026/10/21/cap-09bc585a244823f2.jpg","stage":"inference","reject_reason":"timeout","registry_revision":"det-v8.0","capture_timestamp":"2026-10-21T11:29:24Z","attempts":1,"trace_id":"851f977347ed6db7aa47e31c02e78edc"}"#;
        // Whether the line is read raw (the envelope's holds an object).
        for (line, fields, raw) in [
            (envelope, &["id", "original_topic", "error_type", "error_message", "retry_count", "original_value", "first_failed_at"][..], false),
            (vision, &["capture_id", "stage", "reject_reason", "registry_revision", "capture_timestamp", "attempts"][..], true),
        ] {
            let names = names(fields);
            // As the decoder reads it (raw by the line before's shape, where one fits), and
            // then the real line again, so that the next mutation is read by its shape.
            let agree = |bytes: &[u8], picker: &mut FieldPicker| {
                assert_read_as_serde_json(decode_line(picker, bytes, false), bytes, &names);
                assert_eq!(decode_line(picker, line.as_bytes(), false), reference(line, &names));
            };
            for kernel in Kernel::available() {
                let mut picker = FieldPicker::with_kernel(&names.tree, kernel);
                agree(line.as_bytes(), &mut picker);
                if raw && kernel == Kernel::Avx2 {
                    // The line is read raw by its own shape, and so are its mutations.
                    let chunk = [line.as_bytes(), b"\n", NEXT_LINE].concat();
                    let mut cells = vec![Cell::Missing; names.len()];
                    assert_eq!(picker.read_raw(&chunk, 0, &mut cells), Some((line.len(), true)));
                }
                for cut in 0..line.len() {
                    agree(&line.as_bytes()[..cut], &mut picker);
                }
                let bytes = line.as_bytes();
                let mut mutated = bytes.to_vec();
                for i in 0..bytes.len() {
                    // A newline ends a line before the decoder sees it.
                    for r in (0..=255u8).filter(|&r| r != bytes[i] && r != b'\n') {
                        mutated[i] = r;
                        agree(&mutated, &mut picker);
                    }
                    mutated[i] = bytes[i];
                }
            }
        }
    }

    /// A line read by the shape of the line before it: every ordered pair of lines that share
    /// some or all of their bytes between values, each on a fresh picker (so the second is read
    /// by the first's shape when it can be), agrees with serde_json.
    #[test]
    fn lines_read_by_another_lines_shape_agree_with_serde_json() {
        let lines = [
            r#"{"a":"x","b":1,"c":null}"#,
            r#"{"a":"a much longer value, more than thirty-two bytes long","b":-2.5e3,"c":null}"#,
            r#"{"a":"x\"q\"","b":1,"c":null}"#,
            r#"{"a":"tab	raw","b":1,"c":null}"#,
            r#"{"a":"x\u00e9","b":1,"c":"y"}"#,
            r#"{"a":"x","b":01,"c":null}"#,
            r#"{"a":"x","b":-0,"c":null}"#,
            r#"{"a":"x","b":-12,"c":null}"#,
            r#"{"a":"x","b":1234567890123456789,"c":null}"#,
            r#"{"a":"x","b":123456789012345678,"c":null}"#,
            r#"{"a":"x","b":9999999999999999999,"c":null}"#,
            r#"{"a":"x","b":1,"c":true}"#,
            r#"{"a":"x","b":1,"c":false}"#,
            "{\"a\":\"x\",\"b\":1,\"c\":null}\r",
            r#"{"a":"x","b":1 ,"c":null}"#,
            r#"{"a":"x","b":1,"c":nul}"#,
            r#"{"a":"x","b":1,"c":null} "#,
            r#"{"a":"x","b":1,"c":null}x"#,
            r#"{"a":"x","b":1,"c":{"n":[1,2]}}"#,
            r#"{"a":"x","b":1,"c":{"n":[1,2}}"#,
            r#"{"a":"x","b":1}"#,
            r#"{"a":"x","b":"1","c":null}"#,
            r#"{"a":"x","z":"skipped","b":1,"c":null}"#,
            r#"{"a":"x","z":"skipped\n","b":1,"c":null}"#,
            r#"{"a":"x","z":"bad\q","b":1,"c":null}"#,
            r#"{"a":"x","z":[true,false],"b":1,"c":null}"#,
            r#"{"a":"x","z":[true,fals],"b":1,"c":null}"#,
            r#"{"a":"x","a":"y","b":1,"c":null}"#,
            r#"{"a":"é","a":"y","b":1,"c":null}"#,
            r#"{"a":"é","a":1,"b":1,"c":null}"#,
            r#"{"a":"é","a":"\t","b":1,"c":null}"#,
            "{\"a\":\"x\",\"b\":1,\"c\":null}\r\r",
            r#" {"a":"x","b":1,"c":null}"#,
            r#"{"a":"","b":1,"c":null}"#,
            r#"{"a":"x","b":1,"c":"unterminated}"#,
            r#"{}"#,
            // Escapes, named and not, read raw: every kind, surrogate pairs whole and broken,
            // and bad ones.
            r#"{"a":"x","z":"\u00e9\u00E9\/\b\f\n\r\t\"\\ é","b":1,"c":null}"#,
            r#"{"a":"\u00e9\/\b\f\n\r\t\"\\ é","z":"y","b":1,"c":null}"#,
            r#"{"a":"\ud83e\udd80","z":"\ud83e\udd80","b":1,"c":null}"#,
            r#"{"a":"x","z":"\ud83e","b":1,"c":null}"#,
            r#"{"a":"x","z":"\udd80","b":1,"c":null}"#,
            r#"{"a":"x","z":"\ud83e\u0041","b":1,"c":null}"#,
            r#"{"a":"\ud83e\u0041","z":"y","b":1,"c":null}"#,
            r#"{"a":"x","z":"\u00g9","b":1,"c":null}"#,
            r#"{"a":"x","z":"\x","b":1,"c":null}"#,
            "{\"a\":\"x\",\"z\":\"\\t\u{1}\",\"b\":1,\"c\":null}",
            // Text between values longer than 32 bytes, compared in pieces: these differ only
            // in their second piece.
            r#"{"a":"x",                                      "b":1,"c":null}"#,
            r#"{"a":"x",                                      "z":1,"c":null}"#,
            r#"{"a":"x","b":1,"c":null                                      }"#,
            r#"{"a":"x","b":1,"c":null                                      ]"#,
        ];
        for first in lines {
            for second in lines {
                for kernel in Kernel::available() {
                    let names = names(&["a", "b", "c"]);
                    let mut picker = FieldPicker::with_kernel(&names.tree, kernel);
                    check_with(&mut picker, first);
                    check_with(&mut picker, second);
                }
            }
        }
    }

    /// A line read raw with a string that has an escape (unescaped by the parser): strings
    /// before and at the escape with bytes above 0x7f, valid or not, named or not, things
    /// after the object and `\r\n` ends; each line after the plain line whose shape it has.
    #[test]
    fn lines_read_on_after_an_escape_agree_with_serde_json() {
        let names = names(&["a", "b", "c"]);
        let strings: [&[u8]; 6] = [b"x", "\u{e9}".as_bytes(), b"\xc3", b"x\\\"", "\u{e9}\\t".as_bytes(), b"\xc3\\t"];
        for kernel in Kernel::available() {
            for a in strings {
                for z in strings {
                    for c in strings {
                        for end in [&b""[..], b"x", b" ", b"\r"] {
                            let line = [&br#"{"a":""#[..], a, br#"","z":""#, z, br#"","b":1,"c":""#, c, br#""}"#, end].concat();
                            for last in [false, true] {
                                let mut picker = FieldPicker::with_kernel(&names.tree, kernel);
                                let plain = br#"{"a":"x","z":"y","b":1,"c":"q"}"#;
                                assert!(decode_line(&mut picker, plain, false).is_some());
                                let got = decode_line(&mut picker, &line, last);
                                assert_read_as_serde_json(got, line.strip_suffix(b"\r").unwrap_or(&line), &names);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Lines of one shape, some with an escaped string (a cell then owns its text), into
    /// cells reused from line to line as the decoder reuses them: each line is read right,
    /// and raw (a cell that owns a string is never overwritten without its drop: a debug
    /// assertion).
    #[test]
    fn lines_of_one_shape_with_and_without_escapes_reuse_their_cells() {
        let names = names(&["a", "b", "c"]);
        let lines = [
            r#"{"a":"x","b":1,"c":"q"}"#,
            r#"{"a":"x\ty","b":2,"c":"q"}"#,
            r#"{"a":"y","b":3,"c":"q\"r"}"#,
            r#"{"a":"z","b":4,"c":"s"}"#,
            r#"{"a":"\u00e9","b":5,"c":"t"}"#,
            r#"{"a":"w","b":6,"c":"u"}"#,
        ];
        let chunks: Vec<Vec<u8>> = lines.iter().map(|l| [l.as_bytes(), b"\n", NEXT_LINE].concat()).collect();
        for kernel in Kernel::available() {
            let mut picker = FieldPicker::with_kernel(&names.tree, kernel);
            let mut cells = vec![Cell::Missing; 3];
            let mut raw = 0;
            for (line, chunk) in lines.iter().zip(&chunks).cycle().take(4 * lines.len()) {
                match picker.read_raw(chunk, 0, &mut cells) {
                    Some((end, _)) => {
                        assert_eq!(end, line.len());
                        raw += 1;
                    }
                    None => picker.pick(line, &mut cells).unwrap(),
                }
                assert_eq!(Some(cells.clone()), reference(line, &names), "line: {line}");
            }
            // All but the first line, which takes down the shape.
            assert_eq!(raw, if kernel == Kernel::Avx2 { 4 * lines.len() - 1 } else { 0 });
        }
    }

    /// Lines of several shapes in turn, into cells reused from line to line as the decoder
    /// reuses them: each line is read right, and a field the line before had is gone.
    #[test]
    fn many_shapes_in_turn_are_read_right() {
        let names = names(&["a", "b", "c"]);
        let mut picker = FieldPicker::new(&names.tree);
        // As many shapes as are kept, then more (the least recent fall out), then as many.
        let lines: Vec<String> = (0..4)
            .flat_map(|round| {
                (0..if round == 2 { SHAPES + 2 } else { SHAPES }).map(move |extra| {
                    let padding: String = (0..extra).map(|i| format!(r#""p{i}":{round},"#)).collect();
                    let c = if extra % 2 == 0 { r#","c":"here""# } else { "" };
                    format!(r#"{{{padding}"a":"v{round}","b":{extra}{c}}}"#)
                })
            })
            .collect();
        let mut cells = vec![Cell::Missing; 3];
        for line in &lines {
            picker.pick(line, &mut cells).unwrap();
            assert_eq!(Some(cells.clone()), reference(line, &names), "line: {line}");
        }
        // The same lines as the decoder reads them, raw where a kept shape fits, into cells
        // it reuses without clearing them when the shape is the last line's.
        let chunks: Vec<Vec<u8>> = lines.iter().map(|l| [l.as_bytes(), b"\n", NEXT_LINE].concat()).collect();
        for kernel in Kernel::available() {
            let mut picker = FieldPicker::with_kernel(&names.tree, kernel);
            let mut cells = vec![Cell::Missing; 3];
            for (line, chunk) in lines.iter().zip(&chunks) {
                if picker.read_raw(chunk, 0, &mut cells).is_none() {
                    picker.pick(line, &mut cells).unwrap();
                }
                assert_eq!(Some(cells.clone()), reference(line, &names), "line: {line}");
            }
        }
    }

    /// Lines whose keys come in more orders than shapes are kept pause the shapes; lines of
    /// one shape after them are read by it again within a pause. Every line is read right.
    #[test]
    fn shapes_pause_while_no_line_fits_them_and_come_back() {
        let names = names(&["a", "b", "c"]);
        let mut picker = FieldPicker::new(&names.tree);
        let keys = [r#""a":"x""#, r#""b":1"#, r#""c":null"#, r#""z":[2]"#];
        let mut paused = false;
        for i in 0..2_000 {
            // The 24 orders of four keys in turn: no four kept shapes read the next line.
            let (mut rest, mut order) = (keys.to_vec(), Vec::new());
            let mut n = i % 24;
            for left in (1..=4).rev() {
                order.push(rest.remove(n % left));
                n /= left;
            }
            let line = format!("{{{}}}", order.join(","));
            let mut cells = vec![Cell::Missing; 3];
            picker.pick(&line, &mut cells).unwrap();
            assert_eq!(Some(cells.clone()), reference(&line, &names), "line: {line}");
            paused |= picker.paused > 0;
        }
        assert!(paused, "the shapes paused");
        for i in 0..PAUSE + MISSES_BEFORE_PAUSE {
            let line = format!(r#"{{"a":"v{i}","b":{i},"z":{{}}}}"#);
            let mut cells = vec![Cell::Missing; 3];
            picker.pick(&line, &mut cells).unwrap();
            assert_eq!(Some(cells.clone()), reference(&line, &names), "line: {line}");
        }
        assert_eq!((picker.misses, picker.paused), (0, 0), "the last lines were read by their shape");
    }

    #[test]
    fn errors_name_a_column() {
        let names = names(&["a"]);
        let mut cells = vec![Cell::Missing; 1];
        assert_eq!(pick_fields(r#"{"a":"x""#, &names, &mut cells).unwrap_err(), "invalid JSON: EOF while parsing an object at column 9");
        assert_eq!(pick_fields(r#"{"a":"x"} x"#, &names, &mut cells).unwrap_err(), "invalid JSON: trailing characters at column 11");
        assert_eq!(pick_fields("[1]", &names, &mut cells).unwrap_err(), "expected a JSON object, got an array");
        assert_eq!(pick_fields("null", &names, &mut cells).unwrap_err(), "expected a JSON object, got null");
        assert_eq!(pick_fields(" 12.5 ", &names, &mut cells).unwrap_err(), "expected a JSON object, got a number");
        assert!(pick_fields("not json", &names, &mut cells).unwrap_err().starts_with("invalid JSON: "));
        assert!(pick_fields("nullx", &names, &mut cells).unwrap_err().starts_with("invalid JSON: "));
        assert!(pick_fields("[1, 2", &names, &mut cells).unwrap_err().starts_with("invalid JSON: "));
    }

    /// serde_json refuses a line nested past its limit; so must we, or a line it cannot read
    /// would be counted as valid. Around the limit, as named and unnamed fields, in arrays
    /// and objects, alone and read by the shape of the line before.
    #[test]
    fn nesting_is_limited_where_serde_json_limits_it() {
        let names = names(&["a", "b", "c"]);
        let mut shared = FieldPicker::new(&names.tree);
        for depth in 120..=135 {
            let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let objects = format!("{}1{}", "{\"k\":".repeat(depth), "}".repeat(depth));
            let mixed = format!("{}0{}", "[{\"k\":".repeat(depth / 2), "}]".repeat(depth / 2));
            for nested in [&arrays, &objects, &mixed] {
                for line in [format!("{{\"z\":{nested}}}"), format!("{{\"a\":{nested},\"b\":1}}"), nested.clone()] {
                    check(&line);
                    check_with(&mut shared, &line);
                }
            }
        }
    }
}

#[cfg(test)]
mod nested_tests {
    use super::*;
    use crate::path::{FieldExpr, Step};

    fn leaves(paths: &[&str]) -> Vec<Vec<Step>> {
        paths.iter().map(|t| FieldExpr::parse(t).unwrap().alternatives.remove(0).path).collect()
    }

    fn owned(cells: Vec<Cell>) -> Vec<Cell<'static>> {
        cells.into_iter().map(Cell::into_owned).collect()
    }

    /// What serde_json finds at each path of a line of text: nothing unless it is an object.
    fn reference(text: &str, leaves: &[Vec<Step>]) -> Option<Vec<Cell<'static>>> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        value.as_object()?;
        Some(leaves.iter().map(|path| Cell::of_json(crate::path::lookup(&value, path))).collect())
    }

    /// A line read as the decoder reads it (raw when a kept shape fits, with another line after
    /// it, else in full, as bytes when it is not UTF-8), into cells the picker's last line left.
    fn decode(picker: &mut FieldPicker, line: &[u8], cells: &mut Vec<Cell<'static>>) -> Option<Vec<Cell<'static>>> {
        let chunk: &'static [u8] = Box::leak([line, b"\n", NEXT].concat().into_boxed_slice());
        let mut work: Vec<Cell> = std::mem::take(cells);
        let picked = match picker.read_raw(chunk, 0, &mut work) {
            Some((end, text)) => {
                assert_eq!(end, line.len(), "a line read raw ends at its end: {:?}", String::from_utf8_lossy(line));
                assert_eq!(std::str::from_utf8(&chunk[..end]).is_ok(), text, "a line read raw says whether it is UTF-8");
                Ok(())
            }
            None => match std::str::from_utf8(&chunk[..line.len()]) {
                Ok(text) => picker.pick(text, &mut work),
                Err(_) => picker.pick_bytes(&chunk[..line.len()], &mut work),
            },
        };
        let result = picked.ok().map(|()| owned(work.clone()));
        // The cells go on to the next line as they are, as the decoder's do.
        *cells = work;
        result
    }

    const NEXT: &[u8] = br#"{"ts":1,"h":["k.a","the next line, long enough to keep the line before from the chunk's end"],"s":"x"}"#;

    /// Lines holding nested values, named through paths (a header collection, members) and
    /// not, read raw by the shape of the line before them and in full, agree with serde_json,
    /// as do all the single-byte mutations of one of them; a header a line lacks is never the
    /// line before's.
    #[test]
    fn nested_lines_read_raw_agree_with_serde_json() {
        let leaves = leaves(&["ts", r#"h."k.a""#, "h.b", "o.x", "s"]);
        let tree = FieldTree::new(&leaves);
        let lines: [&str; 10] = [
            r#"{"ts":17,"h":["k.a","v1","b","v2"],"u":{"deep":[1,2,{"q":"é"}]},"o":{"x":"y"},"s":"t"}"#,
            r#"{"ts":18,"h":["k.a","v9"],"u":{"deep":[1,2,{"q":"e"}]},"o":{"x":"z"},"s":"t"}"#,
            r#"{"ts":19,"h":[{"key":"b","value":"w"}],"u":[],"o":{"x":null},"s":"t2"}"#,
            r#"{"ts":20,"h":"not a list","u":{},"o":[1],"s":"t3"}"#,
            r#"{"ts":21,"h":["k.a","a\"q","b",{"n":1}],"u":{"deep":"\u00e9"},"o":{"x":"y"},"s":"t"}"#,
            r#"{"ts":22,"h":["k.a","v1","b","v2"],"u":{"deep":[1,2,{"q":"é"}]},"o":{"x":"y"},"s":"t"} "#,
            r#"{"ts":23,"h":["k.a","v1","b","v2"],"u":{"deep":[1,2,{"q":"é"},]},"o":{"x":"y"},"s":"t"}"#,
            r#"{"ts":24,"h":["k.a","v1","b"],"u":{"deep":[1,2,{"q":"é"}]},"o":{"x":"y"},"s":"t"}"#,
            r#"{"ts":25,"h":[{"value":"late","key":"b"},{"key":"k.a","value":"early"}],"u":1,"o":{"x":"y"},"s":"t"}"#,
            r#"{"ts":26,"h":[["b","pair"],["k.a","p2","extra"]],"u":1,"o":{"x":"y"},"s":"t"}"#,
        ];
        for kernel in crate::json_scan::Kernel::available() {
            for first in lines {
                for second in lines {
                    let mut picker = FieldPicker::with_kernel(&tree, kernel);
                    let mut cells = vec![Cell::Missing; leaves.len()];
                    for line in [first, second, second] {
                        assert_eq!(decode(&mut picker, line.as_bytes(), &mut cells), reference(line, &leaves), "{kernel:?}: {first} then {line}");
                    }
                }
            }
            // A line of the shape of the one before (the same names and headers, in the same
            // order) is read raw, its nested values within it; one with other headers is not.
            if kernel == crate::json_scan::Kernel::Avx2 {
                let mut picker = FieldPicker::with_kernel(&tree, kernel);
                let mut cells = vec![Cell::Missing; leaves.len()];
                decode(&mut picker, lines[0].as_bytes(), &mut cells);
                let same = r#"{"ts":99,"h":["k.a","other","b","values"],"u":{"deep":[7,{"q":"ü"}]},"o":{"x":"w"},"s":"t9"}"#;
                let chunk = [same.as_bytes(), b"\n", NEXT].concat();
                let mut fresh = vec![Cell::Missing; leaves.len()];
                assert_eq!(picker.read_raw(&chunk, 0, &mut fresh), Some((same.len(), true)));
                assert_eq!(Some(owned(fresh)), reference(same, &leaves));
                let chunk = [lines[1].as_bytes(), b"\n", NEXT].concat();
                let mut fresh = vec![Cell::Missing; leaves.len()];
                assert_eq!(picker.read_raw(&chunk, 0, &mut fresh), None);
            }
            // Lines that are not UTF-8 (kcat's binary header values: bytes below 0x20 escaped,
            // the rest raw) are read raw by their shape too, a named value that is not text as
            // its bytes, as a full parse reads them.
            if kernel == crate::json_scan::Kernel::Avx2 {
                let binary = |ts: &[u8], a: &[u8], b: &[u8], s: &[u8], unnamed: &[u8]| -> Vec<u8> {
                    let parts: [&[u8]; 9] = [br#"{"ts":"#, ts, br#","h":["k.a",""#, a, br#"","b",""#, b, br#""],"u":{"deep":[""#, unnamed, br#""]},"o":{"x":"y"},"s":""#];
                    [&parts.concat(), s, b"\"}"].concat()
                };
                let lines = [
                    binary(b"1", b"\\u0000\\u0000\\u0001\xa4", b"\xff\xfe", b"t", b"\x80"),
                    binary(b"2", b"\\u0000\\u0000\\u0000\\u0007", b"plain", b"\xc3\xa9\xff", b"ascii"),
                    binary(b"3", b"\xe9t\xc3\xa9", b"\\u0001\xff", b"\\u00e9", b"\\u0001\xfe"),
                    binary(b"4", b"text \\u00e9 \xc3\xa9", b"text", b"t", b"\xc3\xa9"),
                    binary(b"5", b"text", b"text", b"t", b"\xc3"),
                ];
                for first in &lines {
                    for line in &lines {
                        let mut picker = FieldPicker::with_kernel(&tree, kernel);
                        let mut cells = vec![Cell::Missing; leaves.len()];
                        decode(&mut picker, first, &mut cells);
                        let chunk = [line.as_slice(), b"\n", NEXT].concat();
                        let mut raw = vec![Cell::Missing; leaves.len()];
                        let read = picker.read_raw(&chunk, 0, &mut raw);
                        assert_eq!(read, Some((line.len(), std::str::from_utf8(line).is_ok())), "{:?} after {:?}", String::from_utf8_lossy(line), String::from_utf8_lossy(first));
                        let mut full = vec![Cell::Missing; leaves.len()];
                        FieldPicker::with_kernel(&tree, kernel).pick_bytes(line, &mut full).unwrap();
                        assert_eq!(owned(raw), owned(full), "{:?}", String::from_utf8_lossy(line));
                    }
                }
            }
            // Every byte of a line replaced by every other value, each read after the line
            // itself (so by its shape, raw where it can be).
            let line = lines[0].as_bytes();
            let mut picker = FieldPicker::with_kernel(&tree, kernel);
            let mut cells = vec![Cell::Missing; leaves.len()];
            let mut mutated = line.to_vec();
            for i in 0..line.len() {
                for r in (0..=255u8).filter(|&r| r != line[i] && r != b'\n') {
                    mutated[i] = r;
                    let got = decode(&mut picker, &mutated, &mut cells);
                    match std::str::from_utf8(&mutated) {
                        Ok(text) => assert_eq!(got, reference(text, &leaves), "{kernel:?}: {text:?}"),
                        // Not UTF-8: read as serde_json reads it with the byte replaced, a kept
                        // string that holds the byte as its bytes (whose lossy text that is).
                        Err(_) => {
                            if let Some(got) = got {
                                assert_eq!(Some(super::tests::lossy(got)), reference(&String::from_utf8_lossy(&mutated), &leaves), "{kernel:?}: {:?}", String::from_utf8_lossy(&mutated));
                            }
                        }
                    }
                    assert_eq!(decode(&mut picker, line, &mut cells), reference(lines[0], &leaves));
                }
                mutated[i] = line[i];
            }
        }
    }
}
