//! SIGTERM and SIGINT during a run: the first asks for a graceful stop (no new entries, the
//! ones in flight finished or released and recorded, a partial report); a second exits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use signal_hook::consts::{SIGINT, SIGTERM};

/// Which stop signal arrived, if any.
#[derive(Clone, Default)]
pub struct StopSignals {
    int: Arc<AtomicBool>,
    term: Arc<AtomicBool>,
}

impl StopSignals {
    /// Flags that no signal sets (a run nobody can interrupt, for tests and dry runs).
    pub fn none() -> StopSignals {
        StopSignals::default()
    }

    /// Registers the handlers. The exit of a second signal is registered first, so it acts
    /// only once the first has set the flag; its status is 128 + the signal, as a shell's.
    pub fn install() -> Result<StopSignals> {
        let signals = StopSignals::default();
        for (signal, flag) in [(SIGINT, &signals.int), (SIGTERM, &signals.term)] {
            signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, flag.clone())?;
            signal_hook::flag::register(signal, flag.clone())?;
        }
        Ok(signals)
    }

    /// The signal number received first (SIGTERM wins a tie), if any.
    pub fn received(&self) -> Option<i32> {
        if self.term.load(Ordering::SeqCst) {
            Some(SIGTERM)
        } else if self.int.load(Ordering::SeqCst) {
            Some(SIGINT)
        } else {
            None
        }
    }

    /// A signal's name for messages.
    pub fn name(signal: i32) -> &'static str {
        match signal {
            SIGINT => "SIGINT",
            SIGTERM => "SIGTERM",
            _ => "a signal",
        }
    }
}
