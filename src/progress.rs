//! Progress bars on stderr (bytes read, entries replayed), shown only when stderr is a
//! terminal, so stdout carries nothing but the report.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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
        Progress { bar: Some(bar) }
    }

    /// A bar over `total` items (entries, messages).
    pub fn for_count(total: u64, enabled: bool) -> Progress {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} ({per_sec}, {eta})").expect("valid template"));
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
        }
    }
}
