//! Command-line parsing and dispatch. Each subcommand lives in its own file, starting with its
//! flags and help; the work itself is done by the library.

mod completions;
mod diff;
mod execute;
mod gen;
mod health;
mod inputs;
mod man;
mod plan;
mod query;
mod rank;
mod redact;
mod returned;
mod show;
mod template;
mod templates;
mod trend;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 an alert the user asked to fail on.
pub const EXIT_RUNTIME: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_ALERT: u8 = 3;
/// `execute` left entries for a later run (a down target, the storm guard).
pub const EXIT_UNFINISHED: u8 = 4;

/// A mistake in how dlqf was called (exit 2), found after clap's own checks.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub fn exit_code_for(err: &anyhow::Error) -> u8 {
    if err.downcast_ref::<UsageError>().is_some() {
        EXIT_USAGE
    } else {
        EXIT_RUNTIME
    }
}

/// The version and the commit built (hash and date), or `unknown` outside a git checkout.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("DLQF_COMMIT"), ")");

/// Dead-letter queue forensics: why did these messages fail, and which can be replayed safely?
///
/// Reads archived DLQ dumps (Parquet or JSON-lines, plain, .gz or .zst; files, directories,
/// globs, s3:// prefixes, or - for stdin), groups failures by a normalised signature, ranks the
/// causes and follows them over time (trend, diff, health), also from partial states
/// (--format state) that merge exactly; plans a reviewed replay, executes exactly that plan
/// (plan, show, execute, a canary first with --canary), finds which replayed messages came
/// back in later dumps (returned), and writes dumps a postmortem can share, every personal or
/// secret value a keyed token (redact).
/// Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 an alert you asked to fail on (or failed
/// replays), 4 execute left entries for a later run.
#[derive(Parser)]
#[command(name = "dlqf", version = VERSION, max_term_width = 100)]
struct Cli {
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long, global = true, value_name = "N")]
    threads: Option<usize>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Rank(rank::Args),
    Trend(trend::Args),
    Diff(diff::Args),
    Health(health::Args),
    Plan(plan::Args),
    Show(show::Args),
    Execute(execute::Args),
    Returned(returned::Args),
    Query(query::Args),
    Redact(redact::Args),
    Template(template::Args),
    Templates(templates::Args),
    Gen(gen::Args),
    Completions(completions::Args),
    Man(man::Args),
}

/// The whole command line as clap defines it, for completions and the man page.
fn command() -> clap::Command {
    Cli::command()
}

pub fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    if let Some(n) = cli.threads {
        if n == 0 {
            return Err(UsageError("--threads must be at least 1".into()).into());
        }
        // polars reads this once, when its pool starts; set it before any polars call.
        std::env::set_var("POLARS_MAX_THREADS", n.to_string());
        rayon::ThreadPoolBuilder::new().num_threads(n).build_global()?;
    }
    match cli.command {
        Command::Rank(args) => rank::run(args),
        Command::Trend(args) => trend::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Health(args) => health::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Show(args) => show::run(args),
        Command::Execute(args) => execute::run(args),
        Command::Returned(args) => returned::run(args),
        Command::Query(args) => query::run(args),
        Command::Redact(args) => redact::run(args),
        Command::Template(args) => template::run(args),
        Command::Templates(args) => templates::run(args),
        Command::Gen(args) => gen::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
    }
}
