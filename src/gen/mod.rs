//! Deterministic synthetic DLQ dumps with the mess real producers make: case and whitespace
//! drift, a skewed Pareto of causes over weeks, unicode, optional malformed rows.

mod envelope;
mod rng;
mod vision;
mod write;


use anyhow::{bail, Result};
use serde_json::Value;

pub use rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenFormat {
    Parquet,
    Jsonl,
}

#[derive(Clone, Debug)]
pub struct GenOptions {
    pub profile: String,
    pub rows: u64,
    pub seed: u64,
    pub output: crate::storage::Location,
    pub format: GenFormat,
    /// Share of rows that are malformed (0.0 to 1.0).
    pub malformed: f64,
    /// First day of the failures, as microseconds since the epoch.
    pub start: i64,
    pub days: u32,
    pub row_group_rows: usize,
}

/// How a malformed row is broken. Parquet has no syntax to break, so there the first three
/// become nulls or unreadable timestamps.
#[derive(Clone, Copy, Debug)]
pub enum Breakage {
    Truncated,
    NotAnObject,
    WrongType,
    MissingField,
    NullField,
    BadTimestamp,
}

/// One generated row: field names and values in column order, possibly broken.
pub struct GenRow {
    pub values: Vec<Value>,
    pub broken: Option<Breakage>,
}

/// A dump's columns, and which of them a broken row nulls, drops or retypes.
pub struct Shape {
    pub columns: &'static [(&'static str, write::ColumnKind)],
    pub required: usize,
    pub time: usize,
    pub attempts: usize,
}

/// A row generator for one profile: a fixed shape and a pure function of the row's stream.
pub trait Generator: Sync {
    fn shape(&self) -> &Shape;
    fn row(&self, rng: &mut Rng) -> Vec<Value>;
}

pub fn generate(options: &GenOptions) -> Result<()> {
    if !(0.0..=1.0).contains(&options.malformed) {
        bail!("--malformed must be between 0 and 1, got {}", options.malformed);
    }
    let span = i64::from(options.days.max(1)) * 86_400;
    let generator: Box<dyn Generator> = match options.profile.as_str() {
        "vision" => Box::new(vision::Vision::new(options.start, span)),
        "envelope" => Box::new(envelope::Envelope::new(options.start, span)),
        other => bail!("gen knows the profiles vision and envelope, not `{other}`"),
    };
    write::write(options, generator.as_ref())
}

/// Row `index` of a dump: its own random stream, so any split or thread count gives the same.
pub fn make_row(generator: &dyn Generator, seed: u64, index: u64, malformed: f64) -> GenRow {
    let mut rng = Rng::for_row(seed, index);
    let values = generator.row(&mut rng);
    let broken = (rng.unit() < malformed).then(|| {
        [Breakage::Truncated, Breakage::NotAnObject, Breakage::WrongType, Breakage::MissingField, Breakage::NullField, Breakage::BadTimestamp]
            [rng.below(6) as usize]
    });
    GenRow { values, broken }
}

/// Case and whitespace drift, as producers emit across releases.
pub fn drift(rng: &mut Rng, value: &str) -> String {
    let roll = rng.unit();
    if roll < 0.75 {
        value.to_string()
    } else if roll < 0.83 {
        value.to_uppercase()
    } else if roll < 0.90 {
        let mut chars = value.chars();
        chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
    } else if roll < 0.95 {
        format!("  {value} ")
    } else {
        format!("\t{value}  ")
    }
}

/// An RFC 3339 rendering of `seconds`, mostly `Z`, sometimes with milliseconds or an offset.
pub fn render_time(rng: &mut Rng, seconds: i64) -> String {
    use chrono::{DateTime, FixedOffset, Utc};
    let t = DateTime::<Utc>::from_timestamp(seconds, 0).expect("time in range");
    let roll = rng.unit();
    if roll < 0.95 {
        t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else if roll < 0.97 {
        let millis = rng.below(1000) as i64;
        let t = t + chrono::Duration::milliseconds(millis);
        t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    } else if roll < 0.99 {
        t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
    } else {
        let east = FixedOffset::east_opt(2 * 3600).unwrap();
        t.with_timezone(&east).format("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

/// Picks an index from cumulative weights.
pub fn pick(rng: &mut Rng, cumulative: &[f64]) -> usize {
    let x = rng.unit() * cumulative.last().copied().unwrap_or(1.0);
    cumulative.partition_point(|&c| c <= x).min(cumulative.len() - 1)
}

/// Zipf-like weights 1/k^s, cumulated.
pub fn zipf_cumulative(n: usize, s: f64) -> Vec<f64> {
    let mut acc = 0.0;
    (1..=n).map(|k| {
        acc += 1.0 / (k as f64).powf(s);
        acc
    }).collect()
}
