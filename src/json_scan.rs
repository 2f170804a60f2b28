//! A validating JSON scanner: checks syntax exactly as a full parser does (RFC 8259, as
//! serde_json reads it) but builds only what its caller asks for, so lines can be checked and
//! a few fields taken at the speed of a scan.

use std::borrow::Cow;

/// serde_json refuses the 128th object or array open at once (its recursion limit).
pub const MAX_NESTING: usize = 127;

pub struct Parser<'a> {
    s: &'a [u8],
    /// The whole text is known to be UTF-8; else each string read is checked (a skipped one
    /// never is: a line may hold invalid UTF-8 in fields nobody reads).
    utf8: bool,
    pos: usize,
    // Only x86-64 has a kernel other than the portable one to choose.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    kernel: Kernel,
}

/// The code that finds the end of a string's plain run: chosen once, at run time, from the
/// CPU's features (`DLQF_SIMD=portable` forces the portable one). Both find the same byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Eight bytes at a time in a `u64`, on any CPU.
    Portable,
    /// 32 bytes at a time, on x86-64 CPUs with AVX2.
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU runs, unless `DLQF_SIMD=portable` says otherwise.
    pub fn detected() -> Kernel {
        static DETECTED: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            if std::env::var_os("DLQF_SIMD").is_some_and(|v| v == "portable") {
                return Kernel::Portable;
            }
            Kernel::available().last().copied().unwrap_or(Kernel::Portable)
        })
    }

    /// Whether this CPU runs the kernel (a cached feature test).
    pub fn runs_here(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            // Every CPU with AVX2 has BMI1 too, but a virtual machine may hide one.
            Kernel::Avx2 => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("bmi1"),
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2 => false,
        }
    }

    /// Every kernel this CPU can run, portable first.
    pub fn available() -> Vec<Kernel> {
        [Kernel::Portable, Kernel::Avx2].into_iter().filter(|k| k.runs_here()).collect()
    }
}

/// `a == b` for slices of one length, a word at a time and inline: the keys and tokens
/// compared here are short, where a call to `memcmp` costs more than the comparison.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n < 8 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let mut i = 0;
    while i + 8 < n {
        if word(a, i) != word(b, i) {
            return false;
        }
        i += 8;
    }
    // The last word may overlap the one before.
    word(a, n - 8) == word(b, n - 8)
}

/// The text of the value of top-level field `name` in the JSON object `text` (the last one if
/// the name repeats, as a parsed object keeps it), or None if it has none or `text` is not an
/// object: one field of a record is then parsed, not the whole record.
pub fn field_text<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let mut p = Parser::new(text);
    p.ws();
    if p.peek() != Some(b'{') {
        return None;
    }
    let mut found = None;
    p.object(|p, key| {
        let start = p.pos;
        p.skip_value(1)?;
        if key == name {
            found = Some(start..p.pos);
        }
        Ok(())
    })
    .ok()?;
    found.map(|value| &text[value])
}

/// Whether `text` holds a byte JSON must escape in a string (`"`, `\\`, a control character).
pub fn needs_escape(text: &[u8]) -> bool {
    needs_escape_with(text, Kernel::detected())
}

/// `needs_escape` with the given kernel (one that runs here). Most strings written are short
/// names and ids: they are checked in a few words, the last one overlapping, with no byte loop.
pub fn needs_escape_with(text: &[u8], kernel: Kernel) -> bool {
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Avx2 && text.len() >= 32 && kernel.runs_here() {
        // SAFETY: the CPU has AVX2 (checked: this function is public and safe).
        return unsafe { avx2::any_escape(text) };
    }
    let _ = kernel;
    let word = |at: usize| u64::from_le_bytes(text[at..at + 8].try_into().expect("8 bytes"));
    if text.len() < 8 {
        let mut padded = [b'a'; 8];
        padded[..text.len()].copy_from_slice(text);
        return escape_flags(u64::from_le_bytes(padded)) != 0;
    }
    let mut pos = 0;
    while pos + 8 < text.len() {
        if escape_flags(word(pos)) != 0 {
            return true;
        }
        pos += 8;
    }
    escape_flags(word(text.len() - 8)) != 0
}

/// Whether any of the eight bytes of `word` is one JSON escapes in a string.
#[inline]
pub fn word_needs_escape(word: u64) -> bool {
    escape_flags(word) != 0
}

/// The high bit of each byte of `v` that is `"`, `\\` or below 0x20 is set, and of some bytes
/// above the lowest such one (a borrow runs on): zero exactly when none is, and the lowest set
/// flag is exact.
fn escape_flags(v: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote = v ^ (ONES * u64::from(b'"'));
    let slash = v ^ (ONES * u64::from(b'\\'));
    (quote.wrapping_sub(ONES) & !quote | slash.wrapping_sub(ONES) & !slash | v.wrapping_sub(ONES * 0x20) & !v) & HIGH
}

/// From `pos`, the first byte of `s` a JSON string must escape (`"`, `\\`, below 0x20), or
/// the end: what a writer copies as it is runs up to there.
pub fn escape_stop(s: &[u8], pos: usize) -> usize {
    string_stop(s, pos, Kernel::detected())
}

