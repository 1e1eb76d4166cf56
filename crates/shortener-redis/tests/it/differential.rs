//! The Lua scripts against the core model: random policies and random histories of (time
//! step, cost, count), at explicit times, give identical decisions from both. A count
//! above one is a batch call (concurrent decisions coalesced), which must decide as that
//! many single decisions at the same instant.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use shortener_core::limiter::{MAX_BURST_US, gcra, token_bucket};
use shortener_core::{Algorithm, Policy};
use shortener_redis::RedisRateLimiter;

use crate::support::{Target, connect, server, unique};

/// Explicit times start this far ahead of Redis's clock, since keys expire at times computed
/// from them; clock steps back (at most 80 x 2 s) never bring them behind it.
const AHEAD_US: u64 = 3_600_000_000;

fn policies() -> impl Strategy<Value = Policy> {
    prop_oneof![
        // Everyday quotas.
        (1u64..50, 20u64..2_000_000).prop_map(|(c, i)| Policy::from_interval("p", c, i).unwrap()),
        // Large bursts, whose packed token-bucket value no longer fits in 2^53.
        (1u64..=1_000_000).prop_flat_map(|capacity| {
            (Just(capacity), 20..=(MAX_BURST_US / capacity).min(1 << 40))
                .prop_map(|(c, i)| Policy::from_interval("p", c, i).unwrap())
        }),
    ]
}

/// (policy, [(time step in microseconds, possibly back; cost; count)]).
fn histories() -> impl Strategy<Value = (Policy, Vec<(i64, u64, usize)>)> {
    policies().prop_flat_map(|policy| {
        let interval = i64::try_from(policy.interval_us()).unwrap();
        let step = prop_oneof![
            6 => 0i64..3_000_000,
            2 => 0..=(interval * 3).min(1 << 40),
            1 => -2_000_000i64..0,
        ];
        let cost = prop_oneof![3 => 0u64..4, 1 => 0..=policy.capacity() + 2];
        let count = prop_oneof![3 => Just(1usize), 1 => 2usize..8];
        (
            Just(policy),
            prop::collection::vec((step, cost, count), 1..80),
        )
    })
}

async fn redis_now_us(connection: &mut redis::aio::MultiplexedConnection) -> u64 {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query_async(connection).await.unwrap();
    seconds * 1_000_000 + micros
}

async fn replay(
    limiters: &[RedisRateLimiter; 2],
    connection: &mut redis::aio::MultiplexedConnection,
    start_us: u64,
    policy: &Policy,
    steps: &[(i64, u64, usize)],
) -> Result<(), TestCaseError> {
    let (bucket_identity, gcra_identity) = (unique("d"), unique("d"));
    let (mut bucket, mut tat) = (None, None);
    let mut now = start_us;
    for &(step, cost, count) in steps {
        now = now.checked_add_signed(step).unwrap();
        if count > 1 {
            let lua = limiters[0]
                .acquire_batch_at(&bucket_identity, policy, cost, count, now)
                .await
                .unwrap();
            for (index, lua) in lua.into_iter().enumerate() {
                let (model, next) = token_bucket::step(bucket, policy, now, cost);
                prop_assert_eq!(
                    lua,
                    model,
                    "token bucket batch {} at {} for {}",
                    index,
                    now,
                    cost
                );
                bucket = next.or(bucket);
            }
            let lua = limiters[1]
                .acquire_batch_at(&gcra_identity, policy, cost, count, now)
                .await
                .unwrap();
            for (index, lua) in lua.into_iter().enumerate() {
                let (model, next) = gcra::step(tat, policy, now, cost);
                prop_assert_eq!(lua, model, "gcra batch {} at {} for {}", index, now, cost);
                tat = next.or(tat);
            }
            continue;
        }
        let lua = limiters[0]
            .acquire_at(&bucket_identity, policy, cost, now)
            .await
            .unwrap();
        let (model, next) = token_bucket::step(bucket, policy, now, cost);
        prop_assert_eq!(lua, model, "token bucket at {} for {}", now, cost);
        bucket = next.or(bucket);
        let lua = limiters[1]
            .acquire_at(&gcra_identity, policy, cost, now)
            .await
            .unwrap();
        let (model, next) = gcra::step(tat, policy, now, cost);
        prop_assert_eq!(lua, model, "gcra at {} for {}", now, cost);
        tat = next.or(tat);
    }
    // Explicit times lie ahead, and so do these keys' expiries: remove them now.
    let keys = [
        limiters[0].key(&bucket_identity, policy),
        limiters[1].key(&gcra_identity, policy),
    ];
    let _: () = redis::cmd("DEL")
        .arg(&keys)
        .query_async(connection)
        .await
        .unwrap();
    Ok(())
}

#[test]
fn lua_scripts_decide_exactly_like_the_model() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = server().url().to_owned();
    let target = Target::Standalone(url.clone());
    let timeout = Duration::from_secs(2);
    let (limiters, mut connection) = runtime.block_on(async {
        let limiters = [
            connect(&target, Algorithm::TokenBucket, timeout).await,
            connect(&target, Algorithm::Gcra, timeout).await,
        ];
        let client = redis::Client::open(url.as_str()).unwrap();
        (
            limiters,
            client.get_multiplexed_async_connection().await.unwrap(),
        )
    });
    let start_us = runtime.block_on(redis_now_us(&mut connection)) + AHEAD_US;
    let mut runner = TestRunner::new(Config {
        cases: 64,
        // Failing cases are saved next to this crate, as the proptest! macro does.
        source_file: Some(file!()),
        ..Config::default()
    });
    let result = runner.run(&histories(), |(policy, steps)| {
        runtime.block_on(replay(
            &limiters,
            &mut connection.clone(),
            start_us,
            &policy,
            &steps,
        ))
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}
