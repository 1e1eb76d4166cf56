//! GCRA: stored state is one timestamp, the theoretical arrival time (TAT). The bucket
//! holds `burst - (tat - now)` microseconds of credit, so it decides exactly like
//! [`super::token_bucket`] with less state.

use super::{Decision, Policy};

/// One decision at `now_us` for `cost` tokens; returns the decision and the new TAT to
/// store (`None`: store nothing; a refused request never writes).
pub fn step(tat: Option<u64>, policy: &Policy, now_us: u64, cost: u64) -> (Decision, Option<u64>) {
    let burst = policy.burst_us();
    // A TAT more than a burst ahead is a debt being paid ([`debit`]), or a clock that
    // stepped back: no credit either way until the time catches up.
    let tat = tat.unwrap_or(now_us).max(now_us);
    let credit = burst.saturating_sub(tat - now_us);
    if cost > policy.capacity() {
        return (Decision::from_credit(policy, cost, false, credit), None);
    }
    let need = cost * policy.interval_us();
    if need <= credit {
        let write = (cost > 0).then_some(tat + need);
        (
            Decision::from_credit(policy, cost, true, credit - need),
            write,
        )
    } else {
        (Decision::from_credit(policy, cost, false, credit), None)
    }
}

/// The TAT after `debt` tokens are taken at `now_us` whatever the bucket holds: it may
/// go more than a burst ahead, and the bucket then refills only once the debt is paid
/// (see [`super::token_bucket::debit`]).
pub fn debit(tat: Option<u64>, policy: &Policy, now_us: u64, debt: u64) -> u64 {
    tat.unwrap_or(now_us)
        .max(now_us)
        .saturating_add(debt.saturating_mul(policy.interval_us()))
}

/// [`debit`] then [`step`], as one step (see [`super::token_bucket::step_after_debt`]).
pub fn step_after_debt(
    tat: Option<u64>,
    policy: &Policy,
    now_us: u64,
    debt: u64,
    cost: u64,
) -> (Decision, Option<u64>) {
    if debt == 0 {
        return step(tat, policy, now_us, cost);
    }
    let debited = debit(tat, policy, now_us, debt);
    let (decision, next) = step(Some(debited), policy, now_us, cost);
    (decision, Some(next.unwrap_or(debited)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_one_timestamp() {
        let policy = Policy::from_interval("p", 2, 500_000).unwrap();
        let (d, tat) = step(None, &policy, 1_000_000, 1);
        assert!(d.allowed);
        assert_eq!(tat, Some(1_500_000));
        let (d, tat) = step(tat, &policy, 1_000_000, 1);
        assert!(d.allowed);
        assert_eq!(d.remaining, 0);
        assert_eq!(d.reset_after_us, 1_000_000);
        let (d, next) = step(tat, &policy, 1_100_000, 1);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_us, Some(400_000));
        assert!(next.is_none());
    }
}
