//! `RefusalCache`: remembers refusals until their retry time, so that a client hammering
//! a limit is refused locally instead of costing a backend round trip per request.

use std::sync::atomic::{AtomicU64, Ordering};

use super::all::{AllDecision, Demand, MultiRateLimiter};
use super::clock::MonotonicClock;
use super::per_bucket::{BucketState, PerBucket};
use super::{Clock, Decision, LimiterError, Policy, RateLimiter};

/// A [`RateLimiter`] decorator that remembers, per (policy name, identity), the smallest
/// refused cost and until when it is refused (the call's start plus its `retry_after`).
/// Until then, a request of that cost or more is refused here without calling the inner
/// limiter; smaller requests, and every request after that time, go to the inner limiter.
///
/// It can only refuse, never admit, and it refuses only what the inner limiter would
/// refuse too: tokens arrive no faster than the policy's rate, and the retry time is
/// counted from before the inner call, so it ends no later than the inner's. (Other
/// nodes' admissions only make the inner refuse longer.) The local decision is the
/// model's for the credit the refusal reported plus the time since; an admission of a
/// smaller cost for the same key forgets the refusal, whose numbers would be stale.
#[derive(Debug)]
pub struct RefusalCache<L, C = MonotonicClock> {
    inner: L,
    clock: C,
    /// Past its bound, expired refusals are dropped, and if there is still no room (or the
    /// shard was swept less than 10 ms ago) a new refusal is simply not remembered.
    refusals: PerBucket<Refusal>,
    local_refusals: AtomicU64,
}

#[derive(Debug, Clone)]
struct Refusal {
    policy: String,
    capacity: u64,
    interval_us: u64,
    /// The smallest cost refused.
    cost: u64,
    /// Credit (microseconds of refill) the refusal reported, as of `at`.
    credit_us: u64,
    /// On the cache's clock, in microseconds.
    at: u64,
    until: u64,
}

/// What the cache knows about a request.
enum Lookup {
    Refuse(Decision),
    Ask { remembered: bool },
}

impl<L: RateLimiter> RefusalCache<L> {
    pub fn new(inner: L) -> Self {
        Self::with_clock(inner, MonotonicClock::default())
    }
}

impl<L: RateLimiter, C: Clock> RefusalCache<L, C> {
    /// As [`RefusalCache::new`], timing refusals on `clock`.
    pub fn with_clock(inner: L, clock: C) -> Self {
        Self {
            inner,
            clock,
            refusals: PerBucket::default(),
            local_refusals: AtomicU64::new(0),
        }
    }

    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// Requests refused here, without the inner limiter, so far.
    pub fn local_refusals(&self) -> u64 {
        self.local_refusals.load(Ordering::Relaxed)
    }

    fn lookup(&self, identity: &str, policy: &Policy, cost: u64, now: u64) -> Lookup {
        self.refusals.with(policy.name(), identity, |bucket| {
            let Some(refusal) = bucket.get_mut() else {
                return Lookup::Ask { remembered: false };
            };
            if now >= refusal.until || !refusal.is_for(policy) {
                bucket.remove();
                return Lookup::Ask { remembered: false };
            }
            if cost < refusal.cost || cost > policy.capacity() {
                return Lookup::Ask { remembered: true };
            }
            // Below `cost * interval` (the refused cost needs more than this credit until
            // `until`), so the retry time is positive.
            let credit = refusal
                .credit_us
                .saturating_add(now.saturating_sub(refusal.at))
                .min(policy.burst_us());
            let mut decision = Decision::from_credit(policy, cost, false, credit);
            decision.retry_after_us = decision.retry_after_us.map(|retry| retry.max(1));
            Lookup::Refuse(decision)
        })
    }

    fn remember(&self, identity: &str, policy: &Policy, cost: u64, refused: Decision, at: u64) {
        let Some(retry) = refused.retry_after_us.filter(|&retry| retry > 0) else {
            return;
        };
        // A microsecond short, for backends that count whole microseconds from a time
        // up to a microsecond before `at`.
        let Some(until) = at.checked_add(retry - 1) else {
            return;
        };
        let refusal = Refusal {
            policy: policy.name().to_owned(),
            capacity: policy.capacity(),
            interval_us: policy.interval_us(),
            cost,
            credit_us: policy.burst_us().saturating_sub(refused.reset_after_us),
            at,
            until,
        };
        self.refusals.with(policy.name(), identity, |bucket| {
            if let Some(old) = bucket.get_mut() {
                // A still-valid refusal of a smaller cost says more: keep it.
                if !(old.until > at && old.cost < cost && old.is_for(policy)) {
                    *old = refusal;
                }
                return;
            }
            bucket.get_or_insert_with(at, || refusal);
        });
    }