/// From `pos`, the first byte of `s` that is `"`, `\\` or below 0x20 (or the end): 32 bytes at
/// a time with the AVX2 kernel, else eight.
#[inline(always)]
fn string_stop(s: &[u8], pos: usize, kernel: Kernel) -> usize {
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Avx2 {
        // SAFETY: `Kernel::Avx2` is only ever chosen on a CPU that has AVX2.
        let (pos, found) = unsafe { avx2::string_stop(s, pos) };
        if found {
            return pos;
        }
        return string_stop_portable(s, pos);
    }
    let _ = kernel;
    string_stop_portable(s, pos)
}

/// From `pos`, the first byte that is `"`, `\\` or below 0x20 (or the end), eight bytes at a
/// time.
fn string_stop_portable(s: &[u8], mut pos: usize) -> usize {
    while pos + 8 <= s.len() {
        let hits = escape_flags(u64::from_le_bytes(s[pos..pos + 8].try_into().expect("8 bytes")));
        if hits != 0 {
            return pos + (hits.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    while let Some(&b) = s.get(pos) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return pos;
        }
        pos += 1;
    }
    pos
}

/// Where the string whose body goes on at `pos` of `s` has its closing quote, its escapes
/// checked but not decoded (its bytes are not checked as UTF-8); or why it is not a JSON
/// string and where the parser stands when it says so.
///
/// # Safety
/// `kernel` must run on this CPU (`Kernel::runs_here`): it is not checked here, on the hot path.
#[inline]
pub(crate) unsafe fn string_end(s: &[u8], mut pos: usize, kernel: Kernel) -> Result<usize, (&'static str, usize)> {
    loop {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx2 {
            // SAFETY: the caller checked that `kernel` runs here: the CPU has AVX2 and BMI1.
            match unsafe { avx2::string_end(s, pos) } {
                Ok((quote, _)) => return Ok(quote),
                Err(at) => pos = at,
            }
        }
        pos = string_stop(s, pos, kernel);
        match *s.get(pos).ok_or(("EOF while parsing a string", pos))? {
            b'"' => return Ok(pos),
            b'\\' => pos = escape_end(s, pos + 1)?,
            0..=0x1f => return Err(("control character in a string", pos)),
            _ => pos += 1,
        }
    }
}

/// Four hex digits from `at` of `s`: their value, or why not and where (at their start).
fn hex4_at(s: &[u8], at: usize) -> Result<u32, (&'static str, usize)> {
    let digits = s.get(at..at + 4).ok_or(("EOF while parsing a string", at))?;
    let mut v = 0u32;
    for &d in digits {
        let n = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => return Err(("invalid \\u escape", at)),
        };
        v = v * 16 + u32::from(n);
    }
    Ok(v)
}

/// Where the escape whose backslash is just before `at` of `s` ends, checked but not decoded;
/// or why it is not one and where the parser stands when it says so.
#[inline]
fn escape_end(s: &[u8], at: usize) -> Result<usize, (&'static str, usize)> {
    match s.get(at) {
        Some(&e) if two_byte_escape(e).is_some() => Ok(at + 1),
        Some(b'u') => unicode_escape_at(s, at + 1).map(|(_, end)| end),
        None => Err(("EOF while parsing a string", at)),
        Some(_) => Err(("invalid escape", at)),
    }
}

/// A short string's body from `from` of `s` (kcat's binary header values: `\u0000\u000F`, a
/// few raw bytes), read a byte at a time: the bytes it stands for and where its closing quote
/// is, as `Parser::string_bytes` reads them. None, leaving it to that, past `SHORT` bytes out
/// or at anything but a byte it keeps, a two-byte escape or a `\u00XX` below 0x80.
pub(crate) fn short_string_bytes(s: &[u8], from: usize) -> Option<(Vec<u8>, usize)> {
    const SHORT: usize = 64;
    // Written into an array, with no capacity to check at each byte, then copied out once.
    let mut out = [0u8; SHORT];
    let (len, end) = short_string_each(s, from, SHORT, |i, byte| out[i] = byte)?;
    Some((out[..len].to_vec(), end))
}

/// `short_string_bytes` read as `int_be` reads the bytes (1 to 8, a signed big-endian
/// integer), with no bytes kept: the integer and where the closing quote is. None where
/// `short_string_bytes` would say None or `int_be` an error.
pub(crate) fn short_string_int_be(s: &[u8], from: usize) -> Option<(i64, usize)> {
    let mut n: i64 = 0;
    let (len, end) = short_string_each(s, from, 8, |i, byte| {
        // Sign-extended from the first byte, as `int_be` does.
        if i == 0 && byte & 0x80 != 0 {
            n = -1;
        }
        n = (n << 8) | i64::from(byte);
    })?;
    (len > 0).then_some((n, end))
}

/// The bytes of a short string's body from `from` of `s`, each given to `each` with its
/// index: how many there were and where the closing quote is. None past `max` bytes or at
/// anything but a byte it keeps, a two-byte escape or a `\u00XX` below 0x80.
#[inline(always)]
fn short_string_each(s: &[u8], from: usize, max: usize, mut each: impl FnMut(usize, u8)) -> Option<(usize, usize)> {
    let body = s.get(from..)?;
    let (mut read, mut len) = (0, 0);
    loop {
        let (byte, width) = match *body.get(read)? {
            b'"' => return Some((len, from + read)),
            b'\\' => match *body.get(read + 1)? {
                b'u' => (ascii_escape_at(body, read + 2)?, 6),
                e => (two_byte_escape(e)?, 2),
            },
            0..=0x1f => return None,
            b => (b, 1),
        };
        if len == max {
            return None;
        }
        each(len, byte);
        len += 1;
        read += width;
    }
}

