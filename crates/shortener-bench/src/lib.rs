//! The benchmarks of the shortener, which `cargo xtask bench` builds (release) and runs:
//! the harness `src/bin/bench/`, the poem ceiling `src/bin/ceiling.rs`, the limiter's load
//! generator `src/bin/limiter_client.rs` and the criterion benchmark
//! `benches/memory_limiter.rs`. Here is what they share: [`Figures`] and [`ClientReport`]
//! (the JSON line that `limiter_client` prints and the harness reads), [`Rng`], the
//! policies and the key space ([`identities`]).
//!
//! No crate depends on this one, so it may use the test kit as a normal dependency.
//! Figures are reported, never asserted.

use std::fmt;

use serde::{Deserialize, Serialize};
use shortener_core::Policy;

/// How many distinct keys the limiter benchmarks spread their calls over, like
/// `redis-benchmark -r 10000`.
pub const IDENTITIES: usize = 10_000;

/// A rate (operations per second) and its latency percentiles: what every load generator
/// reports.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Figures {
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            rate,
            p50_ms,
            p99_ms,
        } = self;
        write!(f, "{rate:.0}/s (p50 {p50_ms:.3} ms, p99 {p99_ms:.3} ms)")
    }
}

/// What one `limiter_client` run measured, printed as one JSON line.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ClientReport {
    #[serde(flatten)]
    pub figures: Figures,
    pub decisions: u64,
    pub allowed: u64,
    pub errors: u64,
}

/// The limits file of the rate limit service's benchmark: in domain `bench`, `client` at
/// 100 per second (what [`rls_policy`] builds) and `exact` at 10 per minute.
pub const RLS_LIMITS: &str = "domain: bench
descriptors:
  - { key: client, rate_limit: { unit: second, requests_per_unit: 100 } }
  - { key: exact, rate_limit: { unit: minute, requests_per_unit: 10 } }
";

/// The policy the rate limit service builds for `client` of [`RLS_LIMITS`]: capacity 100,
/// one token every 10 ms.
///
/// # Panics
/// Never: the policy is valid.
pub fn rls_policy() -> Policy {
    use shortener_rls::limits::{Unit, policy_for};
    let policy = policy_for(
        "client",
        100,
        Unit::Second,
        shortener_core::Algorithm::TokenBucket,
    );
    policy.ok().flatten().expect("a valid policy")
}

/// The policy of the limiter benchmarks: capacity 100, one token per 100 000 us (10/s).
///
/// # Panics
/// Never: the policy is valid.
pub fn policy() -> Policy {
    Policy::from_interval("bench", 100, 100_000).expect("a valid policy")
}

/// SplitMix64: fast, uniform enough to spread keys, and seeded per task so that tasks do
/// not walk the same keys in step.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A number in `0..bound` (`bound` > 0); the modulo bias is below 1e-15 for our bounds.
    pub fn below(&mut self, bound: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        // The remainder is below `bound`, a usize.
        #[allow(clippy::cast_possible_truncation)]
        let index = ((z ^ (z >> 31)) % bound as u64) as usize;
        index
    }
}

/// The key space, zero-padded to 12 digits like redis-benchmark's `__rand_int__`, so that
/// our keys and redis-benchmark's have the same length.
pub fn identities(count: usize) -> Vec<String> {
    (0..count).map(|index| format!("{index:012}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_spread_over_the_whole_space() {
        let mut rng = Rng::new(7);
        let mut seen = [false; 100];
        for _ in 0..10_000 {
            seen[rng.below(100)] = true;
        }
        assert!(seen.iter().all(|hit| *hit));
        assert_eq!(identities(2), ["000000000000", "000000000001"]);
    }

    #[test]
    fn a_client_report_is_one_flat_json_object() {
        let report: ClientReport = serde_json::from_str(
            r#"{"rate":2.0,"p50_ms":1.0,"p99_ms":3.0,"decisions":4,"allowed":4,"errors":0}"#,
        )
        .unwrap();
        assert_eq!(report.decisions, 4);
        assert!((report.figures.p99_ms - 3.0).abs() < f64::EPSILON);
    }
}
