//! Decoding: inputs (JSON-lines or Parquet, wherever `storage` finds them) become rows of
//! cells, each accepted through the profile or rejected with a reason, and reach their
//! consumer through one of three drivers: `fold` (rank, trend, health), `records` (plan, in
//! order) and `table` (query's raw records).
//!
//! Each format is a family of its own, `json` and `parquet`, neither importing the other; both
//! import `row` (the format-neutral half: layout, field tree, tallies, accumulators) and
//! `input`. Only the top-level modules put them together: `scan` (the drivers), `aligned`
//! (an S3-sink chunk's files read together) and `table`.

mod aligned;
mod input;
mod json;
mod parquet;
mod row;
mod scan;
mod table;

pub use input::{format_from_name, hive_folders, inputs, partition_outside, prune_partitions, Compression, Format, Input, Window, STATE_HEAD};
pub use json::{decompressed, is_document, sniffed, FieldPicker, WRAPPERS};
pub use parquet::footer_value as parquet_footer_value;
pub use parquet::check_whole as check_parquet;
pub use row::layout;
pub use row::{Accumulator, ColumnRecords, FirstTimes, FullRow, NumberedRows, ReasonKinds, Record, Reject, Tally, NAMED_REJECTS};
pub use scan::Scan;
pub use table::{Ndjson, RawTable};
