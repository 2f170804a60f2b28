//! The bytes between a line's values, as the last lines spelled them. A dump's lines repeat
//! one shape, so a line is read by comparing those bytes and parsing only its values, with
//! AVX2 straight from a chunk's bytes before the line is even cut.

use std::borrow::Cow;

use super::picker::value_at;
use super::walk::Walk;
use crate::source::row::layout::Cell;
use crate::source::row::tree::{FieldTree, RawString, NODE};
#[cfg(target_arch = "x86_64")]
use crate::json_scan::avx2;
use crate::json_scan::Parser;

/// A line's layout outside its values: the bytes before each value (whitespace, braces,
/// commas, the key and its colon, and a string's opening quote), what each value is, and the
/// bytes after the last one.
///
/// A line that has exactly these bytes around values that parse is valid JSON with the same
/// keys in the same order, because the line the shape was taken from was: the parser checks
/// each value whole (a string up to its closing quote; a number or literal as far as it goes,
/// and the bytes that follow a value in a valid line, whitespace, `,` or `}`, cannot continue
/// one), and the rest is the same text.
pub(super) struct Shape {
    steps: Vec<Step>,
    tail: Vec<u8>,
    /// How `read_raw` reads a line of this shape; empty when it does not. Only lines whose
    /// every value was a string, an integer `read_raw` takes or a literal, with no key given
    /// twice and a tail that does not end in `\r`, are read raw (see `ShapeRecorder::finish`).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    raw: Vec<RawStep>,
    /// How many cells a line of this shape fills: one more than its highest slot.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    cells: usize,
}

struct Step {
    /// The bytes before the value (and a string's opening quote).
    before: Vec<u8>,
    /// The value is a string, and `before` ends with its opening quote.
    string: bool,
    /// The value was an object or array, or fills a node of the field tree.
    nested: bool,
    /// The cell the value fills, if it is a named field.
    slot: Option<usize>,
}

/// One move of `read_raw`: up to 32 bytes of the text between two values, compared at once,
/// then the value after them. A longer run of text is cut into pieces of 32 bytes, the ones
/// before its last without a value; so is the tail, all without one.
#[derive(Clone, Copy)]
// One cache line a step.
#[repr(align(64))]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct RawStep {
    /// The piece's bytes, padded with zeros to 32, and a bit for each of them.
    wide: [u8; 32],
    keep: u32,
    len: u32,
    value: RawValue,
    /// The cell the value fills, or `NO_SLOT`.
    slot: u32,
}

#[derive(Clone, Copy, PartialEq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum RawValue {
    /// No value: the piece is not the last of its run, or it is the tail's.
    None,
    /// A string, whose opening quote ends the piece.
    String,
    /// An integer or a literal (see `plain_scalar`).
    Scalar,
    /// An object or array (skipped and checked, or named as such), or any value whose slot is
    /// a node of the field tree (walked): read by the parser, within the line.
    Nested,
}

const NO_SLOT: u32 = u32::MAX;

impl RawStep {
    /// The pieces of `run` (at least one), the last followed by `value`.
    fn pieces(run: &[u8], value: RawValue, slot: Option<usize>) -> impl Iterator<Item = RawStep> + '_ {
        let pieces = run.len().div_ceil(32).max(1);
        (0..pieces).map(move |i| {
            let piece = &run[(i * 32).min(run.len())..((i + 1) * 32).min(run.len())];
            let mut wide = [0; 32];
            wide[..piece.len()].copy_from_slice(piece);
            let last = i + 1 == pieces;
            RawStep {
                wide,
                keep: if piece.len() == 32 { u32::MAX } else { (1 << piece.len()) - 1 },
                len: piece.len() as u32,
                value: if last { value } else { RawValue::None },
                slot: match slot {
                    Some(slot) if last => slot as u32,
                    _ => NO_SLOT,
                },
            }
        })
    }
}