/// The byte a two-byte escape `\e` stands for (`\n` a newline), None for any other `e`.
#[inline]
pub(crate) fn two_byte_escape(e: u8) -> Option<u8> {
    match e {
        b'"' | b'\\' | b'/' => Some(e),
        b'b' => Some(8),
        b'f' => Some(12),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        _ => None,
    }
}

/// The byte of a `\u00XX` escape below 0x80 whose four digits start at `at` of `s`, which is
/// its character's UTF-8; None for any other (left to `unicode_escape_at`).
#[inline]
fn ascii_escape_at(s: &[u8], at: usize) -> Option<u8> {
    let [b'0', b'0', high @ b'0'..=b'7', low] = *s.get(at..at + 4)? else { return None };
    let low = match low {
        b'0'..=b'9' => low - b'0',
        b'a'..=b'f' => low - b'a' + 10,
        b'A'..=b'F' => low - b'A' + 10,
        _ => return None,
    };
    Some((high - b'0') << 4 | low)
}

/// Whether the four digits of a `\u` escape from `at` of `s` are `00` and two hex digits: a
/// character below 0x100, never a surrogate.
#[inline]
fn is_byte_escape_at(s: &[u8], at: usize) -> bool {
    matches!(s.get(at..at + 4), Some([b'0', b'0', high, low]) if high.is_ascii_hexdigit() && low.is_ascii_hexdigit())
}

