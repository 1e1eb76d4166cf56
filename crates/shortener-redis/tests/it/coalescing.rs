//! Concurrent plain decisions on one bucket are coalesced into batch calls: from three
//! limiters (three nodes' pools) with many tasks each, admissions on one hot key stay
//! within `capacity + elapsed / interval` of Redis's clock, Redis runs fewer script calls
//! than there were decisions, and cancelled decisions leave no bucket stuck in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use shortener_core::{Algorithm, Policy, RateLimiter};
use shortener_redis::RedisRateLimiter;
use shortener_testkit::RedisServer;

use crate::support::{Target, connect, unique};

const NODES: usize = 3;
const TASKS: usize = 32;
const CALLS_PER_TASK: usize = 40;

async fn redis_time_us(connection: &mut redis::aio::MultiplexedConnection) -> u64 {
    let (seconds, micros): (u64, u64) = redis::cmd("TIME").query_async(connection).await.unwrap();
    seconds * 1_000_000 + micros
}

/// Script calls (`EVALSHA` and `EVAL`) the server has run so far.
async fn script_calls(connection: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(connection)
        .await
        .unwrap();
    info.lines()
        .filter(|line| line.starts_with("cmdstat_evalsha:") || line.starts_with("cmdstat_eval:"))
        .filter_map(|line| {
            let calls = line.split_once("calls=")?.1;
            calls.split(',').next()?.parse::<u64>().ok()
        })
        .sum()
}

async fn one_hot_bucket(algorithm: Algorithm) {
    // A server of its own, so that its command counts are this test's only.
    let server = RedisServer::start();
    let target = Target::Standalone(server.url().to_owned());
    let client = redis::Client::open(server.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let policy = Policy::new("redirect", 20, 200.0).unwrap();
    let mut limiters = Vec::new();
    for _ in 0..NODES {
        limiters.push(Arc::new(
            connect(&target, algorithm, Duration::from_secs(2)).await,
        ));
    }
    let identity = unique("hot");
    let admitted = Arc::new(AtomicU64::new(0));
    let calls_before = script_calls(&mut connection).await;
    let start_us = redis_time_us(&mut connection).await;
    let mut tasks = Vec::new();
    for limiter in &limiters {
        for _ in 0..TASKS {
            let (limiter, identity, policy, admitted) = (
                Arc::clone(limiter),
                identity.clone(),
                policy.clone(),
                Arc::clone(&admitted),
            );
            tasks.push(tokio::spawn(async move {
                for _ in 0..CALLS_PER_TASK {
                    let decision = limiter.acquire(&identity, &policy, 1).await.unwrap();
                    if decision.allowed {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    let end_us = redis_time_us(&mut connection).await;
    let calls = script_calls(&mut connection).await - calls_before;
    let decisions = (NODES * TASKS * CALLS_PER_TASK) as u64;
    let admitted = admitted.load(Ordering::Relaxed);
    let bound = policy.capacity() + (end_us - start_us) / policy.interval_us();
    eprintln!(
        "{algorithm:?}: {decisions} decisions in {calls} script calls, {admitted} admitted, bound {bound}"
    );
    assert!(admitted <= bound, "{admitted} admitted, bound {bound}");
    assert!(admitted >= policy.capacity(), "{admitted} admitted");
    assert!(
        calls < decisions,
        "{decisions} decisions took {calls} script calls: none was coalesced"
    );
    for limiter in &limiters {
        assert_eq!(limiter.calls_in_flight(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_bucket_coalesces_a_hot_bucket_within_the_bound() {
    one_hot_bucket(Algorithm::TokenBucket).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcra_coalesces_a_hot_bucket_within_the_bound() {
    one_hot_bucket(Algorithm::Gcra).await;
}

/// Decisions cancelled at random points (leaders, queued ones, new leaders with their lead
/// unread) never leave their bucket stuck: afterwards nothing is in flight and the next
/// decision is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_decisions_leave_no_bucket_in_flight() {
    let server = RedisServer::start();
    let target = Target::Standalone(server.url().to_owned());
    let limiter: Arc<RedisRateLimiter> =
        Arc::new(connect(&target, Algorithm::TokenBucket, Duration::from_secs(2)).await);
    let policy = Policy::new("redirect", 1_000, 1_000.0).unwrap();
    let identity = unique("cancel");
    let answered = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for task in 0..64u64 {
        let (limiter, identity, policy, answered) = (
            Arc::clone(&limiter),
            identity.clone(),
            policy.clone(),
            Arc::clone(&answered),
        );
        tasks.push(tokio::spawn(async move {
            for round in 0..30u64 {
                // Deadlines from 0 to about 1 ms cut calls at every stage.
                let micros = (task * 37 + round * 101) % 1_100;
                let decision = tokio::time::timeout(
                    Duration::from_micros(micros),
                    limiter.acquire(&identity, &policy, 1),
                )
                .await;
                if let Ok(result) = decision {
                    result.unwrap();
                    answered.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(limiter.calls_in_flight(), 0);
    let decision = tokio::time::timeout(
        Duration::from_secs(2),
        limiter.acquire(&identity, &policy, 1),
    )
    .await
    .expect("a decision after the cancellations")
    .unwrap();
    assert_eq!(decision.limit, 1_000);
    assert_eq!(limiter.calls_in_flight(), 0);
    eprintln!(
        "{} of {} decisions answered before their deadline",
        answered.load(Ordering::Relaxed),
        64 * 30
    );
}
