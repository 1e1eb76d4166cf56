//! The policy's arithmetic, and the models' agreement and bound, by proptest.

use proptest::prelude::*;

use super::*;

#[test]
fn policy_rounds_the_interval_up() {
    let policy = Policy::new("create", 100, 1.6667).unwrap();
    assert_eq!(policy.interval_us(), 599_989);
    assert!(policy.refill_per_sec() <= 1.6667);
    assert_eq!(policy.window_secs(), 60);
    assert_eq!(Policy::new("x", 0, 1.0), Err(PolicyError::Capacity));
    assert_eq!(Policy::new("x", 1, 0.0), Err(PolicyError::Rate));
    assert_eq!(Policy::new("x", 1, f64::NAN), Err(PolicyError::Rate));
    assert_eq!(Policy::new("x", u64::MAX, 1.0), Err(PolicyError::Burst));
}

fn policies() -> impl Strategy<Value = Policy> {
    (1u64..50, 20u64..2_000_000).prop_map(|(c, i)| Policy::from_interval("p", c, i).unwrap())
}

fn steps() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::vec((0u64..3_000_000, 0u64..60), 1..80)
}

proptest! {
    /// The two algorithms are one quota: identical decisions for any history.
    #[test]
    fn token_bucket_and_gcra_agree(policy in policies(), steps in steps(), start in 0u64..(1 << 51)) {
        let mut bucket = None;
        let mut tat = None;
        let mut now = start;
        for (dt, cost) in steps {
            now += dt;
            let (a, next_bucket) = token_bucket::step(bucket, &policy, now, cost);
            let (b, next_tat) = gcra::step(tat, &policy, now, cost);
            prop_assert_eq!(a, b);
            bucket = next_bucket.or(bucket);
            tat = next_tat.or(tat);
        }
    }

    /// Debts too: both algorithms take them alike, and a debt is never forgiven (the
    /// credit after a debt and a wait is what the wait refilled, less what exceeded
    /// the credit before it).
    #[test]
    fn debts_are_taken_alike(
        policy in policies(),
        steps in prop::collection::vec((0u64..3_000_000, 0u64..60, 0u64..120), 1..60),
    ) {
        let mut bucket = None;
        let mut tat = None;
        let mut now = 1_000_000u64;
        for (dt, cost, debt) in steps {
            now += dt;
            let (a, next_bucket) = token_bucket::step_after_debt(bucket, &policy, now, debt, cost);
            let (b, next_tat) = gcra::step_after_debt(tat, &policy, now, debt, cost);
            prop_assert_eq!(a, b);
            if debt > 0 {
                prop_assert!(next_bucket.is_some() && next_tat.is_some(), "a debt is written");
            }
            bucket = next_bucket.or(bucket);
            tat = next_tat.or(tat);
        }
    }

    /// Over any interval of a history, admitted cost <= capacity + interval / emission
    /// interval, and a refused request changes no state.
    #[test]
    fn admissions_never_exceed_the_bound(policy in policies(), steps in steps()) {
        let mut bucket = None;
        let mut now = 1_000_000u64;
        let mut admitted: Vec<(u64, u64)> = Vec::new();
        for (dt, cost) in steps {
            now += dt;
            let (decision, next) = token_bucket::step(bucket, &policy, now, cost);
            if decision.allowed {
                admitted.push((now, cost));
            } else {
                prop_assert!(next.is_none());
            }
            bucket = next.or(bucket);
        }
        for i in 0..admitted.len() {
            let mut total = 0u64;
            for &(at, cost) in &admitted[i..] {
                total += cost;
                let elapsed = at - admitted[i].0;
                // total * interval <= burst + elapsed, in integers
                prop_assert!(total * policy.interval_us() <= policy.burst_us() + elapsed);
            }
        }
    }
}
