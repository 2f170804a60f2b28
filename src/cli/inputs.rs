//! The input options every analysis command shares, and turning them into a scan.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::builder::TypedValueParser;
use dlqf::analyze::periods::HOUR;
use dlqf::profile::Profile;
use dlqf::report::OutputFormat;
use dlqf::source::layout::Layout;
use dlqf::messages::{self, Progress};
use dlqf::source::{self, Accumulator, Format, Input, Reject, Scan, Tally, Window};
use dlqf::state::{self, Part, Partial, Rules};
use dlqf::storage::{Location, Storage};
use dlqf::timestamp;

use super::UsageError;

/// How many rejected rows are named on stderr.
const SHOWN_REJECTS: usize = 10;

#[derive(clap::Args, Debug)]
pub struct InputArgs {
    /// Dump files, directories (read recursively), globs, or - for JSON-lines on stdin; rank,
    /// trend and health also take partial states (.state files).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,

    /// Field mapping: a built-in profile (vision, envelope, kafka-connect, lambda, sqs, pubsub,
    /// servicebus) or a TOML profile file.
    #[arg(long, default_value = "vision", value_name = "NAME|FILE")]
    pub profile: String,

    /// Error categories and their routing: a TOML file overriding the default rules.
    #[arg(long, value_name = "FILE")]
    pub classification: Option<PathBuf>,

    /// Learned templates (`dlqf templates learn`) applied after the profile's template rules.
    #[arg(long, value_name = "FILE")]
    pub templates: Option<PathBuf>,

    /// Only failures at or after this time (RFC 3339, a date, or an age like 7d, 12h).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,

    /// Only failures before this time (same forms as --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,

    /// Fail (exit 1) if any row cannot be read, instead of counting it as rejected.
    #[arg(long)]
    pub strict: bool,

    /// No progress bar, even on a terminal.
    #[arg(long)]
    pub no_progress: bool,
}

#[derive(clap::Args, Debug)]
pub struct OutputArgs {
    /// Report format (default: from the -o file name, else table). parquet and html: rank only.
    /// state: a partial state (dlqf.state/1) that rank, trend and health take as an input.
    #[arg(long, value_parser = format_parser())]
    pub format: Option<OutputFormat>,

    /// Write the report to this file (or s3://bucket/key) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE", value_parser = location_parser)]
    pub output: Option<Location>,

    /// With --format state: this state is part I of a set of N written to be merged whole
    /// (one per job of an array); reading the set with a part missing is an error.
    #[arg(long, value_name = "I/N", value_parser = Part::parse)]
    pub part: Option<Part>,
}

/// Where a state goes, and its place in a set.
pub struct StateTo {
    pub location: Location,
    pub part: Option<Part>,
}

/// `-o` and other locations, parsed once: a path, `-`, or s3://bucket/key.
pub fn location_parser(arg: &str) -> Result<Location, String> {
    Location::parse(arg).map_err(|e| format!("{e:#}"))
}

fn format_parser() -> impl TypedValueParser<Value = OutputFormat> {
    clap::builder::PossibleValuesParser::new(OutputFormat::NAMES)
        .map(|name| OutputFormat::from_name(&name).expect("listed names parse"))
}

impl OutputArgs {
    /// The report format (from --format, else the -o name, else table), checked against the
    /// formats `command` writes before anything is read.
    pub fn format(&self, command: &str, writes: &[OutputFormat]) -> Result<OutputFormat> {
        let format = self
            .format
            .or_else(|| self.output.as_ref().and_then(|o| OutputFormat::from_name_of(o.file_name())))
            .unwrap_or(OutputFormat::Table);
        if !writes.contains(&format) {
            let names: Vec<&str> = writes.iter().map(|f| f.name()).collect();
            return Err(UsageError(format!("--format {}: {command} writes {}", format.name(), names.join(", "))).into());
        }
        if format.is_binary() && self.destination().is_std() && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            return Err(UsageError(format!("--format {}: the output is binary: write it to a file with -o", format.name())).into());
        }
        Ok(format)
    }

    /// Where the report goes: -o, else stdout.
    pub fn destination(&self) -> Location {
        self.output.clone().unwrap_or(Location::Std)
    }

    /// The state to write when the format is `state`; --part with another format is an error.
    pub fn state_to(&self, format: OutputFormat) -> Result<Option<StateTo>> {
        if format != OutputFormat::State {
            if self.part.is_some() {
                return Err(UsageError("--part numbers a state: it needs --format state".into()).into());
            }
            return Ok(None);
        }
        Ok(Some(StateTo { location: self.destination(), part: self.part }))
    }
}

