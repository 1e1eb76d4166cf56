//! The memory limiter under real threads and the real clock: no over-admission over any
//! interval, and no under-admission while demand exceeds the quota.

use std::collections::HashMap;

use shortener_core::{Algorithm, Policy};
use shortener_memory::MemoryRateLimiter;
use shortener_testkit::in_parallel;

const THREADS: usize = 4;
const CALLS_PER_THREAD: u64 = 120_000;
const KEYS: [&str; 3] = ["a", "b", "c"];

/// One recorded call: when it was decided, its cost, and whether it was admitted.
#[derive(Clone, Copy)]
struct Call {
    at_us: u64,
    cost: u64,
    allowed: bool,
}

#[test]
fn admissions_stay_within_the_bound_and_near_it() {
    for algorithm in [Algorithm::TokenBucket, Algorithm::Gcra] {
        check(algorithm);
    }
}

fn check(algorithm: Algorithm) {
    // 2000 tokens per second with a 200-token burst: demand (every thread calling every
    // key in a tight loop) exceeds the quota by orders of magnitude, and the 100ms burst
    // absorbs a thread stall on a busy machine without losing refill.
    let policy = Policy::from_interval("bound", 200, 500).unwrap();
    let limiter = MemoryRateLimiter::new(algorithm);
    let per_thread: Vec<Vec<(usize, Call)>> =
        in_parallel(THREADS, |thread| run(&limiter, &policy, thread as u64));
    let mut by_key: HashMap<usize, Vec<Call>> = HashMap::new();
    for (key, call) in per_thread.into_iter().flatten() {
        by_key.entry(key).or_default().push(call);
    }
    for (key, mut calls) in by_key {
        calls.sort_by_key(|call| call.at_us);
        assert_never_over(&calls, &policy, algorithm, KEYS[key]);
        assert_near_the_bound(&calls, &policy, algorithm, KEYS[key]);
    }
}

fn run(limiter: &MemoryRateLimiter, policy: &Policy, thread: u64) -> Vec<(usize, Call)> {
    let mut random = 0x9E37_79B9_7F4A_7C15_u64 ^ (thread + 1);
    (0..CALLS_PER_THREAD)
        .map(|call| {
            // xorshift64: costs 1 to 3 without a dependency.
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            let key = (call % KEYS.len() as u64) as usize;
            let cost = 1 + random % 3;
            let (decision, at_us) = limiter.acquire_at_now(KEYS[key], policy, cost);
            let allowed = decision.allowed;
            (
                key,
                Call {
                    at_us,
                    cost,
                    allowed,
                },
            )
        })
        .collect()
}

/// For every pair of recorded times t1 <= t2, admitted cost in [t1, t2] times the interval
/// is at most burst + (t2 - t1). With admissions in time order and prefix sums S, that is
/// (S_j - t_j) - (S_{i-1} - t_i) <= burst for all i <= j, checked with a running minimum
/// in one pass; the worst pair starts and ends at an admission.
fn assert_never_over(calls: &[Call], policy: &Policy, algorithm: Algorithm, key: &str) {
    let burst = i128::from(policy.burst_us());
    let mut before = 0i128; // S_{i-1}: admitted cost (in us of credit) before admission i
    let mut lowest_start = i128::MAX; // min over i of S_{i-1} - t_i
    for call in calls.iter().filter(|call| call.allowed) {
        let at = i128::from(call.at_us);
        lowest_start = lowest_start.min(before - at);
        before += i128::from(call.cost * policy.interval_us());
        let excess = (before - at) - lowest_start - burst;
        assert!(
            excess <= 0,
            "{algorithm:?} key {key}: over-admitted by {excess}us of credit at {at}us"
        );
    }
}

/// Over the whole run, admitted cost >= 98% of capacity + elapsed / interval.
fn assert_near_the_bound(calls: &[Call], policy: &Policy, algorithm: Algorithm, key: &str) {
    let (first, last) = (calls[0].at_us, calls[calls.len() - 1].at_us);
    let admitted: u64 = calls.iter().filter(|c| c.allowed).map(|c| c.cost).sum();
    let bound = policy.capacity() + (last - first) / policy.interval_us();
    assert!(
        admitted * 100 >= bound * 98,
        "{algorithm:?} key {key}: admitted {admitted} of a bound of {bound} over {}us",
        last - first
    );
}

/// The checks above, on made-up histories: they see an over- and an under-admission.
#[test]
#[should_panic(expected = "over-admitted")]
fn the_upper_check_sees_over_admission() {
    let policy = Policy::from_interval("p", 2, 1_000).unwrap();
    let call = |at_us, cost| Call {
        at_us,
        cost,
        allowed: true,
    };
    // 3 tokens in 999us, but only 2 + 0.999 fit.
    let calls = [call(5_000, 1), call(5_000, 1), call(5_999, 1)];
    assert_never_over(&calls, &policy, Algorithm::TokenBucket, "made-up");
}

#[test]
#[should_panic(expected = "admitted 3 of a bound of 12")]
fn the_lower_check_sees_under_admission() {
    let policy = Policy::from_interval("p", 2, 1_000).unwrap();
    let call = |at_us, allowed| Call {
        at_us,
        cost: 1,
        allowed,
    };
    let calls = [
        call(0, true),
        call(5_000, true),
        call(10_000, true),
        call(10_000, false),
    ];
    assert_never_over(&calls, &policy, Algorithm::TokenBucket, "made-up");
    assert_near_the_bound(&calls, &policy, Algorithm::TokenBucket, "made-up");
}
