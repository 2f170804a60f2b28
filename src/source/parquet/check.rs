//! A Parquet footer checked against the file it describes before anything is sized by it:
//! polars allocates by row counts and chunk sizes, so a footer claiming 10^12 rows or a 1 TiB
//! column chunk would exhaust memory (an abort, which no error handling can turn back).

use polars::prelude::FileMetadata;
use polars_parquet::parquet::metadata::ColumnChunkMetadata;

/// Rows a byte of a row group's uncompressed column data can hold at most: one bit a row. A
/// constant column holds any number in a few bytes, but every real dump has a column that
/// varies by row (its ids), which takes a bit a row at least.
const ROWS_PER_BYTE: u64 = 8;
/// Rows any row group may claim whatever its size.
const FREE_ROWS: u64 = 1 << 16;
/// How much larger uncompressed data may be than compressed, and a floor for small chunks.
const MAX_RATIO: u64 = 1 << 14;
const FREE_BYTES: u64 = 1 << 24;
/// Rows a file may claim a byte of its size, in all its row groups: the claimed uncompressed
/// sizes above are free up to `FREE_BYTES`, so they alone would let a 2 KB file claim a
/// billion rows. Real dumps hold well under one row a byte.
const ROWS_PER_FILE_BYTE: u64 = 64;
/// How much larger a page may be uncompressed than compressed, and a floor every page may use:
/// decompressors zero-fill what a page header claims before reading a byte.
const PAGE_RATIO: u64 = 1 << 10;
const FREE_PAGE_BYTES: u64 = 8 << 20;

/// Whether `metadata` fits a file of `file_len` bytes: every column chunk lies within the
/// file, no size or count is negative, no row group claims more rows or uncompressed bytes
/// than its data can hold. The error names the row group and column.
pub fn check(metadata: &FileMetadata, file_len: u64) -> Result<(), String> {
    let mut rows_before = 0u64;
    for (g, rg) in metadata.row_groups.iter().enumerate() {
        let at = |column: &str| format!("row group {g} (row {}), column `{column}`", rows_before + 1);
        let mut uncompressed_total = 0u64;
        for chunk in rg.parquet_columns() {
            let name = chunk.descriptor().path_in_schema.join(".");
            let (compressed, uncompressed, values) = (chunk.compressed_size(), chunk.uncompressed_size(), chunk.num_values());
            if compressed < 0 || uncompressed < 0 || values < 0 {
                return Err(format!("{}: a negative size or count ({compressed} bytes compressed, {uncompressed} uncompressed, {values} values)", at(&name)));
            }
            let (compressed, uncompressed) = (compressed as u64, uncompressed as u64);
            // An empty row group's chunks hold no page (pyarrow points them at byte 0).
            if compressed == 0 && values == 0 {
                continue;
            }
            // The chunk starts at its dictionary page when it has one (as readers take it),
            // and its data pages lie within it.
            let (data, dictionary) = (chunk.data_page_offset(), chunk.dictionary_page_offset());
            if data < 0 || dictionary.is_some_and(|d| d < 0) {
                return Err(format!("{}: a negative page offset", at(&name)));
            }
            let start = dictionary.unwrap_or(data) as u64;
            let Some(end) = start.checked_add(compressed).filter(|&end| end <= file_len) else {
                return Err(format!("{}: pages at byte {start} of {compressed} bytes lie outside the file's {file_len} bytes", at(&name)));
            };
            // A chunk of no values has no data pages to place (pyarrow points it at byte 0).
            if values > 0 && !(start..end).contains(&(data as u64)) {
                return Err(format!("{}: the data pages at byte {data} lie outside the chunk's bytes {start}..{end}", at(&name)));
            }
            if uncompressed > compressed.saturating_mul(MAX_RATIO).max(FREE_BYTES) {
                return Err(format!("{}: {uncompressed} bytes uncompressed cannot come from {compressed} compressed", at(&name)));
            }
            uncompressed_total = uncompressed_total.saturating_add(uncompressed);
        }
        let rows = rg.num_rows() as u64;
        if rows > uncompressed_total.saturating_mul(ROWS_PER_BYTE).max(FREE_ROWS) {
            return Err(format!("row group {g} (row {}): {rows} rows cannot fit in {uncompressed_total} bytes of column data", rows_before + 1));
        }
        rows_before = rows_before.saturating_add(rows);
    }
    if rows_before > file_len.saturating_mul(ROWS_PER_FILE_BYTE).max(FREE_ROWS) {
        return Err(format!("{rows_before} rows cannot fit in a file of {file_len} bytes"));
    }
    Ok(())
}

