//! The `WindowCounter` port in memory: the counts of `<their key><window start>` under one
//! lock, so a request's keys are read and written in one step on this process's clock.
//! A count is dropped once its key would have expired on Redis (the window's start plus
//! the hit's `expire_secs`), when the map is swept.

use std::sync::Mutex;

use shortener_core::limiter::calendar::{decide, window_start};
use shortener_core::{
    Clock, FastMap, LimiterError, Spending, WindowCount, WindowCounter, WindowHit,
};

use super::MemoryRateLimiter;

/// The map is swept once it holds more keys than this (and, after a sweep, twice what
/// survived), so sweeping costs O(1) amortised per new key.
const SWEEP_AT: usize = 1024;

/// Counts by full key (their key and the window's start): the count and when it expires,
/// in seconds since the Unix epoch.
#[derive(Debug, Default)]
pub(super) struct Calendar {
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    by_key: FastMap<String, (u64, u64)>,
    sweep_at: usize,
}

impl Calendar {
    fn count(&self, hits: &[WindowHit], spending: Spending, now_us: u64) -> Vec<WindowCount> {
        let now_secs = now_us / 1_000_000;
        let keys: Vec<String> = (hits.iter())
            .map(|hit| format!("{}{}", hit.key, window_start(now_secs, hit.unit_secs)))
            .collect();
        // A panic while holding the lock cannot leave a count half-written: each is one
        // insert of plain integers.
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let stored: Vec<u64> = (keys.iter())
            .map(|key| match counts.by_key.get(key) {
                Some(&(count, expires)) if expires > now_secs => count,
                _ => 0,
            })
            .collect();
        let counted = decide(hits, &stored, spending);
        for ((key, hit), counted) in keys.into_iter().zip(hits).zip(&counted) {
            // As the script writes: every key but those "all" leaves untouched.
            if counted.after != counted.before || spending != Spending::AllOrNothing {
                let expires = window_start(now_secs, hit.unit_secs) + hit.expire_secs.max(1);
                counts.by_key.insert(key, (counted.after, expires));
            }
        }
        if counts.by_key.len() > counts.sweep_at.max(SWEEP_AT) {
            counts
                .by_key
                .retain(|_, &mut (_, expires)| expires > now_secs);
            counts.sweep_at = counts.by_key.len() * 2;
        }
        drop(counts);
        (counted.into_iter().zip(hits))
            .map(|(counted, hit)| {
                let unit = hit.unit_secs.max(1);
                counted.with_reset(unit - now_secs % unit)
            })
            .collect()
    }
}

impl<C: Clock> WindowCounter for MemoryRateLimiter<C> {
    async fn count_windows(
        &self,
        hits: &[WindowHit],
        spending: Spending,
    ) -> Result<Vec<WindowCount>, LimiterError> {
        Ok(self.calendar.count(hits, spending, self.clock.now_us()))
    }
}

#[cfg(test)]
mod tests {
    use shortener_core::limiter::clock::ManualClock;

    use super::*;

    fn hit(key: &str, limit: u64) -> WindowHit {
        WindowHit {
            key: key.to_owned(),
            limit,
            unit_secs: 60,
            hits: 1,
            expire_secs: 60,
        }
    }

    #[tokio::test]
    async fn counts_per_calendar_window_and_forgets_old_windows() {
        let clock = ManualClock::new(1_700_000_100_000_000);
        let limiter = MemoryRateLimiter::with_clock(Default::default(), clock.clone());
        let hits = [hit("d_k_v_", 2)];
        let mut over = Vec::new();
        for _ in 0..3 {
            let counts = limiter.count_windows(&hits, Spending::Each).await.unwrap();
            over.push((counts[0].after, counts[0].over, counts[0].reset_after_secs));
        }
        assert_eq!(over, [(1, false, 60), (2, false, 60), (3, true, 60)]);
        clock.advance(59_000_000);
        let last_second = limiter.count_windows(&hits, Spending::Each).await.unwrap();
        assert_eq!(
            (last_second[0].after, last_second[0].reset_after_secs),
            (4, 1)
        );
        clock.advance(1_000_000);
        let next = limiter.count_windows(&hits, Spending::Each).await.unwrap();
        assert_eq!((next[0].before, next[0].after, next[0].over), (0, 1, false));
    }
}