impl Step {
    /// Reads the value from where the parser stands (after `before`); false if it is not one.
    #[inline(always)]
    fn read_value<'a>(&self, p: &mut Parser<'a>, cells: &mut [Cell<'a>], tree: &FieldTree) -> bool {
        let read = match (self.string, self.slot) {
            // Most strings have nothing escaped: taken as they stand, without a `Result`.
            (true, slot) => match p.plain_string() {
                Some(text) => {
                    if let Some(i) = slot {
                        cells[i] = Cell::Str(Cow::Borrowed(text));
                    }
                    Ok(())
                }
                None => match slot {
                    // Over bytes that may not be UTF-8, read from the opening quote as a full
                    // parse reads it: text, or bytes where it is not text (kcat's headers).
                    Some(i) if p.over_bytes_mode() => {
                        p.seek(p.pos() - 1);
                        value_at(p, 1).map(|cell| cells[i] = cell)
                    }
                    Some(i) => p.string_body().map(|s| cells[i] = Cell::Str(s)),
                    None => p.skip_string_body(),
                },
            },
            (false, Some(i)) => tree.read(i, p, cells),
            (false, None) => p.skip_value(1),
        };
        read.is_ok()
    }
}

impl Shape {
    /// Reads a line of this shape from the parser's start, filling the named cells; false
    /// when the line has another shape (or is invalid), with cells possibly half filled.
    pub fn read<'a>(&self, p: &mut Parser<'a>, cells: &mut [Cell<'a>], tree: &FieldTree) -> bool {
        #[cfg(target_arch = "x86_64")]
        if p.kernel() == crate::json_scan::Kernel::Avx2 {
            // SAFETY: `Kernel::Avx2` is only ever chosen on a CPU that has AVX2.
            return unsafe { self.read_avx2(p, cells, tree) };
        }
        self.read_with(p, cells, tree)
    }

