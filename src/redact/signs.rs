//! The signs of a text that tell which detectors could find anything in it (a digit run,
//! an `@`, a word starting as a keyword does): every text is read here, most never again, so
//! a long one is read 64 bytes at a time from bit masks of its bytes' classes.

/// The signs of one text, seen in one pass over it.
#[derive(Default, Debug, PartialEq, Eq)]
pub(super) struct Signs {
    pub digits: usize,
    /// A run of digits and separators (spaces, `().+-`) holding `CARD_DIGITS` digits.
    pub card_digits: bool,
    /// A `+`, a digit and seven more of a phone's bytes (digits, spaces, `().-`).
    pub plus_digit: bool,
    /// Ten digits that are a word by themselves.
    pub ten_digits: bool,
    /// Two groups of digits as a phone's last two are (`next_group_needs`): `555-0100`,
    /// `030 1234`; not a UUID's `ef82-4812` or `2680-474380a4`, nor an address's `157.173`.
    pub digit_groups: bool,
    pub pem: bool,
    pub jwt: bool,
    pub at: bool,
    pub keyword: bool,
    pub key_prefix: bool,
    pub iban: bool,
    pub colons: usize,
    pub double_colon: bool,
    pub dotted_digits: usize,
}

/// The digits of the shortest card number.
const CARD_DIGITS: usize = 13;

/// After a run of `len` digits starting with `first` (and a word, if `starts_word`), then
/// `separator`: the digits the next run needs, ending a word, for the two to be what a phone
/// pattern's last two groups are (0: none would). A phone's groups start a word and end
/// three digits or more then four (`555-0100`, `(415) 555 0100`, `415555-0100`), or a trunk
/// prefix `0` with one to four digits, a space or dash, then three or more (`030 1234 5678`).
fn next_group_needs(first: u8, len: usize, starts_word: bool, separator: u8) -> usize {
    match separator {
        _ if !starts_word => 0,
        b' ' | b'-' if first == b'0' && len >= 2 => 3,
        b' ' | b'.' | b'-' if len >= 3 => 4,
        _ => 0,
    }
}

/// Whether the `+` at `plus` starts what a phone written with its country code does: a digit,
/// then seven more digits, spaces or `().-` at least (`+44 20 7946 0958`; not `+00:00`).
fn phone_after_plus(text: &[u8], plus: usize) -> bool {
    let after = &text[plus + 1..];
    after.len() >= 8 && after[0].is_ascii_digit() && after[..8].iter().all(|b| b.is_ascii_digit() || b" ().-".contains(b))
}

/// Each detector's pattern starts its value at a word boundary; these start words.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether the byte at `at` starts a word (no word byte before it).
#[cfg(target_arch = "x86_64")]
fn starts_word(text: &[u8], at: usize) -> bool {
    at == 0 || !is_word_byte(text[at - 1])
}

/// The first bytes of a word `word_start` may find something in: capitals (an IBAN, `AKIA`,
/// any keyword in capitals) and the first letters of the keywords and key prefixes.
static MAY_START: [bool; 256] = {
    let mut may = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        may[b] = c.is_ascii_uppercase() || matches!(c, b'a' | b'b' | b'c' | b'e' | b'g' | b'h' | b'n' | b'p' | b'r' | b's' | b't' | b'x');
        b += 1;
    }
    may
};

/// `MAY_START` as two nibble tables, each in both 16-byte lanes: a bit for each high nibble
/// of `MAY_START`'s bytes (4 and 5: capitals; 6 and 7: the lower-case letters), set in the
/// low nibble's entry where that byte is one.
#[cfg(target_arch = "x86_64")]
struct NibbleTable(std::arch::x86_64::__m256i);

#[cfg(target_arch = "x86_64")]
const fn nibble_table(entries: [u8; 16]) -> NibbleTable {
    let mut both = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        both[i] = entries[i % 16];
        i += 1;
    }
    // SAFETY: 32 bytes are a 256-bit vector.
    NibbleTable(unsafe { std::mem::transmute::<[u8; 32], std::arch::x86_64::__m256i>(both) })
}

