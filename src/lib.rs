//! dlqf: dead-letter queue forensics. Reads archived DLQ dumps, buckets failures by a
//! normalised signature and ranks the causes; the CLI in `main.rs` is a thin layer over this.
//!
//! The folders are the pipeline: `source` (inputs to rows) → `profile`/`signature` (rows to
//! signatures) → `analyze` (groups and rankings) → `report` (renderings); `state` saves and
//! merges what a run read. `gen` makes dumps.

pub mod analyze;
pub mod aws;
pub mod contain;
pub mod execute;
pub mod gen;
pub mod json_scan;
pub mod lines;
pub mod manifest;
pub mod messages;
pub mod origin;
pub mod path;
pub mod plan;
pub mod raw_json;
pub mod redact;
pub mod profile;
pub mod report;
pub mod returned;
pub mod signature;
pub mod source;
pub mod state;
pub mod storage;
pub mod strict_json;
pub mod temp;
#[cfg(test)]
mod testing;
pub mod timestamp;
pub mod values;
