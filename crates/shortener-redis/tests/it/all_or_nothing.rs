//! `lua/all_or_nothing.lua` against the core model (`step_all`): random demands over a
//! few buckets, each a token bucket, GCRA or a fixed window (repeated keys, debts, costs
//! above capacity, clock steps back), decide the same from both; one key decided in turn
//! by this script and by `token_bucket.lua` decides as the model does (one encoding, two
//! scripts); and on a cluster a group's buckets are decided in one call, exactly, however
//! many tasks ask at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use shortener_core::limiter::all::step_all;
use shortener_core::{Algorithm, Demand, MultiRateLimiter, Policy};
use shortener_redis::RedisRateLimiter;

use crate::support::{Target, cluster, connect, server, unique};

const AHEAD_US: u64 = 3_600_000_000;

/// A step: (time step, possibly back; [(bucket 0..3, cost, debt)]).
type Step = (i64, Vec<(usize, u64, u64)>);

fn cases() -> impl Strategy<Value = (Vec<(Policy, Algorithm)>, Vec<Step>)> {
    let algorithm = prop_oneof![
        Just(Algorithm::TokenBucket),
        Just(Algorithm::Gcra),
        Just(Algorithm::FixedWindow)
    ];
    let policy =
        (1u64..12, 20u64..2_000_000, algorithm).prop_map(|(capacity, interval, algorithm)| {
            (
                Policy::from_interval("p", capacity, interval).unwrap(),
                algorithm,
            )
        });
    let demand = (
        0usize..3,
        prop_oneof![4 => 0u64..4, 1 => 0u64..15],
        prop_oneof![4 => Just(0u64), 1 => 0u64..6],
    );
    let step = (
        prop_oneof![6 => 0i64..3_000_000, 1 => -1_000_000i64..0],
        prop::collection::vec(demand, 1..5),
    );
    (
        prop::collection::vec(policy, 3),
        prop::collection::vec(step, 1..40),
    )
}

