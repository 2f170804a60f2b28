//! The `dlqf` binary: parse the command line, run it, print the error chain on failure.

mod cli;

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(err) => {
            dlqf::messages::message(format!("{err:#}"));
            ExitCode::from(cli::exit_code_for(&err))
        }
    }
}
