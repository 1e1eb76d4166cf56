//! The memory limiter's all-or-nothing decisions: every shard involved is locked (in
//! index order, so that two decisions never wait on each other), the core model
//! [`step_all`] decides, and the buckets it wrote are stored.

use std::collections::HashMap;

use shortener_core::limiter::all::{Stored, grouped_identity, step_all};
use shortener_core::limiter::fixed_window;
use shortener_core::limiter::token_bucket::Bucket;
use shortener_core::{Algorithm, AllDecision, Clock, Demand, LimiterError, MultiRateLimiter};

use super::{MemoryRateLimiter, Slot, State};

impl<C: Clock> MemoryRateLimiter<C> {
    /// An all-or-nothing decision now (see [`MultiRateLimiter::acquire_all`]).
    pub fn acquire_all_now(&self, group: &str, demands: &[Demand]) -> AllDecision {
        let keys: Vec<(String, usize)> = demands
            .iter()
            .map(|demand| {
                let identity = grouped_identity(group, &demand.identity);
                let index = self
                    .shards
                    .index_of(&(demand.policy.name(), identity.as_str()));
                (identity, index)
            })
            .collect();
        let mut indexes: Vec<usize> = keys.iter().map(|(_, index)| *index).collect();
        indexes.sort_unstable();
        indexes.dedup();
        let mut shards: Vec<_> = indexes
            .iter()
            .map(|&index| (index, self.shards.write_at(index)))
            .collect();
        let now_us = self.clock.now_us();
        let mut buckets: HashMap<(String, String), Option<Stored>> = HashMap::new();
        // Buckets made empty just now: stored even when nothing changes them, or they would
        // start empty again at the next request and never fill.
        let mut created = Vec::new();
        for (demand, (identity, index)) in demands.iter().zip(&keys) {
            let key = (demand.policy.name().to_owned(), identity.clone());
            if buckets.contains_key(&key) {
                continue;
            }
            let shard = &shards[indexes.binary_search(index).unwrap_or_default()].1;
            let stored = shard
                .get(demand.policy.name(), identity)
                .map(|slot| match slot.state {
                    State::TokenBucket(bucket) => Stored::Bucket(bucket),
                    State::Gcra(tat) => Stored::Tat(tat),
                    State::Window(window) => Stored::Window(window),
                });
            let stored = stored.or_else(|| {
                self.starts_empty.then(|| {
                    created.push(key.clone());
                    empty(demand, now_us)
                })
            });
            buckets.insert(key, stored);
        }
        let before = buckets.clone();
        let model: Vec<_> = demands
            .iter()
            .zip(&keys)
            .map(|(demand, (identity, _))| {
                ((demand.policy.name().to_owned(), identity.clone()), demand)
            })
            .collect();
        let decision = step_all(&mut buckets, &model, now_us);
        for (demand, (identity, index)) in demands.iter().zip(&keys) {
            let key = (demand.policy.name().to_owned(), identity.clone());
            let Some(Some(stored)) = buckets.get(&key) else {
                continue;
            };
            // Written when the model changed it, or when it was made empty just now.
            let fresh = created.contains(&key);
            if before.get(&key) == Some(&Some(*stored)) && !fresh {
                continue;
            }
            let state = match *stored {
                Stored::Bucket(bucket) => State::TokenBucket(bucket),
                Stored::Tat(tat) => State::Gcra(tat),
                Stored::Window(window) => State::Window(window),
            };
            let full_at_us = state.full_at_us(&demand.policy);
            let position = indexes.binary_search(index).unwrap_or_default();
            shards[position].1.put(
                demand.policy.name(),
                identity,
                Slot { state, full_at_us },
                now_us,
                self.sweep_min,
            );
        }
        decision
    }
}

/// A bucket made empty at `now_us` (a fallback's, see `starting_empty`): no credit, or a
/// window already counted full.
fn empty(demand: &Demand, now_us: u64) -> Stored {
    match demand.algorithm {
        Algorithm::TokenBucket => Stored::Bucket(Bucket {
            credit_us: 0,
            at_us: now_us,
        }),
        Algorithm::Gcra => Stored::Tat(now_us + demand.policy.burst_us()),
        Algorithm::FixedWindow => Stored::Window(fixed_window::Window {
            start_us: fixed_window::start_of(&demand.policy, now_us),
            count: demand.policy.capacity(),
        }),
    }
}