async fn replay(
    limiter: &RedisRateLimiter,
    start_us: u64,
    policies: &[(Policy, Algorithm)],
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let group = unique("g");
    let identities: Vec<String> = (0..3).map(|index| format!("b{index}")).collect();
    let mut buckets: HashMap<usize, Option<_>> = HashMap::new();
    let mut now = start_us;
    for (step, picks) in steps {
        now = now.checked_add_signed(*step).unwrap();
        let demands: Vec<Demand> = picks
            .iter()
            .map(|&(bucket, cost, debt)| Demand {
                identity: identities[bucket].clone(),
                policy: policies[bucket].0.clone(),
                cost,
                debt,
                algorithm: policies[bucket].1,
            })
            .collect();
        for &(bucket, _, _) in picks {
            buckets.entry(bucket).or_insert(None);
        }
        let model_demands: Vec<_> = picks
            .iter()
            .zip(&demands)
            .map(|(&(bucket, _, _), demand)| (bucket, demand))
            .collect();
        let model = step_all(&mut buckets, &model_demands, now);
        let lua = limiter.acquire_all_at(&group, &demands, now).await.unwrap();
        prop_assert_eq!(lua, model, "at {} for {:?}", now, picks);
    }
    let keys: Vec<String> = (0..3)
        .map(|bucket| limiter.demand_key(&group, &identities[bucket], "p", policies[bucket].1))
        .collect();
    let client = redis::Client::open(server().url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("DEL")
        .arg(&keys)
        .query_async(&mut connection)
        .await
        .unwrap();
    Ok(())
}

#[test]
fn the_all_or_nothing_script_decides_exactly_like_the_model() {
    let (runtime, limiter, start_us) = standalone_ahead();
    let mut runner = TestRunner::new(Config {
        cases: 48,
        source_file: Some(file!()),
        ..Config::default()
    });
    let result = runner.run(&cases(), |(policies, steps)| {
        runtime.block_on(replay(&limiter, start_us, &policies, &steps))
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// 200 decisions at once, each wanting one token of a wide bucket and one of a narrow
/// one (capacity 10, refilling once a minute), on a three-master cluster: exactly 10
/// admitted, and the wide bucket spent exactly 10, not 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_is_decided_in_one_call_on_a_cluster_and_exactly() {
    let target = Target::Cluster(cluster().urls());
    let limiter = Arc::new(connect(&target, Algorithm::TokenBucket, Duration::from_secs(2)).await);
    let wide = Policy::from_interval("wide", 1_000, 60_000_000).unwrap();
    let narrow = Policy::from_interval("narrow", 10, 6_000_000).unwrap();
    let group = unique("domain");
    let admitted = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let (limiter, wide, narrow, group, admitted) = (
            limiter.clone(),
            wide.clone(),
            narrow.clone(),
            group.clone(),
            admitted.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let demands = [
                Demand {
                    identity: "client".into(),
                    policy: wide,
                    cost: 1,
                    debt: 0,
                    algorithm: Algorithm::TokenBucket,
                },
                Demand {
                    identity: "client".into(),
                    policy: narrow,
                    cost: 1,
                    debt: 0,
                    algorithm: Algorithm::TokenBucket,
                },
            ];
            if limiter.acquire_all(&group, &demands).await.unwrap().allowed {
                admitted.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(admitted.load(Ordering::Relaxed), 10);
    let peek = [Demand {
        identity: "client".into(),
        policy: wide,
        cost: 0,
        debt: 0,
        algorithm: Algorithm::TokenBucket,
    }];
    let left = limiter.acquire_all(&group, &peek).await.unwrap();
    assert!(
        (989..=990).contains(&left.decisions[0].remaining),
        "the refused 190 took nothing from the wide bucket: {} left",
        left.decisions[0].remaining
    );
}

/// One Redis key decided in turn by `token_bucket.lua` or `gcra.lua` (`acquire_at` of the
/// identity `group` and the policy `p:b`, or `p#gcra:b`) and by `all_or_nothing.lua`
/// (`acquire_all_at` of the group's identity `b` and the policy `p`): the scripts read and
/// write the same encodings, so every decision is the model's, whichever script made the
/// one before.
#[test]
fn one_key_decided_by_both_scripts_decides_like_the_model() {
    let (runtime, token_bucket, start_us) = standalone_ahead();
    let target = Target::Standalone(server().url().to_owned());
    let gcra = runtime.block_on(connect(&target, Algorithm::Gcra, Duration::from_secs(2)));
    let case = (
        (1u64..12, 20u64..2_000_000, any::<bool>()),
        prop::collection::vec((0i64..3_000_000, 0u64..5, any::<bool>()), 1..40),
    );
    let mut runner = TestRunner::new(Config {
        cases: 32,
        source_file: Some(file!()),
        ..Config::default()
    });
    let result = runner.run(&case, |((capacity, interval, is_gcra), steps)| {
        let (limiter, algorithm, name) = if is_gcra {
            (&gcra, Algorithm::Gcra, "p#gcra:b")
        } else {
            (&token_bucket, Algorithm::TokenBucket, "p:b")
        };
        runtime.block_on(async {
            let group = unique("both");
            let shared = Demand {
                identity: "b".into(),
                policy: Policy::from_interval("p", capacity, interval).unwrap(),
                cost: 0,
                debt: 0,
                algorithm,
            };
            let single = Policy::from_interval(name, capacity, interval).unwrap();
            prop_assert_eq!(
                limiter.key(&group, &single),
                limiter.demand_key(&group, "b", "p", algorithm),
                "one key for both"
            );
            let mut buckets: HashMap<usize, Option<_>> = HashMap::from([(0, None)]);
            let mut now = start_us;
            for (step, cost, through_all) in steps {
                now = now.checked_add_signed(step).unwrap();
                let demand = Demand {
                    cost,
                    ..shared.clone()
                };
                let model = step_all(&mut buckets, &[(0, &demand)], now);
                if through_all {
                    let lua = limiter
                        .acquire_all_at(&group, &[demand], now)
                        .await
                        .unwrap();
                    prop_assert_eq!(lua, model, "all at {}", now);
                } else {
                    let lua = limiter
                        .acquire_at(&group, &single, cost, now)
                        .await
                        .unwrap();
                    prop_assert_eq!(lua, model.decisions[0], "single at {}", now);
                }
            }
            Ok(())
        })
    });
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// A runtime, a token-bucket limiter on the shared Redis, and a start time an hour ahead
/// of Redis's clock (explicit times must not be behind it).
fn standalone_ahead() -> (tokio::runtime::Runtime, RedisRateLimiter, u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let target = Target::Standalone(server().url().to_owned());
    let limiter = runtime.block_on(connect(
        &target,
        Algorithm::TokenBucket,
        Duration::from_secs(2),
    ));
    let start_us = runtime.block_on(redis_now_us()) + AHEAD_US;
    (runtime, limiter, start_us)
}

async fn redis_now_us() -> u64 {
    let client = redis::Client::open(server().url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let (seconds, micros): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut connection)
        .await
        .unwrap();
    seconds * 1_000_000 + micros
}