/// The character of a `\u` escape whose four digits start at `at` of `s` (with a surrogate
/// pair's second escape) and where the escape ends; or why not and where the parser stands
/// when it says so.
fn unicode_escape_at(s: &[u8], at: usize) -> Result<(char, usize), (&'static str, usize)> {
    let first = hex4_at(s, at)?;
    let mut end = at + 4;
    let code = if (0xD800..0xDC00).contains(&first) {
        if s.get(end..end + 2) != Some(b"\\u") {
            return Err(("lone leading surrogate in a \\u escape", end));
        }
        let second = hex4_at(s, end + 2)?;
        end += 6;
        if !(0xDC00..0xE000).contains(&second) {
            return Err(("invalid trailing surrogate in a \\u escape", end));
        }
        0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
    } else if (0xDC00..0xE000).contains(&first) {
        return Err(("lone trailing surrogate in a \\u escape", end));
    } else {
        first
    };
    char::from_u32(code).map(|c| (c, end)).ok_or(("invalid \\u escape", end))
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use std::arch::x86_64::*;

    /// One bit per byte of the 32 from `at`: set where the byte is `"`, `\\` or below 0x20.
    ///
    /// # Safety
    /// The CPU must have AVX2, and `at + 32 <= s.len()`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn stops(s: &[u8], at: usize) -> u32 {
        // SAFETY: the caller keeps the 32 bytes inside `s`; loadu takes any alignment.
        // SAFETY: the caller keeps the 32 bytes inside `s`; its CPU has AVX2.
        unsafe { stop_mask(_mm256_loadu_si256(s.as_ptr().add(at).cast())) }
    }

    /// One bit per byte of `v`: set where the byte is `"`, `\\` or below 0x20.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn stop_mask(v: __m256i) -> u32 {
        let control = _mm256_set1_epi8(0x1f);
        // max(v, 0x1f) == 0x1f exactly when v <= 0x1f, unsigned.
        let below = _mm256_cmpeq_epi8(_mm256_max_epu8(v, control), control);
        let quote = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
        let slash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
        _mm256_movemask_epi8(_mm256_or_si256(_mm256_or_si256(quote, slash), below)) as u32
    }

    /// From `pos`, 32 bytes at a time: the first byte that is `"`, `\\` or below 0x20 and
    /// true, or where fewer than 32 bytes are left and false.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn string_stop(s: &[u8], mut pos: usize) -> (usize, bool) {
        while pos + 32 <= s.len() {
            // SAFETY: the 32 bytes from `pos` are inside `s`.
            let mask = unsafe { stops(s, pos) };
            if mask != 0 {
                return (pos + mask.trailing_zeros() as usize, true);
            }
            pos += 32;
        }
        (pos, false)
    }

    /// From `pos`, 32 bytes at a time: the first byte that is `"`, `\\` or below 0x20, and
    /// whether a byte above 0x7f comes before it; None when it is not within the 32-byte
    /// blocks that fit in `s`.
    ///
    /// # Safety
    /// The CPU must have AVX2 and BMI1, and `pos + 32 <= s.len()`.
    #[target_feature(enable = "avx2,bmi1")]
    #[inline]
    pub unsafe fn string_stop_and_high(s: &[u8], mut pos: usize) -> Option<(usize, bool)> {
        let mut high = 0u32;
        loop {
            // SAFETY: the 32 bytes from `pos` are inside `s` (checked below after the first).
            let v = unsafe { _mm256_loadu_si256(s.as_ptr().add(pos).cast()) };
            // SAFETY: the caller's CPU has AVX2.
            let stop = unsafe { stop_mask(v) };
            let above = _mm256_movemask_epi8(v) as u32;
            if stop != 0 {
                // The bytes up to the stop (itself ASCII): BMI1's `blsmsk`.
                let before = stop ^ stop.wrapping_sub(1);
                return Some((pos + stop.trailing_zeros() as usize, (high | above & before) != 0));
            }
            high |= above;
            pos += 32;
            if pos + 32 > s.len() {
                return None;
            }
        }
    }

    /// `string_end` over the 32-byte blocks that fit in `s`, from `pos` in a string's body:
    /// each block's stops found once and its escapes stepped over by their bits (a
    /// trace has one every few dozen bytes, where a search per escape costs more to start than
    /// the bytes it reads). Ok: the closing quote, and whether a byte above 0x7f comes before
    /// it; Err: where the portable loop goes on, never inside an escape (at a bad escape or a
    /// control byte, which that loop checks and names, or where fewer than 32 bytes are left).
    ///
    /// # Safety
    /// The CPU must have AVX2 and BMI1.
    #[target_feature(enable = "avx2,bmi1")]
    pub unsafe fn string_end(s: &[u8], mut pos: usize) -> Result<(usize, bool), usize> {
        let mut high = 0u32;
        while pos + 32 <= s.len() {
            let block = pos;
            // SAFETY: the 32 bytes from `block` are inside `s`.
            let v = unsafe { _mm256_loadu_si256(s.as_ptr().add(block).cast()) };
            // SAFETY: the caller's CPU has AVX2.
            let mut mask = unsafe { stop_mask(v) };
            let above = _mm256_movemask_epi8(v) as u32;
            loop {
                if mask == 0 {
                    high |= above;
                    pos = block + 32;
                    break;
                }
                let at = block + mask.trailing_zeros() as usize;
                let end = match (s[at], s.get(at + 1)) {
                    // The bytes up to the quote (itself ASCII): BMI1's `blsmsk`.
                    (b'"', _) => return Ok((at, (high | above & (mask ^ mask.wrapping_sub(1))) != 0)),
                    (b'\\', Some(&e)) if super::two_byte_escape(e).is_some() => at + 2,
                    // A `\u00XX` escape (kcat's binary bytes), never a surrogate; any other
                    // `\u` escape checked in full.
                    (b'\\', Some(b'u')) if super::is_byte_escape_at(s, at + 2) => at + 6,
                    (b'\\', Some(b'u')) => match super::unicode_escape_at(s, at + 2) {
                        Ok((_, end)) => end,
                        Err(_) => return Err(at),
                    },
                    _ => return Err(at),
                };
                // Past the escape, whose own stop bits (an escaped `"` or `\\`) go with it.
                let next = end - block;
                if next >= 32 {
                    high |= above;
                    pos = block + next;
                    break;
                }
                mask &= u32::MAX << next;
            }
        }
        Err(pos)
    }

    /// Whether the 32 bytes from `at` hold `wide`'s bytes where `keep` has a bit set.
    ///
    /// # Safety
    /// The CPU must have AVX2, and `at + 32 <= s.len()`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn same_where(s: &[u8], at: usize, wide: &[u8; 32], keep: u32) -> bool {
        // SAFETY: the caller keeps the 32 bytes inside `s`; loadu takes any alignment.
        let (v, w) = unsafe { (_mm256_loadu_si256(s.as_ptr().add(at).cast()), _mm256_loadu_si256(wide.as_ptr().cast())) };
        let same = _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, w)) as u32;
        same & keep == keep
    }

    /// Whether `s` (at least 32 bytes, asserted) holds a byte JSON escapes: 32 bytes at a
    /// time, the last block overlapping.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn any_escape(s: &[u8]) -> bool {
        // In release builds too: the blocks below read 32 bytes from `s.len() - 32`.
        assert!(s.len() >= 32);
        let last = s.len() - 32;
        let mut at = 0;
        loop {
            // SAFETY: `at <= last`, so the 32 bytes from `at` are inside `s`.
            if unsafe { stops(s, at) } != 0 {
                return true;
            }
            if at == last {
                return false;
            }
            at = (at + 32).min(last);
        }
    }
}