/// `check_pages` for one column chunk of a row group of `rows` rows, read from `file` (the
/// file's bytes, or a buffer as large holding the chunk's bytes in place).
pub fn check_chunk(chunk: &ColumnChunkMetadata, file: &[u8], rows: usize) -> Result<(), String> {
    let range = chunk.byte_range();
    let (start, end) = (usize::try_from(range.start), usize::try_from(range.end));
    let pages = start.ok().zip(end.ok()).and_then(|(start, end)| file.get(start..end)).ok_or("the chunk lies outside the file")?;
    let levels = Levels { repeated: chunk.descriptor().descriptor.max_rep_level > 0, optional: chunk.descriptor().descriptor.max_def_level > 0 };
    check_pages(pages, u64::try_from(chunk.uncompressed_size()).unwrap_or(0), rows as u64, levels)
}

/// Which levels a column's data pages hold before their values: repetition levels when it is
/// repeated (a list), definition levels when any value may be null.
#[derive(Clone, Copy, Default)]
pub struct Levels {
    pub repeated: bool,
    pub optional: bool,
}

impl Levels {
    /// The bytes a version 1 data page holds at least: each kind of levels starts with its
    /// length in 4 bytes (readers take those 4 bytes without looking).
    fn v1_least_bytes(self) -> i64 {
        4 * (i64::from(self.repeated) + i64::from(self.optional))
    }

    fn named(self) -> &'static str {
        match (self.repeated, self.optional) {
            (false, false) => "no levels",
            (false, true) => "definition levels only",
            (true, false) => "repetition levels only",
            (true, true) => "both levels",
        }
    }
}

/// Values a page of a repeated column may claim beyond the rows left: lists of nulls or empty
/// lists are runs of levels, a few bytes for any number, so the bound is loose.
const FREE_VALUES: u64 = 1 << 20;

/// Whether the page headers of one column chunk (`chunk`, its bytes) claim what the chunk can
/// hold: every page within the chunk, none larger uncompressed than the whole chunk (which
/// `check` bounded) or than `PAGE_RATIO` times its compressed bytes, no more values than the group's `rows` left (for a `repeated` column,
/// than that plus eight a byte or `FREE_VALUES`), a dictionary no more values than bytes,
/// every encoding one Parquet has, the levels before a data page's values within the page
/// (a version 1 page holds their 4-byte lengths; a version 2 page says theirs).
/// Read before any page is decompressed, since decoders allocate what a header says.
pub fn check_pages(chunk: &[u8], uncompressed: u64, rows: u64, levels: Levels) -> Result<(), String> {
    crate::contain::contained(|| pages(chunk, uncompressed, rows, levels)).unwrap_or_else(|panic| Err(format!("a page header cannot be parsed ({panic})")))
}