#[cfg(target_arch = "x86_64")]
static MAY_START_BY_LOW: NibbleTable = nibble_table({
    let mut table = [0u8; 16];
    let mut b = 0x40;
    while b < 0x80 {
        if MAY_START[b] {
            table[b & 0x0f] |= 1 << ((b >> 4) - 4);
        }
        b += 1;
    }
    table
});

#[cfg(target_arch = "x86_64")]
static MAY_START_BY_HIGH: NibbleTable = nibble_table([0, 0, 0, 0, 1, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0]);

impl Signs {
    /// The signs of `text`.
    pub(super) fn of(text: &[u8]) -> Signs {
        // A short text (a code, a count) is read faster a byte at a time than by the masks of
        // a padded block; from one 16-byte lane on (a consumer's name, a UUID) the masks are
        // faster, now that a block's digit runs and most word starts are not visited.
        #[cfg(target_arch = "x86_64")]
        if text.len() >= 16 {
            return Signs::by_blocks(text);
        }
        Signs::bytewise(text)
    }

    /// The signs read from each 64-byte block's class masks (the last block padded with
    /// zero bytes, which are in no class): the runs of digits and the starts of words are
    /// visited, the bytes between them never one at a time.
    ///
    /// A text's digit runs are visited only if its masks show what a run's signs need (13
    /// bytes of digits and separators together, ten digits together, two digits, one separator
    /// and three digits): most texts' digits (a UUID's, a time's) show none, and are read by
    /// the masks alone.
    #[cfg(target_arch = "x86_64")]
    fn by_blocks(text: &[u8]) -> Signs {
        Signs::by_blocks_runs::<false>(text).unwrap_or_else(|| Signs::by_blocks_runs::<true>(text).expect("the runs visited"))
    }

    /// `by_blocks`, its digit runs visited (`RUNS`), or None where they may hold a sign.
    #[cfg(target_arch = "x86_64")]
    fn by_blocks_runs<const RUNS: bool>(text: &[u8]) -> Option<Signs> {
        let mut signs = Signs::default();
        let mut may_matter = RunMasks::default();
        let at = |j: usize| text.get(j).copied().unwrap_or(0);
        let mut runs = DigitRuns::default();
        // What the block before leaves for the next: its last byte's classes.
        let (mut word_before, mut digit_before, mut colon_before, mut dash_before) = (false, false, false, false);
        let mut double_dash = false;
        let mut high = false;
        let mut base = 0;
        let wide = std::arch::is_x86_feature_detected!("avx2");
        let classes = |block: &[u8; 64], bytes: usize| {
            if wide {
                // SAFETY: the CPU has AVX2.
                unsafe { Classes::of_avx2(block, bytes.div_ceil(32)) }
            } else {
                Classes::of(block, bytes.div_ceil(16))
            }
        };
        while base < text.len() {
            let c = if base + 64 <= text.len() {
                classes(text[base..base + 64].try_into().expect("64 bytes"), 64)
            } else {
                let mut padded = [0u8; 64];
                padded[..text.len() - base].copy_from_slice(&text[base..]);
                classes(&padded, text.len() - base)
            };
            let word = c.digit | c.letter;
            let digit_next = (c.digit >> 1) | (u64::from(at(base + 64).is_ascii_digit()) << 63);
            let digit_prev = (c.digit << 1) | u64::from(digit_before);
            signs.digits += c.digit.count_ones() as usize;
            signs.colons += c.colon.count_ones() as usize;
            signs.double_colon |= c.colon & ((c.colon << 1) | u64::from(colon_before)) != 0;
            signs.dotted_digits += (c.dot & digit_prev & digit_next).count_ones() as usize;
            let mut plus = c.plus & digit_next;
            while plus != 0 {
                signs.plus_digit |= phone_after_plus(text, base + plus.trailing_zeros() as usize);
                plus &= plus - 1;
            }
            signs.at |= c.at != 0;
            double_dash |= c.dash & ((c.dash << 1) | u64::from(dash_before)) != 0;
            high |= c.high != 0;
            let mut starts = c.letter & c.may_start & !((word << 1) | u64::from(word_before));
            while starts != 0 {
                let i = base + starts.trailing_zeros() as usize;
                starts &= starts - 1;
                signs.word_start(text[i], at(i + 1), at(i + 2), at(i + 3));
            }
            if RUNS {
                if c.digit != 0 || runs.open() {
                    runs.block(text, base, &c, digit_prev, digit_next, &mut signs);
                }
                runs.breakers_seen(base, c.breaker);
            } else if may_matter.block(&c, text.len() - base) {
                return None;
            }
            word_before = word >> 63 != 0;
            digit_before = c.digit >> 63 != 0;
            colon_before = c.colon >> 63 != 0;
            dash_before = c.dash >> 63 != 0;
            base += 64;
        }
        // A keyword may be written with a letter Unicode folds to `k` or `s`.
        signs.keyword |= high;
        signs.pem = double_dash && memchr::memmem::find(text, b"-----BEGIN").is_some();
        signs.card_digits = runs.longest >= CARD_DIGITS;
        Some(signs)
    }

