//! The memory limiter's all-or-nothing decisions: every shard involved is locked (in
//! index order, so that two decisions never wait on each other), the core model
//! [`step_all`] decides, and the buckets it wrote are stored.

use std::collections::HashMap;
use std::hash::BuildHasher;

use shortener_core::limiter::all::{grouped_identity, step_all};
use shortener_core::limiter::token_bucket::Bucket;
use shortener_core::{Algorithm, AllDecision, Clock, Demand, LimiterError, MultiRateLimiter};

use super::{MemoryRateLimiter, SHARDS, Slot, State, lock};

impl<C: Clock> MemoryRateLimiter<C> {
    /// An all-or-nothing decision now (see [`MultiRateLimiter::acquire_all`]).
    pub fn acquire_all_now(&self, group: &str, demands: &[Demand]) -> AllDecision {
        let keys: Vec<(String, usize)> = demands
            .iter()
            .map(|demand| {
                let identity = grouped_identity(group, &demand.identity);
                let index = (self
                    .hasher
                    .hash_one((demand.policy.name(), identity.as_str()))
                    % SHARDS as u64) as usize;
                (identity, index)
            })
            .collect();
        let mut indexes: Vec<usize> = keys.iter().map(|(_, index)| *index).collect();
        indexes.sort_unstable();
        indexes.dedup();
        let mut shards: Vec<_> = indexes
            .iter()
            .map(|&index| (index, lock(&self.shards[index])))
            .collect();
        let now_us = self.clock.now_us();
        let mut buckets: HashMap<(String, String), Option<Bucket>> = HashMap::new();
        // Buckets made empty just now: stored even when nothing changes them, or they would
        // start empty again at the next request and never fill.
        let mut created = Vec::new();
        for (demand, (identity, index)) in demands.iter().zip(&keys) {
            let key = (demand.policy.name().to_owned(), identity.clone());
            if buckets.contains_key(&key) {
                continue;
            }
            let shard = &shards[indexes.binary_search(index).unwrap_or_default()].1;
            let burst = demand.policy.burst_us();
            let stored = shard
                .get(demand.policy.name(), identity)
                .map(|slot| match slot.state {
                    State::TokenBucket(bucket) => bucket,
                    // GCRA's theoretical arrival time as the same bucket: full at `tat`.
                    State::Gcra(tat) => Bucket {
                        credit_us: burst.saturating_sub(tat.saturating_sub(now_us)),
                        at_us: now_us.max(tat.saturating_sub(burst)),
                    },
                });
            let stored = stored.or_else(|| {
                self.starts_empty.then(|| {
                    created.push(key.clone());
                    Bucket {
                        credit_us: 0,
                        at_us: now_us,
                    }
                })
            });
            buckets.insert(key, stored);
        }
        let before = buckets.clone();
        let model: Vec<_> = demands
            .iter()
            .zip(&keys)
            .map(|(demand, (identity, _))| {
                let key = (demand.policy.name().to_owned(), identity.clone());
                (key, &demand.policy, demand.debt, demand.cost)
            })
            .collect();
        let decision = step_all(&mut buckets, &model, now_us);
        for (demand, (identity, index)) in demands.iter().zip(&keys) {
            let key = (demand.policy.name().to_owned(), identity.clone());
            let Some(Some(bucket)) = buckets.get(&key) else {
                continue;
            };
            // Written when the model changed it, or when it was made empty just now.
            let fresh = created.contains(&key);
            if before.get(&key) == Some(&Some(*bucket)) && !fresh {
                continue;
            }
            let burst = demand.policy.burst_us();
            let full_at_us = bucket.at_us + (burst - bucket.credit_us);
            let state = match self.algorithm {
                Algorithm::TokenBucket => State::TokenBucket(*bucket),
                Algorithm::Gcra => State::Gcra(full_at_us),
            };
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
        }
    }

    #[test]
    fn a_refused_decision_leaves_every_bucket_as_it_was() {
        for algorithm in [Algorithm::TokenBucket, Algorithm::Gcra] {
            let limiter = MemoryRateLimiter::with_clock(algorithm, ManualClock::default());
            let wide = Policy::from_interval("wide", 10, 1_000_000).unwrap();
            let narrow = Policy::from_interval("narrow", 1, 1_000_000).unwrap();
            let both = [demand("a", &wide, 1), demand("a", &narrow, 1)];
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
}
