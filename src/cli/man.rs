//! `dlqf man`: the manual page, rendered from the same definitions as `--help`, so the page
//! and the flags never disagree.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use dlqf::storage::{Location, Storage};

/// Print the man page (roff), or write one page per command into a folder.
///
/// Without --dir the page for dlqf itself goes to stdout. With --dir, dlqf.1 and a page per
/// command (dlqf-rank.1, …) are written there, ready for a man1 folder on MANPATH.
///
/// Examples:
///   dlqf man | man -l -
///   dlqf man --dir ~/.local/share/man/man1
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Write dlqf.1 and dlqf-COMMAND.1 into this folder (created if missing).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let command = super::command();
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
            clap_mangen::generate_to(command, &dir).with_context(|| format!("{}: cannot write the man pages", dir.display()))?;
        }
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command).render(&mut page)?;
            Storage::new().write(&Location::Std, &page)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
