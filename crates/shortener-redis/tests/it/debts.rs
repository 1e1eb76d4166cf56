//! Debts (tokens a node admitted on its own while Redis was out of reach) taken by the
//! scripts exactly as the core model takes them: a random mix of debts and costs on
//! Redis's own clock, replayed through `step_after_debt` at the times the audit reports.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use shortener_core::limiter::{gcra, token_bucket};
use shortener_core::{Algorithm, Policy};
use shortener_redis::RedisRateLimiter;

use crate::support::{Target, connect, server, unique};

/// (policy, [(debt, cost)]): debts are often larger than the whole burst.
fn histories() -> impl Strategy<Value = (Policy, Vec<(u64, u64)>)> {
    (1u64..8, 1_000u64..50_000).prop_flat_map(|(capacity, interval)| {
        let policy = Policy::from_interval("p", capacity, interval).unwrap();
        let debt = prop_oneof![2 => Just(0u64), 1 => 0..capacity * 3];
        let cost = 0..=capacity + 1;
        (Just(policy), prop::collection::vec((debt, cost), 1..30))
    })
}

async fn replay(
    limiter: &RedisRateLimiter,
    algorithm: Algorithm,
    policy: &Policy,
    steps: &[(u64, u64)],
) -> Result<(), TestCaseError> {
    let identity = unique("debt");
    let (mut bucket, mut tat) = (None, None);
    for &(debt, cost) in steps {
        let (lua, audit) = limiter
            .acquire_after_debt_audited(&identity, policy, debt, cost)
            .await
            .unwrap();
        let model = match algorithm {
            Algorithm::TokenBucket => {
                let (model, next) =
                    token_bucket::step_after_debt(bucket, policy, audit.now_us, debt, cost);
                bucket = next.or(bucket);
                model
            }
            Algorithm::Gcra => {
                let (model, next) = gcra::step_after_debt(tat, policy, audit.now_us, debt, cost);
                tat = next.or(tat);
                model
            }
            Algorithm::FixedWindow => unreachable!("no single-bucket fixed window in Redis"),
        };
        prop_assert_eq!(
            lua,
            model,
            "{:?}: debt {} cost {} at {}",
            algorithm,
            debt,
            cost,
            audit.now_us
        );
    }
    Ok(())
}

#[test]
fn scripts_take_debts_exactly_like_the_model() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let target = Target::Standalone(server().url().to_owned());
    for algorithm in [Algorithm::TokenBucket, Algorithm::Gcra] {
        let limiter = runtime.block_on(connect(&target, algorithm, Duration::from_secs(2)));
        let mut runner = TestRunner::new(Config {
            cases: 48,
            source_file: Some(file!()),
            ..Config::default()
        });
        let result = runner.run(&histories(), |(policy, steps)| {
            runtime.block_on(replay(&limiter, algorithm, &policy, &steps))
        });
        if let Err(error) = result {
            panic!("{error}");
        }
    }
}

#[test]
fn a_debt_above_the_credit_delays_the_refill_and_is_never_forgiven() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let target = Target::Standalone(server().url().to_owned());
    // 2 tokens of burst, one a second.
    let policy = Policy::from_interval("p", 2, 1_000_000).unwrap();
    for algorithm in [Algorithm::TokenBucket, Algorithm::Gcra] {
        runtime.block_on(async {
            let limiter = connect(&target, algorithm, Duration::from_secs(2)).await;
            let identity = unique("owed");
            // A full bucket (2) owes 5: 3 beyond it, refused, and the debt is written.
            let (refused, audit) = limiter
                .acquire_after_debt_audited(&identity, &policy, 5, 1)
                .await
                .unwrap();
            assert!(!refused.allowed, "{algorithm:?}");
            assert_eq!((refused.remaining, audit.version), (0, 1), "{algorithm:?}");
            // Paying 3 takes 3 s and the next token 1 s more: a bucket that forgave the
            // rest would admit in 1 s.
            tokio::time::sleep(Duration::from_millis(1_100)).await;
            let (later, _) = limiter
                .acquire_after_debt_audited(&identity, &policy, 0, 1)
                .await
                .unwrap();
            assert!(
                !later.allowed,
                "{algorithm:?}: the debt is still being paid"
            );
        });
    }
}