fn pages(chunk: &[u8], chunk_uncompressed: u64, rows: u64, levels: Levels) -> Result<(), String> {
    let repeated = levels.repeated;
    use polars_parquet_format::thrift::protocol::TCompactInputProtocol;
    let mut at = 0usize;
    let mut rows_left = rows;
    while at < chunk.len() {
        let mut rest = &chunk[at..];
        let header = polars_parquet_format::PageHeader::read_from_in_protocol(&mut TCompactInputProtocol::new(&mut rest, chunk.len() - at))
            .map_err(|e| format!("the page header at byte {at} of the chunk cannot be parsed: {e}"))?;
        let header_len = chunk.len() - at - rest.len();
        let (compressed, uncompressed) = (header.compressed_page_size, header.uncompressed_page_size);
        let place = || format!("the page at byte {at} of the chunk");
        let fits = u64::try_from(compressed).ok().and_then(|c| (at + header_len).checked_add(usize::try_from(c).ok()?)).filter(|&end| end <= chunk.len());
        let Some(end) = fits else {
            return Err(format!("{} claims {compressed} bytes where the chunk has {} left", place(), chunk.len() - at - header_len));
        };
        if u64::try_from(uncompressed).map_or(true, |u| u > chunk_uncompressed) {
            return Err(format!("{} claims {uncompressed} bytes uncompressed, the whole chunk {chunk_uncompressed}", place()));
        }
        if uncompressed as u64 > (compressed as u64).saturating_mul(PAGE_RATIO).max(FREE_PAGE_BYTES) {
            return Err(format!("{} claims {uncompressed} bytes uncompressed from {compressed}", place()));
        }
        // Readers turn these enums into their own with an unwrap: an unknown one is a panic.
        let known = |e: polars_parquet_format::Encoding| polars_parquet::parquet::encoding::Encoding::try_from(e).is_ok();
        let encodings_known = header.data_page_header.as_ref().is_none_or(|h| known(h.encoding) && known(h.definition_level_encoding) && known(h.repetition_level_encoding))
            && header.data_page_header_v2.as_ref().is_none_or(|h| known(h.encoding))
            && header.dictionary_page_header.as_ref().is_none_or(|h| known(h.encoding));
        if !encodings_known {
            return Err(format!("{} names an encoding Parquet does not have", place()));
        }
        // Readers split a data page at its levels' lengths without a bound.
        if header.data_page_header.is_some() && i64::from(compressed.min(uncompressed)) < levels.v1_least_bytes() {
            return Err(format!("{} holds {} bytes, too few for its levels' lengths", place(), compressed.min(uncompressed)));
        }
        if let Some(v2) = &header.data_page_header_v2 {
            let (rep, def) = (v2.repetition_levels_byte_length, v2.definition_levels_byte_length);
            if rep < 0 || def < 0 || i64::from(rep) + i64::from(def) > i64::from(compressed.min(uncompressed)) {
                return Err(format!("{} says its levels take {rep} and {def} bytes of its {}", place(), compressed.min(uncompressed)));
            }
            // A column without repetition (or definition) levels has no bytes of them.
            if (rep > 0 && !levels.repeated) || (def > 0 && !levels.optional) {
                return Err(format!("{} says its levels take {rep} and {def} bytes where the column has {}", place(), levels.named()));
            }
        }
        let data = header.data_page_header.as_ref().map(|h| (h.num_values, None)).or(header.data_page_header_v2.as_ref().map(|h| (h.num_values, Some(h.num_rows))));
        if let Some((values, page_rows)) = data {
            let values = u64::try_from(values).map_err(|_| format!("{} claims {values} values", place()))?;
            let most = if repeated { rows_left.saturating_add((uncompressed as u64).saturating_mul(8)).max(FREE_VALUES) } else { rows_left };
            if values > most {
                return Err(format!("{} claims {values} values where {rows_left} rows are left", place()));
            }
            let page_rows = match page_rows {
                Some(r) => u64::try_from(r).ok().filter(|&r| r <= rows_left).ok_or_else(|| format!("{} claims {r} rows where {rows_left} are left", place()))?,
                None if !repeated => values,
                None => 0,
            };
            rows_left -= page_rows;
        }
        if let Some(dictionary) = &header.dictionary_page_header {
            if u64::try_from(dictionary.num_values).map_or(true, |v| v > (uncompressed as u64).max(1)) {
                return Err(format!("{} claims a dictionary of {} values in {uncompressed} bytes", place(), dictionary.num_values));
            }
        }
        at = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use polars_parquet_format::thrift::protocol::TCompactOutputProtocol;
    use polars_parquet_format::{DataPageHeader, DataPageHeaderV2, DictionaryPageHeader, Encoding, PageHeader, PageType};

    use super::{check_pages, Levels};

    const FLAT: Levels = Levels { repeated: false, optional: false };
    const LIST: Levels = Levels { repeated: true, optional: true };

    /// A page as a writer lays it out: its Thrift header, then `compressed` bytes.
    fn page(kind: PageType, values: i32, uncompressed: i32, compressed: i32) -> Vec<u8> {
        let (data, dictionary) = match kind {
            PageType::DICTIONARY_PAGE => (None, Some(DictionaryPageHeader::new(values, Encoding::PLAIN, None))),
            _ => (Some(DataPageHeader::new(values, Encoding::PLAIN, Encoding::RLE, Encoding::RLE, None)), None),
        };
        let header = PageHeader::new(kind, uncompressed, compressed, None, data, None, dictionary, None);
        let mut bytes = Vec::new();
        header.write_to_out_protocol(&mut TCompactOutputProtocol::new(&mut bytes)).unwrap();
        bytes.resize(bytes.len() + compressed.max(0) as usize, 7);
        bytes
    }

    fn chunk(pages: &[Vec<u8>]) -> Vec<u8> {
        pages.concat()
    }

    #[test]
    fn pages_that_fit_their_chunk_pass() {
        let bytes = chunk(&[page(PageType::DICTIONARY_PAGE, 10, 200, 100), page(PageType::DATA_PAGE, 600, 4_000, 300), page(PageType::DATA_PAGE, 400, 3_000, 200)]);
        check_pages(&bytes, 7_200, 1_000, FLAT).unwrap();
        // Up to 8 MiB uncompressed is allowed from any page, and a repeated column may hold
        // more values than rows.
        check_pages(&chunk(&[page(PageType::DATA_PAGE, 5_000, 8 << 20, 10)]), 8 << 20, 1_000, LIST).unwrap();
    }

    #[test]
    fn a_page_claiming_more_than_its_chunk_holds_is_refused() {
        let refused = |pages: &[Vec<u8>], chunk_uncompressed: u64, rows: u64| check_pages(&chunk(pages), chunk_uncompressed, rows, FLAT).unwrap_err();
        let why = refused(&[page(PageType::DICTIONARY_PAGE, 10, i32::MAX, 100)], 1 << 40, 10);
        assert!(why.contains("claims 2147483647 bytes uncompressed from 100"), "{why}");
        let why = refused(&[page(PageType::DATA_PAGE, 10, 5_000, 100)], 4_000, 10);
        assert!(why.contains("claims 5000 bytes uncompressed, the whole chunk 4000"), "{why}");
        let why = refused(&[page(PageType::DATA_PAGE, 600, 4_000, 300), page(PageType::DATA_PAGE, 401, 3_000, 200)], 7_000, 1_000);
        assert!(why.contains("claims 401 values where 400 rows are left"), "{why}");
        let why = refused(&[page(PageType::DATA_PAGE, -1, 100, 10)], 100, 10);
        assert!(why.contains("claims -1 values"), "{why}");
        let why = refused(&[page(PageType::DICTIONARY_PAGE, 1_000, 100, 100)], 100, 10);
        assert!(why.contains("a dictionary of 1000 values in 100 bytes"), "{why}");
        let mut cut = page(PageType::DATA_PAGE, 10, 100, 50);
        cut.truncate(cut.len() - 1);
        let why = refused(&[cut], 100, 10);
        assert!(why.contains("claims 50 bytes where the chunk has 49 left"), "{why}");
    }

    #[test]
    fn levels_must_fit_their_page() {
        // A version 1 page of an optional column starts with its definition levels' length.
        let optional = Levels { repeated: false, optional: true };
        let why = check_pages(&page(PageType::DATA_PAGE, 10, 0, 10), 10, 10, optional).unwrap_err();
        assert!(why.contains("holds 0 bytes, too few for its levels' lengths"), "{why}");
        let why = check_pages(&page(PageType::DATA_PAGE, 10, 7, 7), 10, 10, LIST).unwrap_err();
        assert!(why.contains("holds 7 bytes"), "{why}");
        check_pages(&page(PageType::DATA_PAGE, 10, 8, 8), 10, 10, LIST).unwrap();
        check_pages(&page(PageType::DATA_PAGE, 0, 0, 0), 10, 10, FLAT).unwrap();
        // A version 2 page says its levels' lengths: they lie within the page.
        let v2 = |rep: i32, def: i32, size: i32, levels: Levels| {
            let header = DataPageHeaderV2::new(10, 0, 10, Encoding::PLAIN, def, rep, None, None);
            let header = PageHeader::new(PageType::DATA_PAGE_V2, size, size, None, None, None, None, Some(header));
            let mut bytes = Vec::new();
            header.write_to_out_protocol(&mut TCompactOutputProtocol::new(&mut bytes)).unwrap();
            bytes.resize(bytes.len() + size as usize, 0);
            check_pages(&bytes, 1_000, 10, levels)
        };
        v2(20, 30, 100, LIST).unwrap();
        v2(0, 100, 100, LIST).unwrap();
        for (rep, def) in [(1000, 0), (0, 101), (60, 41), (-1, 0), (0, -5)] {
            let why = v2(rep, def, 100, LIST).unwrap_err();
            assert!(why.contains(&format!("says its levels take {rep} and {def} bytes of its 100")), "{why}");
        }
        let why = v2(10, 0, 100, Levels { repeated: false, optional: true }).unwrap_err();
        assert!(why.contains("says its levels take 10 and 0 bytes where the column has definition levels only"), "{why}");
        let why = v2(0, 1, 100, FLAT).unwrap_err();
        assert!(why.contains("where the column has no levels"), "{why}");
        v2(0, 0, 100, FLAT).unwrap();
    }

    #[test]
    fn an_encoding_parquet_does_not_have_is_refused() {
        let mut header = PageHeader::new(PageType::DATA_PAGE, 100, 10, None, Some(DataPageHeader::new(5, Encoding(42), Encoding::RLE, Encoding::RLE, None)), None, None, None);
        let mut bytes = Vec::new();
        header.write_to_out_protocol(&mut TCompactOutputProtocol::new(&mut bytes)).unwrap();
        bytes.resize(bytes.len() + 10, 0);
        let why = check_pages(&bytes, 100, 5, FLAT).unwrap_err();
        assert!(why.contains("names an encoding Parquet does not have"), "{why}");
        header.data_page_header.as_mut().unwrap().encoding = Encoding::PLAIN;
        bytes.clear();
        header.write_to_out_protocol(&mut TCompactOutputProtocol::new(&mut bytes)).unwrap();
        bytes.resize(bytes.len() + 10, 0);
        check_pages(&bytes, 100, 5, FLAT).unwrap();
    }

    #[test]
    fn bytes_that_are_no_page_header_are_an_error_not_a_panic() {
        for bytes in [vec![0xFF; 64], vec![0x15, 0x00, 0x15], (0..=255).collect::<Vec<u8>>()] {
            assert!(check_pages(&bytes, 1 << 20, 100, FLAT).is_err());
        }
    }
}
