//! What an input is: a file, object or stdin in a known format (by its name, else its first
//! bytes), resolved from the arguments, with what it is read with (partition folders, siblings).

use std::collections::HashSet;

use anyhow::{Context, Result};

use crate::storage::{Location, Storage};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Parquet,
    Jsonl(Compression),
    /// A partial state (`dlqf.state/1`): counts, not rows; read by `state`, not decoded here.
    State,
}

/// One concrete input with a known format.
#[derive(Clone, Debug)]
pub struct Input {
    /// How the input is named in messages: the path or URL as found.
    pub display: String,
    pub location: Location,
    pub format: Format,
    pub size: Option<u64>,
    /// S3 objects: the ETag when listed.
    pub etag: Option<String>,
    /// The `.keys` and `.headers` files of an S3-sink chunk whose values file this is.
    pub aligned: Option<Siblings>,
}

/// What rows are read with from their input besides their own bytes.
#[derive(Default)]
pub(super) struct InputContext {
    /// The hive partition folders the input lies in.
    pub(super) partition: Vec<(String, String)>,
    /// The input is an aligned S3-sink chunk.
    pub(super) aligned: bool,
    /// The input's path or URL as found (`$path[N]` reads its segments).
    pub(super) path: String,
}

impl InputContext {
    pub(super) fn of(input: &Input) -> InputContext {
        InputContext { partition: hive_folders(&input.display), aligned: input.aligned.is_some(), path: input.display.clone() }
    }
}

/// The hive partition folders (`key=value`) a name lies in, outermost first.
pub fn hive_folders(name: &str) -> Vec<(String, String)> {
    let folders = name.rsplit_once('/').map_or("", |(dirs, _)| dirs);
    folders.split('/').filter_map(|part| part.split_once('=')).filter(|(k, _)| !k.is_empty()).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

impl Input {
    /// A local file's modification time (RFC 3339, UTC): with the size, how a reader sees that
    /// a file changed since it was read.
    pub fn modified(&self) -> Option<String> {
        let Location::File(path) = &self.location else { return None };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
        Some(crate::timestamp::format_micros(chrono::DateTime::<chrono::Utc>::from(modified).timestamp_micros()))
    }
}

/// Resolves input arguments into inputs sorted by name (byte order), so results never depend
/// on the order they were given in; a file named twice (or by name and through its folder)
/// is read once, under the smallest of its names. Inside folders, prefixes and globs only
/// dump files count (by extension); a file named explicitly is read whatever its name.
pub fn inputs(storage: &Storage, args: &[String]) -> Result<Vec<Input>> {
    let mut found: Vec<(Input, String)> = Vec::new();
    for arg in args {
        for object in storage.list(arg)? {
            let format = match format_from_name(object.location.file_name()) {
                Some(format) => format,
                None if object.explicit => sniff(storage, &object.location)?,
                None => continue,
            };
            let display = match &object.location {
                Location::Std => "<stdin>".to_string(),
                other => other.to_string(),
            };
            let same = match &object.location {
                Location::File(p) => p.canonicalize().unwrap_or_else(|_| p.clone()).to_string_lossy().into_owned(),
                _ => display.clone(),
            };
            found.push((Input { display, location: object.location, format, size: object.size, etag: object.etag, aligned: None }, same));
        }
    }
    found.sort_by(|a, b| a.0.display.cmp(&b.0.display).then_with(|| a.1.cmp(&b.1)));
    let mut seen = HashSet::new();
    let unique = found.into_iter().filter(|(_, same)| seen.insert(same.clone())).map(|(input, _)| input).collect();
    Ok(group_siblings(unique))
}

/// The format a file name implies: `.parquet`/`.pq`, `.jsonl`/`.ndjson`/`.json` with an
/// optional `.gz`/`.zst`, or `.state`.
pub fn format_from_name(name: &str) -> Option<Format> {
    let name = name.to_lowercase();
    if name.ends_with(".state") {
        return Some(Format::State);
    }
    let (stem, compression) = if let Some(s) = name.strip_suffix(".gz") {
        (s, Compression::Gzip)
    } else if let Some(s) = name.strip_suffix(".zst").or_else(|| name.strip_suffix(".zstd")) {
        (s, Compression::Zstd)
    } else {
        (name.as_str(), Compression::None)
    };
    if compression == Compression::None && (stem.ends_with(".parquet") || stem.ends_with(".pq")) {
        return Some(Format::Parquet);
    }
    if stem.ends_with(".jsonl") || stem.ends_with(".ndjson") || stem.ends_with(".json") {
        return Some(Format::Jsonl(compression));
    }
    None
}

/// How every partial state begins (its header's first field): what tells one from a dump.
pub const STATE_HEAD: &[u8] = b"{\"state\":\"dlqf.state/";

/// The format of a file whose name says nothing, from its first bytes (stdin: partial states,
/// else JSON-lines, its compression found when it is read).
fn sniff(storage: &Storage, location: &Location) -> Result<Format> {
    if location.is_std() {
        let head = crate::storage::peek_stdin(STATE_HEAD.len())?;
        return Ok(if head == STATE_HEAD { Format::State } else { Format::Jsonl(Compression::None) });
    }
    let mut head = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(storage.open(location)?, STATE_HEAD.len() as u64), &mut head)
        .with_context(|| format!("{location}: cannot read"))?;
    Ok(match head.as_slice() {
        [b'P', b'A', b'R', b'1', ..] => Format::Parquet,
        head if head == STATE_HEAD => Format::State,
        _ => Format::Jsonl(Compression::None),
    })
}