    fn forget(&self, identity: &str, policy: &Policy) {
        self.refusals
            .with(policy.name(), identity, |bucket| bucket.remove());
    }
}

impl BucketState for Refusal {
    fn policy(&self) -> &str {
        &self.policy
    }

    fn ended(&self, now_us: u64) -> bool {
        self.until <= now_us
    }
}

impl Refusal {
    /// Whether it was made under this policy's numbers (a name can be reconfigured).
    fn is_for(&self, policy: &Policy) -> bool {
        self.capacity == policy.capacity() && self.interval_us == policy.interval_us()
    }
}

impl<L: RateLimiter, C: Clock> RateLimiter for RefusalCache<L, C> {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        // Taken before the inner call, so that the remembered retry time ends no later
        // than the inner limiter's.
        let start = self.clock.now_us();
        let remembered = match self.lookup(identity, policy, cost, start) {
            Lookup::Refuse(decision) => {
                self.local_refusals.fetch_add(1, Ordering::Relaxed);
                return Ok(decision);
            }
            Lookup::Ask { remembered } => remembered,
        };
        let decision = self.inner.acquire(identity, policy, cost).await?;
        if !decision.allowed {
            self.remember(identity, policy, cost, decision, start);
        } else if remembered {
            self.forget(identity, policy);
        }
        Ok(decision)
    }

    async fn health(&self) -> Result<(), LimiterError> {
        self.inner.health().await
    }
}

/// All-or-nothing decisions go to the inner limiter as they are: a remembered refusal
/// of one demand cannot tell what the others' buckets hold.
impl<L: MultiRateLimiter, C: Clock> MultiRateLimiter for RefusalCache<L, C> {
    async fn acquire_all(
        &self,
        group: &str,
        demands: &[Demand],
    ) -> Result<AllDecision, LimiterError> {
        self.inner.acquire_all(group, demands).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicU64;

    use super::super::clock::ManualClock;
    use super::super::fallback::tests::block_on;
    use super::super::token_bucket::{self, Bucket};
    use super::*;

    /// The token bucket model, counting calls and admissions, on a clock that moves only
    /// when told (shared with the cache under test).
    #[derive(Debug, Default)]
    struct ModelLimiter {
        clock: ManualClock,
        buckets: Mutex<HashMap<String, Bucket>>,
        calls: AtomicU64,
        admitted: AtomicU64,
    }

    impl ModelLimiter {
        fn calls(&self) -> u64 {
            self.calls.load(Ordering::SeqCst)
        }

        fn now_us(&self) -> u64 {
            self.clock.now_us()
        }

        /// The model's decision now, without taking anything.
        fn peek(&self, identity: &str, policy: &Policy, cost: u64) -> Decision {
            let bucket = self.buckets.lock().unwrap().get(identity).copied();
            let now = self.now_us();
            token_bucket::step(bucket, policy, now, cost).0
        }
    }

    impl RateLimiter for ModelLimiter {
        async fn acquire(
            &self,
            identity: &str,
            policy: &Policy,
            cost: u64,
        ) -> Result<Decision, LimiterError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let mut buckets = self.buckets.lock().unwrap();
            let now = self.now_us();
            let (decision, next) =
                token_bucket::step(buckets.get(identity).copied(), policy, now, cost);
            if let Some(bucket) = next {
                buckets.insert(identity.to_owned(), bucket);
            }
            if decision.allowed {
                self.admitted.fetch_add(cost.max(1), Ordering::SeqCst);
            }
            Ok(decision)
        }

        async fn health(&self) -> Result<(), LimiterError> {
            Ok(())
        }
    }

    const HOUR_US: u64 = 3_600_000_000;

    fn cache() -> RefusalCache<ModelLimiter, ManualClock> {
        let inner = ModelLimiter::default();
        let clock = inner.clock.clone();
        RefusalCache::with_clock(inner, clock)
    }