    /// `read` compiled for AVX2, so that the string scans inline into its loop.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn read_avx2<'a>(&self, p: &mut Parser<'a>, cells: &mut [Cell<'a>], tree: &FieldTree) -> bool {
        self.read_with(p, cells, tree)
    }

    #[inline(always)]
    fn read_with<'a>(&self, p: &mut Parser<'a>, cells: &mut [Cell<'a>], tree: &FieldTree) -> bool {
        for step in &self.steps {
            if !(p.expect(&step.before) && step.read_value(p, cells, tree)) {
                return false;
            }
        }
        p.expect(&self.tail) && p.at_end()
    }

    /// Reads the line that starts at `start` of `chunk` straight from the bytes, when it has
    /// this shape and its values need only the plainer readings (strings, integers of up to
    /// 18 digits, literals): returns where the line ends (at its `\n` or its `\r\n`) with the
    /// named cells set, whether they own nothing (no string had to be unescaped), and whether
    /// the line is UTF-8. None leaves the line to `read`, cells possibly half filled; so does
    /// a line that ends within 64 bytes of the chunk's end (one a chunk). The cells must own
    /// no string: the values they held are overwritten, not dropped.
    ///
    /// Such a line is valid JSON over bytes, as `pick_bytes` reads it: the bytes between its
    /// values were cut from a valid line next to ASCII bytes (quotes, digits, letters), a
    /// string holding a byte above 0x7f or an escape is checked, integers and literals are
    /// ASCII; and no step reads past a newline (it stops a string, ends a number, and no run
    /// holds one). Where its strings are UTF-8 it is UTF-8 text; a named string that is not
    /// is its bytes (`Cell::Bytes`), as kcat writes binary header values.
    ///
    /// # Safety
    /// The CPU must have AVX2 and BMI1.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1")]
    pub unsafe fn read_raw<'a>(&self, chunk: &'a [u8], start: usize, cells: &mut [Cell<'a>], tree: &FieldTree) -> Option<RawLine> {
        // A piece that starts at or before `limit` has its 32 bytes in the chunk, and so have
        // the first 32 of the value after it.
        let limit = chunk.len().checked_sub(64)?;
        if self.raw.is_empty() || cells.len() < self.cells {
            return None;
        }
        // From the first unnamed string with a byte above 0x7f to the end of the last one.
        let mut high = (usize::MAX, 0);
        let mut borrowed = true;
        let mut text = true;
        let mut pos = start;
        for step in &self.raw {
            if pos > limit {
                return None;
            }
            // SAFETY: the 32 bytes from `pos <= limit` are inside the chunk; the CPU has AVX2.
            if !unsafe { avx2::same_where(chunk, pos, &step.wide, step.keep) } {
                return None;
            }
            pos += step.len as usize;
            match step.value {
                RawValue::None => {}
                RawValue::String => {
                    // SAFETY: the first 32 bytes from `pos <= limit + 32` are inside the chunk.
                    let (end, above) = unsafe { avx2::string_stop_and_high(chunk, pos) }?;
                    // SAFETY: `string_stop_and_high` stops inside the chunk.
                    let stop = unsafe { *chunk.get_unchecked(end) };
                    if stop != b'"' {
                        if stop != b'\\' {
                            return None;
                        }
                        let how = if step.slot != NO_SLOT { Some(tree.raw_string(step.slot as usize)) } else { None };
                        let kept = how == Some(RawString::Escaped);
                        let (close, utf8) = if let Some(how @ (RawString::Decoded | RawString::IntBe)) = how {
                            // SAFETY: every slot is below `self.cells <= cells.len()`.
                            let cell = unsafe { cells.get_unchecked_mut(step.slot as usize) };
                            let read = named_escaped_string(chunk, pos, end, how == RawString::IntBe, cell)?;
                            borrowed &= !cell.owns();
                            read
                        } else {
                            unnamed_escaped_string(chunk, pos, end, above, text || kept)?
                        };
                        text &= utf8;
                        if kept {
                            // Left escaped only as text.
                            if !utf8 {
                                return None;
                            }
                            // SAFETY: `unnamed_escaped_string` checked these bytes are UTF-8
                            // (and every escape in them) before it returned.
                            let raw = unsafe { std::str::from_utf8_unchecked(&chunk[pos..=close]) };
                            // SAFETY: every slot is below `self.cells <= cells.len()`.
                            overwrite(unsafe { cells.get_unchecked_mut(step.slot as usize) }, Cell::Escaped(raw));
                        }
                        pos = close + 1;
                        continue;
                    }
                    if step.slot != NO_SLOT {
                        // SAFETY: `pos <= end`, both inside the chunk.
                        let body = unsafe { chunk.get_unchecked(pos..end) };
                        // A named string is checked at once (they are seldom above ASCII).
                        let cell = if !above {
                            // SAFETY: no byte of the body is above 0x7f: it is ASCII.
                            Cell::Str(Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(body) }))
                        } else if let Ok(body) = simdutf8::basic::from_utf8(body) {
                            Cell::Str(Cow::Borrowed(body))
                        } else {
                            text = false;
                            Cell::Bytes(Cow::Borrowed(body))
                        };
                        // SAFETY: every slot is below `self.cells <= cells.len()`.
                        overwrite(unsafe { cells.get_unchecked_mut(step.slot as usize) }, cell);
                    } else if above {
                        high = (high.0.min(pos), end);
                    }
                    pos = end + 1;
                }
                RawValue::Nested => {
                    let (end, owns) = nested_value(chunk, pos, step.slot, cells, tree)?;
                    borrowed &= !owns;
                    // Checked as UTF-8 with the unnamed strings (a walk checks only what it keeps).
                    high = (high.0.min(pos), high.1.max(end));
                    pos = end;
                }
                RawValue::Scalar => {
                    // SAFETY: `pos <= limit + 32`: it and the byte after are inside the chunk.
                    let (first, next) = unsafe { (*chunk.get_unchecked(pos), *chunk.get_unchecked(pos + 1)) };
                    let (cell, end) = if first.is_ascii_digit() && !next.is_ascii_digit() {
                        // One digit, the usual count, read as `plain_scalar` reads it.
                        (Cell::Int(i64::from(first - b'0')), pos + 1)
                    } else {
                        plain_scalar(chunk, pos)?
                    };
                    if step.slot != NO_SLOT {
                        // SAFETY: every slot is below `self.cells <= cells.len()`.
                        overwrite(unsafe { cells.get_unchecked_mut(step.slot as usize) }, cell);
                    }
                    pos = end;
                }
            }
        }
        if !matches!(&chunk[pos..], [b'\n', ..] | [b'\r', b'\n', ..]) {
            return None;
        }
        // The unnamed strings with a byte above 0x7f are checked at once, with what lies
        // between them (valid runs, strings): cheaper than string by string.
        if text && high.0 < high.1 && simdutf8::basic::from_utf8(&chunk[high.0..high.1]).is_err() {
            text = false;
        }
        Some(RawLine { end: pos, borrowed, text })
    }
}