/// Rows outside `[since, until)` are skipped (not rejected).
#[derive(Clone, Copy, Debug, Default)]
pub struct Window {
    pub since: Option<i64>,
    pub until: Option<i64>,
}

impl Window {
    pub fn contains(&self, time: i64) -> bool {
        self.since.is_none_or(|s| time >= s) && self.until.is_none_or(|u| time < u)
    }
}

/// Drops inputs inside hive day partitions (`dt=YYYY-MM-DD/` or `date=YYYY-MM-DD/`) whose day
/// lies wholly outside the window, so they are never read. A partition's day is taken to be
/// the day of the failures it holds.
pub fn prune_partitions(inputs: Vec<Input>, window: Window) -> Vec<Input> {
    inputs.into_iter().filter(|input| !partition_outside(&input.display, window)).collect()
}

/// Whether `name` lies in a hive day partition wholly outside the window.
pub fn partition_outside(name: &str, window: Window) -> bool {
    if window.since.is_none() && window.until.is_none() {
        return false;
    }
    let day = name.split('/').find_map(|part| {
        let value = part.strip_prefix("dt=").or_else(|| part.strip_prefix("date="))?;
        crate::timestamp::parse_rfc3339(&format!("{value}T00:00:00Z"))
    });
    match day {
        None => false,
        Some(start) => {
            let end = start + 86_400_000_000;
            !(window.since.is_none_or(|s| end > s) && window.until.is_none_or(|u| start < u))
        }
    }
}

/// The inputs as storage objects, for opening in order.
pub(super) fn objects(inputs: &[Input]) -> Vec<(Location, Option<u64>)> {
    inputs.iter().filter(|i| matches!(i.format, Format::Jsonl(_))).map(|i| (i.location.clone(), i.size)).collect()
}

/// The `.keys` and `.headers` files of an S3-sink chunk (read with it in `aligned`).
#[derive(Clone, Debug, Default)]
pub struct Siblings {
    pub keys: Option<Sibling>,
    pub headers: Option<Sibling>,
}

#[derive(Clone, Debug)]
pub struct Sibling {
    pub display: String,
    pub location: Location,
    pub size: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Keys,
    Headers,
}

/// The values file name a `.keys`/`.headers` file name belongs to, and which it is: the S3
/// sink puts the view's extension after the chunk's start offset (`orders+0+0000000000.keys.json`,
/// `….headers.snappy.parquet`).
fn sibling_of(name: &str) -> Option<(String, Role)> {
    let (dir, file) = name.rsplit_once('/').map_or(("", name), |(d, f)| (d, f));
    for (marker, role) in [(".keys.", Role::Keys), (".headers.", Role::Headers)] {
        let Some(at) = file.rfind(marker) else { continue };
        // After the offset's digits, when the name has the sink's `topic+partition+offset`.
        let offset = file[..at].rsplit_once('+').map(|(_, o)| o);
        if !offset.is_some_and(|o| !o.is_empty() && o.bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        let values = format!("{}{}", &file[..at], &file[at + marker.len() - 1..]);
        let values = if dir.is_empty() { values } else { format!("{dir}/{values}") };
        return Some((values, role));
    }
    None
}

/// Attaches every `.keys`/`.headers` input whose values file is an input too to that values
/// file, which then reads them with it.
fn group_siblings(inputs: Vec<Input>) -> Vec<Input> {
    let names: std::collections::HashMap<String, usize> = inputs.iter().enumerate().map(|(i, input)| (input.display.clone(), i)).collect();
    let mut attached: Vec<Option<(usize, Role)>> = vec![None; inputs.len()];
    for (i, input) in inputs.iter().enumerate() {
        if let Some((values, role)) = sibling_of(&input.display) {
            if let Some(&v) = names.get(&values) {
                attached[i] = Some((v, role));
            }
        }
    }
    let mut siblings: Vec<Siblings> = vec![Siblings::default(); inputs.len()];
    for (i, at) in attached.iter().enumerate() {
        if let Some((v, role)) = at {
            let s = Sibling { display: inputs[i].display.clone(), location: inputs[i].location.clone(), size: inputs[i].size };
            match role {
                Role::Keys => siblings[*v].keys = Some(s),
                Role::Headers => siblings[*v].headers = Some(s),
            }
        }
    }
    inputs
        .into_iter()
        .zip(siblings)
        .zip(attached)
        .filter(|(_, at)| at.is_none())
        .map(|((mut input, s), _)| {
            if s.keys.is_some() || s.headers.is_some() {
                input.aligned = Some(s);
            }
            input
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_are_found_by_the_sinks_names() {
        assert_eq!(sibling_of("s3://b/topics/orders/partition=0/orders+0+0000000042.keys.json"), Some(("s3://b/topics/orders/partition=0/orders+0+0000000042.json".into(), Role::Keys)));
        assert_eq!(sibling_of("d/orders+0+0000000042.headers.snappy.parquet"), Some(("d/orders+0+0000000042.snappy.parquet".into(), Role::Headers)));
        assert_eq!(sibling_of("orders+0+0000000042.keys.json.gz"), Some(("orders+0+0000000042.json.gz".into(), Role::Keys)));
        assert_eq!(sibling_of("my.keys.topic+0+0000000042.json"), None);
        assert_eq!(sibling_of("plain.json"), None);
    }
}
