//! Token bucket: stored state is the credit (microseconds of refill) and the time it
//! was measured at.

use super::{Decision, Policy};

/// A bucket as stored: `credit_us` of refill measured at `at_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub credit_us: u64,
    pub at_us: u64,
}

/// One decision at `now_us` for `cost` tokens.
///
/// Returns the decision and, when the state must change, the new bucket to store
/// (`None`: store nothing; a refused request never writes). A missing bucket is full.
/// A clock that steps back is treated as no time passing, never as extra credit; so is a
/// bucket whose time is ahead because it owes a debt ([`debit`]).
pub fn step(
    state: Option<Bucket>,
    policy: &Policy,
    now_us: u64,
    cost: u64,
) -> (Decision, Option<Bucket>) {
    let burst = policy.burst_us();
    let (credit, at) = match state {
        Some(bucket) => (
            burst.min(
                bucket
                    .credit_us
                    .saturating_add(now_us.saturating_sub(bucket.at_us)),
            ),
            bucket.at_us.max(now_us),
        ),
        None => (burst, now_us),
    };
    if cost > policy.capacity() {
        return (Decision::from_credit(policy, cost, false, credit), None);
    }
    let need = cost * policy.interval_us();
    if credit >= need {
        let left = credit - need;
        let write = (cost > 0).then_some(Bucket {
            credit_us: left,
            at_us: at,
        });
        (Decision::from_credit(policy, cost, true, left), write)
    } else {
        (Decision::from_credit(policy, cost, false, credit), None)
    }
}

/// The bucket after `debt` tokens are taken at `now_us` whatever it holds: what a shared
/// backend stores when a node settles the tokens it admitted on its own (see
/// [`super::SharedRateLimiter`]). A debt above the credit empties the bucket and moves
/// its time ahead by the shortfall, so that it refills only once the debt is paid: a debt
/// is never forgiven. A missing bucket is full.
pub fn debit(state: Option<Bucket>, policy: &Policy, now_us: u64, debt: u64) -> Bucket {
    let burst = policy.burst_us();
    let (credit, at) = match state {
        Some(bucket) => (
            burst.min(
                bucket
                    .credit_us
                    .saturating_add(now_us.saturating_sub(bucket.at_us)),
            ),
            bucket.at_us.max(now_us),
        ),
        None => (burst, now_us),
    };
    let owed = debt.saturating_mul(policy.interval_us());
    if credit >= owed {
        Bucket {
            credit_us: credit - owed,
            at_us: at,
        }
    } else {
        Bucket {
            credit_us: 0,
            at_us: at.saturating_add(owed - credit),
        }
    }
}

/// The credit (microseconds of refill) a bucket holds at `now_us`, taking nothing.
pub fn credit(state: Option<Bucket>, policy: &Policy, now_us: u64) -> u64 {
    let burst = policy.burst_us();
    state.map_or(burst, |bucket| {
        burst.min(
            bucket
                .credit_us
                .saturating_add(now_us.saturating_sub(bucket.at_us)),
        )
    })
}

/// [`debit`] then [`step`], as one step: the decision, and the bucket to store when
/// either changed it.
pub fn step_after_debt(
    state: Option<Bucket>,
    policy: &Policy,
    now_us: u64,
    debt: u64,
    cost: u64,
) -> (Decision, Option<Bucket>) {
    if debt == 0 {
        return step(state, policy, now_us, cost);
    }
    let debited = debit(state, policy, now_us, debt);
    let (decision, next) = step(Some(debited), policy, now_us, cost);
    (decision, Some(next.unwrap_or(debited)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refill() {
        let policy = Policy::from_interval("p", 3, 1_000_000).unwrap();
        let mut state = None;
        for expected_remaining in [2, 1, 0] {
            let (d, next) = step(state, &policy, 10_000_000, 1);
            assert!(d.allowed);
            assert_eq!(d.remaining, expected_remaining);
            state = next;
        }
        let (d, next) = step(state, &policy, 10_000_000, 1);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_us, Some(1_000_000));
        assert_eq!(d.retry_after_secs(), 1);
        assert_eq!(d.reset_after_us, 3_000_000);
        assert!(next.is_none());
        let (d, _) = step(state, &policy, 10_400_000, 1);
        assert_eq!(d.retry_after_us, Some(600_000));
        let (d, _) = step(state, &policy, 11_000_000, 1);
        assert!(d.allowed);
    }

    #[test]
    fn cost_above_capacity_is_never() {
        let policy = Policy::from_interval("p", 3, 1_000).unwrap();
        let (d, next) = step(None, &policy, 0, 4);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_us, None);
        assert_eq!(d.remaining, 3);
        assert!(next.is_none());
    }

    #[test]
    fn clock_stepping_back_gives_no_credit() {
        let policy = Policy::from_interval("p", 1, 1_000).unwrap();
        let (_, state) = step(None, &policy, 5_000, 1);
        let (d, next) = step(state, &policy, 1_000, 1);
        assert!(!d.allowed);
        assert!(next.is_none());
        let (d, _) = step(state, &policy, 5_999, 1);
        assert!(!d.allowed);
        let (d, _) = step(state, &policy, 6_000, 1);
        assert!(d.allowed);
    }
}