impl<C: Clock> MultiRateLimiter for MemoryRateLimiter<C> {
    async fn acquire_all(
        &self,
        group: &str,
        demands: &[Demand],
    ) -> Result<AllDecision, LimiterError> {
        Ok(self.acquire_all_now(group, demands))
    }
}

#[cfg(test)]
mod tests {
    use shortener_core::Policy;
    use shortener_core::limiter::clock::ManualClock;

    use super::*;

    fn demand(identity: &str, policy: &Policy, cost: u64) -> Demand {
        Demand {
            identity: identity.to_owned(),
            policy: policy.clone(),
            cost,
            debt: 0,
            algorithm: Algorithm::TokenBucket,
        }
    }

    #[test]
    fn a_refused_decision_leaves_every_bucket_as_it_was() {
        for algorithm in [Algorithm::TokenBucket, Algorithm::Gcra] {
            let limiter = MemoryRateLimiter::with_clock(algorithm, ManualClock::default());
            let wide = Policy::from_interval("wide", 10, 1_000_000).unwrap();
            let narrow = Policy::from_interval("narrow", 1, 1_000_000).unwrap();
            let both = [demand("a", &wide, 1), demand("a", &narrow, 1)].map(|demand| Demand {
                algorithm,
                ..demand
            });
            assert!(limiter.acquire_all_now("d", &both).allowed);
            let refused = limiter.acquire_all_now("d", &both);
            assert!(!refused.allowed, "{algorithm:?}");
            assert_eq!(refused.decisions[0].remaining, 9);
            let (alone, _) = limiter.acquire_at_now(&grouped_identity("d", "a"), &wide, 1);
            assert_eq!(
                alone.remaining, 8,
                "{algorithm:?}: the refusal took nothing"
            );
            // Another group is another bucket.
            assert!(limiter.acquire_all_now("e", &both).allowed);
        }
    }

    #[test]
    fn buckets_that_start_empty_fill_from_their_first_demand() {
        let clock = ManualClock::default();
        let limiter = MemoryRateLimiter::with_clock(Algorithm::TokenBucket, clock).starting_empty();
        let policy = Policy::from_interval("p", 2, 1_000_000).unwrap();
        assert!(
            !limiter
                .acquire_all_now("d", &[demand("a", &policy, 1)])
                .allowed
        );
        limiter.clock().advance(1_000_000);
        assert!(
            limiter
                .acquire_all_now("d", &[demand("a", &policy, 1)])
                .allowed
        );
    }

    #[test]
    fn a_fixed_window_counts_per_window_and_a_fallback_one_starts_counted_full() {
        let policy = Policy::from_interval("w", 2, 1_000_000).unwrap();
        let window = Demand {
            algorithm: Algorithm::FixedWindow,
            ..demand("a", &policy, 1)
        };
        let limiter = MemoryRateLimiter::with_clock(Algorithm::TokenBucket, ManualClock::default());
        limiter.clock().advance(3_000_000);
        for left in [1, 0] {
            let decision = limiter.acquire_all_now("d", std::slice::from_ref(&window));
            assert_eq!(decision.decisions[0].remaining, left);
        }
        let refused = limiter.acquire_all_now("d", std::slice::from_ref(&window));
        assert_eq!(refused.decisions[0].retry_after_us, Some(1_000_000));
        limiter.clock().advance(1_000_000);
        assert!(
            limiter
                .acquire_all_now("d", std::slice::from_ref(&window))
                .allowed
        );

        let fallback =
            MemoryRateLimiter::with_clock(Algorithm::TokenBucket, ManualClock::default())
                .starting_empty();
        fallback.clock().advance(3_000_000);
        assert!(
            !fallback
                .acquire_all_now("d", std::slice::from_ref(&window))
                .allowed
        );
        fallback.clock().advance(1_000_000);
        assert!(
            fallback
                .acquire_all_now("d", std::slice::from_ref(&window))
                .allowed
        );
    }
}
