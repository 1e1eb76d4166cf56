//! Clocks: the monotonic one every in-process limiter uses, and a manual one for tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use super::Clock;

/// Microseconds from [`Instant`], so that it never goes back whatever the wall clock
/// does, counted from the Unix time at which the clock was made: the fixed windows of an
/// in-process limiter then fall on the calendar's edges, as they do on Redis's clock.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
    origin_us: u64,
}

impl Default for MonotonicClock {
    fn default() -> Self {
        let since_epoch = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            origin: Instant::now(),
            origin_us: u64::try_from(since_epoch.as_micros()).unwrap_or_default(),
        }
    }
}

impl Clock for MonotonicClock {
    fn now_us(&self) -> u64 {
        let elapsed = u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.origin_us.saturating_add(elapsed)
    }
}

/// A clock that moves only when told to; clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new(start_us: u64) -> Self {
        Self(Arc::new(AtomicU64::new(start_us)))
    }

    pub fn set(&self, now_us: u64) {
        self.0.store(now_us, Ordering::SeqCst);
    }

    pub fn advance(&self, by_us: u64) {
        self.0.fetch_add(by_us, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_us(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_when_told_and_clones_share_it() {
        let clock = ManualClock::new(5);
        let clone = clock.clone();
        clock.advance(10);
        assert_eq!(clone.now_us(), 15);
        clone.set(3);
        assert_eq!(clock.now_us(), 3);
    }

    #[test]
    fn monotonic_clock_counts_microseconds() {
        let clock = MonotonicClock::default();
        let before = clock.now_us();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(clock.now_us() >= before + 2_000);
    }
}