impl<'a> Parser<'a> {
    /// A parser at the start of `text`, with the kernel this CPU runs best.
    pub fn new(text: &'a str) -> Parser<'a> {
        Parser { s: text.as_bytes(), utf8: true, pos: 0, kernel: Kernel::detected() }
    }

    /// A parser over bytes that may not be UTF-8: strings it reads are checked, and one that
    /// is not UTF-8 is an error; strings it skips are not.
    pub fn over_bytes(bytes: &'a [u8], kernel: Kernel) -> Parser<'a> {
        assert!(kernel.runs_here(), "{kernel:?} does not run on this CPU");
        Parser { s: bytes, utf8: false, pos: 0, kernel }
    }

    /// The text from `start` to `end`: None where it is not UTF-8 or not cut at characters.
    #[inline(always)]
    fn text(&self, start: usize, end: usize) -> Option<&'a str> {
        let bytes = &self.s[start..end];
        if self.utf8 {
            // A cut of UTF-8 text is UTF-8 when both ends are at characters: `end` is at an
            // ASCII byte (or the end) wherever this is called.
            let at_char = |i: usize| i == self.s.len() || (self.s[i] as i8) >= -0x40;
            // SAFETY: the whole text is UTF-8 and both ends are at characters.
            return at_char(start).then(|| unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        if bytes.is_ascii() {
            // SAFETY: ASCII is UTF-8 (most strings, member names above all: checked at once).
            return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        simdutf8::basic::from_utf8(bytes).ok()
    }

    /// A parser at the start of `text` that scans strings with `kernel` (one of
    /// `Kernel::available()`).
    pub fn with_kernel(text: &'a str, kernel: Kernel) -> Parser<'a> {
        assert!(kernel.runs_here(), "{kernel:?} does not run on this CPU");
        Parser { s: text.as_bytes(), utf8: true, pos: 0, kernel }
    }

    /// Back to the start of the text.
    pub fn rewind(&mut self) {
        self.pos = 0;
    }

    /// To byte `pos` of the text (any byte: a string read from inside a character is refused).
    pub fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.s.len());
    }

    /// The whole text, as bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.s
    }

    /// Where the parser stands, in bytes from the start.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Whether every byte has been read.
    pub fn at_end(&self) -> bool {
        self.pos == self.s.len()
    }

    /// Steps over `bytes` if the text continues with them exactly.
    #[inline]
    pub fn expect(&mut self, bytes: &[u8]) -> bool {
        let found = self.s.get(self.pos..self.pos + bytes.len()).is_some_and(|head| same_bytes(head, bytes));
        if found {
            self.pos += bytes.len();
        }
        found
    }

    pub fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    pub fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Moves `pos` to the next byte that ends or escapes a string (`"`, `\\`) or may not appear
    /// in one (a control character): 32 bytes at a time with AVX2, else eight.
    #[inline(always)]
    fn scan_string_body(&mut self) {
        self.pos = string_stop(self.s, self.pos, self.kernel);
    }

    pub fn error(&self, what: &str) -> String {
        format!("invalid JSON: {what} at column {}", self.pos + 1)
    }

    /// The kernel this parser scans strings with.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// The rest of a string whose opening quote is behind, if nothing in it is escaped: the
    /// parser moves past its closing quote. None, with the parser where it was, at a
    /// backslash, a control character or the end: `string_body` then reads or refuses it.
    #[inline(always)]
    pub fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.pos;
        self.scan_string_body();
        if self.s.get(self.pos) == Some(&b'"') {
            if let Some(text) = self.text(start, self.pos) {
                self.pos += 1;
                return Some(text);
            }
        }
        self.pos = start;
        None
    }

    /// A string starting at the opening quote; borrowed unless it has escapes.
    pub fn string(&mut self) -> Result<Cow<'a, str>, String> {
        if self.peek() != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        self.pos += 1;
        self.string_body()
    }

