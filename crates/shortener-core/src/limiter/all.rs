//! All or nothing: one decision over several buckets, which takes every demand's cost
//! or none (the rate limit service's request with several descriptors).
//!
//! The model is [`step_all`]: the demands are decided one after another at one instant,
//! each on the bucket its predecessors left (two demands on one bucket take from it
//! twice); if every one is admitted the buckets are written, else only the debts are.

use std::collections::HashMap;
use std::future::Future;

use super::{
    Algorithm, Decision, LimiterError, Policy, RateLimiter, fixed_window, gcra, token_bucket,
};

/// One bucket's part in an all-or-nothing decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    /// Who the bucket counts for, within the decision's group.
    pub identity: String,
    pub policy: Policy,
    pub cost: u64,
    /// Tokens admitted elsewhere and owed to this bucket, taken first whatever it holds,
    /// even when the decision is refused (see [`super::SharedRateLimiter`]). Only a
    /// shared limiter is given debts; a local one is given none.
    pub debt: u64,
    /// How the bucket is kept and decided: a token bucket or GCRA (the same decisions,
    /// stored differently), or a fixed window of the policy's `window_secs`.
    pub algorithm: Algorithm,
}

/// The outcome of an all-or-nothing decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllDecision {
    /// Whether every demand was admitted, and so taken.
    pub allowed: bool,
    /// One per demand, in order. `allowed` there says whether the demand alone fits; when
    /// the whole is refused, nothing was taken and `remaining` is what the bucket holds.
    pub decisions: Vec<Decision>,
}

/// A limiter that can decide several buckets as one atomic step.
pub trait MultiRateLimiter: RateLimiter {
    /// Takes the cost of every demand, or of none.
    ///
    /// `group` names the buckets that may be decided together (the rate limit service's
    /// domain): a backend that spreads keys over shards (Redis Cluster) keeps one group on
    /// one shard. The same (group, identity, policy) is always the same bucket.
    ///
    /// # Errors
    /// As [`RateLimiter::acquire`]; nothing was taken unless the backend answered.
    fn acquire_all(
        &self,
        group: &str,
        demands: &[Demand],
    ) -> impl Future<Output = Result<AllDecision, LimiterError>> + Send;
}

/// The key under which a group's bucket is kept by limiters that have no groups of their
/// own (the memory limiter, the fallback's debts): unambiguous, since the group is
/// length-prefixed.
pub fn grouped_identity(group: &str, identity: &str) -> String {
    format!("{}:{group}:{identity}", group.len())
}

/// A bucket's state in the model of an all-or-nothing decision, one kind per algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    Bucket(token_bucket::Bucket),
    /// GCRA's theoretical arrival time. It admits as the token bucket does while time goes
    /// forward; with a clock that steps back, each keeps its own arithmetic.
    Tat(u64),
    Window(fixed_window::Window),
}

impl Stored {
    fn bucket(state: Option<Self>) -> Option<token_bucket::Bucket> {
        match state {
            Some(Self::Bucket(bucket)) => Some(bucket),
            _ => None,
        }
    }

    fn tat(state: Option<Self>) -> Option<u64> {
        match state {
            Some(Self::Tat(tat)) => Some(tat),
            _ => None,
        }
    }

    fn window(state: Option<Self>) -> Option<fixed_window::Window> {
        match state {
            Some(Self::Window(window)) => Some(window),
            _ => None,
        }
    }

    /// The state after `debt` tokens are taken whatever it holds.
    fn debit(state: Option<Self>, demand: &Demand, now_us: u64, debt: u64) -> Self {
        let policy = &demand.policy;
        match demand.algorithm {
            Algorithm::TokenBucket => Self::Bucket(token_bucket::debit(
                Self::bucket(state),
                policy,
                now_us,
                debt,
            )),
            Algorithm::Gcra => Self::Tat(gcra::debit(Self::tat(state), policy, now_us, debt)),
            Algorithm::FixedWindow => Self::Window(fixed_window::debit(
                Self::window(state),
                policy,
                now_us,
                debt,
            )),
        }
    }

