//! Scenarios for any real-time [`RateLimiter`]: what every limiter adapter must do.
//!
//! The policies refill one token per 1000 seconds, so that the wall-clock time a test
//! takes cannot add a token and every outcome is exact; only
//! [`fast_policy_admits_again_after_refill`] waits, with a wide margin. Each scenario uses
//! a random identity, so scenarios can share one Redis.

use std::time::Duration;

use shortener_core::{AlphabetCodeGenerator, CodeGenerator, Decision, Policy, RateLimiter};

use shortener_testkit::concurrently;

/// The slow policies' emission interval: 1000 seconds per token.
const SLOW_INTERVAL_US: u64 = 1_000_000_000;

/// A burst of `capacity` is admitted with `remaining` counting down; the next request is
/// refused with a retry time of at most one interval and `Retry-After` of at least 1s.
pub async fn burst_is_admitted_then_refused(limiter: &impl RateLimiter) {
    let (identity, policy) = (identity(), slow_policy("conformance", 5));
    for taken in 1..=5 {
        let decision = acquire(limiter, &identity, &policy, 1).await;
        assert!(
            decision.allowed,
            "request {taken} of the burst: {decision:?}"
        );
        assert_eq!(decision.limit, 5);
        assert_eq!(decision.remaining, 5 - taken);
        assert_eq!(decision.retry_after_us, Some(0));
        // The bucket is full again once the taken tokens have refilled.
        assert!(
            decision.reset_after_us <= taken * SLOW_INTERVAL_US,
            "{decision:?}"
        );
        assert!(
            decision.reset_after_us > (taken - 1) * SLOW_INTERVAL_US,
            "{decision:?}"
        );
    }
    let refused = acquire(limiter, &identity, &policy, 1).await;
    assert!(!refused.allowed, "{refused:?}");
    assert_eq!((refused.limit, refused.remaining), (5, 0));
    let retry = refused
        .retry_after_us
        .expect("a cost within capacity can be retried");
    assert!(retry > 0 && retry <= SLOW_INTERVAL_US, "{refused:?}");
    assert!(refused.retry_after_secs() >= 1);
    assert!(refused.reset_after_us > 4 * SLOW_INTERVAL_US, "{refused:?}");
    assert!(
        refused.reset_after_us <= 5 * SLOW_INTERVAL_US,
        "{refused:?}"
    );
}

/// A refused request takes nothing: the same request is refused alike, and a smaller one
/// that fits is still admitted.
pub async fn refused_request_changes_nothing(limiter: &impl RateLimiter) {
    let (identity, policy) = (identity(), slow_policy("conformance", 3));
    assert!(acquire(limiter, &identity, &policy, 2).await.allowed);
    let first = acquire(limiter, &identity, &policy, 2).await;
    let second = acquire(limiter, &identity, &policy, 2).await;
    for refused in [first, second] {
        assert!(!refused.allowed, "{refused:?}");
        assert_eq!(refused.remaining, 1, "{refused:?}");
    }
    assert_same_refusal(first, second);
    let last = acquire(limiter, &identity, &policy, 1).await;
    assert!(last.allowed, "the refusals took nothing: {last:?}");
    assert_eq!(last.remaining, 0);
    let first = acquire(limiter, &identity, &policy, 1).await;
    let second = acquire(limiter, &identity, &policy, 1).await;
    assert!(!first.allowed && !second.allowed);
    assert_same_refusal(first, second);
}

/// A cost above capacity can never be admitted: refused with no retry time, taking
/// nothing, even from a full bucket.
pub async fn cost_above_capacity_is_refused_as_never(limiter: &impl RateLimiter) {
    let (identity, policy) = (identity(), slow_policy("conformance", 3));
    let never = acquire(limiter, &identity, &policy, 4).await;
    assert!(!never.allowed);
    assert_eq!(never.retry_after_us, None, "{never:?}");
    assert_eq!((never.limit, never.remaining), (3, 3));
    let all = acquire(limiter, &identity, &policy, 3).await;
    assert!(all.allowed, "the refusal took nothing: {all:?}");
    assert_eq!(all.remaining, 0);
    let never = acquire(limiter, &identity, &policy, 4).await;
    assert!(!never.allowed);
    assert_eq!(never.retry_after_us, None, "{never:?}");
}

/// A request of cost n takes n tokens; cost 0 is admitted and takes nothing.
pub async fn cost_n_takes_n(limiter: &impl RateLimiter) {
    let (identity, policy) = (identity(), slow_policy("conformance", 10));
    for (cost, remaining) in [(3, 7), (4, 3), (0, 3)] {
        let decision = acquire(limiter, &identity, &policy, cost).await;
        assert!(decision.allowed, "cost {cost}: {decision:?}");
        assert_eq!(decision.remaining, remaining, "cost {cost}: {decision:?}");
    }
    let refused = acquire(limiter, &identity, &policy, 4).await;
    assert!(!refused.allowed);
    assert_eq!(refused.remaining, 3);
    let retry = refused.retry_after_us.expect("cost 4 fits the capacity");
    assert!(
        retry <= SLOW_INTERVAL_US,
        "one token is missing: {refused:?}"
    );
    let rest = acquire(limiter, &identity, &policy, 3).await;
    assert!(rest.allowed, "{rest:?}");
    assert_eq!(rest.remaining, 0);
}

