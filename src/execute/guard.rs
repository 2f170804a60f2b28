//! The storm guard: the share of failed deliveries among the most recent ones. A run whose
//! recent deliveries mostly fail is hammering a target that is down; it stops, whenever that
//! starts, instead of replaying the rest of the manifest into the outage.

use std::collections::VecDeque;
use std::sync::Mutex;

pub struct StormGuard {
    /// The outcome of the last `window` deliveries, true for a failure.
    recent: Mutex<VecDeque<bool>>,
    window: usize,
    /// Deliveries in the window before it may stop the run.
    at_least: usize,
    max_failure_ratio: f64,
}

/// Why the guard stopped a run: `failures` of the last `seen` deliveries failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tripped {
    pub failures: usize,
    pub seen: usize,
}

impl StormGuard {
    /// A guard over the last `window` deliveries, checked once `at_least` of them are in it.
    pub fn new(window: usize, at_least: usize, max_failure_ratio: f64) -> StormGuard {
        let window = window.max(1);
        StormGuard { recent: Mutex::new(VecDeque::with_capacity(window)), window, at_least: at_least.clamp(1, window), max_failure_ratio }
    }

    /// Records one delivery's outcome; says whether the run must stop.
    pub fn record(&self, failed: bool) -> Option<Tripped> {
        let mut recent = self.recent.lock().expect("guard lock");
        if recent.len() == self.window {
            recent.pop_front();
        }
        recent.push_back(failed);
        let failures = recent.iter().filter(|f| **f).count();
        let seen = recent.len();
        (seen >= self.at_least && failures as f64 / seen as f64 > self.max_failure_ratio).then_some(Tripped { failures, seen })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_late_in_a_long_run_trips_within_about_one_window() {
        let guard = StormGuard::new(50, 20, 0.5);
        for _ in 0..5_960 {
            assert_eq!(guard.record(false), None);
        }
        let failures_before_stop = (1..).find(|_| guard.record(true).is_some()).unwrap();
        // More than half of the last 50: the 26th failure in a row.
        assert_eq!(failures_before_stop, 26);
    }

    #[test]
    fn scattered_failures_never_trip_and_nothing_trips_before_the_minimum() {
        let guard = StormGuard::new(50, 20, 0.5);
        for i in 0..10_000 {
            assert_eq!(guard.record(i % 3 == 0), None, "at {i}");
        }
        let fresh = StormGuard::new(50, 20, 0.5);
        for _ in 0..19 {
            assert_eq!(fresh.record(true), None);
        }
        assert_eq!(fresh.record(true), Some(Tripped { failures: 20, seen: 20 }));
    }
}
