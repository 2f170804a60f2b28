//! Everything a run reads as one partial: the states among its inputs, read and checked (same
//! rules, no dump covered twice), and its dumps scanned per signature and hour.

use anyhow::Result;

use super::{check_mergeable, read, InputRecord, Partial, Rules};
use crate::analyze::summary::HourlyGroups;
use crate::profile::Profile;
use crate::source::{Input, Scan};
use crate::storage::Location;

/// The partial of `dumps` and `states` together, for the whole time they cover.
pub fn gather(scan: &Scan, profile: &Profile, dumps: &[Input], states: &[Input]) -> Result<Partial> {
    let rules = Rules::of(profile);
    let mut read_states = Vec::new();
    for input in states {
        read_states.extend(read(&scan.storage.read_all(&input.location)?, &input.display)?);
    }
    let mut records: Vec<InputRecord> = dumps.iter().map(input_record).collect();
    check_mergeable(&read_states, &rules, &records)?;
    super::check_parts(&read_states)?;

    let (hourly, tally) = scan.fold(dumps, HourlyGroups::default)?;
    records.iter_mut().zip(&tally.rejected_by_input).for_each(|(r, &n)| r.rejected = n);
    let mut partial = Partial { summary: hourly.finish(scan.layout), inputs: records, rejects: tally.rejects };
    partial.merge(read_states.into_iter().map(|s| s.partial));
    Ok(partial)
}

/// A dump as a state records it: its identity (absolute path or URL), size and version.
fn input_record(input: &Input) -> InputRecord {
    let name = match &input.location {
        Location::File(path) => path.canonicalize().map(|c| c.to_string_lossy().into_owned()).unwrap_or_else(|_| input.display.clone()),
        Location::S3 { .. } => input.display.clone(),
        Location::Std => "-".to_string(),
    };
    InputRecord { name, size: input.size, modified: input.modified(), etag: input.etag.clone(), rejected: 0 }
}
