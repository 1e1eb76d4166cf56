//! Fixed window: at most `capacity` tokens per window of `window_secs` seconds, the
//! windows aligned on the clock's zero (on Redis's clock, the Unix epoch: the calendar
//! windows of envoyproxy/ratelimit, `now - now % unit`). Stored state is the window's
//! start and the tokens counted in it.
//!
//! Unlike the token bucket, it lets up to twice the capacity through around a window's
//! edge; it exists for users who need their limits counted per calendar window. The
//! count is still decided atomically, on one clock, so it never exceeds `capacity` within
//! one window.

use super::{Decision, Policy};

/// A window as stored: `count` tokens taken in the window that starts at `start_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_us: u64,
    pub count: u64,
}

/// The length of a policy's windows: its [`Policy::window_secs`], in microseconds.
pub fn window_us(policy: &Policy) -> u64 {
    policy.window_secs() * 1_000_000
}

/// The start of the window that holds `now_us`.
pub fn start_of(policy: &Policy, now_us: u64) -> u64 {
    now_us - now_us % window_us(policy)
}

/// The tokens counted in the current window: a stored window of another (earlier, or
/// with another length) start counts nothing.
pub fn count(state: Option<Window>, policy: &Policy, now_us: u64) -> u64 {
    match state {
        Some(window) if window.start_us == start_of(policy, now_us) => window.count,
        _ => 0,
    }
}

/// The decision for `cost` tokens when the window holds `count` after it (admitted) or
/// now (refused): what the model returns, and how a backend that reports only a count
/// (the Lua script) is turned into a full decision.
pub fn decision(policy: &Policy, cost: u64, allowed: bool, count: u64, now_us: u64) -> Decision {
    let until_end = start_of(policy, now_us) + window_us(policy) - now_us;
    let retry_after_us = if allowed {
        Some(0)
    } else if cost > policy.capacity() {
        None
    } else {
        Some(until_end)
    };
    Decision {
        allowed,
        limit: policy.capacity(),
        remaining: policy.capacity().saturating_sub(count),
        retry_after_us,
        reset_after_us: if count == 0 { 0 } else { until_end },
    }
}

/// One decision at `now_us` for `cost` tokens: the decision and, when the state must
/// change, the window to store (a refused request never writes).
pub fn step(
    state: Option<Window>,
    policy: &Policy,
    now_us: u64,
    cost: u64,
) -> (Decision, Option<Window>) {
    let counted = count(state, policy, now_us);
    let after = counted.saturating_add(cost);
    if after > policy.capacity() {
        return (decision(policy, cost, false, counted, now_us), None);
    }
    let write = (cost > 0).then_some(Window {
        start_us: start_of(policy, now_us),
        count: after,
    });
    (decision(policy, cost, true, after, now_us), write)
}

/// The window after `debt` tokens are counted at `now_us` whatever it holds (tokens a
/// node admitted on its own, settled when the shared backend answers again): the count
/// may go above the capacity, and nothing more is admitted until the next window.
pub fn debit(state: Option<Window>, policy: &Policy, now_us: u64, debt: u64) -> Window {
    Window {
        start_us: start_of(policy, now_us),
        count: count(state, policy, now_us).saturating_add(debt),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn per_minute(capacity: u64) -> Policy {
        Policy::from_interval("p", capacity, 60_000_000 / capacity).unwrap()
    }

    #[test]
    fn a_window_admits_its_capacity_and_the_next_starts_afresh() {
        let policy = per_minute(3);
        let mut state = None;
        let at = 120_000_000 + 59_000_000;
        for left in [2, 1, 0] {
            let (decision, next) = step(state, &policy, at, 1);
            assert!(decision.allowed);
            assert_eq!(decision.remaining, left);
            assert_eq!(decision.reset_after_us, 1_000_000);
            state = next;
        }
        let (refused, next) = step(state, &policy, at, 1);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after_us, Some(1_000_000));
        assert_eq!(next, None);
        let (again, _) = step(state, &policy, 180_000_000, 3);
        assert!(again.allowed, "a new window counts from zero");
        let (never, _) = step(None, &policy, at, 4);
        assert_eq!(never.retry_after_us, None);
    }

    #[test]
    fn a_debt_is_counted_even_above_the_capacity() {
        let policy = per_minute(3);
        let state = debit(None, &policy, 1_000_000, 5);
        assert_eq!(state.count, 5);
        let (refused, _) = step(Some(state), &policy, 2_000_000, 1);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        assert!(step(Some(state), &policy, 60_000_000, 1).0.allowed);
    }

    proptest! {
        /// Within one window the admitted cost never exceeds the capacity.
        #[test]
        fn a_window_never_admits_more_than_its_capacity(
            capacity in 1u64..20,
            steps in prop::collection::vec((0u64..20_000_000, 0u64..5), 1..80),
        ) {
            let policy = per_minute(capacity);
            let mut state = None;
            let mut now = 1_000_000u64;
            let mut admitted = std::collections::HashMap::new();
            for (dt, cost) in steps {
                now += dt;
                let (decision, next) = step(state, &policy, now, cost);
                if decision.allowed {
                    *admitted.entry(start_of(&policy, now)).or_insert(0) += cost;
                } else {
                    prop_assert!(next.is_none());
                }
                state = next.or(state);
            }
            for total in admitted.values() {
                prop_assert!(*total <= capacity);
            }
        }
    }
}
