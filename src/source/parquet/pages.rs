//! The columns an analysis needs, read straight from their Parquet pages: signature columns as
//! their distinct values and one code per row (rows that share a value share a code, so a key
//! is built once per distinct tuple of codes), ids as the bytes of each value, times parsed as
//! their pages are read, no string decoded into Arrow. Anything unusual is declined, and the
//! caller reads it through polars.

use std::io::Cursor;

use polars_buffer::Buffer;
use polars_parquet::parquet::encoding::hybrid_rle::HybridRleDecoder;
use polars_parquet::parquet::encoding::Encoding;
use polars_parquet::parquet::metadata::ColumnChunkMetadata;
use polars_parquet::parquet::page::{split_buffer, DataPage, DictPage};
use polars_parquet::parquet::read::{BasicDecompressor, PageReader};
use polars_parquet::parquet::schema::types::{IntegerType, PhysicalType, PrimitiveConvertedType, PrimitiveLogicalType, TimeUnit};

use crate::timestamp::DateCache;

/// The code (or start) of a null row.
pub(super) const NULL: u32 = u32::MAX;

/// A string column as codes: row `i` holds `values[codes[i]]`, or null when `codes[i]` is
/// `NULL`.
pub(in crate::source) struct Codes {
    pub values: Vec<Box<str>>,
    pub codes: Vec<u32>,
}

/// A string column as bytes: each value is preceded in `bytes` by its length (4 bytes, little
/// endian), as in a PLAIN page, and `starts[i]` is where row `i`'s value begins (`NULL`: null).
/// Every value is valid UTF-8.
pub(in crate::source) struct Texts {
    bytes: Vec<u8>,
    starts: Vec<u32>,
}

/// A string time column, each value parsed as its page is read (no copy of the text is kept,
/// the size of the ids): row `i`'s microseconds, `NO_TIME` when null, or `UNREADABLE + k`
/// when its text, `unreadable[k]`, is not a timestamp.
pub(in crate::source) struct TextTimes {
    values: Vec<i64>,
    unreadable: Vec<Box<str>>,
}

/// A row of a `TextTimes`.
pub(in crate::source) enum TextTime<'a> {
    Null,
    Time(i64),
    Unreadable(&'a str),
}

/// Below every time a timestamp's text gives (its year has four digits): a null row, and the
/// first unreadable text.
const NO_TIME: i64 = i64::MIN;
const UNREADABLE: i64 = i64::MIN + 1;
/// Values from here on are times.
const READABLE: i64 = i64::MIN / 2;

/// An integer column: row `i`'s value, or None when null.
pub(in crate::source) struct Ints {
    pub values: Vec<Option<i64>>,
}

