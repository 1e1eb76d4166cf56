//! Proptest strategies for differential tests: an adapter and the core model
//! ([`shortener_core::limiter::token_bucket::step`], [`shortener_core::limiter::gcra::step`])
//! fed the same history must decide the same.

use proptest::prelude::*;
use shortener_core::Policy;

/// Valid policies: capacity 1..100, emission interval 20us..10s.
pub fn policies() -> impl Strategy<Value = Policy> {
    (1u64..100, 20u64..10_000_000).prop_map(|(capacity, interval_us)| {
        Policy::from_interval("p", capacity, interval_us).expect("in range by construction")
    })
}

/// Histories of requests: `(time step in microseconds, cost)`, applied in order.
///
/// Steps mix bursts (0), short gaps and long ones; costs are mostly small, sometimes
/// above any capacity, sometimes 0.
pub fn histories() -> impl Strategy<Value = Vec<(u64, u64)>> {
    let step = prop_oneof![
        2 => Just(0u64),
        3 => 0u64..2_000,
        3 => 0u64..1_000_000,
        1 => 0u64..30_000_000,
    ];
    let cost = prop_oneof![
        6 => 0u64..4,
        2 => 0u64..40,
        1 => 0u64..120,
    ];
    prop::collection::vec((step, cost), 1..200)
}

/// A start time in microseconds, from 0 to about 71 years (2^51), so that `start` plus
/// any history stays in the range the model keeps exact.
pub fn start_times() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), 0u64..(1 << 51)]
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest! {
        /// `from_interval` accepts the whole range (the strategy would panic otherwise).
        #[test]
        fn every_generated_policy_is_valid(policy in policies()) {
            prop_assert!((1..100).contains(&policy.capacity()));
            prop_assert!((20..10_000_000).contains(&policy.interval_us()));
        }
    }
}