    /// The signs read a byte at a time: of a short text, where there is no SSE2, and what
    /// the blocks must agree with.
    pub(super) fn bytewise(text: &[u8]) -> Signs {
        let mut signs = Signs::default();
        let at = |j: usize| text.get(j).copied().unwrap_or(0);
        let (mut run, mut longest) = (0, 0);
        // The last digits together (whether they start a word, their first), and the digits
        // the next run needs to be a phone's groups with them (`armed`: none if 0).
        let (mut group, mut group_starts_word, mut group_first) = (0, false, 0);
        let mut armed = 0;
        let mut in_word = false;
        let mut i = 0;
        let letter = |b: &u8| b.is_ascii_alphabetic() || *b == b'_';
        while i < text.len() {
            let b = text[i];
            i += 1;
            if in_word && letter(&b) {
                // Inside a word (most of a text): nothing to see but that a run of digits ended.
                longest = longest.max(run);
                run = 0;
                group = 0;
                armed = 0;
                while text.get(i).is_some_and(letter) {
                    i += 1;
                }
                continue;
            }
            if b.is_ascii_digit() {
                // The digits together, read at once.
                let start = i - 1;
                while text.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                let digits = i - start;
                signs.digits += digits;
                run += digits;
                (group, group_starts_word, group_first) = (digits, !in_word, b);
                signs.ten_digits |= group == 10 && group_starts_word && !is_word_byte(at(i));
                signs.digit_groups |= armed > 0 && group >= armed && !is_word_byte(at(i));
                in_word = true;
                continue;
            }
            let i = i - 1;
            armed = if group > 0 { next_group_needs(group_first, group, group_starts_word, b) } else { 0 };
            group = 0;
            if !matches!(b, b' ' | b'(' | b')' | b'.' | b'+' | b'-') {
                longest = longest.max(run);
                run = 0;
            }
            let starts_word = !in_word;
            in_word = is_word_byte(b);
            if in_word {
                if starts_word && MAY_START[b as usize] {
                    signs.word_start(b, at(i + 1), at(i + 2), at(i + 3));
                }
                continue;
            }
            match b {
                b':' => {
                    signs.colons += 1;
                    signs.double_colon |= i > 0 && text[i - 1] == b':';
                }
                b'.' if i > 0 && text[i - 1].is_ascii_digit() && at(i + 1).is_ascii_digit() => signs.dotted_digits += 1,
                b'@' => signs.at = true,
                b'+' => signs.plus_digit |= phone_after_plus(text, i),
                b'-' if at(i + 1) == b'-' => signs.pem |= text[i..].starts_with(b"-----BEGIN"),
                // A keyword may be written with a letter Unicode folds to `k` or `s`.
                0x80.. => signs.keyword = true,
                _ => {}
            }
        }
        signs.card_digits = longest.max(run) >= CARD_DIGITS;
        signs
    }

