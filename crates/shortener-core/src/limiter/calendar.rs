//! Calendar-window counts as envoyproxy/ratelimit keeps them: one integer per key and
//! window of its unit (aligned on the Unix epoch), incremented by each request's hits and
//! compared with the limit after the increment. A fleet that runs their service and ours
//! on one Redis must count each limit once, so the keys, the increments and the expiries
//! are theirs (the adapter writes `<key><window start in seconds>`, `INCRBY` and
//! `EXPIRE`); what is ours is that one request's keys are read and written in one atomic
//! step on one clock, and how a request spends when one of its keys goes over
//! ([`Spending`]).
//!
//! Not here: the token bucket, GCRA and our own fixed window of the all-or-nothing
//! decisions ([`super::all`]), which keep their state in our key format.

use std::future::Future;

use super::LimiterError;

/// How a request spends its keys' counts when one of them goes over its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Spending {
    /// Every key counts every hit, over or not: their default. A request refused by one
    /// descriptor still spends the others, and a count may pass its limit.
    #[default]
    Each,
    /// Their `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`: when some key would go over, only
    /// the keys that go over count the hits (they stay over); the others count nothing.
    StopWhenOver,
    /// Ours: when some key would go over, no key counts anything.
    AllOrNothing,
}

/// One key of a request: `key` is their cache key without the window (`prefix`,
/// domain, then each entry's key and value, each followed by `_`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowHit {
    pub key: String,
    pub limit: u64,
    /// The window's length: 1, 60, 3600, 86400, 604800, 2592000 (their month) or
    /// 31536000 (their year).
    pub unit_secs: u64,
    pub hits: u64,
    /// Seconds the key lives after its write: the unit, plus their expiration jitter.
    pub expire_secs: u64,
}

/// What one key's count did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowCount {
    /// The count before this request, and as the request leaves it.
    pub before: u64,
    pub after: u64,
    /// The key is over its limit with this request's hits (counted or not).
    pub over: bool,
    /// Seconds from the decision to the window's end, on the clock that decided.
    pub reset_after_secs: u64,
}

impl WindowCount {
    /// What remains under the limit after this request (0 when over).
    pub fn remaining(&self, limit: u64) -> u64 {
        if self.over {
            0
        } else {
            limit.saturating_sub(self.after)
        }
    }
}

/// The port: counts a request's keys in the windows that hold now.
pub trait WindowCounter: Send + Sync {
    /// Counts `hits` as `spending` says, atomically for the whole request where the
    /// backend can (see each adapter), and returns one count per hit, in order.
    ///
    /// # Errors
    /// As [`super::RateLimiter::acquire`]: nothing was counted unless the backend answered.
    fn count_windows(
        &self,
        hits: &[WindowHit],
        spending: Spending,
    ) -> impl Future<Output = Result<Vec<WindowCount>, LimiterError>> + Send;
}

/// The start of the window of `unit_secs` that holds `now_secs`.
pub fn window_start(now_secs: u64, unit_secs: u64) -> u64 {
    now_secs - now_secs % unit_secs.max(1)
}

/// The model every adapter follows. `stored[i]` is the count of `hits[i].key` as stored
/// before this request (a key named twice has the same stored count at both places).
/// Returns each hit's count; the count to store for a key is the `after` of its last hit.
///
/// A key named twice counts its hits one after the other, as their pipeline of `INCRBY`s
/// does: whether a hit goes over reads the earlier hits of the request as counted.
pub fn decide(hits: &[WindowHit], stored: &[u64], spending: Spending) -> Vec<Counted> {
    let running = |counts: &[u64]| {
        let mut totals: Vec<(&str, u64)> = Vec::new();
        (hits.iter().zip(stored).zip(counts))
            .map(|((hit, &stored), &add)| {
                let at = match totals.iter().position(|(key, _)| *key == hit.key) {
                    Some(at) => at,
                    None => {
                        totals.push((&hit.key, stored));
                        totals.len() - 1
                    }
                };
                let before = totals[at].1;
                totals[at].1 = before.saturating_add(add);
                before
            })
            .collect::<Vec<u64>>()
    };
    let every: Vec<u64> = hits.iter().map(|hit| hit.hits).collect();
    let over: Vec<bool> = (hits.iter().zip(running(&every)))
        .map(|(hit, before)| before.saturating_add(hit.hits) > hit.limit)
        .collect();
    let any_over = over.contains(&true);
    let added: Vec<u64> = (hits.iter().zip(&over))
        .map(|(hit, &over)| match spending {
            Spending::Each => hit.hits,
            _ if !any_over => hit.hits,
            Spending::StopWhenOver if over => hit.hits,
            Spending::StopWhenOver | Spending::AllOrNothing => 0,
        })
        .collect();
    (running(&added).into_iter().zip(&added).zip(over))
        .map(|((before, &add), over)| Counted {
            before,
            after: before.saturating_add(add),
            over,
        })
        .collect()
}

