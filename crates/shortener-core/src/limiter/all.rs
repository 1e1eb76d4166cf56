//! All or nothing: one decision over several buckets, which takes every demand's cost
//! or none (the rate limit service's request with several descriptors).
//!
//! The model is [`step_all`]: the demands are decided one after another at one instant,
//! each on the bucket its predecessors left (two demands on one bucket take from it
//! twice); if every one is admitted the buckets are written, else only the debts are.

use std::collections::HashMap;
use std::future::Future;

use super::{Decision, LimiterError, Policy, RateLimiter, token_bucket};

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

/// The model of an all-or-nothing decision at `now_us` over token buckets: `buckets`
/// holds each distinct bucket's stored state (by `key(demand)`), and is updated with what
/// must be stored. Returns the decision.
pub fn step_all<K: Eq + std::hash::Hash + Clone>(
    buckets: &mut HashMap<K, Option<token_bucket::Bucket>>,
    demands: &[(K, &Policy, u64, u64)],
    now_us: u64,
) -> AllDecision {
    let mut working = buckets.clone();
    let mut debited = buckets.clone();
    let mut decisions = Vec::with_capacity(demands.len());
    for (key, policy, debt, cost) in demands {
        let state = working.get(key).copied().flatten();
        if *debt > 0 {
            let after = token_bucket::debit(state, policy, now_us, *debt);
            working.insert(key.clone(), Some(after));
            let before = debited.get(key).copied().flatten();
            debited.insert(
                key.clone(),
                Some(token_bucket::debit(before, policy, now_us, *debt)),
            );
        }
        let state = working.get(key).copied().flatten();
        let (decision, next) = token_bucket::step(state, policy, now_us, *cost);
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
    for ((key, policy, _, cost), decision) in demands.iter().zip(&mut decisions) {
        let state = buckets.get(key).copied().flatten();
        let credit = token_bucket::credit(state, policy, now_us);
        *decision = Decision::from_credit(policy, *cost, decision.allowed, credit);
    }
    AllDecision { allowed, decisions }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(capacity: u64) -> Policy {
        Policy::from_interval("p", capacity, 1_000_000).unwrap()
    }

    #[test]
    fn a_refusal_takes_nothing_from_the_others() {
        let (a, b) = (policy(5), policy(1));
        let mut buckets = HashMap::from([("a", None), ("b", None)]);
        let first = step_all(&mut buckets, &[("a", &a, 0, 1), ("b", &b, 0, 1)], 1_000_000);
        assert!(first.allowed);
        assert_eq!(first.decisions[0].remaining, 4);
        let second = step_all(&mut buckets, &[("a", &a, 0, 1), ("b", &b, 0, 1)], 1_000_000);
        assert!(!second.allowed);
        assert!(second.decisions[0].allowed, "a alone would fit");
        assert_eq!(second.decisions[0].remaining, 4, "and a was not taken");
        assert!(!second.decisions[1].allowed);
        assert_eq!(second.decisions[1].retry_after_us, Some(1_000_000));
        let third = step_all(&mut buckets, &[("a", &a, 0, 1)], 1_000_000);
        assert_eq!(third.decisions[0].remaining, 3);
    }

    #[test]
    fn two_demands_on_one_bucket_take_twice_or_not_at_all() {
        let p = policy(3);
        let mut buckets = HashMap::new();
        let both = step_all(&mut buckets, &[("k", &p, 0, 2), ("k", &p, 0, 1)], 5_000_000);
        assert!(both.allowed);
        assert_eq!(both.decisions[1].remaining, 0);
        let mut buckets = HashMap::new();
        let over = step_all(&mut buckets, &[("k", &p, 0, 2), ("k", &p, 0, 2)], 5_000_000);
        assert!(!over.allowed);
        assert_eq!(over.decisions[0].remaining, 3, "nothing was taken");
        let again = step_all(&mut buckets, &[("k", &p, 0, 3)], 5_000_000);
        assert!(again.allowed, "the refused pair took nothing");
    }

    #[test]
    fn debts_are_taken_even_when_refused() {
        let (a, b) = (policy(5), policy(1));
        let mut buckets = HashMap::new();
        let refused = step_all(&mut buckets, &[("a", &a, 2, 1), ("b", &b, 0, 2)], 1_000_000);
        assert!(!refused.allowed);
        assert_eq!(refused.decisions[0].remaining, 3, "the debt of 2 was taken");
        let next = step_all(&mut buckets, &[("a", &a, 0, 1)], 1_000_000);
        assert_eq!(next.decisions[0].remaining, 2);
    }

    #[test]
    fn grouped_identities_never_alias() {
        assert_ne!(grouped_identity("a:b", "c"), grouped_identity("a", "b:c"));
    }
}