    /// What a word starting with `a b c d` may be the start of.
    fn word_start(&mut self, a: u8, b: u8, c: u8, d: u8) {
        // In ASCII, `| 0x20` makes a letter lower case and a byte that is not one no letter.
        let lower = [a | 0x20, b | 0x20, c | 0x20, d | 0x20];
        self.keyword |= match &lower {
            b"bear" | b"basi" | b"toke" | b"pass" | b"secr" | b"clie" | b"acce" | b"refr" | b"auth" | b"sess" | b"priv" => true,
            [b'p', b'w', b'd', _] => true,
            [b'a', b'p', b'i', _] => matches!(d, b'_' | b'-' | b'k' | b'K'),
            [b'a', b'w', b's', _] => d == b'_',
            _ => false,
        };
        self.key_prefix |= (a == b'A' && b.is_ascii_uppercase()) || matches!(&[a, b, c], b"ghp" | b"gho" | b"ghu" | b"ghs" | b"ghr" | b"git" | b"glp" | b"xox" | b"rk_" | b"sk_" | b"npm" | b"SG." | b"hoo");
        self.jwt |= [a, b, c] == *b"eyJ";
        self.iban |= a.is_ascii_uppercase() && b.is_ascii_uppercase() && c.is_ascii_digit() && d.is_ascii_digit();
    }
}

/// One bit per byte of a 64-byte block, for each class of byte the signs look at.
#[cfg(target_arch = "x86_64")]
#[derive(Default, Debug, PartialEq)]
struct Classes {
    digit: u64,
    /// ASCII letters and `_`: with the digits, the bytes of a word.
    letter: u64,
    /// Bytes above 0x7f.
    high: u64,
    colon: u64,
    dot: u64,
    at: u64,
    plus: u64,
    dash: u64,
    /// Bytes that end a run of digits and separators (a card's): not a digit, space,
    /// parenthesis, dot, plus or dash.
    breaker: u64,
    /// Bytes a word `word_start` may find something in starts with (`MAY_START`).
    may_start: u64,
}

#[cfg(target_arch = "x86_64")]
impl Classes {
    /// The classes of the block's first `lanes` 16 bytes (the rest of a padded block is zeros).
    #[inline]
    fn of(block: &[u8; 64], lanes: usize) -> Classes {
        use std::arch::x86_64::*;
        let mut c = Classes::default();
        // SAFETY: SSE2 is part of every x86_64 CPU; each 16 bytes loaded are inside the
        // block, and loadu takes any alignment.
        unsafe {
            for k in 0..lanes {
                let x = _mm_loadu_si128(block.as_ptr().add(16 * k).cast());
                let eq = |b: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(b as i8));
                // min(v, n) == v exactly when v <= n, unsigned.
                let at_most = |v: __m128i, n: u8| _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(n as i8)), v);
                let digit = at_most(_mm_sub_epi8(x, _mm_set1_epi8(b'0' as i8)), 9);
                let lower = _mm_or_si128(x, _mm_set1_epi8(0x20));
                let letter = _mm_or_si128(at_most(_mm_sub_epi8(lower, _mm_set1_epi8(b'a' as i8)), 25), eq(b'_'));
                let (dot, plus, dash) = (eq(b'.'), eq(b'+'), eq(b'-'));
                let separator = _mm_or_si128(_mm_or_si128(eq(b' '), eq(b'(')), _mm_or_si128(eq(b')'), _mm_or_si128(dot, _mm_or_si128(plus, dash))));
                let bits = |v: __m128i| u64::from(_mm_movemask_epi8(v) as u16) << (16 * k);
                c.digit |= bits(digit);
                c.letter |= bits(letter);
                c.high |= bits(x);
                c.colon |= bits(eq(b':'));
                c.dot |= bits(dot);
                c.at |= bits(eq(b'@'));
                c.plus |= bits(plus);
                c.dash |= bits(dash);
                c.breaker |= !bits(_mm_or_si128(digit, separator)) & (0xffff << (16 * k));
                // (SSE2 has no byte shuffle to look the bytes up with.)
                for j in 0..16 {
                    c.may_start |= u64::from(MAY_START[usize::from(block[16 * k + j])]) << (16 * k + j);
                }
            }
        }
        c
    }
}

