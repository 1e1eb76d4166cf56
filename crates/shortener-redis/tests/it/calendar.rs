//! The calendar-window script against the core model (`calendar::decide`): random
//! requests over a few keys, units and spendings, at explicit times, give the same counts
//! from both, and the keys in Redis are their names with the counts the model keeps. A
//! node whose estimate of Redis's clock is off names its keys for the wrong window, is
//! told so by the script, and counts in the right one.

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use shortener_core::limiter::calendar::{decide, window_start};
use shortener_core::{Algorithm, Spending, WindowCounter, WindowHit};
use shortener_redis::RedisRateLimiter;

use crate::support::{Target, connect, server, unique};

/// Three keys of different limits and units; a request names one to three of them.
const KEYS: [(u64, u64); 3] = [(3, 1), (5, 60), (1, 60)];

fn spendings() -> impl Strategy<Value = Spending> {
    prop_oneof![
        Just(Spending::Each),
        Just(Spending::StopWhenOver),
        Just(Spending::AllOrNothing)
    ]
}

/// A request: the time step before it, in microseconds, and its (key index, hits).
type Step = (u64, Vec<(usize, u64)>);

/// (spending, steps).
fn histories() -> impl Strategy<Value = (Spending, Vec<Step>)> {
    let request = prop::collection::vec((0..KEYS.len(), 0u64..4), 1..4);
    let step = prop_oneof![3 => 0u64..400_000, 1 => 0u64..3_000_000];
    (spendings(), prop::collection::vec((step, request), 1..40))
}

async fn replay(
    limiter: &RedisRateLimiter,
    connection: &mut redis::aio::MultiplexedConnection,
    start_us: u64,
    spending: Spending,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let prefix = unique("cal");
    let mut model: HashMap<String, u64> = HashMap::new();
    let mut now = start_us;
    for (step, request) in steps {
        now += step;
        let hits: Vec<WindowHit> = (request.iter())
            .map(|&(key, hits)| WindowHit {
                key: format!("{prefix}_k{key}_"),
                limit: KEYS[key].0,
                unit_secs: KEYS[key].1,
                hits,
                expire_secs: KEYS[key].1 + 5,
            })
            .collect();
        let full = |hit: &WindowHit| {
            format!(
                "{}{}",
                hit.key,
                window_start(now / 1_000_000, hit.unit_secs)
            )
        };
        let stored: Vec<u64> = (hits.iter())
            .map(|hit| model.get(&full(hit)).copied().unwrap_or(0))
            .collect();
        let expected = decide(&hits, &stored, spending);
        let lua = limiter.count_at(&hits, spending, Some(now)).await.unwrap();
        for ((lua, model_count), hit) in lua.iter().zip(&expected).zip(&hits) {
            prop_assert_eq!(
                (lua.before, lua.after, lua.over),
                (model_count.before, model_count.after, model_count.over),
                "{:?} at {} of {:?}",
                spending,
                now,
                request
            );
            let unit = hit.unit_secs;
            prop_assert_eq!(lua.reset_after_secs, unit - (now / 1_000_000) % unit);
        }
        for (hit, counted) in hits.iter().zip(&expected) {
            // As the script writes: every key but those "all" leaves untouched.
            if spending != Spending::AllOrNothing || counted.after != counted.before {
                model.insert(full(hit), counted.after);
            }
        }
    }
    let mut in_redis: Vec<(String, u64)> = Vec::new();
    for key in model.keys() {
        let count: u64 = redis::cmd("GET")
            .arg(key)
            .query_async(connection)
            .await
            .unwrap();
        in_redis.push((key.clone(), count));
    }
    for (key, count) in in_redis {
        prop_assert_eq!(Some(&count), model.get(&key), "{} in Redis", key);
    }
    Ok(())
}

#[test]
fn the_calendar_script_counts_exactly_like_the_model() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = server().url().to_owned();
    let target = Target::Standalone(url.clone());
    let (limiter, connection) = runtime.block_on(async {
        let limiter = connect(&target, Algorithm::TokenBucket, Duration::from_secs(2)).await;
        let client = redis::Client::open(url.as_str()).unwrap();
        (
            limiter,
            client.get_multiplexed_async_connection().await.unwrap(),
        )
    });
    // Explicit times, a day ahead: the windows are named from them, and a key's expiry
    // (relative, EXPIRE) outlives the case.
    let start_us = 1_900_000_000_000_000;
    let mut runner = TestRunner::new(Config {
        cases: 64,
        source_file: Some(file!()),
        ..Config::default()
    });
    let result = runner.run(&histories(), |(spending, steps)| {
        runtime.block_on(replay(
            &limiter,
            &mut connection.clone(),
            start_us,
            spending,
            &steps,
        ))
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// An estimate of Redis's clock two seconds behind names a one-second window that is
/// over: the script says so, the keys are named again, and the count lands in the key of
/// the second that holds Redis's now.
#[tokio::test]
async fn keys_named_for_a_past_window_are_named_again() {
    let url = server().url().to_owned();
    let limiter = connect(
        &Target::Standalone(url.clone()),
        Algorithm::TokenBucket,
        Duration::from_secs(2),
    )
    .await;
    let prefix = unique("edge");
    let hit = WindowHit {
        key: format!("{prefix}_"),
        limit: 10,
        unit_secs: 1,
        hits: 1,
        expire_secs: 30,
    };
    // One call teaches the node Redis's clock; then it drifts two seconds behind.
    limiter
        .count_windows(std::slice::from_ref(&hit), Spending::Each)
        .await
        .unwrap();
    limiter.skew_calendar_estimate(-2_000_000);
    let counts = limiter
        .count_windows(std::slice::from_ref(&hit), Spending::Each)
        .await
        .unwrap();
    // Once; twice only should the next second begin within the call's round trip.
    let renames = limiter.calendar_renames();
    assert!((1..=2).contains(&renames), "named again: {renames}");
    let mut connection = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}_*"))
        .query_async(&mut connection)
        .await
        .unwrap();
    let (seconds, _): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut connection)
        .await
        .unwrap();
    // The count is in a key of the last second or two on Redis's clock, never two behind.
    let newest = (keys.iter())
        .filter_map(|key| key.rsplit('_').next()?.parse::<u64>().ok())
        .max()
        .unwrap();
    assert!(seconds - newest <= 1, "{keys:?} at {seconds}");
    assert!(counts[0].after >= 1);
}
