//! The `dlqf` binary: parse the command line, run it, print the error chain on failure.

mod cli;

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    hold_freed_memory();
    dlqf::contain::install_hook();
    dlqf::contain::sigbus_is_an_error();
    match cli::run() {
        Ok(code) => code,
        Err(err) => {
            dlqf::messages::message(format!("{err:#}"));
            ExitCode::from(cli::exit_code_for(&err))
        }
    }
}

extern "C" {
    /// mimalloc's own setter (linked in by the `mimalloc` crate).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc.h (the same in its v2 and v3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Freed memory goes back to the system after a second instead of mimalloc's 10 ms: a Parquet
/// scan frees and takes again its page buffers every row group, and each return made the
/// kernel zero fresh pages (a fifth of rank's time on 10M rows). `MIMALLOC_PURGE_DELAY` still
/// decides when set.
fn hold_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's options, which it reads at every purge.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 1000) };
    }
}
