//! The one writer of stderr: messages, warnings, named rejects and the progress bar. A message
//! is printed above a running bar, never through it; stdout carries nothing but the report.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar being drawn, if any: messages suspend it while they print.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Writes one line to stderr, above the progress bar if one is drawn.
pub fn line(text: &str) {
    let write = || {
        let _ = writeln!(std::io::stderr().lock(), "{text}");
    };
    match BAR.lock().expect("bar lock").as_ref() {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

/// `dlqf: …`: what happened, for the person running the command.
pub fn message(text: impl std::fmt::Display) {
    line(&format!("dlqf: {text}"));
}

/// `dlqf: warning: …`: the run goes on, but something deserves a look.
pub fn warning(text: impl std::fmt::Display) {
    line(&format!("dlqf: warning: {text}"));
}

/// A progress bar on stderr (bytes read, entries replayed), drawn only when stderr is a
/// terminal and the command did not say --no-progress.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn hidden() -> Progress {
        Progress { bar: None }
    }

    /// A bar over `total_bytes` when stderr is a terminal and `enabled`; otherwise nothing.
    pub fn for_bytes(total_bytes: u64, enabled: bool) -> Progress {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})")
                .expect("valid template"),
        );
        Progress::drawn(bar)
    }

    /// A bar over `total` items (entries, messages).
    pub fn for_count(total: u64, enabled: bool) -> Progress {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, {eta})").expect("valid template"));
        Progress::drawn(bar)
    }

    fn drawn(bar: ProgressBar) -> Progress {
        *BAR.lock().expect("bar lock") = Some(bar.clone());
        Progress { bar: Some(bar) }
    }

    pub fn advance(&self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(bytes);
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            BAR.lock().expect("bar lock").take();
        }
    }
}