    /// One decision: the decision and the state to store, if any.
    fn step(state: Option<Self>, demand: &Demand, now_us: u64) -> (Decision, Option<Self>) {
        let (policy, cost) = (&demand.policy, demand.cost);
        match demand.algorithm {
            Algorithm::TokenBucket => {
                let (decision, next) =
                    token_bucket::step(Self::bucket(state), policy, now_us, cost);
                (decision, next.map(Self::Bucket))
            }
            Algorithm::Gcra => {
                let (decision, next) = gcra::step(Self::tat(state), policy, now_us, cost);
                (decision, next.map(Self::Tat))
            }
            Algorithm::FixedWindow => {
                let (decision, next) =
                    fixed_window::step(Self::window(state), policy, now_us, cost);
                (decision, next.map(Self::Window))
            }
        }
    }

    /// What the demand alone would be told, taking nothing (`fits`: whether it would be
    /// admitted).
    fn peek(state: Option<Self>, demand: &Demand, now_us: u64, fits: bool) -> Decision {
        let (policy, cost) = (&demand.policy, demand.cost);
        match demand.algorithm {
            Algorithm::TokenBucket => {
                let credit = token_bucket::credit(Self::bucket(state), policy, now_us);
                Decision::from_credit(policy, cost, fits, credit)
            }
            Algorithm::Gcra => {
                let ahead = Self::tat(state).map_or(0, |tat| tat.saturating_sub(now_us));
                let credit = policy.burst_us().saturating_sub(ahead);
                Decision::from_credit(policy, cost, fits, credit)
            }
            Algorithm::FixedWindow => {
                let count = fixed_window::count(Self::window(state), policy, now_us);
                fixed_window::decision(policy, cost, fits, count, now_us)
            }
        }
    }
}