#[cfg(target_arch = "x86_64")]
impl Classes {
    /// `of`, 32 bytes at a time: the block's first `lanes` 32 bytes.
    #[target_feature(enable = "avx2")]
    unsafe fn of_avx2(block: &[u8; 64], lanes: usize) -> Classes {
        use std::arch::x86_64::*;
        let mut c = Classes::default();
        for k in 0..lanes {
            // SAFETY: each 32 bytes loaded are inside the block; loadu takes any alignment.
            let x = unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * k).cast()) };
            macro_rules! eq {
                ($b:expr) => {
                    _mm256_cmpeq_epi8(x, _mm256_set1_epi8($b as i8))
                };
            }
            // min(v, n) == v exactly when v <= n, unsigned.
            macro_rules! at_most {
                ($v:expr, $n:expr) => {{
                    let v = $v;
                    _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8($n as i8)), v)
                }};
            }
            macro_rules! bits {
                ($v:expr) => {
                    u64::from(_mm256_movemask_epi8($v) as u32) << (32 * k)
                };
            }
            let digit = at_most!(_mm256_sub_epi8(x, _mm256_set1_epi8(b'0' as i8)), 9);
            let lower = _mm256_or_si256(x, _mm256_set1_epi8(0x20));
            let letter = _mm256_or_si256(at_most!(_mm256_sub_epi8(lower, _mm256_set1_epi8(b'a' as i8)), 25), eq!(b'_'));
            let (dot, plus, dash) = (eq!(b'.'), eq!(b'+'), eq!(b'-'));
            let separator = _mm256_or_si256(_mm256_or_si256(eq!(b' '), eq!(b'(')), _mm256_or_si256(eq!(b')'), _mm256_or_si256(dot, _mm256_or_si256(plus, dash))));
            c.digit |= bits!(digit);
            c.letter |= bits!(letter);
            c.high |= bits!(x);
            c.colon |= bits!(eq!(b':'));
            c.dot |= bits!(dot);
            c.at |= bits!(eq!(b'@'));
            c.plus |= bits!(plus);
            c.dash |= bits!(dash);
            c.breaker |= !bits!(_mm256_or_si256(digit, separator)) & (0xffff_ffff << (32 * k));
            // `MAY_START` looked up by nibbles: the low one gives the high ones it goes with.
            let (low, high) = (_mm256_and_si256(x, _mm256_set1_epi8(0x0f)), _mm256_and_si256(_mm256_srli_epi16(x, 4), _mm256_set1_epi8(0x0f)));
            let may = _mm256_and_si256(_mm256_shuffle_epi8(MAY_START_BY_LOW.0, low), _mm256_shuffle_epi8(MAY_START_BY_HIGH.0, high));
            c.may_start |= !bits!(_mm256_cmpeq_epi8(may, _mm256_setzero_si256())) & (0xffff_ffff << (32 * k));
        }
        c
    }
}

/// The runs of digits met so far, as the bytewise reader keeps them: the one not yet ended,
/// the last one ended, and the digits of the current stretch of digits and separators.
#[cfg(target_arch = "x86_64")]
#[derive(Default)]
struct DigitRuns {
    /// The run not yet ended: where it started, whether it continues the last run's stretch,
    /// and the digits it needs to be a phone's groups with the last run (0: it cannot be).
    current: Option<(usize, bool, usize)>,
    /// The last run ended: where, and how long.
    last: Option<(usize, usize)>,
    stretch: usize,
    /// The most digits a stretch held.
    longest: usize,
    /// Where the last breaker before this block is, if any.
    breaker: Option<usize>,
}