    /// The rest of a string whose opening quote is behind; borrowed unless it has escapes.
    pub fn string_body(&mut self) -> Result<Cow<'a, str>, String> {
        let start = self.pos;
        loop {
            self.scan_string_body();
            let Some(&b) = self.s.get(self.pos) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match b {
                b'"' => match self.text(start, self.pos) {
                    Some(text) => {
                        self.pos += 1;
                        return Ok(Cow::Borrowed(text));
                    }
                    None if self.utf8 => return Err(self.error("a string that starts inside a character")),
                    None => return Err(self.error("invalid UTF-8 in a string")),
                },
                b'\\' => return self.escaped_string(start),
                0..=0x1f => return Err(self.error("control character in a string")),
                _ => self.pos += 1,
            }
        }
    }

    /// Whether this parser reads bytes that may not be UTF-8 (`over_bytes`).
    pub fn over_bytes_mode(&self) -> bool {
        !self.utf8
    }

    /// A string starting at the opening quote, as the bytes it holds: escapes decoded (a
    /// `\u` escape to its character's UTF-8), other bytes as they are, UTF-8 or not, as kcat
    /// writes binary header values (bytes below 0x20 escaped, the rest raw). Borrowed unless
    /// it has escapes.
    pub fn string_bytes(&mut self) -> Result<Cow<'a, [u8]>, String> {
        if self.peek() != Some(b'"') {
            return Err(self.error("expected a string"));
        }
        self.pos += 1;
        // The unescaped run being read starts here; `out` holds what came before it.
        let mut run_start = self.pos;
        let mut out: Option<Vec<u8>> = None;
        loop {
            self.scan_string_body();
            let Some(&b) = self.s.get(self.pos) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match b {
                b'"' => {
                    let run = &self.s[run_start..self.pos];
                    self.pos += 1;
                    return Ok(match out {
                        None => Cow::Borrowed(run),
                        Some(mut out) => {
                            out.extend_from_slice(run);
                            Cow::Owned(out)
                        }
                    });
                }
                b'\\' => {
                    let out = out.get_or_insert_with(Vec::new);
                    out.extend_from_slice(&self.s[run_start..self.pos]);
                    // Escapes one after another (kcat writes a binary value's low bytes so,
                    // `\u0000\u000F`) are read without a search between them.
                    while self.s.get(self.pos) == Some(&b'\\') {
                        self.pos += 1;
                        let Some(&e) = self.s.get(self.pos) else {
                            return Err(self.error("EOF while parsing a string"));
                        };
                        self.pos += 1;
                        match e {
                            b'u' => match ascii_escape_at(self.s, self.pos) {
                                Some(byte) => {
                                    out.push(byte);
                                    self.pos += 4;
                                }
                                None => {
                                    let c = self.unicode_escape()?;
                                    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                                }
                            },
                            e => out.push(two_byte_escape(e).ok_or_else(|| self.error("invalid escape"))?),
                        }
                    }
                    run_start = self.pos;
                }
                0..=0x1f => return Err(self.error("control character in a string")),
                _ => self.pos += 1,
            }
        }
    }

    fn escaped_string(&mut self, start: usize) -> Result<Cow<'a, str>, String> {
        let Some(plain) = self.text(start, self.pos) else {
            return Err(self.error(if self.utf8 { "a string that starts inside a character" } else { "invalid UTF-8 in a string" }));
        };
        // Room for what usually follows an escape, so that a short string grows at most once.
        let mut out = String::with_capacity(plain.len() + 16);
        out.push_str(plain);
        loop {
            let Some(&b) = self.s.get(self.pos) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(&e) = self.s.get(self.pos) else {
                        return Err(self.error("EOF while parsing a string"));
                    };
                    self.pos += 1;
                    match e {
                        b'u' => {
                            let c = self.unicode_escape()?;
                            out.push(c);
                        }
                        e => out.push(char::from(two_byte_escape(e).ok_or_else(|| self.error("invalid escape"))?)),
                    }
                }
                0..=0x1f => return Err(self.error("control character in a string")),
                _ => {
                    let run_start = self.pos;
                    self.scan_string_body();
                    // A run ends at an ASCII byte (a quote, a backslash, a control character)
                    // or the end, so it is UTF-8 where the text is; else it is checked.
                    match std::str::from_utf8(&self.s[run_start..self.pos]) {
                        Ok(run) => out.push_str(run),
                        Err(_) => return Err(self.error("invalid UTF-8 in a string")),
                    }
                }
            }
        }
    }

    fn unicode_escape(&mut self) -> Result<char, String> {
        match unicode_escape_at(self.s, self.pos) {
            Ok((c, end)) => {
                self.pos = end;
                Ok(c)
            }
            Err((what, at)) => {
                self.pos = at;
                Err(self.error(what))
            }
        }
    }

    pub fn literal(&mut self, word: &[u8]) -> Result<(), String> {
        if self.s.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else if self.s.len() - self.pos < word.len() && word.starts_with(&self.s[self.pos..]) {
            Err(self.error("EOF while parsing a value"))
        } else {
            Err(self.error("expected a value"))
        }
    }

    /// A number per RFC 8259 that a double can hold; returns its text.
    pub fn number(&mut self) -> Result<&'a str, String> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            None => return Err(self.error("EOF while parsing a value")),
            _ => return Err(self.error("invalid number")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number"));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error("invalid number"));
            }
            self.digits();
        }
        // SAFETY: a number's bytes are ASCII (checked one by one above).
        let text = unsafe { std::str::from_utf8_unchecked(&self.s[start..self.pos]) };
        // Like serde_json, refuse a number too large for a double (`1e400`); an integer of up
        // to 18 digits always fits.
        let plain_integer = self.pos - start <= 18 && !text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'));
        if !plain_integer && !text.parse::<f64>().is_ok_and(f64::is_finite) {
            return Err(self.error("number out of range"));
        }
        Ok(text)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    /// Walks an array from its `[`: `element` is called with each index when the parser stands
    /// at that element, and must consume it.
    pub fn array(&mut self, mut element: impl FnMut(&mut Self, usize) -> Result<(), String>) -> Result<(), String> {
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        for index in 0.. {
            self.ws();
            element(self, index)?;
            if self.comma_or_close(b']')? {
                break;
            }
        }
        Ok(())
    }

    /// Walks an object from its `{`: `member` is called with each key when the parser stands
    /// at that key's value, and must consume the value.
    pub fn object(&mut self, mut member: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), String>) -> Result<(), String> {
        self.pos += 1;
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.ws();
            match self.peek() {
                Some(b'"') => {}
                None => return Err(self.error("EOF while parsing an object")),
                _ => return Err(self.error("expected a field name")),
            }
            let key = self.string()?;
            self.ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:`"));
            }
            self.pos += 1;
            self.ws();
            member(self, key)?;
            if self.comma_or_close(b'}')? {
                return Ok(());
            }
        }
    }

    /// After a member or element: false past a comma, true past the closing bracket.
    #[inline]
    pub fn comma_or_close(&mut self, close: u8) -> Result<bool, String> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(false)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(true)
            }
            None if close == b'}' => Err(self.error("EOF while parsing an object")),
            None => Err(self.error("EOF while parsing a list")),
            _ if close == b'}' => Err(self.error("expected `,` or `}`")),
            _ => Err(self.error("expected `,` or `]`")),
        }
    }

    /// Validates and skips one value (objects and arrays recursively) that `depth` objects
    /// and arrays enclose.
    pub fn skip_value(&mut self, depth: usize) -> Result<(), String> {
        match self.peek() {
            Some(b'{' | b'[') if depth >= MAX_NESTING => return Err(self.error("recursion limit exceeded")),
            Some(b'"') => {
                self.skip_string()?;
            }
            Some(b'{') => self.object(|p, _| p.skip_value(depth + 1))?,
            Some(b'[') => {
                self.pos += 1;
                self.ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    self.skip_value(depth + 1)?;
                    if self.comma_or_close(b']')? {
                        return Ok(());
                    }
                }
            }
            _ => self.skip_scalar()?,
        }
        Ok(())
    }

    /// Validates and skips a number, `true`, `false` or `null`.
    fn skip_scalar(&mut self) -> Result<(), String> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number().map(drop),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            None => Err(self.error("EOF while parsing a value")),
            _ => Err(self.error("expected a value")),
        }
    }

    /// Like `string`, without building anything.
    pub fn skip_string(&mut self) -> Result<(), String> {
        self.pos += 1;
        self.skip_string_body()
    }

    /// Validates and skips the rest of a string whose opening quote is behind.
    pub fn skip_string_body(&mut self) -> Result<(), String> {
        // SAFETY: a parser's kernel was checked to run here when the parser was made.
        match unsafe { string_end(self.s, self.pos, self.kernel) } {
            Ok(quote) => {
                self.pos = quote + 1;
                Ok(())
            }
            Err((what, at)) => {
                self.pos = at;
                Err(self.error(what))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field's text, parsed, is the value a parsed object holds under that name: for every
    /// name of lines with nested values, escaped keys, repeated keys and numbers, and for a
    /// name they lack.
    #[test]
    fn a_field_parsed_alone_is_the_objects_value() {
        let lines = [
            r#"{"id":"cap-1","stage":"inference","attempts":3,"score":3.3999999521443642e38,"ok":true,"none":null}"#,
            r#" { "a\u0062" : [1, {"ab": 2}], "ab" : {"x": "y\"z"}, "c": -0.0 , "tab\t": "\u00e9"} "#,
            r#"{"dup":1,"x":{"dup":2},"dup":"last"}"#,
            r#"{}"#,
        ];
        for line in lines {
            let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).unwrap();
            for (name, value) in object.iter().map(|(k, v)| (k.as_str(), Some(v))).chain([("missing", None)]) {
                let alone = field_text(line, name).map(|text| serde_json::from_str::<serde_json::Value>(text).unwrap());
                assert_eq!(alone.as_ref(), value, "{name} in {line}");
            }
        }
        assert_eq!(field_text("[1]", "a"), None);
    }

    /// The stop byte every kernel finds, from every start, in text where stops are rare and
    /// where they are everywhere: all agree with a byte-by-byte search.
    #[test]
    fn every_kernel_finds_the_same_stop_byte() {
        let mut random = crate::testing::random(0x2545_f491_4f6c_dd1d);
        for round in 0..400 {
            let len = (random() % 200) as usize;
            // Mostly plain bytes (ASCII and UTF-8 high bytes); a stop byte one time in `rarity`.
            let rarity = [4, 40, 400][round % 3];
            let text: Vec<u8> = (0..len)
                .map(|_| match random() % rarity {
                    0 => [b'"', b'\\', 0x00, 0x1f, b'\n'][(random() % 5) as usize],
                    _ => [b'a', b' ', 0x20, 0x7f, 0x80, 0xc3, 0xff, b'!', b'#', b'['][(random() % 10) as usize],
                })
                .collect();
            for kernel in Kernel::available() {
                // Every suffix, so every length and every place of the first stop byte.
                for start in 0..=len {
                    let want = text[start..].iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20);
                    assert_eq!(needs_escape_with(&text[start..], kernel), want, "{kernel:?}, {:?}", &text[start..]);
                }
            }
            for start in 0..=len {
                let want = (start..len).find(|&i| text[i] == b'"' || text[i] == b'\\' || text[i] < 0x20).unwrap_or(len);
                assert_eq!(string_stop_portable(&text, start), want, "portable, from {start} in {text:?}");
                #[cfg(target_arch = "x86_64")]
                if Kernel::available().contains(&Kernel::Avx2) {
                    // SAFETY: the CPU has AVX2.
                    let (pos, found) = unsafe { avx2::string_stop(&text, start) };
                    if found {
                        assert_eq!(pos, want, "avx2, from {start} in {text:?}");
                    } else {
                        assert!(len - pos < 32 && want >= pos, "avx2 stopped early, from {start} in {text:?}");
                    }
                }
            }
        }
    }

    /// Random strings of escapes (simple, `\u` of every kind, bad ones), control bytes and
    /// text, cut anywhere: every kernel finds the same end or the same error there (AVX2's
    /// blocks also whether a byte above 0x7f comes before it), and
    /// `string_bytes` decodes what serde_json decodes, refusing what it refuses (and
    /// `short_string_bytes`, where it reads one, what `string_bytes` decodes).
    #[test]
    fn escaped_strings_end_and_decode_alike_on_every_kernel() {
        const PIECES: [&str; 24] = [
            "a", "plain text ", "\u{e9}", "\\\"", "\\\\", "\\/", "\\n\\tat ", "\\b", "\\f", "\\r", "\\u0000", "\\u001F", "\\u007f",
            "\\u00e9", "\\u0085", "\\u20AC", "\\ud83d\\ude00", "\\ud83d", "\\x", "\\u12", "\\u0G00", "\\u001G", "\u{1}", "\"",
        ];
        let mut random = crate::testing::random(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let count = (random() % 40) as usize;
            let mut text = String::from("\"");
            for _ in 0..count {
                // Mostly text and the escapes a trace or a binary value holds.
                let piece = match random() % 8 {
                    0..=2 => (random() % 2) as usize,
                    _ => (random() % PIECES.len() as u64) as usize,
                };
                text.push_str(PIECES[piece]);
            }
            text.push('"');
            let mut cut = 1 + (random() as usize) % text.len();
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let bytes = &text.as_bytes()[..cut];
            let ends: Vec<_> = Kernel::available()
                .into_iter()
                // SAFETY: every kernel `available` names runs here.
                .map(|kernel| unsafe { string_end(bytes, 1, kernel) })
                .collect();
            assert!(ends.windows(2).all(|w| w[0] == w[1]), "{ends:?} for {text:?} cut at {cut}");
            #[cfg(target_arch = "x86_64")]
            if Kernel::available().contains(&Kernel::Avx2) {
                // SAFETY: the CPU has AVX2 and BMI1.
                if let Ok((quote, high)) = unsafe { avx2::string_end(bytes, 1) } {
                    assert_eq!((Ok(quote), high), (ends[0], !bytes[1..quote].is_ascii()), "{text:?} cut at {cut}");
                }
            }
            let whole = match ends[0] {
                Ok(quote) => &bytes[..=quote],
                Err(_) => bytes,
            };
            let mut p = Parser::new(std::str::from_utf8(whole).unwrap());
            let decoded = p.string_bytes();
            let want = serde_json::from_slice::<String>(whole);
            if let Some((short, quote)) = short_string_bytes(bytes, 1) {
                assert_eq!((Ok(short.as_slice()), Ok(quote)), (decoded.as_deref(), ends[0]), "{whole:?}");
            }
            match (&decoded, &want) {
                (Ok(got), Ok(want)) => assert_eq!(got.as_ref(), want.as_bytes(), "{whole:?}"),
                (Err(_), Err(_)) => {}
                _ => panic!("{decoded:?} against serde_json's {want:?} for {:?}", String::from_utf8_lossy(whole)),
            }
        }
    }

    /// A binary value as kcat writes it (bytes below 0x20, `"` and `\\` escaped, the rest raw)
    /// read to its integer in place is what `int_be` makes of the bytes `short_string_bytes`
    /// decodes, and where it ends; 0 or more than 8 bytes are left to them.
    #[test]
    fn a_short_binary_string_reads_as_int_be_reads_its_bytes() {
        let mut random = crate::testing::random(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let len = (random() % 11) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| match random() % 4 {
                    0 => 0,
                    1 => (random() % 0x20) as u8,
                    _ => random() as u8,
                })
                .collect();
            let mut text = b"\"".to_vec();
            for &b in &bytes {
                match b {
                    b'"' | b'\\' => text.extend_from_slice(&[b'\\', b]),
                    b'\n' => text.extend_from_slice(b"\\n"),
                    0..=0x1f => text.extend_from_slice(format!("\\u{b:04X}").as_bytes()),
                    _ => text.push(b),
                }
            }
            text.extend_from_slice(b"\",");
            let quote = text.len() - 2;
            let read = short_string_int_be(&text, 1);
            let want = crate::path::int_be(&bytes).ok().map(|n| (n, quote));
            // Bytes above 0x7f that are not UTF-8 are kept raw as kcat writes them: read alike.
            assert_eq!(read, want, "{bytes:?} written {:?}", String::from_utf8_lossy(&text));
            if read.is_some() {
                assert_eq!(short_string_bytes(&text, 1), Some((bytes.clone(), quote)));
            }
        }
        // An escape `short_string_bytes` leaves to the parser is left by this too.
        assert_eq!(short_string_int_be(b"\"\\u00FF\"", 1), None);
        assert_eq!(short_string_int_be(b"\"\\u0000\\u0001\"", 1), Some((1, 13)));
        assert_eq!(short_string_int_be(b"\"\\u0000\\u0001", 1), None);
    }

    #[test]
    fn the_portable_kernel_can_be_forced() {
        let text = "\"a plain string that is longer than thirty-two bytes, with a stop here\"";
        for kernel in Kernel::available() {
            let mut p = Parser::with_kernel(text, kernel);
            assert_eq!(p.string().unwrap(), &text[1..text.len() - 1]);
            assert!(p.at_end());
        }
        assert_eq!(Kernel::available()[0], Kernel::Portable);
    }

    /// A string read from inside a character is refused, never sliced there: plain, escaped
    /// or skipped, on every kernel.
    #[test]
    fn a_string_started_inside_a_character_is_refused() {
        for text in ["\"\u{e9}x\"", "\"\u{e9}\\n\"", "\"\u{e9}\\u0041\""] {
            for kernel in Kernel::available() {
                let start = |p: &mut Parser| assert!(p.expect(b"\"\xc3"), "{text:?}");
                let mut p = Parser::with_kernel(text, kernel);
                start(&mut p);
                assert_eq!(p.plain_string(), None, "{text:?}");
                assert!(p.string_body().is_err(), "{text:?}");
            }
        }
    }
}