/// The model of an all-or-nothing decision at `now_us`: `buckets` holds each distinct
/// bucket's stored state (by the key given with each demand), and is updated with what
/// must be stored. A state of another kind than its demand's algorithm (the limit's
/// algorithm was changed) counts as missing. Returns the decision.
pub fn step_all<K: Eq + std::hash::Hash + Clone>(
    buckets: &mut HashMap<K, Option<Stored>>,
    demands: &[(K, &Demand)],
    now_us: u64,
) -> AllDecision {
    let mut working = buckets.clone();
    let mut debited = buckets.clone();
    let mut decisions = Vec::with_capacity(demands.len());
    for (key, demand) in demands {
        if demand.debt > 0 {
            for states in [&mut working, &mut debited] {
                let before = states.get(key).copied().flatten();
                let after = Stored::debit(before, demand, now_us, demand.debt);
                states.insert(key.clone(), Some(after));
            }
        }
        let state = working.get(key).copied().flatten();
        let (decision, next) = Stored::step(state, demand, now_us);
        if let Some(next) = next {
            working.insert(key.clone(), Some(next));
        }
        decisions.push(decision);
    }
    let allowed = decisions.iter().all(|decision| decision.allowed);
    if allowed {
        *buckets = working;
        return AllDecision { allowed, decisions };
    }
    *buckets = debited;
    // Nothing taken: each demand reports what its bucket holds without the others' cost.
    for ((key, demand), decision) in demands.iter().zip(&mut decisions) {
        let state = buckets.get(key).copied().flatten();
        *decision = Stored::peek(state, demand, now_us, decision.allowed);
    }
    AllDecision { allowed, decisions }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(capacity: u64) -> Policy {
        Policy::from_interval("p", capacity, 1_000_000).unwrap()
    }

    fn demand(policy: &Policy, debt: u64, cost: u64) -> Demand {
        Demand {
            identity: String::new(),
            policy: policy.clone(),
            cost,
            debt,
            algorithm: Algorithm::TokenBucket,
        }
    }

    #[test]
    fn a_refusal_takes_nothing_from_the_others() {
        let (a, b) = (demand(&policy(5), 0, 1), demand(&policy(1), 0, 1));
        let mut buckets = HashMap::from([("a", None), ("b", None)]);
        let first = step_all(&mut buckets, &[("a", &a), ("b", &b)], 1_000_000);
        assert!(first.allowed);
        assert_eq!(first.decisions[0].remaining, 4);
        let second = step_all(&mut buckets, &[("a", &a), ("b", &b)], 1_000_000);
        assert!(!second.allowed);
        assert!(second.decisions[0].allowed, "a alone would fit");
        assert_eq!(second.decisions[0].remaining, 4, "and a was not taken");
        assert!(!second.decisions[1].allowed);
        assert_eq!(second.decisions[1].retry_after_us, Some(1_000_000));
        let third = step_all(&mut buckets, &[("a", &a)], 1_000_000);
        assert_eq!(third.decisions[0].remaining, 3);
    }

    #[test]
    fn two_demands_on_one_bucket_take_twice_or_not_at_all() {
        let p = policy(3);
        let mut buckets = HashMap::new();
        let (two, one) = (demand(&p, 0, 2), demand(&p, 0, 1));
        let both = step_all(&mut buckets, &[("k", &two), ("k", &one)], 5_000_000);
        assert!(both.allowed);
        assert_eq!(both.decisions[1].remaining, 0);
        let mut buckets = HashMap::new();
        let over = step_all(&mut buckets, &[("k", &two), ("k", &two)], 5_000_000);
        assert!(!over.allowed);
        assert_eq!(over.decisions[0].remaining, 3, "nothing was taken");
        let again = step_all(&mut buckets, &[("k", &demand(&p, 0, 3))], 5_000_000);
        assert!(again.allowed, "the refused pair took nothing");
    }

    #[test]
    fn debts_are_taken_even_when_refused() {
        let (a, b) = (policy(5), policy(1));
        let mut buckets = HashMap::new();
        let refused = step_all(
            &mut buckets,
            &[("a", &demand(&a, 2, 1)), ("b", &demand(&b, 0, 2))],
            1_000_000,
        );
        assert!(!refused.allowed);
        assert_eq!(refused.decisions[0].remaining, 3, "the debt of 2 was taken");
        let next = step_all(&mut buckets, &[("a", &demand(&a, 0, 1))], 1_000_000);
        assert_eq!(next.decisions[0].remaining, 2);
    }

    #[test]
    fn a_fixed_window_beside_a_bucket_is_all_or_nothing_too() {
        let window = Demand {
            algorithm: Algorithm::FixedWindow,
            ..demand(&policy(2), 0, 1)
        };
        let bucket = demand(&policy(1), 0, 1);
        let mut buckets = HashMap::new();
        let first = step_all(&mut buckets, &[("w", &window), ("b", &bucket)], 3_500_000);
        assert!(first.allowed);
        assert_eq!(first.decisions[0].remaining, 1);
        assert_eq!(
            first.decisions[0].reset_after_us, 500_000,
            "the window is 2 s"
        );
        let refused = step_all(&mut buckets, &[("w", &window), ("b", &bucket)], 3_500_000);
        assert!(!refused.allowed);
        assert_eq!(
            refused.decisions[0].remaining, 1,
            "the window was not counted"
        );
        let alone = step_all(&mut buckets, &[("w", &window)], 3_600_000);
        assert_eq!(alone.decisions[0].remaining, 0);
        assert!(!step_all(&mut buckets, &[("w", &window)], 3_700_000).allowed);
        let next = step_all(&mut buckets, &[("w", &window)], 4_000_000);
        assert!(next.allowed, "a new window");
    }

    #[test]
    fn grouped_identities_never_alias() {
        assert_ne!(grouped_identity("a:b", "c"), grouped_identity("a", "b:c"));
    }
}