pub struct Loaded<A> {
    pub storage: Storage,
    pub profile: Profile,
    pub layout: Layout,
    pub read: Read<A>,
    pub rejected: u64,
}

/// What an analysis read: straight from dumps into the command's own accumulator, or (when
/// states are among the inputs, or a state is written) everything merged per signature and hour.
pub enum Read<A> {
    Dumps(A),
    Partial(Partial),
}

impl InputArgs {
    pub fn window(&self) -> Result<Window> {
        let now = timestamp::now_micros();
        let bound = |v: &Option<String>| -> Result<Option<i64>> {
            v.as_deref().map(|t| timestamp::parse_bound(t, now).map_err(|e| UsageError(e).into())).transpose()
        };
        let window = Window { since: bound(&self.since)?, until: bound(&self.until)? };
        if let (Some(s), Some(u)) = (window.since, window.until) {
            if s >= u {
                return Err(UsageError("--since must be before --until".into()).into());
            }
        }
        Ok(window)
    }

    /// Resolves the profile, the time window (narrowed by `extra`) and the inputs.
    pub fn prepare(&self, extra: Window) -> Result<Prepared> {
        let mut profile = Profile::load(&self.profile)?;
        if let Some(path) = &self.classification {
            profile = profile.with_classification(path).map_err(|e| UsageError(format!("{e:#}")))?;
        }
        if let Some(path) = &self.templates {
            let learned = std::sync::Arc::new(dlqf::profile::learned::Learned::load(path).map_err(|e| UsageError(format!("--templates: {e:#}")))?);
            profile = profile.with_learned(learned).map_err(|e| UsageError(format!("--templates: {e:#}")))?;
        }
        let mut window = self.window()?;
        window.since = window.since.max(extra.since);
        window.until = match (window.until, extra.until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let storage = Storage::new();
        let (states, dumps): (Vec<Input>, Vec<Input>) = source::inputs(&storage, &self.inputs)?.into_iter().partition(|i| i.format == Format::State);
        let inputs = source::prune_partitions(dumps, window);
        if inputs.is_empty() && states.is_empty() {
            messages::warning(format!("no dump files found in {}", self.inputs.join(" ")));
        }
        let layout = Layout::new(&profile);
        let total_bytes: u64 = inputs.iter().filter_map(|i: &Input| i.size).sum();
        let progress = Progress::for_bytes(total_bytes, !self.no_progress);
        Ok(Prepared { storage, profile, layout, inputs, states, window, progress, strict: self.strict })
    }
}

pub struct Prepared {
    pub storage: Storage,
    pub profile: Profile,
    pub layout: Layout,
    /// Dumps to read.
    pub inputs: Vec<Input>,
    /// Partial states among the inputs.
    pub states: Vec<Input>,
    pub window: Window,
    pub progress: Progress,
    strict: bool,
}

impl Prepared {
    /// Whether --strict was given.
    pub fn strict(&self) -> bool {
        self.strict
    }

    pub fn scan(&self) -> Scan<'_> {
        Scan { storage: &self.storage, layout: &self.layout, window: self.window, progress: &self.progress }
    }

    /// Names the first rejected rows on stderr; under --strict any of them is an error, and a
    /// run whose every row was rejected is one always, naming the most common reasons.
    pub fn check_rejects(&self, tally: &Tally) -> Result<()> {
        if tally.accepted == 0 && tally.outside_window == 0 && tally.rejected > 0 {
            report_rejects(tally.rejected, &tally.rejects);
            bail!("{}", no_row_accepted(tally));
        }
        self.check_rejected(tally.rejected, &tally.rejects)
    }

    fn check_rejected(&self, rejected: u64, named: &[Reject]) -> Result<()> {
        report_rejects(rejected, named);
        if self.strict && rejected > 0 {
            bail!("{rejected} rows could not be read (--strict)");
        }
        Ok(())
    }