/// A line `Shape::read_raw` read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct RawLine {
    /// Where it ends: at its `\n` or its `\r\n`.
    pub end: usize,
    /// The cells it set own no string.
    pub borrowed: bool,
    /// It is UTF-8 text (else bytes, as kcat writes binary values).
    pub text: bool,
}

/// The value at `pos` where the shape's line had an object or array (or a node's value), read
/// by the parser within the line: a node walked into its cells, a named value read as a cell,
/// an unnamed one checked and skipped. Where it ends, and whether a named cell now owns its
/// string; None when it is not a valid value.
#[cfg(target_arch = "x86_64")]
#[cold]
fn nested_value<'a>(chunk: &'a [u8], pos: usize, slot: u32, cells: &mut [Cell<'a>], tree: &FieldTree) -> Option<(usize, bool)> {
    use crate::json_scan::Kernel;
    let line_end = memchr::memchr(b'\n', &chunk[pos..]).map_or(chunk.len(), |i| pos + i);
    // Only the AVX2 kernel reads lines raw.
    let mut p = Parser::over_bytes(&chunk[..line_end], Kernel::Avx2);
    p.seek(pos);
    let mut owns = false;
    match slot {
        NO_SLOT => p.skip_value(1).ok()?,
        // A node's cells are set by assignment (a walk may leave strings it owns).
        slot if slot as usize >= NODE => tree.read(slot as usize, &mut p, cells).ok()?,
        slot => {
            let cell = value_at(&mut p, 1).ok()?;
            owns = cell.owns();
            overwrite(&mut cells[slot as usize], cell);
        }
    }
    Some((p.pos(), owns))
}

