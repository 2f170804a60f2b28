//! An id column read late: its pages are decompressed only when a row of theirs is asked for.
//! A fold wants few ids (a bucket's first failure), so most of a large id column is never read.

use std::cell::{Cell, OnceCell, RefCell};

use polars_buffer::Buffer;
use polars_parquet::parquet::encoding::Encoding;
use polars_parquet::parquet::metadata::ColumnChunkMetadata;
use polars_parquet::parquet::error::ParquetResult;
use polars_parquet::parquet::page::{DataPage, DictPage};
use polars_parquet::parquet::read::BasicDecompressor;

use super::pages::{chunk_pages, chunk_uncompressed, dictionary_codes, is_string, levels, page_fits, plain_starts, present, value_at, Texts};

/// A row group's ids: read with the other columns, or page by page as they are asked for.
pub(in crate::source) enum Ids {
    Read(Texts),
    Late(LateTexts),
}

impl Ids {
    /// Whether row `i` has an id (a late column has one in every row).
    pub fn has(&self, i: usize) -> bool {
        match self {
            Ids::Read(texts) => texts.has(i),
            Ids::Late(_) => true,
        }
    }

    /// Row `i`'s id: None when null, or when its page is unreadable (see `unreadable`).
    pub fn get(&self, i: usize) -> Option<&str> {
        match self {
            Ids::Read(texts) => texts.get(i),
            Ids::Late(late) => late.get(i),
        }
    }

    /// Whether a page asked for could not be read: what was asked of it is then wrong.
    pub fn unreadable(&self) -> bool {
        matches!(self, Ids::Late(late) if late.unreadable.get())
    }
}

/// A string column with a value in every row (the column is required, or its statistics count
/// no null), kept compressed page by page until a row of the page is asked for; then the page
/// is decompressed, its values checked as UTF-8, and kept.
pub(in crate::source) struct LateTexts {
    decompressor: RefCell<BasicDecompressor>,
    /// The dictionary page, decompressed, and where each of its values starts.
    dictionary: Option<(DictPage, Vec<u32>)>,
    pages: Vec<LatePage>,
    unreadable: Cell<bool>,
}

struct LatePage {
    first_row: usize,
    rows: usize,
    /// Decompresses the page (taken when it is decoded).
    compressed: Cell<Option<Decompress>>,
    values: OnceCell<Option<PageValues>>,
}

type Decompress = Box<dyn FnOnce(&mut BasicDecompressor) -> ParquetResult<DataPage> + Send>;

/// A decoded page: where each row's value starts, in `bytes` (the decompressed page), or in
/// the dictionary page when `bytes` is empty.
struct PageValues {
    bytes: Vec<u8>,
    starts: Vec<u32>,
}

impl LateTexts {
    /// None unless `chunk` is a flat string column of `rows` rows with a value in each (as its
    /// statistics or its schema say), whose dictionary page (if any) is valid UTF-8.
    pub fn read(chunk: &ColumnChunkMetadata, file: &Buffer<u8>, rows: usize, footer: &[u8]) -> Option<LateTexts> {
        let required = chunk.descriptor().descriptor.max_def_level == 0;
        let no_nulls = || chunk.statistics(footer).and_then(Result::ok).is_some_and(|s| s.null_count() == Some(0));
        if !is_string(chunk) || !(required || no_nulls()) {
            return None;
        }
        let (mut decompressor, dictionary) = chunk_pages(chunk, file, rows)?;
        let dictionary = match dictionary {
            Some(page) => {
                let (starts, _) = plain_starts(&page.buffer, page.num_values, 0)?;
                Some((page, starts))
            }
            None => None,
        };
        let mut pages = Vec::new();
        let mut first_row = 0;
        for item in decompressor.by_ref() {
            let item = item.ok()?;
            if !page_fits(item.num_values(), item.page().uncompressed_size(), chunk_uncompressed(chunk), rows - first_row) {
                return None;
            }
            let rows = item.num_values();
            let decompress: Decompress = Box::new(move |decompressor| item.decompress(decompressor));
            pages.push(LatePage { first_row, rows, compressed: Cell::new(Some(decompress)), values: OnceCell::new() });
            first_row += rows;
        }
        (first_row == rows).then(|| LateTexts { decompressor: RefCell::new(decompressor), dictionary, pages, unreadable: Cell::new(false) })
    }

    fn get(&self, i: usize) -> Option<&str> {
        let page = self.pages.get(self.pages.partition_point(|p| p.first_row + p.rows <= i))?;
        let Some(values) = page.values.get_or_init(|| self.decode(page)) else {
            self.unreadable.set(true);
            return None;
        };
        let start = values.starts[i - page.first_row] as usize;
        Some(match &self.dictionary {
            // SAFETY: the starts were found by `plain_starts` in the buffer each is read from:
            // the dictionary's when a page holds codes (its bytes empty), else the page's own.
            Some((dictionary, _)) if values.bytes.is_empty() => unsafe { value_at(&dictionary.buffer, start) },
            _ => unsafe { value_at(&values.bytes, start) },
        })
    }

    /// Decompresses and decodes one page: None if it cannot be read, is neither PLAIN nor
    /// dictionary-encoded, holds a null or invalid UTF-8.
    fn decode(&self, page: &LatePage) -> Option<PageValues> {
        let decompress = page.compressed.take()?;
        let mut decompressor = self.decompressor.borrow_mut();
        let mut data = decompress(&mut decompressor).ok()?;
        let (defined, values) = levels(&data)?;
        if present(&defined, page.rows) != page.rows {
            return None;
        }
        if matches!(data.encoding(), Encoding::Plain) {
            let (base, len) = (values.as_ptr() as usize - data.buffer().as_ptr() as usize, values.len());
            let bytes = std::mem::take(data.buffer_mut());
            let (starts, _) = plain_starts(&bytes[base..base + len], page.rows, base)?;
            return Some(PageValues { bytes, starts });
        }
        let (_, dictionary) = self.dictionary.as_ref()?;
        let codes = dictionary_codes(&data, values, page.rows, dictionary.len())?;
        let starts = codes.iter().map(|&c| dictionary[c as usize]).collect();
        decompressor.reuse_page_buffer(data);
        Some(PageValues { bytes: Vec::new(), starts })
    }
}