/// Each (policy name, identity) has its own bucket.
pub async fn identities_and_policies_are_independent(limiter: &impl RateLimiter) {
    let (first, second) = (identity(), identity());
    let (policy, other_policy) = (
        slow_policy("conformance-a", 2),
        slow_policy("conformance-b", 2),
    );
    exhaust(limiter, &first, &policy, 2).await;
    let other_identity = acquire(limiter, &second, &policy, 1).await;
    assert!(
        other_identity.allowed && other_identity.remaining == 1,
        "{other_identity:?}"
    );
    let same_identity = acquire(limiter, &first, &other_policy, 1).await;
    assert!(
        same_identity.allowed && same_identity.remaining == 1,
        "{same_identity:?}"
    );
    assert!(!acquire(limiter, &first, &policy, 1).await.allowed);
}

/// Policy names and identities may hold any character (IPv6 identities hold `:`): joining
/// them into one key must not make two different pairs share a bucket.
pub async fn policy_and_identity_never_alias(limiter: &impl RateLimiter) {
    let identity = identity();
    let joined_policy = slow_policy("conformance:x", 1);
    let split_policy = slow_policy("conformance", 1);
    exhaust(limiter, &identity, &joined_policy, 1).await;
    let other = acquire(limiter, &format!("x:{identity}"), &split_policy, 1).await;
    assert!(
        other.allowed,
        "('conformance:x', id) and ('conformance', 'x:id') are two keys"
    );
    let spaced = acquire(limiter, &format!("x {identity}"), &split_policy, 1).await;
    assert!(spaced.allowed, "('conformance', 'x id') is a third key");
}

/// 64 concurrent requests on one key admit exactly `capacity`, each seeing a distinct
/// `remaining`.
pub async fn concurrent_acquires_admit_exactly_capacity(limiter: &impl RateLimiter) {
    let (identity, policy) = (identity(), slow_policy("conformance", 10));
    let decisions = concurrently(64, |_| acquire(limiter, &identity, &policy, 1)).await;
    let mut remaining: Vec<u64> = decisions
        .iter()
        .filter(|d| d.allowed)
        .map(|d| d.remaining)
        .collect();
    remaining.sort_unstable();
    assert_eq!(remaining, (0..10).collect::<Vec<_>>(), "{decisions:?}");
    assert!(!acquire(limiter, &identity, &policy, 1).await.allowed);
}

/// A policy of one token per 50ms admits again after 120ms (a correctness check with a
/// wide margin, not a measurement).
pub async fn fast_policy_admits_again_after_refill(limiter: &impl RateLimiter) {
    let identity = identity();
    let policy = Policy::from_interval("conformance-fast", 1, 50_000).expect("valid policy");
    let first = acquire(limiter, &identity, &policy, 1).await;
    assert!(first.allowed && first.remaining == 0, "{first:?}");
    let second = acquire(limiter, &identity, &policy, 1).await;
    if !second.allowed {
        let retry = second.retry_after_us.expect("cost 1 fits the capacity");
        assert!(retry > 0 && retry <= 50_000, "{second:?}");
    }
    tokio::time::sleep(Duration::from_millis(120)).await;
    let third = acquire(limiter, &identity, &policy, 1).await;
    assert!(third.allowed, "a token refilled in 120ms: {third:?}");
    assert_eq!(third.remaining, 0, "the bucket holds one token at most");
}

/// A working limiter is healthy.
pub async fn health_is_ok(limiter: &impl RateLimiter) {
    limiter.health().await.expect("health");
}

fn slow_policy(name: &str, capacity: u64) -> Policy {
    Policy::from_interval(name, capacity, SLOW_INTERVAL_US).expect("valid policy")
}

fn identity() -> String {
    const ALPHABET: &str = "0123456789abcdefghijklmnopqrstuvwxyz";
    let generator = AlphabetCodeGenerator::new(ALPHABET, 16).expect("a valid alphabet");
    format!("conformance-{}", generator.generate())
}

async fn acquire(
    limiter: &impl RateLimiter,
    identity: &str,
    policy: &Policy,
    cost: u64,
) -> Decision {
    limiter
        .acquire(identity, policy, cost)
        .await
        .expect("the limiter decides")
}

async fn exhaust(limiter: &impl RateLimiter, identity: &str, policy: &Policy, capacity: u64) {
    for _ in 0..capacity {
        assert!(acquire(limiter, identity, policy, 1).await.allowed);
    }
    assert!(!acquire(limiter, identity, policy, 1).await.allowed);
}

/// Two refusals of one request, a moment apart: equal but for the time that passed,
/// which can only shorten the wait (by far less than a minute here).
fn assert_same_refusal(first: Decision, second: Decision) {
    assert_eq!(
        (first.allowed, first.limit, first.remaining),
        (second.allowed, second.limit, second.remaining)
    );
    let (Some(first_retry), Some(second_retry)) = (first.retry_after_us, second.retry_after_us)
    else {
        panic!("refusals within capacity have a retry time: {first:?} {second:?}");
    };
    assert!(second_retry <= first_retry, "{first:?} then {second:?}");
    assert!(
        first_retry - second_retry < 60_000_000,
        "{first:?} then {second:?}"
    );
}