/// One hit as [`decide`] counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub before: u64,
    pub after: u64,
    pub over: bool,
}

impl Counted {
    /// With the time left in the window.
    pub fn with_reset(self, reset_after_secs: u64) -> WindowCount {
        WindowCount {
            before: self.before,
            after: self.after,
            over: self.over,
            reset_after_secs,
        }
    }
}

#[cfg(test)]
mod tests {
    // The calendar-window model: each spending on hand-picked counts, and the bound on
    // admitted hits over random request sequences.

    use proptest::prelude::*;

    use super::*;

    fn hit(key: &str, limit: u64, hits: u64) -> WindowHit {
        WindowHit {
            key: key.to_owned(),
            limit,
            unit_secs: 60,
            hits,
            expire_secs: 60,
        }
    }

    fn counts(results: &[Counted]) -> Vec<(u64, u64, bool)> {
        (results.iter())
            .map(|counted| (counted.before, counted.after, counted.over))
            .collect()
    }

    #[test]
    fn each_counts_every_hit_and_a_count_passes_its_limit() {
        let hits = [hit("a_", 3, 2), hit("b_", 10, 1)];
        let counted = decide(&hits, &[2, 0], Spending::Each);
        assert_eq!(counts(&counted), [(2, 4, true), (0, 1, false)]);
    }

    #[test]
    fn stop_when_over_counts_only_the_keys_that_go_over() {
        let hits = [hit("a_", 3, 2), hit("b_", 10, 1)];
        let counted = decide(&hits, &[2, 0], Spending::StopWhenOver);
        assert_eq!(counts(&counted), [(2, 4, true), (0, 0, false)]);
        let under = decide(&hits, &[0, 0], Spending::StopWhenOver);
        assert_eq!(counts(&under), [(0, 2, false), (0, 1, false)]);
    }

    #[test]
    fn all_or_nothing_counts_nothing_when_one_key_goes_over() {
        let hits = [hit("a_", 3, 2), hit("b_", 10, 1)];
        let counted = decide(&hits, &[2, 0], Spending::AllOrNothing);
        assert_eq!(counts(&counted), [(2, 2, true), (0, 0, false)]);
    }

    #[test]
    fn a_key_named_twice_counts_its_hits_one_after_the_other() {
        let hits = [hit("a_", 2, 1), hit("a_", 2, 1)];
        assert_eq!(
            counts(&decide(&hits, &[1, 1], Spending::Each)),
            [(1, 2, false), (2, 3, true)]
        );
        assert_eq!(
            counts(&decide(&hits, &[1, 1], Spending::AllOrNothing)),
            [(1, 1, false), (1, 1, true)]
        );
    }

    #[test]
    fn windows_start_on_the_epoch() {
        assert_eq!(window_start(1_700_000_123, 60), 1_700_000_100);
        assert_eq!(window_start(1_700_000_123, 1), 1_700_000_123);
        assert_eq!(window_start(59, 60), 0);
    }

    fn spending() -> impl Strategy<Value = Spending> {
        prop_oneof![
            Just(Spending::Each),
            Just(Spending::StopWhenOver),
            Just(Spending::AllOrNothing)
        ]
    }

    proptest! {
        /// Whatever the spending, the requests admitted (no key over) never hold more hits
        /// of a key than its limit, over any sequence of requests on a few keys.
        #[test]
        fn admitted_hits_never_exceed_a_limit(
            spending in spending(),
            requests in prop::collection::vec(
                prop::collection::vec((0..3usize, 0..4u64), 1..4),
                1..40,
            ),
        ) {
            let limits = [3u64, 5, 1];
            let mut stored = [0u64; 3];
            let mut admitted = [0u64; 3];
            for request in requests {
                let hits: Vec<WindowHit> = (request.iter())
                    .map(|&(key, hits)| hit(&format!("k{key}_"), limits[key], hits))
                    .collect();
                let before: Vec<u64> = request.iter().map(|&(key, _)| stored[key]).collect();
                let counted = decide(&hits, &before, spending);
                if spending == Spending::AllOrNothing && counted.iter().any(|c| c.over) {
                    prop_assert!(counted.iter().all(|c| c.after == c.before));
                }
                for (&(key, _), counted) in request.iter().zip(&counted) {
                    stored[key] = counted.after;
                }
                if counted.iter().all(|c| !c.over) {
                    for &(key, hits) in &request {
                        admitted[key] += hits;
                    }
                }
            }
            for key in 0..3 {
                prop_assert!(admitted[key] <= limits[key], "key {key}: {admitted:?}");
            }
        }
    }
}
