//! `dlqf redact`: the same dumps with every personal or secret value replaced by a keyed
//! token, for a postmortem to share; the output ranks the same and cannot be replayed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};
use dlqf::messages;
use dlqf::profile::Profile;
use dlqf::redact::{self, Keyed};
use dlqf::source::{self, Format};
use dlqf::storage::{Location, Storage};

use super::UsageError;

/// Write the dumps again with every personal or secret value replaced by a keyed token.
///
/// Payloads, origin keys and origin headers keep their structure, names and types; each of
/// their values becomes a token. Elsewhere (error messages, stack traces, other fields) the
/// values found are replaced: emails, payment cards (Luhn), IBANs (checksum), phone numbers,
/// IPv4/IPv6 addresses, JWTs and bearer tokens, AWS access keys and other well-known secret
/// shapes, a payload's or personal field's value repeated there, and every field the
/// profile lists as `personal`. The time and what the signature and id read keep their
/// values otherwise, so `rank` of the output gives the same buckets, counts and shares
/// (times are kept unless --coarsen-times rounds them down).
///
/// A token is `kind_` and 16 characters of HMAC-SHA-256 under the key: equal values give
/// equal tokens across files and runs with one key, another key gives other tokens, and the
/// output is the same bytes each run. Each output file has the input's name relative to the
/// argument it was found through, its format and compression. Every JSON record carries
/// `"dlqf_redacted": KEY-ID` (a Parquet file holds it in its metadata); `plan` refuses it.
///
/// Exit codes: 0 ok, 1 runtime error (a line that is not JSON is written as a stub, named,
/// and does not fail the run), 2 usage error.
///
/// Examples:
///   head -c 32 /dev/urandom | base64 > postmortem.key
///   dlqf redact dumps/2026-12-03/ --profile kafka-connect --key-file postmortem.key -o shared/
///   dlqf redact s3://dlq/orders/ --profile envelope --key-file pm.key -o s3://shared/orders/
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Dump files, directories (read recursively), globs or s3:// prefixes.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<String>,

    /// Field mapping: a built-in profile or a TOML profile file (its `personal` fields are
    /// replaced whole).
    #[arg(long, default_value = "vision", value_name = "NAME|FILE")]
    profile: String,

    /// Error categories as the output will be ranked with (a TOML file overriding the default
    /// rules, as `rank --classification` takes): no token spells what its rules look for in a
    /// message, and no number or echoed payload value replaced takes it away.
    #[arg(long, value_name = "FILE")]
    classification: Option<PathBuf>,

    /// The secret tokens are keyed with: a file of at least 16 bytes (surrounding whitespace
    /// ignored). Keep it to redact later dumps alike; never share it.
    #[arg(long, value_name = "KEY")]
    key_file: PathBuf,

    /// Round every failure time down to a period of this many hours (24: the day), in the
    /// format it was written in, so the dump does not tell when to the second anyone acted.
    /// The ranking's counts and shares stay; its first and last times and trends coarsen.
    #[arg(long, value_name = "HOURS", value_parser = clap::value_parser!(u32).range(1..=8784))]
    coarsen_times: Option<u32>,

    /// The folder (or s3:// prefix) the redacted dumps are written to.
    #[arg(short = 'o', long = "output", value_name = "OUTDIR")]
    output: String,

    /// No progress bar, even on a terminal.
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let mut profile = Profile::load(&args.profile)?;
    if let Some(path) = &args.classification {
        profile = profile.with_classification(path).map_err(|e| UsageError(format!("{e:#}")))?;
    }
    let keyed = Keyed::from_file(&args.key_file).map_err(|e| UsageError(format!("--key-file: {e:#}")))?.guarding(&profile.classifier);
    let storage = Storage::new();
    let out_root = Location::parse(&args.output)?;
    if out_root.is_std() {
        return Err(UsageError("-o names a folder or s3:// prefix, not stdout".into()).into());
    }
    let relative = relative_names(&storage, &args.inputs)?;
    let inputs: Vec<_> = source::inputs(&storage, &args.inputs)?.into_iter().filter(|i| i.format != Format::State).collect();
    if inputs.is_empty() {
        bail!("no dump files found in {}", args.inputs.join(" "));
    }
    let destination_of = |location: &Location| {
        let name = relative.get(location).cloned().unwrap_or_else(|| location.file_name().to_string());
        join(&out_root, &name)
    };
    let mut written: HashMap<Location, &Location> = HashMap::new();
    for input in &inputs {
        let siblings = input.aligned.iter().flat_map(|s| [&s.keys, &s.headers]).flatten().map(|s| &s.location);
        for location in std::iter::once(&input.location).chain(siblings) {
            let destination = destination_of(location);
            if same_file(location, &destination) {
                return Err(UsageError(format!("{location}: the output would overwrite this input; choose another -o")).into());
            }
            if let Some(other) = written.insert(destination.clone(), location) {
                return Err(UsageError(format!("{other} and {location} would both be written to {destination}: redact them into separate folders")).into());
            }
        }
    }

    let (mut records, mut malformed) = (0u64, Vec::new());
    // By dump: a dump is redacted whole before the next starts.
    let progress = messages::Progress::for_bytes(inputs.iter().filter_map(|i| i.size).sum(), !args.no_progress);
    for input in &inputs {
        let report = redact::redact_input(&storage, input, &destination_of, &profile, &keyed, args.coarsen_times)?;
        progress.advance(input.size.unwrap_or(0));
        records += report.records;
        malformed.extend(report.malformed);
    }
    progress.finish();
    for line in malformed.iter().take(10) {
        messages::warning(line);
    }
    if malformed.len() > 10 {
        messages::warning(format!("… and {} more lines that are not JSON", malformed.len() - 10));
    }
    eprintln!("redacted {records} records in {} dumps into {} (key {})", inputs.len(), args.output, redact::key_id(&keyed));
    Ok(ExitCode::SUCCESS)
}

