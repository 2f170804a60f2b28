//! `dlqf template`: the message template of each line, as the envelope profile's signature
//! keeps an error message; with --explain, what each rule masked.

use std::io::{BufRead, BufReader, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use dlqf::profile::learned::Learned;
use dlqf::profile::template;
use dlqf::storage::{Location, Storage};

/// Print each line's message template: what a `template` normaliser keeps of a message.
///
/// The envelope profile's error_message is a `template` field. Reads one message per line
/// from files or stdin (-) and prints each template in order, so `paste` puts them beside the
/// messages. A template depends on its message alone, never on the other lines.
///
/// Examples:
///   echo 'timeout after 30s talking to 10.0.0.7:5432' | dlqf template
///   dlqf template errors.txt --explain
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Text files with one message per line (or s3://…, or - for stdin).
    #[arg(default_value = "-", value_name = "FILE", value_parser = super::inputs::location_parser)]
    inputs: Vec<Location>,

    /// After each template, the values each rule masked (rule: value), indented.
    #[arg(long)]
    explain: bool,

    /// Learned templates (`dlqf templates learn`) applied after the rules.
    #[arg(long, value_name = "FILE")]
    templates: Option<std::path::PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let storage = Storage::new();
    let learned = match &args.templates {
        Some(path) => Some(Learned::load(path).map_err(|e| super::UsageError(format!("--templates: {e:#}")))?),
        None => None,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for input in &args.inputs {
        each_message(&storage, input, |line| {
            if args.explain {
                let mut explained = template::explain(line);
                if let Some(learned) = &learned {
                    learned.refine(&mut explained);
                }
                writeln!(out, "{}", explained.template)?;
                for mask in &explained.masks {
                    writeln!(out, "    {}: {}", mask.rule, mask.value)?;
                }
            } else {
                let template = template::template(line);
                writeln!(out, "{}", learned.as_ref().and_then(|l| l.apply(&template)).unwrap_or(&template))?;
            }
            Ok(())
        })?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Each line of `input` as a message: without its line end (LF or CRLF), and with U+FFFD
/// where bytes are not valid UTF-8.
pub(super) fn each_message(storage: &Storage, input: &Location, mut with: impl FnMut(&str) -> Result<()>) -> Result<()> {
    let mut reader = BufReader::new(storage.open(input)?);
    let mut bytes = Vec::new();
    for number in 1.. {
        bytes.clear();
        if reader.read_until(b'\n', &mut bytes).with_context(|| format!("{input}:{number}: cannot read"))? == 0 {
            break;
        }
        let line = String::from_utf8_lossy(bytes.strip_suffix(b"\n").unwrap_or(&bytes));
        with(line.strip_suffix('\r').unwrap_or(&line))?;
    }
    Ok(())
}
