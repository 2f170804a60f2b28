//! JSON reports: the stable machine contract (`dlqf.rank/1`, …), pretty-printed, one trailing
//! newline. Field order is fixed by the report structs.

use anyhow::Result;
use serde::Serialize;

pub fn render<T: Serialize>(report: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(report)?;
    bytes.push(b'\n');
    Ok(bytes)
}
