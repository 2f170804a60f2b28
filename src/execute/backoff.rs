//! Waits between retries: exponential, capped, and jittered so that many deliveries failing
//! together (an outage) do not come back together and knock the target over again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug)]
pub struct Backoff {
    /// The wait before the first retry, before jitter.
    pub base: Duration,
    /// No wait is longer than this.
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { base: Duration::from_millis(100), cap: Duration::from_secs(5) }
    }
}

impl Backoff {
    /// The wait before retry number `retry` (1 for the first): `base · 2^(retry-1)`, capped,
    /// then a uniformly random point in its upper half ("equal jitter").
    pub fn delay(&self, retry: u32) -> Duration {
        let full = self.base.saturating_mul(1u32 << retry.saturating_sub(1).min(20)).min(self.cap);
        full.mul_f64(0.5 + 0.5 * unit_random())
    }
}

/// A number in [0, 1) from a SplitMix64 stream seeded by the clock and the pid: jitter needs
/// spread between executors and retries, not cryptographic quality.
fn unit_random() -> f64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    static DRAWS: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
        now ^ (u64::from(std::process::id()) << 32)
    });
    let mut z = seed.wrapping_add(DRAWS.fetch_add(1, Ordering::Relaxed).wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_spread_over_the_upper_half() {
        let b = Backoff { base: Duration::from_millis(100), cap: Duration::from_millis(1000) };
        for (retry, full) in [(1, 100u64), (2, 200), (3, 400), (4, 800), (5, 1000), (30, 1000)] {
            let waits: Vec<Duration> = (0..200).map(|_| b.delay(retry)).collect();
            let (min, max) = (waits.iter().min().unwrap(), waits.iter().max().unwrap());
            assert!(*min >= Duration::from_millis(full / 2) && *max <= Duration::from_millis(full), "retry {retry}: {min:?}..{max:?}");
            // Jitter: 200 draws spread over most of the half-width, not one value.
            assert!(*max - *min > Duration::from_millis(full / 4), "retry {retry}: {min:?}..{max:?}");
        }
    }
}