    /// For commands that read rows: partial states hold none.
    pub fn refuse_states(&self, command: &str) -> Result<()> {
        refuse_states(&self.states, command)
    }

    /// Reads the inputs: dumps alone straight into the accumulator `make` builds, in parallel;
    /// with states among the inputs, or a state to write (`state_to`), everything into one
    /// partial. A state asked for is written here, and there is nothing more to do (None).
    pub fn load<A, F>(self, make: F, state_to: Option<&StateTo>) -> Result<Option<Loaded<A>>>
    where
        A: Accumulator,
        F: Fn() -> A + Sync,
    {
        let (read, rejected) = if self.states.is_empty() && state_to.is_none() {
            let (acc, tally) = self.scan().fold(&self.inputs, make)?;
            self.check_rejects(&tally)?;
            (Read::Dumps(acc), tally.rejected)
        } else {
            let partial = self.partial(state_to.is_some())?;
            if let Some(to) = state_to {
                let bytes = state::write(&Rules::of(&self.profile), &self.layout, &partial, to.part)?;
                self.storage.write(&to.location, &bytes)?;
                return Ok(None);
            }
            let rejected = partial.rejected();
            (Read::Partial(partial), rejected)
        };
        let Prepared { storage, profile, layout, .. } = self;
        Ok(Some(Loaded { storage, profile, layout, read, rejected }))
    }

    /// States and dumps read into one partial; cut to the window unless it becomes a state.
    fn partial(&self, writes_state: bool) -> Result<Partial> {
        self.check_window(writes_state)?;
        let mut partial = state::gather(&self.scan(), &self.profile, &self.inputs, &self.states)?;
        if !writes_state {
            partial = partial.within(self.window);
        }
        self.check_rejected(partial.rejected(), &partial.rejects)?;
        Ok(partial)
    }

    /// A state keeps every hour of its inputs, so none is written for a window; a window over
    /// states must fall on whole hours, which states count in.
    fn check_window(&self, writes_state: bool) -> Result<()> {
        let bounds = [("--since", self.window.since), ("--until", self.window.until)];
        for (flag, bound) in bounds {
            let Some(at) = bound else { continue };
            if writes_state {
                return Err(UsageError(format!("{flag}: a state keeps every hour of its inputs; give the window when reading states")).into());
            }
            if at.rem_euclid(HOUR) != 0 {
                let hour = timestamp::format_micros(at - at.rem_euclid(HOUR));
                return Err(UsageError(format!(
                    "{flag} {}: states count failures per whole hour, so a window over states starts and ends on the hour (e.g. {hour})",
                    timestamp::format_micros(at)
                ))
                .into());
            }
        }
        Ok(())
    }
}

/// Refuses the first partial state among `inputs`, for a command that reads rows.
pub fn refuse_states(inputs: &[Input], command: &str) -> Result<()> {
    match inputs.iter().find(|i| i.format == Format::State) {
        Some(state) => Err(UsageError(format!("{}: a partial state holds counts, not rows: {command} reads dumps", state.display)).into()),
        None => Ok(()),
    }
}

/// Why a run accepted no row: its most common reasons, a field missing from every row named
/// as such.
fn no_row_accepted(tally: &Tally) -> String {
    let mut text = format!("no row accepted: all {} rows were rejected; most common reasons:", tally.rejected);
    for (reason, rows) in tally.kinds.most_common(3) {
        text.push_str(&format!("\n  {rows} rows: {reason}"));
        if rows == tally.rejected {
            if let Some(field) = reason.strip_prefix("field `").and_then(|r| r.strip_suffix("` is missing")) {
                text.push_str(&format!(" (`{field}` is missing in all {rows} rows: check the path, or the profile)"));
            }
        }
    }
    text
}

pub fn report_rejects(rejected: u64, named: &[Reject]) {
    if rejected == 0 {
        return;
    }
    for reject in named.iter().take(SHOWN_REJECTS) {
        messages::line(&reject.to_string());
    }
    let shown = named.len().min(SHOWN_REJECTS) as u64;
    if rejected > shown {
        messages::line(&format!("… and {} more", rejected - shown));
    }
    messages::message(format!("{rejected} rows rejected (counted in the report; --strict makes this an error)"));
}