    fn acquire(
        cache: &RefusalCache<ModelLimiter, ManualClock>,
        policy: &Policy,
        cost: u64,
    ) -> Decision {
        block_on(cache.acquire("id", policy, cost)).unwrap()
    }

    #[test]
    fn refuses_locally_until_the_retry_time_without_the_inner_limiter() {
        let cache = cache();
        let policy = Policy::from_interval("p", 3, HOUR_US).unwrap();
        assert!(acquire(&cache, &policy, 2).allowed);
        let refused = acquire(&cache, &policy, 2);
        assert!(!refused.allowed);
        assert_eq!(cache.inner().calls(), 2);
        for cost in [2, 3, 2] {
            let expected = cache.inner().peek("id", &policy, cost);
            let local = acquire(&cache, &policy, cost);
            assert!(!local.allowed && !expected.allowed);
            assert_eq!(
                (local.limit, local.remaining),
                (expected.limit, expected.remaining)
            );
            let (retry, expected_retry) = (
                local.retry_after_us.unwrap(),
                expected.retry_after_us.unwrap(),
            );
            // One clock: the same numbers, but a microsecond of margin on the retry.
            assert!(
                retry <= expected_retry && retry + 1 >= expected_retry,
                "{local:?}"
            );
            assert!(local.reset_after_us <= expected.reset_after_us);
            cache.inner().clock.advance(HOUR_US / 10);
        }
        assert_eq!(
            cache.inner().calls(),
            2,
            "refused without the inner limiter"
        );
        assert_eq!(cache.local_refusals(), 3);
        // A smaller cost still goes to the inner limiter, and its admission forgets the
        // refusal, whose numbers are stale now.
        assert!(acquire(&cache, &policy, 1).allowed);
        let refused = acquire(&cache, &policy, 2);
        assert_eq!((refused.allowed, refused.remaining), (false, 0));
        assert_eq!(cache.inner().calls(), 4);
        // A cost above capacity is the inner limiter's to refuse as never.
        assert_eq!(acquire(&cache, &policy, 4).retry_after_us, None);
        assert_eq!(cache.inner().calls(), 5);
    }

    #[test]
    fn asks_the_inner_limiter_again_after_the_retry_time() {
        let cache = cache();
        let policy = Policy::from_interval("p", 1, 20_000).unwrap();
        assert!(acquire(&cache, &policy, 1).allowed);
        assert_eq!(acquire(&cache, &policy, 1).retry_after_us, Some(20_000));
        // Remembered until a microsecond before the retry time (see `remember`).
        cache.inner().clock.advance(19_998);
        assert!(!acquire(&cache, &policy, 1).allowed);
        assert_eq!(cache.inner().calls(), 2, "refused locally until then");
        cache.inner().clock.advance(2);
        assert!(
            acquire(&cache, &policy, 1).allowed,
            "the inner limiter admits again"
        );
        assert_eq!(cache.inner().calls(), 3);
    }

    #[test]
    fn never_admits_and_refuses_only_what_the_inner_limiter_would() {
        // Time moves by a random 0 to 40 us between requests; 20 us per token makes the
        // loop below see many refills.
        let cache = cache();
        let policy = Policy::from_interval("p", 5, 20).unwrap();
        let mut random = 0x2545_F491_4F6C_DD1D_u64;
        let mut admitted = 0;
        for _ in 0..5_000 {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            cache.inner().clock.advance((random >> 32) % 41);
            let identity = ["a", "b"][(random % 2) as usize];
            let cost = (random >> 8) % 7;
            let calls = cache.inner().calls();
            // Asked before the cache looks: a local refusal must still hold after this.
            let would = cache.inner().peek(identity, &policy, cost);
            let decision = block_on(cache.acquire(identity, &policy, cost)).unwrap();
            if cache.inner().calls() == calls {
                assert!(!decision.allowed, "a local answer is a refusal");
                assert!(!would.allowed, "refused locally what the inner would admit");
            } else if decision.allowed {
                admitted += cost.max(1);
            }
        }
        assert_eq!(admitted, cache.inner().admitted.load(Ordering::SeqCst));
        assert!(
            cache.local_refusals() > 0,
            "the history exercised the cache"
        );
    }
}
