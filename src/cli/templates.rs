//! `dlqf templates learn`: the word positions that vary among messages of one shape, written
//! as a reviewable file of patterns that a profile (`templates = …`) or `--templates` applies.

use std::collections::HashMap;
use std::process::ExitCode;

use anyhow::Result;
use dlqf::analyze::{rank, SignatureGroups};
use dlqf::profile::learned;
use dlqf::profile::template;
use dlqf::profile::Normalizer;
use dlqf::source::Window;
use dlqf::storage::{Location, Storage};

use super::inputs::{InputArgs, Loaded, Read};
use super::UsageError;

/// Learned templates: word positions that vary across messages of one shape.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    Learn(LearnArgs),
}

/// Learn templates from a window of dumps: word positions that vary among messages whose
/// templates are otherwise alike, written as patterns for review.
///
/// Messages are a profile's template field (its first, or --field) read from dumps as rank
/// reads them, or with --lines one message per line of text files. Their templates (the
/// context-free rules) are clustered by the words they share; a position that took 3 values
/// or more, none in more than half the messages, becomes `<?>`. The same messages give the
/// same file in any order. Review the file, delete what is wording, then name it in a profile
/// (`templates = "templates.toml"` beside `normalize = "template"`) or give --templates: it
/// applies to each message alone, so buckets stay stable night to night, and its digest
/// enters the rules a state is sealed with.
///
/// Examples:
///   dlqf templates learn --profile envelope dlq/dt=2026-11-*/ -o templates.toml
///   dlqf templates learn --lines errors.txt -o templates.toml
///   dlqf rank --profile envelope --templates templates.toml dlq/dt=2026-12-01/
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct LearnArgs {
    /// Dumps (files, folders, globs, s3:// prefixes); with --lines, text files (or -).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<String>,

    /// The profile whose template field holds the messages.
    #[arg(long, default_value = "envelope", value_name = "NAME|FILE")]
    profile: String,

    /// Which signature field (by name) holds the messages (default: the profile's first
    /// field normalised with `template`).
    #[arg(long, value_name = "NAME")]
    field: Option<String>,

    /// Read one message per line of text files instead of dumps.
    #[arg(long)]
    lines: bool,

    /// Where to write the templates file (default: stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE", value_parser = super::inputs::location_parser)]
    output: Option<Location>,

    /// No progress bar, even on a terminal.
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args.command {
        Command::Learn(args) => learn(args),
    }
}

fn learn(args: LearnArgs) -> Result<ExitCode> {
    let storage = Storage::new();
    let (templates, messages) = if args.lines { from_lines(&storage, &args.inputs)? } else { from_dumps(&args)? };
    let patterns = learned::learn(&templates);
    let text = learned::render(&patterns, messages, args.inputs.len());
    let to = args.output.clone().unwrap_or(Location::Std);
    storage.write(&to, text.as_bytes())?;
    if args.output.is_some() {
        eprintln!("dlqf: {} patterns learned from {messages} messages", patterns.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// Each line's template, counted.
fn from_lines(storage: &Storage, inputs: &[String]) -> Result<(HashMap<String, u64>, u64)> {
    let mut templates: HashMap<String, u64> = HashMap::new();
    let mut messages = 0;
    for input in inputs {
        let location = super::inputs::location_parser(input).map_err(UsageError)?;
        super::template::each_message(storage, &location, |line| {
            *templates.entry(template::template(line)).or_default() += 1;
            messages += 1;
            Ok(())
        })?;
    }
    Ok((templates, messages))
}

/// The templates of a profile's field over the dumps, counted (a rank's buckets, summed).
fn from_dumps(args: &LearnArgs) -> Result<(HashMap<String, u64>, u64)> {
    let input = InputArgs {
        inputs: args.inputs.clone(),
        profile: args.profile.clone(),
        classification: None,
        templates: None,
        since: None,
        until: None,
        strict: false,
        no_progress: args.no_progress,
    };
    let prepared = input.prepare(Window::default())?;
    let templated: Vec<&str> = prepared.profile.signature.iter().filter(|s| s.normalizer == Normalizer::Template).map(|s| s.field.as_str()).collect();
    let field = match &args.field {
        Some(name) if templated.contains(&name.as_str()) => name.clone(),
        Some(name) => return Err(UsageError(format!("--field {name}: not a `template` field of profile `{}` ({})", prepared.profile.name, templated.join(", "))).into()),
        None => match templated.first() {
            Some(name) => name.to_string(),
            None => return Err(UsageError(format!("profile `{}` has no field normalised with `template`", prepared.profile.name)).into()),
        },
    };
    let index = prepared.profile.signature.iter().position(|s| s.field == field).expect("a signature field");
    let Some(Loaded { layout, read, .. }) = prepared.load(SignatureGroups::default, None)? else {
        return Ok((HashMap::new(), 0));
    };
    let groups = match read {
        Read::Dumps(groups) => groups.finish(&layout),
        Read::Partial(partial) => partial.summary.groups(),
    };
    let mut templates: HashMap<String, u64> = HashMap::new();
    let mut messages = 0;
    for bucket in rank::ranked(groups, &layout) {
        *templates.entry(bucket.values[index].clone()).or_default() += bucket.stats.count;
        messages += bucket.stats.count;
    }
    Ok((templates, messages))
}