/// Each input's name below the argument it was found through: a file named alone keeps its
/// own name, a folder's or prefix's files their paths inside it, a glob's files their paths
/// below its first folder without a pattern.
fn relative_names(storage: &Storage, args: &[String]) -> Result<HashMap<Location, String>> {
    let mut names = HashMap::new();
    for arg in args {
        let base: String = match Location::parse(arg)? {
            Location::Std => {
                names.insert(Location::Std, "stdin.jsonl".to_string());
                continue;
            }
            Location::File(path) if path.is_dir() => format!("{}/", arg.trim_end_matches('/')),
            Location::File(_) | Location::S3 { .. } => {
                let literal = arg.find(['*', '?', '[']).map_or(arg.as_str(), |at| &arg[..at]);
                let is_prefix = arg.starts_with("s3://") && (arg.ends_with('/') || storage.list(arg)?.len() > 1);
                if is_prefix && literal == arg {
                    arg.clone()
                } else {
                    literal.rfind('/').map_or(String::new(), |at| literal[..=at].to_string())
                }
            }
        };
        for found in storage.list(arg)? {
            let shown = found.location.to_string();
            let rel = shown.strip_prefix(&base).unwrap_or(found.location.file_name()).trim_start_matches('/').to_string();
            names.entry(found.location).or_insert(rel);
        }
    }
    Ok(names)
}

fn join(root: &Location, name: &str) -> Location {
    match root {
        Location::File(dir) => Location::File(dir.join(name)),
        Location::S3 { bucket, key } => {
            let prefix = if key.is_empty() || key.ends_with('/') { key.clone() } else { format!("{key}/") };
            Location::S3 { bucket: bucket.clone(), key: format!("{prefix}{name}") }
        }
        Location::Std => Location::Std,
    }
}

fn same_file(a: &Location, b: &Location) -> bool {
    match (a, b) {
        (Location::File(a), Location::File(b)) => canonical(a) == canonical(b),
        _ => a == b,
    }
}

/// A path made absolute as far as it exists (an output file may not yet).
fn canonical(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => dir.canonicalize().map(|d| d.join(name)).unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}