impl Codes {
    /// None unless `chunk` is a flat string column of PLAIN or dictionary-encoded pages whose
    /// values are valid UTF-8, decoding into `rows` rows.
    pub fn read(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<Codes> {
        if !is_string(chunk) {
            return None;
        }
        Codes::read_dictionary(chunk, file, rows).or_else(|| Codes::read_distinct(chunk, file, rows))
    }

    /// A chunk whose every data page is dictionary-encoded: the dictionary's codes as they are.
    /// Its own page loop: `values_per_row` would look each code up in an identity table, 2.3%
    /// more of rank's instructions (cachegrind, 1M rows).
    fn read_dictionary(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<Codes> {
        let (mut pages, dictionary) = Pages::open(chunk, file, rows)?;
        let dictionary = dictionary?;
        let values = plain_strs(&dictionary.buffer, dictionary.num_values).map(|v| v.map(Box::from)).collect::<Option<Vec<_>>>()?;
        let mut codes = Vec::with_capacity(rows);
        while let Some(page) = pages.next()? {
            let (defined, encoded) = levels(&page)?;
            let found = dictionary_codes(&page, encoded, present(&defined, page.num_values()), values.len())?;
            spread(defined, found, NULL, &mut codes);
            pages.recycle(page);
        }
        (codes.len() == rows).then_some(Codes { values, codes })
    }

    /// Any other chunk (PLAIN pages, or a dictionary that filled up and left the rest to PLAIN
    /// pages): values numbered as they are first met, so equal values share a code whichever
    /// page holds them. Slower than a dictionary's codes, so tried only when those fail.
    fn read_distinct(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<Codes> {
        let mut distinct = Distinct::default();
        let plain = |distinct: &mut Distinct, page: &[u8], count: usize| distinct.codes(page, count);
        let codes = values_per_row(chunk, file, rows, &mut distinct, plain, plain, NULL)?;
        Some(Codes { values: distinct.values, codes })
    }
}

/// The distinct values of a string column met so far, numbered in order of first sight.
#[derive(Default)]
struct Distinct {
    values: Vec<Box<str>>,
    numbers: std::collections::HashMap<Box<str>, u32, foldhash::fast::RandomState>,
}

impl Distinct {
    /// The codes of `count` PLAIN byte arrays, each valid UTF-8.
    fn codes(&mut self, bytes: &[u8], count: usize) -> Option<Vec<u32>> {
        // Each value takes 4 bytes at least: a count past that is a damaged header's.
        let mut codes = Vec::with_capacity(count.min(bytes.len() / 4));
        for value in plain_strs(bytes, count) {
            let value = value?;
            codes.push(match self.numbers.get(value) {
                Some(&code) => code,
                None => {
                    let code = u32::try_from(self.values.len()).ok().filter(|&c| c != NULL)?;
                    self.values.push(value.into());
                    self.numbers.insert(value.into(), code);
                    code
                }
            });
        }
        Some(codes)
    }
}

impl Texts {
    /// None unless `chunk` is a flat string column of PLAIN or dictionary-encoded pages whose
    /// values are valid UTF-8, decoding into `rows` rows.
    pub fn read(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<Texts> {
        if !is_string(chunk) {
            return None;
        }
        // Reserved as the footer says, up to 64 MiB (a claim, not yet a fact).
        let mut bytes = Vec::with_capacity(usize::try_from(chunk.uncompressed_size()).unwrap_or(0).min(64 << 20));
        let plain = |bytes: &mut Vec<u8>, page: &[u8], count: usize| append_plain(bytes, page, count);
        let starts = values_per_row(chunk, file, rows, &mut bytes, plain, plain, NULL)?;
        u32::try_from(bytes.len()).is_ok().then_some(Texts { bytes, starts })
    }

    /// Row `i`'s value, or None when null.
    pub fn get(&self, i: usize) -> Option<&str> {
        let start = self.starts[i];
        // SAFETY: `starts` were found by `plain_starts` in `bytes` (`Texts::read`).
        (start != NULL).then(|| unsafe { value_at(&self.bytes, start as usize) })
    }

    /// Whether row `i` has a value.
    pub fn has(&self, i: usize) -> bool {
        self.starts[i] != NULL
    }
}

impl TextTimes {
    /// None unless `chunk` is a flat string column of PLAIN or dictionary-encoded pages whose
    /// values are valid UTF-8, decoding into `rows` rows.
    pub fn read(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<TextTimes> {
        if !is_string(chunk) {
            return None;
        }
        let parse = |(dates, unreadable): &mut (DateCache, Vec<Box<str>>), page: &[u8], count: usize| {
            let (starts, _) = plain_starts(page, count, 0)?;
            let time = |start: u32| {
                // SAFETY: `start` was found by `plain_starts` in this `page` just above.
                let text = unsafe { value_at(page, start as usize) };
                match dates.parse(text) {
                    Some(time) => {
                        debug_assert!(time >= READABLE, "a four-digit year");
                        time
                    }
                    None => {
                        unreadable.push(text.into());
                        UNREADABLE + (unreadable.len() - 1) as i64
                    }
                }
            };
            Some(starts.into_iter().map(time).collect())
        };
        let mut state = (DateCache::default(), Vec::new());
        let values = values_per_row(chunk, file, rows, &mut state, parse, parse, NO_TIME)?;
        Some(TextTimes { values, unreadable: state.1 })
    }

    pub fn get(&self, i: usize) -> TextTime<'_> {
        match self.values[i] {
            NO_TIME => TextTime::Null,
            time if time >= READABLE => TextTime::Time(time),
            k => TextTime::Unreadable(&self.unreadable[(k - UNREADABLE) as usize]),
        }
    }
}

impl Ints {
    /// None unless `chunk` is a flat signed integer column (32 or 64 bits) of PLAIN or
    /// dictionary-encoded pages, decoding into `rows` rows.
    pub fn read(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<Ints> {
        let primitive = &chunk.descriptor().descriptor.primitive_type;
        let width = match primitive.physical_type {
            PhysicalType::Int32 => 4,
            PhysicalType::Int64 => 8,
            _ => return None,
        };
        let signed = match (primitive.logical_type, primitive.converted_type) {
            (None, None) => true,
            (Some(PrimitiveLogicalType::Integer(t)), _) => matches!(t, IntegerType::Int8 | IntegerType::Int16 | IntegerType::Int32 | IntegerType::Int64),
            (None, Some(t)) => matches!(t, PrimitiveConvertedType::Int8 | PrimitiveConvertedType::Int16 | PrimitiveConvertedType::Int32 | PrimitiveConvertedType::Int64),
            _ => false,
        };
        if !signed {
            return None;
        }
        Ints::read_values(chunk, file, rows, width)
    }

    /// A native timestamp column (64-bit, in milli-, micro- or nanoseconds) and the factor
    /// that makes its values microseconds (negative: divide); None for any other column.
    pub fn read_times(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<(Ints, i64)> {
        let primitive = &chunk.descriptor().descriptor.primitive_type;
        let factor = match (primitive.logical_type, primitive.converted_type) {
            (Some(PrimitiveLogicalType::Timestamp { unit, .. }), _) => match unit {
                TimeUnit::Milliseconds => 1000,
                TimeUnit::Microseconds => 1,
                TimeUnit::Nanoseconds => -1000,
            },
            (None, Some(PrimitiveConvertedType::TimestampMillis)) => 1000,
            (None, Some(PrimitiveConvertedType::TimestampMicros)) => 1,
            _ => return None,
        };
        if primitive.physical_type != PhysicalType::Int64 {
            return None;
        }
        Some((Ints::read_values(chunk, file, rows, 8)?, factor))
    }

    fn read_values(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize, width: usize) -> Option<Ints> {
        if !is_flat(chunk) {
            return None;
        }
        let plain = |_: &mut (), page: &[u8], count: usize| Some(plain_ints(page, count, width)?.into_iter().map(Some).collect());
        Some(Ints { values: values_per_row(chunk, file, rows, &mut (), plain, plain, None)? })
    }
}

/// A top-level column holding one value (or null) per row: not inside a struct or a list.
fn is_flat(chunk: &ColumnChunkMetadata) -> bool {
    let descriptor = &chunk.descriptor().descriptor;
    chunk.descriptor().path_in_schema.len() == 1 && descriptor.max_rep_level == 0 && descriptor.max_def_level <= 1
}

/// A top-level column of UTF-8 byte arrays, which polars reads as a string column.
pub(super) fn is_string(chunk: &ColumnChunkMetadata) -> bool {
    let primitive = &chunk.descriptor().descriptor.primitive_type;
    let annotated = matches!(primitive.logical_type, Some(PrimitiveLogicalType::String))
        || matches!(primitive.converted_type, Some(PrimitiveConvertedType::Utf8));
    primitive.physical_type == PhysicalType::ByteArray && annotated && is_flat(chunk)
}

/// A column chunk's data pages, still compressed (each decompressed when taken), and its
/// dictionary page, decompressed, if it has one; None if a page header claims more than the
/// chunk of `rows` rows holds (polars' reader is then left to name the damage).
pub(super) fn chunk_pages(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<(BasicDecompressor, Option<DictPage>)> {
    let range = chunk.byte_range();
    let (start, end) = (usize::try_from(range.start).ok()?, usize::try_from(range.end).ok()?);
    if start > end || end > file.len() {
        return None;
    }
    super::check::check_chunk(chunk, file, rows).ok()?;
    // No page larger than its chunk: a page header claiming more is damaged.
    let pages = PageReader::new(Cursor::new(file.clone().sliced(start..end)), chunk, Vec::new(), end - start);
    let mut pages = BasicDecompressor::new(pages, Vec::new());
    let dictionary = pages.read_dict_page().ok()?;
    Some((pages, dictionary))
}

/// Whether a data page's header claims what its chunk can hold: no more values than the
/// rows still to come, and no more bytes decompressed than the whole chunk's (which the
/// footer check bounded). Checked before decompressing, which allocates what the header says.
pub(super) fn page_fits(values: usize, uncompressed: usize, chunk_uncompressed: usize, rows_left: usize) -> bool {
    values <= rows_left && uncompressed <= chunk_uncompressed
}

/// A chunk's uncompressed size, as `page_fits` bounds its pages by.
pub(super) fn chunk_uncompressed(chunk: &ColumnChunkMetadata) -> usize {
    usize::try_from(chunk.uncompressed_size()).unwrap_or(0)
}

/// A column chunk's data pages, decompressed in order, each checked by `page_fits`.
struct Pages {
    pages: BasicDecompressor,
    chunk_uncompressed: usize,
    rows_left: usize,
}

impl Pages {
    /// The chunk's pages (of `rows` rows in all), and its dictionary page if it has one.
    fn open(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize) -> Option<(Pages, Option<DictPage>)> {
        chunk_pages(chunk, file, rows).map(|(pages, dictionary)| (Pages { pages, chunk_uncompressed: chunk_uncompressed(chunk), rows_left: rows }, dictionary))
    }

    /// The next data page (`Some(None)` after the last), or None if it cannot be read.
    fn next(&mut self) -> Option<Option<DataPage>> {
        match self.pages.next() {
            None => Some(None),
            Some(page) => {
                let page = page.ok()?;
                if !page_fits(page.num_values(), page.page().uncompressed_size(), self.chunk_uncompressed, self.rows_left) {
                    return None;
                }
                self.rows_left -= page.num_values();
                Some(Some(page.decompress(&mut self.pages).ok()?))
            }
        }
    }

    /// Gives a page's buffer back for decompressing the next one.
    fn recycle(&mut self, page: DataPage) {
        self.pages.reuse_page_buffer(page);
    }
}

/// A column chunk's values, one per row (`null` where a row is undefined): `dictionary` reads
/// the dictionary page's values and `plain` a PLAIN page's, both into `state` if they keep
/// bytes; a dictionary-encoded page picks from the dictionary's values.
fn values_per_row<S, T: Copy>(
    chunk: &ColumnChunkMetadata,
    file: &Buffer<u8>,
    rows: usize,
    state: &mut S,
    dictionary: impl Fn(&mut S, &[u8], usize) -> Option<Vec<T>>,
    plain: impl Fn(&mut S, &[u8], usize) -> Option<Vec<T>>,
    null: T,
) -> Option<Vec<T>> {
    let (mut pages, dictionary_page) = Pages::open(chunk, file, rows)?;
    let dictionary = match dictionary_page {
        Some(page) => Some(dictionary(state, &page.buffer, page.num_values)?),
        None => None,
    };
    let mut values = Vec::with_capacity(rows);
    while let Some(page) = pages.next()? {
        let (defined, encoded) = levels(&page)?;
        let present = present(&defined, page.num_values());
        let found = match page.encoding() {
            Encoding::Plain => plain(state, encoded, present)?,
            _ => {
                let dictionary = dictionary.as_ref()?;
                let codes = dictionary_codes(&page, encoded, present, dictionary.len())?;
                codes.into_iter().map(|c| dictionary[c as usize]).collect()
            }
        };
        spread(defined, found, null, &mut values);
        pages.recycle(page);
    }
    (values.len() == rows).then_some(values)
}

/// A data page's definition levels (None: a required column, every row present) and its
/// encoded values.
pub(super) fn levels(page: &DataPage) -> Option<(Option<Vec<u32>>, &[u8])> {
    let rows = page.num_values();
    let parts = split_buffer(page).ok()?;
    if page.descriptor.max_def_level == 0 {
        return Some((None, parts.values));
    }
    let defined = HybridRleDecoder::new(parts.def, 1, rows).collect().ok()?;
    (defined.len() == rows).then_some((Some(defined), parts.values))
}

/// How many of a page's `rows` rows have a value, by their definition levels (every row when
/// the column is required).
pub(super) fn present(defined: &Option<Vec<u32>>, rows: usize) -> usize {
    defined.as_ref().map_or(rows, |d| d.iter().filter(|&&l| l == 1).count())
}

/// A dictionary-encoded page's `present` codes, each checked against the dictionary's size.
pub(super) fn dictionary_codes(page: &DataPage, values: &[u8], present: usize, dictionary_len: usize) -> Option<Vec<u32>> {
    if !matches!(page.encoding(), Encoding::RleDictionary | Encoding::PlainDictionary) {
        return None;
    }
    if present == 0 {
        return Some(Vec::new());
    }
    let (&width, packed) = values.split_first()?;
    if width > 32 {
        return None;
    }
    let codes = HybridRleDecoder::new(packed, u32::from(width), present).collect().ok()?;
    (codes.len() == present && codes.iter().all(|&c| (c as usize) < dictionary_len)).then_some(codes)
}

/// Appends one value per row: the next of `found` where the row is defined, else `null`.
fn spread<T: Copy>(defined: Option<Vec<u32>>, found: Vec<T>, null: T, out: &mut Vec<T>) {
    match defined {
        None => out.extend_from_slice(&found),
        Some(levels) if levels.len() == found.len() => out.extend_from_slice(&found),
        Some(levels) => {
            let mut found = found.into_iter();
            out.extend(levels.iter().map(|&l| if l == 1 { found.next().unwrap_or(null) } else { null }));
        }
    }
}

/// `count` PLAIN byte arrays (a 4-byte little-endian length, then the bytes) as strings: an
/// item is None where the bytes end early or a value is not valid UTF-8.
fn plain_strs(mut bytes: &[u8], count: usize) -> impl Iterator<Item = Option<&str>> {
    (0..count).map(move |_| {
        let (len, rest) = bytes.split_first_chunk::<4>()?;
        let (value, rest) = rest.split_at_checked(u32::from_le_bytes(*len) as usize)?;
        bytes = rest;
        simdutf8::basic::from_utf8(value).ok()
    })
}

/// Copies `count` PLAIN byte arrays to the end of `bytes` and returns where each value starts
/// there; None unless each is valid UTF-8.
fn append_plain(bytes: &mut Vec<u8>, page: &[u8], count: usize) -> Option<Vec<u32>> {
    let (starts, end) = plain_starts(page, count, bytes.len())?;
    bytes.extend_from_slice(&page[..end]);
    Some(starts)
}

/// The value a PLAIN byte array's `start` (as `plain_starts` gives it) begins in `bytes`.
///
/// # Safety
/// `start` must be one `plain_starts` found in these very `bytes` (which it checked as UTF-8).
pub(super) unsafe fn value_at(bytes: &[u8], start: usize) -> &str {
    let len = u32::from_le_bytes(bytes[start - 4..start].try_into().expect("4 bytes")) as usize;
    let value = &bytes[start..start + len];
    // SAFETY: by the caller's promise, `plain_starts` checked this value is valid UTF-8.
    unsafe { std::str::from_utf8_unchecked(value) }
}

/// Where each of `count` PLAIN byte arrays at the start of `page` begins, plus `base`, and
/// where the last ends; None unless each is valid UTF-8. The whole run is validated at once:
/// its lengths are then ASCII bytes unless a value is 128 bytes or longer (such a run is
/// checked value by value), and a value whose next byte continues a character is refused.
pub(super) fn plain_starts(page: &[u8], count: usize, base: usize) -> Option<(Vec<u32>, usize)> {
    // Each value takes 4 bytes at least: a count past that is a damaged header's.
    let mut starts = Vec::with_capacity(count.min(page.len() / 4) + 1);
    let mut at = 0usize;
    for _ in 0..count {
        let len = u32::from_le_bytes(page.get(at..at + 4)?.try_into().ok()?) as usize;
        let start = at + 4;
        at = start.checked_add(len).filter(|&end| end <= page.len())?;
        starts.push(u32::try_from(base + start).ok()?);
        if page.get(at).is_some_and(|&b| (b as i8) < -0x40) {
            return None;
        }
    }
    let run = &page[..at];
    if simdutf8::basic::from_utf8(run).is_err() {
        let each_valid = starts.iter().all(|&s| {
            let s = s as usize - base;
            let len = u32::from_le_bytes(run[s - 4..s].try_into().expect("4 bytes")) as usize;
            simdutf8::basic::from_utf8(&run[s..s + len]).is_ok()
        });
        if !each_valid {
            return None;
        }
    }
    Some((starts, at))
}

/// `count` PLAIN integers of `width` bytes (4 or 8), little-endian, as i64.
fn plain_ints(bytes: &[u8], count: usize, width: usize) -> Option<Vec<i64>> {
    let bytes = bytes.get(..count.checked_mul(width)?)?;
    Some(match width {
        4 => bytes.chunks_exact(4).map(|b| i64::from(i32::from_le_bytes(b.try_into().expect("4 bytes")))).collect(),
        _ => bytes.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes"))).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(values: &[&[u8]]) -> Vec<u8> {
        values.iter().flat_map(|v| (v.len() as u32).to_le_bytes().into_iter().chain(v.iter().copied())).collect()
    }

    #[test]
    fn plain_values_keep_their_bytes_and_refuse_broken_utf8() {
        let long = "é".repeat(100); // 200 bytes: its length is not an ASCII byte
        let page = plain(&[b"cap-1", "näive".as_bytes(), b"", long.as_bytes()]);
        let mut bytes = b"earlier".to_vec();
        let starts = append_plain(&mut bytes, &page, 4).unwrap();
        let texts = Texts { bytes, starts: starts.into_iter().chain([NULL]).collect() };
        let got: Vec<Option<&str>> = (0..5).map(|i| texts.get(i)).collect();
        assert_eq!(got, [Some("cap-1"), Some("näive"), Some(""), Some(long.as_str()), None]);

        // A value ending inside a character, even when the next length byte would complete it.
        let cut = plain(&[&[b'a', 0xC3], &[0u8; 0x85]]);
        assert!(append_plain(&mut Vec::new(), &cut, 2).is_none());
        assert!(append_plain(&mut Vec::new(), &plain(&[&[0xFF, b'a']]), 1).is_none());
        // Truncated: a length running past the page, or fewer values than counted.
        assert!(append_plain(&mut Vec::new(), &page[..page.len() - 1], 4).is_none());
        assert!(append_plain(&mut Vec::new(), &page, 5).is_none());
    }

    #[test]
    fn definition_levels_spread_values_over_rows() {
        let mut out = vec![9];
        spread(Some(vec![1, 0, 1, 0]), vec![4, 5], NULL, &mut out);
        spread(None, vec![6], NULL, &mut out);
        assert_eq!(out, [9, 4, NULL, 5, NULL, 6]);
        assert_eq!(plain_ints(&[1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF], 2, 4), Some(vec![1, -1]));
        assert_eq!(plain_ints(&[1, 0, 0, 0], 2, 4), None);
    }
}