/// What a text's digit runs need for a sign, read from its blocks' masks: bytes of digits
/// and separators together (`n…`), digits together (`d…`), each ending at a byte, with the
/// block before's carried in. Each is necessary for its sign, not sufficient.
#[cfg(target_arch = "x86_64")]
#[derive(Default)]
struct RunMasks {
    n1: u64,
    n2: u64,
    n4: u64,
    n8: u64,
    d1: u64,
    d2: u64,
    d4: u64,
    d8: u64,
    separator: u64,
}

#[cfg(target_arch = "x86_64")]
impl RunMasks {
    /// Whether the block (`left` bytes of the text from its start) may hold a run's sign: 13
    /// bytes of digits and separators ending in it (a card), ten digits (a phone alone), or
    /// two digits, a separator, three digits (a phone's last two groups).
    fn block(&mut self, c: &Classes, left: usize) -> bool {
        // Bit i of `shifted(m, before, k)`: bit i - k of the text's mask, across the block's start.
        let shifted = |mask: u64, before: u64, k: u32| (mask << k) | (before >> (64 - k));
        let valid = if left >= 64 { u64::MAX } else { (1u64 << left) - 1 };
        let n1 = !c.breaker & valid;
        let n2 = n1 & shifted(n1, self.n1, 1);
        let n4 = n2 & shifted(n2, self.n2, 2);
        let n8 = n4 & shifted(n4, self.n4, 4);
        let n13 = n8 & shifted(n8, self.n8, 5);
        let d1 = c.digit;
        let d2 = d1 & shifted(d1, self.d1, 1);
        let d4 = d2 & shifted(d2, self.d2, 2);
        let d8 = d4 & shifted(d4, self.d4, 4);
        let d10 = d8 & shifted(d8, self.d8, 2);
        let separator = n1 & !d1;
        let groups = d2 & shifted(d1, self.d1, 2) & shifted(separator, self.separator, 3) & shifted(d2, self.d2, 4);
        *self = RunMasks { n1, n2, n4, n8, d1, d2, d4, d8, separator };
        n13 | d10 | groups != 0
    }
}

#[cfg(target_arch = "x86_64")]
impl DigitRuns {
    fn open(&self) -> bool {
        self.current.is_some()
    }

    /// The runs that start or end in the block at `base`.
    fn block(&mut self, text: &[u8], base: usize, c: &Classes, digit_prev: u64, digit_next: u64, signs: &mut Signs) {
        let starts = c.digit & !digit_prev;
        let ends = c.digit & !digit_next;
        let mut events = starts | ends;
        while events != 0 {
            let bit = events.trailing_zeros();
            events &= events - 1;
            let i = base + bit as usize;
            if starts >> bit & 1 != 0 {
                let below = c.breaker & ((1u64 << bit) - 1);
                let breaker = if below != 0 { Some(base + 63 - below.leading_zeros() as usize) } else { self.breaker };
                let joins = self.last.is_some_and(|(end, _)| breaker.is_none_or(|b| b < end));
                let armed = match self.last {
                    Some((end, len)) if i == end + 2 => {
                        let start = end + 1 - len;
                        next_group_needs(text[start], len, starts_word(text, start), text[end + 1])
                    }
                    _ => 0,
                };
                self.current = Some((i, joins, armed));
            }
            if ends >> bit & 1 != 0 {
                let (start, joins, armed) = self.current.take().expect("a run ends after it starts");
                let len = i + 1 - start;
                let ends_word = !text.get(i + 1).is_some_and(|&b| is_word_byte(b));
                signs.ten_digits |= len == 10 && starts_word(text, start) && ends_word;
                signs.digit_groups |= armed > 0 && len >= armed && ends_word;
                self.stretch = if joins { self.stretch + len } else { len };
                self.longest = self.longest.max(self.stretch);
                self.last = Some((i, len));
            }
        }
    }

