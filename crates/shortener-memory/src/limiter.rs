//! `MemoryRateLimiter`: the core model over sharded in-process state.

mod all;
mod calendar;
#[cfg(test)]
mod tests;

use std::fmt;

use shortener_core::limiter::{fixed_window, gcra, token_bucket};
use shortener_core::{
    Algorithm, Clock, Decision, FastMap, LimiterError, LocalRateLimiter, Policy, RateLimiter,
    Sharded,
};

use crate::clock::MonotonicClock;

const SHARDS: usize = 64;

/// A shard is swept once it holds more keys than this (and, after a sweep, twice what
/// survived), so sweeping costs O(1) amortised per new key.
const SWEEP_AT: usize = 1024;

/// A rate limiter for one process: the state of each (policy name, identity) lives in one
/// of 64 shards, each behind its own lock, and every decision is the core model's.
///
/// The clock is read while the shard is locked, so the decisions on one key see
/// non-decreasing times, in the order they were made. A key whose bucket is full again
/// decides exactly like a key never seen, so such keys are dropped when their shard is
/// swept: memory follows the number of recently active keys, not every key ever seen.
pub struct MemoryRateLimiter<C: Clock = MonotonicClock> {
    algorithm: Algorithm,
    clock: C,
    shards: Sharded<Shard>,
    sweep_min: usize,
    starts_empty: bool,
    /// The calendar-window counts of the rate limit service (`calendar.rs`).
    calendar: calendar::Calendar,
}

/// The state of the keys that hash to one shard.
#[derive(Debug, Default)]
struct Shard {
    /// By policy name, then identity; policies are few, so they are a list, and a lookup
    /// allocates nothing.
    policies: Vec<(String, FastMap<String, Slot>)>,
    keys: usize,
    sweep_at: usize,
}

/// A key's stored state, and when its bucket will be full again.
#[derive(Debug, Clone, Copy)]
struct Slot {
    state: State,
    full_at_us: u64,
}

#[derive(Debug, Clone, Copy)]
enum State {
    TokenBucket(token_bucket::Bucket),
    Gcra(u64),
    Window(fixed_window::Window),
}

impl State {
    /// When the key decides like one never seen (its bucket full, its window over).
    fn full_at_us(self, policy: &Policy) -> u64 {
        match self {
            Self::TokenBucket(bucket) => bucket.at_us + (policy.burst_us() - bucket.credit_us),
            Self::Gcra(tat) => tat,
            Self::Window(window) => window.start_us + fixed_window::window_us(policy),
        }
    }
}

impl MemoryRateLimiter {
    /// A limiter on the monotonic clock.
    pub fn new(algorithm: Algorithm) -> Self {
        Self::with_clock(algorithm, MonotonicClock::default())
    }
}

impl Default for MemoryRateLimiter {
    fn default() -> Self {
        Self::new(Algorithm::default())
    }
}

impl<C: Clock> MemoryRateLimiter<C> {
    pub fn with_clock(algorithm: Algorithm, clock: C) -> Self {
        Self::with_sweep_threshold(algorithm, clock, SWEEP_AT)
    }

    fn with_sweep_threshold(algorithm: Algorithm, clock: C, sweep_min: usize) -> Self {
        Self {
            algorithm,
            clock,
            shards: Sharded::new(SHARDS),
            sweep_min,
            starts_empty: false,
            calendar: calendar::Calendar::default(),
        }
    }

    /// A limiter whose buckets start empty rather than full: a node's fallback, whose
    /// buckets must hold only what refilled while it decided on its own. Sweeping a full
    /// bucket then forgets credit, which only ever refuses more.
    pub fn starting_empty(mut self) -> Self {
        self.starts_empty = true;
        self
    }

    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// How many keys hold state now (full buckets not swept yet included).
    pub fn tracked_keys(&self) -> usize {
        self.shards.each().map(|shard| shard.keys).sum()
    }

