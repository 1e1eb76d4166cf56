//! The memory limiter against the core model (every algorithm, keys swept or not), and
//! the sweep of keys that decide like new ones.

use std::collections::HashMap;

use proptest::prelude::*;
use shortener_conformance::strategies::{histories, policies, start_times};
use shortener_core::limiter::{fixed_window, gcra, token_bucket};

use super::*;
use crate::clock::ManualClock;

/// The state the model keeps for one key, for each algorithm.
#[derive(Clone, Copy)]
enum ModelState {
    Bucket(Option<token_bucket::Bucket>),
    Tat(Option<u64>),
    Window(Option<fixed_window::Window>),
}

impl ModelState {
    fn new(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::TokenBucket => Self::Bucket(None),
            Algorithm::Gcra => Self::Tat(None),
            Algorithm::FixedWindow => Self::Window(None),
        }
    }

    fn step(&mut self, policy: &Policy, now_us: u64, cost: u64) -> Decision {
        match self {
            Self::Bucket(state) => {
                let (decision, next) = token_bucket::step(*state, policy, now_us, cost);
                *state = next.or(*state);
                decision
            }
            Self::Tat(state) => {
                let (decision, next) = gcra::step(*state, policy, now_us, cost);
                *state = next.or(*state);
                decision
            }
            Self::Window(state) => {
                let (decision, next) = fixed_window::step(*state, policy, now_us, cost);
                *state = next.or(*state);
                decision
            }
        }
    }
}

fn algorithms() -> impl Strategy<Value = Algorithm> {
    prop_oneof![
        Just(Algorithm::TokenBucket),
        Just(Algorithm::Gcra),
        Just(Algorithm::FixedWindow)
    ]
}

proptest! {
    /// For any history over a few keys, the limiter decides exactly as the model, at the
    /// clock's time, including after its keys have been swept (a sweep on every new key
    /// here).
    #[test]
    fn decides_exactly_as_the_model(
        algorithm in algorithms(),
        policy in policies(),
        history in histories(),
        keys in prop::collection::vec(0usize..4, 1..50),
        start in start_times(),
    ) {
        let clock = ManualClock::new(start);
        let limiter = MemoryRateLimiter::with_sweep_threshold(algorithm, clock.clone(), 1);
        let mut model: HashMap<usize, ModelState> = HashMap::new();
        for (index, (step_us, cost)) in history.into_iter().enumerate() {
            clock.advance(step_us);
            let key = keys[index % keys.len()];
            let (decision, at) = limiter.acquire_at_now(&format!("id-{key}"), &policy, cost);
            let expected = model
                .entry(key)
                .or_insert_with(|| ModelState::new(algorithm))
                .step(&policy, clock.now_us(), cost);
            prop_assert_eq!(at, clock.now_us());
            prop_assert_eq!(decision, expected, "request {} on key {}", index, key);
        }
    }
}

#[test]
fn keys_with_full_buckets_are_dropped() {
    const KEYS: u64 = 200_000;
    let clock = ManualClock::new(0);
    let limiter = MemoryRateLimiter::with_clock(Algorithm::TokenBucket, clock.clone());
    // Each key is full again 1ms after its request; the keys arrive every 10us, so about
    // 100 of them are not full at any time.
    let policy = Policy::from_interval("p", 1, 1_000).unwrap();
    for key in 0..KEYS {
        clock.advance(10);
        assert!(
            limiter
                .acquire_at_now(&key.to_string(), &policy, 1)
                .0
                .allowed
        );
    }
    let tracked = limiter.tracked_keys();
    assert!(tracked <= SHARDS * (SWEEP_AT + 1), "{tracked} keys tracked");
    // A dropped key starts again from a full bucket, as it would have anyway.
    assert!(limiter.acquire_at_now("0", &policy, 1).0.allowed);
}

#[test]
fn busy_keys_are_kept() {
    let clock = ManualClock::new(0);
    let limiter = MemoryRateLimiter::with_sweep_threshold(Algorithm::Gcra, clock.clone(), 1);
    let slow = Policy::from_interval("slow", 1, 1_000_000_000).unwrap();
    for key in 0..100 {
        assert!(limiter.acquire_at_now(&key.to_string(), &slow, 1).0.allowed);
        clock.advance(1_000);
    }
    assert_eq!(
        limiter.tracked_keys(),
        100,
        "no bucket refilled, none may go"
    );
    assert!(!limiter.acquire_at_now("0", &slow, 1).0.allowed);
}

#[test]
fn policies_with_one_name_share_state_and_others_do_not() {
    let limiter = MemoryRateLimiter::with_clock(Algorithm::TokenBucket, ManualClock::new(0));
    let first = Policy::from_interval("a", 1, 1_000_000).unwrap();
    let second = Policy::from_interval("b", 1, 1_000_000).unwrap();
    assert!(limiter.acquire_at_now("x", &first, 1).0.allowed);
    assert!(!limiter.acquire_at_now("x", &first, 1).0.allowed);
    assert!(limiter.acquire_at_now("x", &second, 1).0.allowed);
    assert_eq!(limiter.tracked_keys(), 2);
}

#[test]
fn a_limiter_starting_empty_fills_at_the_rate_and_reset_empties_it() {
    for algorithm in [Algorithm::TokenBucket, Algorithm::Gcra] {
        let clock = ManualClock::new(1_000_000);
        let limiter = MemoryRateLimiter::with_clock(algorithm, clock.clone()).starting_empty();
        let policy = Policy::from_interval("p", 2, 1_000).unwrap();
        let acquire = || limiter.acquire_at_now("id", &policy, 1).0.allowed;
        assert!(!acquire(), "{algorithm:?}: empty at first sight");
        clock.advance(999);
        assert!(!acquire(), "{algorithm:?}: not a token yet");
        clock.advance(1);
        assert!(acquire(), "{algorithm:?}: one token after one interval");
        assert!(!acquire());
        clock.advance(10_000);
        assert!(
            acquire() && acquire() && !acquire(),
            "{algorithm:?}: capped"
        );
        clock.advance(10_000);
        limiter.reset();
        assert!(!acquire(), "{algorithm:?}: empty again after a reset");
    }
}
