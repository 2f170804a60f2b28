//! `dlqf completions`: a shell's completion script, generated from the same definitions as
//! `--help`, so completions never lag behind the flags.

use std::process::ExitCode;

use anyhow::Result;
use clap_complete::Shell;
use dlqf::storage::{Location, Storage};

/// Print a shell completion script for bash, zsh, fish or powershell.
///
/// Load it in the shell's start file, or write it where the shell looks for completions.
///
/// Examples:
///   source <(dlqf completions bash)                               # bash, this session
///   dlqf completions bash > ~/.local/share/bash-completion/completions/dlqf
///   dlqf completions zsh > "${fpath[1]}/_dlqf"                     # zsh
///   dlqf completions fish > ~/.config/fish/completions/dlqf.fish
///   dlqf completions powershell >> $PROFILE
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: CompletionShell,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let shell = match args.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
        CompletionShell::Powershell => Shell::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut super::command(), "dlqf", &mut script);
    Storage::new().write(&Location::Std, &script)?;
    Ok(ExitCode::SUCCESS)
}