/// A named string with an escape, from its first byte at `from` and its first escape at
/// `escape`, set in `cell`: its text (unescaped by the parser), or its bytes where they are
/// not UTF-8, or (`as_int_be`, for a cell read only so) the integer its bytes are where
/// `int_be` reads them. Where its closing quote is and whether its bytes as written are UTF-8;
/// None (the cell untouched) when it is not a valid JSON string or not closed within its
/// line. The answer is two registers, where a struct with the cell came back through memory
/// and the caller's wide loads of it waited on the callee's narrow stores.
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(never)]
fn named_escaped_string<'a>(chunk: &'a [u8], from: usize, escape: usize, as_int_be: bool, cell: &mut Cell<'a>) -> Option<(usize, bool)> {
    use crate::json_scan::{short_string_bytes, short_string_int_be, Kernel};
    // Only the AVX2 kernel reads lines raw.
    // A binary value as kcat writes it starts with a `\u` escape (a big-endian integer's high
    // zero bytes): read by a short loop, to its integer when that is all that is read of it
    // (no bytes kept). A trace or a JSON text starts with another, and is decoded in the one
    // pass that finds its end and checks its escapes (from its opening quote, where
    // `string_bytes` starts).
    let binary = chunk.get(escape + 1) == Some(&b'u');
    if binary && as_int_be {
        if let Some((value, end)) = short_string_int_be(chunk, from) {
            let written = &chunk[from..end];
            let utf8 = written.is_ascii() || simdutf8::basic::from_utf8(written).is_ok();
            overwrite(cell, Cell::IntBe(value));
            return Some((end, utf8));
        }
    }
    let (decoded, end) = match binary.then(|| short_string_bytes(chunk, from)).flatten() {
        Some((decoded, end)) => (Cow::Owned(decoded), end),
        None => {
            let mut p = Parser::over_bytes(&chunk[from - 1..], Kernel::Avx2);
            let decoded = p.string_bytes().ok()?;
            (decoded, from - 1 + p.pos() - 1)
        }
    };
    // Its bytes as written checked as UTF-8.
    let written = &chunk[from..end];
    let utf8 = written.is_ascii() || simdutf8::basic::from_utf8(written).is_ok();
    let value = match decoded {
        // Text whose escapes are decoded to characters is text: its runs are cut at ASCII
        // backslashes and each escape gives a whole character.
        // SAFETY: as just said, when the bytes as written are UTF-8.
        Cow::Owned(bytes) if utf8 => Cell::Str(Cow::Owned(unsafe { String::from_utf8_unchecked(bytes) })),
        Cow::Borrowed(bytes) if utf8 => Cell::Str(Cow::Borrowed(std::str::from_utf8(bytes).ok()?)),
        decoded => Cell::Bytes(decoded),
    };
    overwrite(cell, value);
    Some((end, utf8))
}

/// An unnamed string with an escape (or one left escaped), from its first byte at `from` and
/// its first escape at `escape` (`above`: a byte above 0x7f comes before that): where its
/// closing quote is, and whether its bytes are UTF-8, judged only if `judge_text` (a line
/// already found not UTF-8 needs no more verdicts: it then counts as not UTF-8). None when
/// it is not a valid JSON string or not closed within its line. Its escapes are checked, not
/// decoded (the string is not kept).
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(never)]
fn unnamed_escaped_string(chunk: &[u8], from: usize, escape: usize, above: bool, judge_text: bool) -> Option<(usize, bool)> {
    use crate::json_scan::{string_end, Kernel};
    // SAFETY: this runs inside `read_raw`, whose caller checked the CPU has AVX2 and BMI1.
    let (end, ascii) = match unsafe { avx2::string_end(chunk, escape) } {
        // Whether a byte above 0x7f is in it, told by the blocks that found its end.
        Ok((end, high)) => (end, !(above || high)),
        // SAFETY: as above.
        Err(at) => unsafe { string_end(chunk, at, Kernel::Avx2) }.ok().map(|end| (end, chunk[from..end].is_ascii()))?,
    };
    let utf8 = judge_text && (ascii || simdutf8::basic::from_utf8(&chunk[from..end]).is_ok());
    Some((end, utf8))
}

/// Sets a cell that owns no string (see `Shape::read_raw`): what it held needs no drop, and
/// none is compiled in (a tenth of the instructions that set a cell).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn overwrite<'a>(cell: &mut Cell<'a>, value: Cell<'a>) {
    debug_assert!(!cell.owns(), "a raw read overwrites a cell that owns a string");
    std::mem::forget(std::mem::replace(cell, value));
}