    /// The block at `base` read: its last breaker is the one before the next block.
    fn breakers_seen(&mut self, base: usize, breakers: u64) {
        if breakers != 0 {
            self.breaker = Some(base + 63 - breakers.leading_zeros() as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks read the signs the bytewise reader does, on random texts of the bytes the
    /// signs look at, long and short, across block ends.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn blocks_read_the_signs_bytes_do() {
        let alphabet: &[u8] = b"0123456789 0123456789 .-:()+@_aAbBeEgGkKpPsStTxXyYJ\t\xc2\xa0-----BEGIN";
        let mut next = crate::testing::random(0x2545_f491_4f6c_dd1d);
        let mut random = move |n: usize| (next() % n as u64) as usize;
        for i in 0..100_000 {
            let len = if i % 10 == 0 { random(400) } else { random(140) };
            let text: Vec<u8> = (0..len).map(|_| alphabet[random(alphabet.len())]).collect();
            assert_eq!(Signs::by_blocks(&text), Signs::bytewise(&text), "{:?}", String::from_utf8_lossy(&text));
        }
    }

    /// Texts of words with now and then a value a digit run's sign is for (ten digits, a
    /// phone's groups, a card's stretch) or digits that are none (a UUID's, a time's), at every
    /// place across block ends: the blocks read what the bytes do, whether their masks let the
    /// runs go unvisited or not, and both happen.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn runs_left_unvisited_hold_no_sign() {
        let words: [&[u8]; 9] = [b"abc", b" ", b" ", b"order", b"x", b"-", b".", b"(", b"7"];
        let values: [&[u8]; 11] = [b"6502530000", b"555-0100", b"030 1234", b"07 555", b"4111 1111 1111 1111", b"1 2 3 4 5 6 7 8 9 0 1 2 3", b"ef82-4812-33f0", b"2026-11-02T23:00:00Z", b"42", b"12.34", b"+44 20 7946 0958"];
        let mut next = crate::testing::random(0x2545_f491_4f6c_dd1d);
        let mut random = move |n: usize| (next() % n as u64) as usize;
        let (mut skipped, mut visited) = (0, 0);
        for _ in 0..40_000 {
            let len = 32 + random(260);
            let mut text = Vec::new();
            while text.len() < len {
                text.extend_from_slice(if random(40) == 0 { values[random(values.len())] } else { words[random(words.len())] });
            }
            assert_eq!(Signs::by_blocks(&text), Signs::bytewise(&text), "{:?}", String::from_utf8_lossy(&text));
            if Signs::by_blocks_runs::<false>(&text).is_some() { skipped += 1 } else { visited += 1 }
        }
        assert!(skipped > 5_000 && visited > 5_000, "{skipped} {visited}");
    }

    /// The 16-byte lanes (every x86_64) and the 32-byte ones (AVX2, what `by_blocks` takes
    /// where it can, so the oracle above no longer reaches the other) class a block alike.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn both_lane_widths_class_a_block_alike() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut next = crate::testing::random(0x9e37_79b9_7f4a_7c15);
        for i in 0..20_000 {
            let mut block = [0u8; 64];
            // Every byte value, and blocks of the bytes the classes name.
            let alphabet: &[u8] = b"09/:@AZ[`az{_ .+-()\x00\x7f\x80\xff";
            for b in &mut block {
                let r = next();
                *b = if i % 2 == 0 { r as u8 } else { alphabet[(r % alphabet.len() as u64) as usize] };
            }
            // SAFETY: the CPU has AVX2.
            let wide = unsafe { Classes::of_avx2(&block, 2) };
            assert_eq!(Classes::of(&block, 4), wide, "{block:?}");
            // The first half alone: the lanes read, nothing of the rest.
            let mut half = block;
            half[32..].fill(0);
            // SAFETY: as above.
            assert_eq!(Classes::of(&half, 2), unsafe { Classes::of_avx2(&half, 1) }, "{half:?}");
        }
    }
}
