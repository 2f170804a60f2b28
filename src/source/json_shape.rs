//! The bytes between a line's values, as the last lines spelled them. A dump's lines repeat
//! one shape, so a line is read by comparing those bytes and parsing only its values.

use std::borrow::Cow;

use super::json_fields::value;
use super::layout::Cell;
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
}

struct Step {
    before: Vec<u8>,
    /// The value is a string, and `before` ends with its opening quote.
    string: bool,
    /// The cell the value fills, if it is a named field.
    slot: Option<usize>,
}

impl Shape {
    /// Reads a line of this shape from the parser's start, filling the named cells; false
    /// when the line has another shape (or is invalid), with cells possibly half filled.
    pub fn read<'a>(&self, p: &mut Parser<'a>, cells: &mut [Cell<'a>]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if p.kernel() == crate::json_scan::Kernel::Avx2 {
            // SAFETY: `Kernel::Avx2` is only ever chosen on a CPU that has AVX2.
            return unsafe { self.read_avx2(p, cells) };
        }
        self.read_with(p, cells)
    }

    /// `read` compiled for AVX2, so that the string scans inline into its loop.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn read_avx2<'a>(&self, p: &mut Parser<'a>, cells: &mut [Cell<'a>]) -> bool {
        self.read_with(p, cells)
    }

    #[inline(always)]
    fn read_with<'a>(&self, p: &mut Parser<'a>, cells: &mut [Cell<'a>]) -> bool {
        for step in &self.steps {
            if !p.expect(&step.before) {
                return false;
            }
            let read = match (step.string, step.slot) {
                // Most strings have nothing escaped: taken as they stand, without a `Result`.
                (true, slot) => match p.plain_string() {
                    Some(text) => {
                        if let Some(i) = slot {
                            cells[i] = Cell::Str(Cow::Borrowed(text));
                        }
                        Ok(())
                    }
                    None => match slot {
                        Some(i) => p.string_body().map(|s| cells[i] = Cell::Str(s)),
                        None => p.skip_string_body(),
                    },
                },
                (false, Some(i)) => value(p).map(|v| cells[i] = v),
                (false, None) => p.skip_value(1),
            };
            if read.is_err() {
                return false;
            }
        }
        p.expect(&self.tail) && p.at_end()
    }
}

/// Takes down a line's shape while the full parser walks it: told where each value starts
/// and ends, it keeps the bytes in between.
#[derive(Default)]
pub(super) struct ShapeRecorder {
    steps: Vec<Step>,
    /// Where the bytes not yet kept start: the end of the last value.
    mark: usize,
}

impl ShapeRecorder {
    /// A value of `line` starts at `start` and fills `slot`.
    pub fn value_at(&mut self, line: &[u8], start: usize, slot: Option<usize>) {
        let string = line.get(start) == Some(&b'"');
        let end = if string { start + 1 } else { start };
        self.steps.push(Step { before: line[self.mark..end].to_vec(), string, slot });
        self.mark = end;
    }

    /// The value last started ends before `end`.
    pub fn value_end(&mut self, end: usize) {
        self.mark = end;
    }

    /// The shape of `line`, whose last value has ended.
    pub fn finish(self, line: &[u8]) -> Shape {
        Shape { steps: self.steps, tail: line[self.mark..].to_vec() }
    }
}