    /// Decides one request, and returns the decision with the time it was made at (read
    /// under the key's lock), so that tests can check decisions against their times.
    pub fn acquire_at_now(&self, identity: &str, policy: &Policy, cost: u64) -> (Decision, u64) {
        // A panic while holding the lock cannot leave a slot half-written (slots are
        // replaced whole), so a poisoned shard is still sound.
        let mut shard = self.shards.write(&(policy.name(), identity));
        let now_us = self.clock.now_us();
        let mut stored = shard.get(policy.name(), identity).map(|slot| slot.state);
        let empty = stored.is_none() && self.starts_empty;
        if empty {
            stored = Some(match self.algorithm {
                Algorithm::TokenBucket => State::TokenBucket(token_bucket::Bucket {
                    credit_us: 0,
                    at_us: now_us,
                }),
                Algorithm::Gcra => State::Gcra(now_us + policy.burst_us()),
                Algorithm::FixedWindow => State::Window(fixed_window::Window {
                    start_us: fixed_window::start_of(policy, now_us),
                    count: policy.capacity(),
                }),
            });
        }
        let (decision, write) = match self.algorithm {
            Algorithm::TokenBucket => {
                let bucket = match stored {
                    Some(State::TokenBucket(bucket)) => Some(bucket),
                    _ => None,
                };
                let (decision, next) = token_bucket::step(bucket, policy, now_us, cost);
                (decision, next.map(State::TokenBucket))
            }
            Algorithm::Gcra => {
                let tat = match stored {
                    Some(State::Gcra(tat)) => Some(tat),
                    _ => None,
                };
                let (decision, next) = gcra::step(tat, policy, now_us, cost);
                (decision, next.map(State::Gcra))
            }
            Algorithm::FixedWindow => {
                let window = match stored {
                    Some(State::Window(window)) => Some(window),
                    _ => None,
                };
                let (decision, next) = fixed_window::step(window, policy, now_us, cost);
                (decision, next.map(State::Window))
            }
        };
        // A bucket that starts empty is stored even when refused, or it would start
        // empty again at the next request and never fill.
        let write = write.or(if empty { stored } else { None });
        if let Some(state) = write {
            let slot = Slot {
                state,
                full_at_us: state.full_at_us(policy),
            };
            shard.put(policy.name(), identity, slot, now_us, self.sweep_min);
        }
        (decision, now_us)
    }
}

impl<C: Clock> RateLimiter for MemoryRateLimiter<C> {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        Ok(self.acquire_at_now(identity, policy, cost).0)
    }

    async fn health(&self) -> Result<(), LimiterError> {
        Ok(())
    }
}

impl<C: Clock> LocalRateLimiter for MemoryRateLimiter<C> {
    fn reset(&self) {
        for mut shard in self.shards.each() {
            *shard = Shard::default();
        }
    }
}

impl<C: Clock> fmt::Debug for MemoryRateLimiter<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRateLimiter")
            .field("algorithm", &self.algorithm)
            .field("shards", &SHARDS)
            .field("tracked_keys", &self.tracked_keys())
            .finish_non_exhaustive()
    }
}

impl Shard {
    fn get(&self, policy: &str, identity: &str) -> Option<&Slot> {
        self.policies
            .iter()
            .find(|(name, _)| name == policy)
            .and_then(|(_, keys)| keys.get(identity))
    }

    fn put(&mut self, policy: &str, identity: &str, slot: Slot, now_us: u64, sweep_min: usize) {
        let position = match self.policies.iter().position(|(name, _)| name == policy) {
            Some(position) => position,
            None => {
                self.policies.push((policy.to_owned(), FastMap::default()));
                self.policies.len() - 1
            }
        };
        let keys = &mut self.policies[position].1;
        if let Some(stored) = keys.get_mut(identity) {
            *stored = slot;
            return;
        }
        keys.insert(identity.to_owned(), slot);
        self.keys += 1;
        if self.keys > self.sweep_at.max(sweep_min) {
            self.sweep(now_us, sweep_min);
        }
    }

    /// Drops every key whose bucket is full at `now_us`: with a clock that does not go
    /// back, the model decides the same for it as for a key never seen.
    fn sweep(&mut self, now_us: u64, sweep_min: usize) {
        for (_, keys) in &mut self.policies {
            keys.retain(|_, slot| slot.full_at_us > now_us);
        }
        self.policies.retain(|(_, keys)| !keys.is_empty());
        self.keys = self.policies.iter().map(|(_, keys)| keys.len()).sum();
        self.sweep_at = sweep_min.max(2 * self.keys);
    }
}
