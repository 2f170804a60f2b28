//! Decoding: inputs (JSON-lines or Parquet, wherever `storage` finds them) become rows of
//! cells, each accepted through the profile or rejected with a reason, and reach their
//! consumer through one of three drivers: `fold` (rank, trend, health), `records` (plan, in
//! order) and `table` (query's raw records).

mod accumulator;
mod aligned;
mod document;
mod field_tree;
mod fields;
mod input;
pub mod json_fields;
mod json_shape;
mod json_walk;
mod jsonl;
pub mod layout;
mod parquet;
mod parquet_check;
mod parquet_fold;
mod parquet_late;
mod first_times;
mod parquet_pages;
mod parquet_json;
mod parquet_nested;
mod rows;
mod scan;
mod table;
mod tally;

pub use accumulator::{Accumulator, NumberedRows};
pub use first_times::FirstTimes;
pub use input::{format_from_name, hive_folders, inputs, partition_outside, prune_partitions, Compression, Format, Input, Window, STATE_HEAD};
pub use json_fields::FieldPicker;
pub use rows::{ColumnRecords, FullRow, Record};
pub use scan::Scan;
pub use table::{Ndjson, RawTable};
pub use tally::{ReasonKinds, Reject, Tally, NAMED_REJECTS};