/// A literal, or an integer of up to 18 digits, from `at`: its cell and where it ends. A
/// number that goes on (`1.5`, `1e3`) is cut short here, and the next run, which starts with
/// whitespace, `,` or `}`, then does not match. `-0` is a double to serde_json: left to it.
fn plain_scalar<'a>(s: &[u8], at: usize) -> Option<(Cell<'a>, usize)> {
    let literal = |word: &[u8], cell: Cell<'a>| (s.get(at..at + word.len()) == Some(word)).then_some((cell, at + word.len()));
    match *s.get(at)? {
        b't' => literal(b"true", Cell::Bool(true)),
        b'f' => literal(b"false", Cell::Bool(false)),
        b'n' => literal(b"null", Cell::Null),
        first @ (b'-' | b'0'..=b'9') => {
            let negative = first == b'-';
            let digits = at + usize::from(negative);
            let mut end = digits;
            let mut value = 0i64;
            while let Some(&d @ b'0'..=b'9') = s.get(end) {
                if end - digits == 18 {
                    return None;
                }
                value = value * 10 + i64::from(d - b'0');
                end += 1;
            }
            let leading_zero = s[digits..end].len() > 1 && s[digits] == b'0';
            if end == digits || leading_zero || (negative && value == 0) {
                return None;
            }
            Some((Cell::Int(if negative { -value } else { value }), end))
        }
        _ => None,
    }
}

/// Takes down a line's shape while the full parser walks it: told where each value starts
/// and ends, it keeps the bytes in between.
pub(super) struct ShapeRecorder {
    steps: Vec<Step>,
    /// Where the bytes not yet kept start: the end of the last value.
    mark: usize,
    /// Where the last value started.
    value_start: usize,
    raw: bool,
    /// The line was walked out of order (a header's value before its name): no shape.
    spoilt: bool,
}

impl Default for ShapeRecorder {
    fn default() -> ShapeRecorder {
        ShapeRecorder { steps: Vec::new(), mark: 0, value_start: 0, raw: true, spoilt: false }
    }
}

impl ShapeRecorder {
    /// A value of `line` starts at `start` and fills `slot`.
    pub fn value_at(&mut self, line: &[u8], start: usize, slot: Option<usize>) {
        // A node's value is walked whole, whatever it is.
        let node = slot.is_some_and(|s| s >= NODE);
        let string = line.get(start) == Some(&b'"') && !node;
        let nested = node || matches!(line.get(start), Some(b'{' | b'['));
        let end = if string { start + 1 } else { start };
        self.steps.push(Step { before: line[self.mark..end].to_vec(), string, nested, slot });
        self.mark = end;
        self.value_start = start;
    }

    /// The value last started ends before `end`.
    pub fn value_end(&mut self, line: &[u8], end: usize) {
        let plain = self.steps.last().is_some_and(|s| s.string || s.nested);
        if !plain && plain_scalar(line, self.value_start).is_none_or(|(_, e)| e != end) {
            self.raw = false;
        }
        self.mark = end;
    }

    /// The line is not read in order: no shape can be taken from it.
    pub fn spoil(&mut self) {
        self.spoilt = true;
    }

    /// The shape of `line`, whose last value has ended (None if it was spoilt).
    pub fn finish(self, line: &[u8]) -> Option<Shape> {
        if self.spoilt {
            return None;
        }
        let tail = line[self.mark..].to_vec();
        // Not read raw: a key given twice (`read_raw` sets some strings last, and the last
        // value must win), or a tail ending in `\r` (the line cutter takes one off the end).
        let slots: Vec<usize> = self.steps.iter().filter_map(|s| s.slot).collect();
        let repeated = (1..slots.len()).any(|i| slots[..i].contains(&slots[i]));
        let raw = if self.raw && !repeated && !tail.ends_with(b"\r") {
            let values = self.steps.iter().flat_map(|step| {
                let value = if step.string {
                    RawValue::String
                } else if step.nested {
                    RawValue::Nested
                } else {
                    RawValue::Scalar
                };
                RawStep::pieces(&step.before, value, step.slot)
            });
            let tail_pieces = RawStep::pieces(&tail, RawValue::None, None);
            values.chain(tail_pieces).collect()
        } else {
            Vec::new()
        };
        // Node slots stand for their tree's cells, which the tree bounds itself.
        let cells = slots.iter().filter(|&&slot| slot < NODE).max().map_or(0, |&slot| slot + 1);
        Some(Shape { steps: self.steps, tail, raw, cells })
    }
}
