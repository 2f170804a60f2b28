//! A Parquet footer checked against the file it describes before anything is sized by it:
//! polars allocates by row counts and chunk sizes, so a footer claiming 10^12 rows or a 1 TiB
//! column chunk would exhaust memory (an abort, which no error handling can turn back).

use polars::prelude::FileMetadata;

/// Rows a byte of a row group's uncompressed column data can hold at most: one bit a row. A
/// constant column holds any number in a few bytes, but every real dump has a column that
/// varies by row (its ids), which takes a bit a row at least.
const ROWS_PER_BYTE: u64 = 8;
/// Rows any row group may claim whatever its size.
const FREE_ROWS: u64 = 1 << 16;
/// How much larger uncompressed data may be than compressed, and a floor for small chunks.
const MAX_RATIO: u64 = 1 << 14;
const FREE_BYTES: u64 = 1 << 24;

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
            // The chunk starts at its first page (the dictionary's, when it comes first).
            let (data, dictionary) = (chunk.data_page_offset(), chunk.dictionary_page_offset());
            if data < 0 || dictionary.is_some_and(|d| d < 0) {
                return Err(format!("{}: a negative page offset", at(&name)));
            }
            let start = dictionary.filter(|&d| d < data).unwrap_or(data) as u64;
            if data as u64 >= file_len || start.checked_add(compressed).is_none_or(|end| end > file_len) {
                return Err(format!("{}: pages at byte {start} of {compressed} bytes lie outside the file's {file_len} bytes", at(&name)));
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
    Ok(())
}
