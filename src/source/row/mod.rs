//! The format-neutral half of decoding, shared by every decoder: a row's cells become its
//! signature key and facts through the layout, and are counted, accepted and folded alike.

mod accumulator;
mod fields;
mod first_times;
pub mod layout;
pub(super) mod rows;
pub(super) mod tally;
pub(super) mod tree;

pub use accumulator::{Accumulator, NumberedRows};
pub use first_times::FirstTimes;
pub use rows::{ColumnRecords, FullRow, Record};
pub use tally::{ReasonKinds, Reject, Tally, NAMED_REJECTS};
