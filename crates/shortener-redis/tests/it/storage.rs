//! What the scripts leave in Redis: one small integer per key, an expiry at the moment the
//! bucket is full again, and nothing at all for a refused request.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use shortener_core::{Algorithm, Policy, RateLimiter};
use shortener_testkit::RedisServer;

use crate::support::{Target, connect, server, unique};

const ALGORITHMS: [Algorithm; 2] = [Algorithm::TokenBucket, Algorithm::Gcra];

async fn raw(url: &str) -> MultiplexedConnection {
    let client = redis::Client::open(url).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

/// The value and the expiry of a key, as exactly as Redis keeps them.
async fn snapshot(connection: &mut MultiplexedConnection, key: &str) -> (Option<String>, i64) {
    let value: Option<String> = redis::cmd("GET")
        .arg(key)
        .query_async(connection)
        .await
        .unwrap();
    let expiry: i64 = redis::cmd("PEXPIRETIME")
        .arg(key)
        .query_async(connection)
        .await
        .unwrap();
    (value, expiry)
}

#[tokio::test]
async fn a_key_takes_at_most_72_bytes() {
    // A private server, so that the key is exactly the documented example.
    let server = RedisServer::start_private();
    let mut connection = raw(server.url()).await;
    let policy = Policy::new("create", 100, 1.6667).unwrap();
    for (algorithm, identity) in ALGORITHMS.into_iter().zip(["203.0.113.9", "203.0.113.8"]) {
        let target = Target::Standalone(server.url().to_owned());
        let limiter = connect(&target, algorithm, Duration::from_secs(2)).await;
        for _ in 0..3 {
            assert!(limiter.acquire(identity, &policy, 7).await.unwrap().allowed);
        }
        let key = limiter.key(identity, &policy);
        assert_eq!(key, format!("rl:{{{identity}}}:create"));
        let bytes: u64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&key)
            .query_async(&mut connection)
            .await
            .unwrap();
        let encoding: String = redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(&key)
            .query_async(&mut connection)
            .await
            .unwrap();
        eprintln!("{algorithm:?}: MEMORY USAGE {key} = {bytes} bytes ({encoding})");
        assert!(bytes <= 72, "{algorithm:?}: {bytes} bytes per key");
        assert_eq!(encoding, "int", "{algorithm:?}");
    }
}

#[tokio::test]
async fn a_refused_request_writes_nothing() {
    let url = server().url().to_owned();
    let mut connection = raw(&url).await;
    let policy = Policy::new("create", 2, 1.0).unwrap();
    for algorithm in ALGORITHMS {
        let limiter = connect(
            &Target::Standalone(url.clone()),
            algorithm,
            Duration::from_secs(2),
        )
        .await;
        for audited in [false, true] {
            let identity = unique("w");
            let key = limiter.key(&identity, &policy);
            let (decision, _) = limiter
                .acquire_audited(&identity, &policy, 2)
                .await
                .unwrap();
            assert!(decision.allowed);
            let before = snapshot(&mut connection, &key).await;
            assert!(before.0.is_some() && before.1 > 0, "{before:?}");
            for cost in [1, 2, 3] {
                let (decision, audit) = if audited {
                    limiter
                        .acquire_audited(&identity, &policy, cost)
                        .await
                        .unwrap()
                } else {
                    let decision = limiter.acquire(&identity, &policy, cost).await.unwrap();
                    (decision, Default::default())
                };
                assert!(!decision.allowed, "{algorithm:?} cost {cost}");
                assert_eq!(decision.retry_after_us.is_none(), cost > 2);
                if audited {
                    assert_eq!(audit.version, 1, "{algorithm:?}: a refusal is not a write");
                }
                assert_eq!(
                    snapshot(&mut connection, &key).await,
                    before,
                    "{algorithm:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_key_expires_when_its_bucket_is_full_again() {
    let url = server().url().to_owned();
    let mut connection = raw(&url).await;
    // 3 of burst, one back every 200 ms: the 400 ms until full leave room for a loaded
    // machine between the decision and the read of its expiry.
    let policy = Policy::from_interval("create", 3, 200_000).unwrap();
    for algorithm in ALGORITHMS {
        let limiter = connect(
            &Target::Standalone(url.clone()),
            algorithm,
            Duration::from_secs(2),
        )
        .await;
        let identity = unique("e");
        let key = limiter.key(&identity, &policy);
        let (decision, audit) = limiter
            .acquire_audited(&identity, &policy, 2)
            .await
            .unwrap();
        assert!(decision.allowed);
        assert_eq!(decision.reset_after_us, 400_000);
        let (_, expiry_ms) = snapshot(&mut connection, &key).await;
        // Not a microsecond early (a missing key is a full bucket), at most 1 ms late.
        let full_us = audit.now_us + decision.reset_after_us;
        let expiry_us = u64::try_from(expiry_ms)
            .unwrap_or_else(|_| panic!("{algorithm:?}: PEXPIRETIME answered {expiry_ms}"))
            * 1000;
        assert!(
            (full_us..full_us + 1000).contains(&expiry_us),
            "{algorithm:?}: {expiry_us} for {full_us}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let exists: bool = redis::cmd("EXISTS")
            .arg(&key)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert!(!exists, "{algorithm:?}: the key outlived its full bucket");
        let decision = limiter.acquire(&identity, &policy, 3).await.unwrap();
        assert!(decision.allowed && decision.remaining == 0);
    }
}

/// The naive script that benchmarks compare ours against still runs, and does cost more.
#[tokio::test]
async fn the_naive_benchmark_fixture_runs_and_takes_more_memory() {
    let script = redis::Script::new(include_str!(
        "../../../shortener-bench/fixtures/naive_token_bucket.lua"
    ));
    let mut connection = raw(server().url()).await;
    let key = format!("rl:{{{}}}:create", unique("n"));
    let now_secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    for (call, expected) in [1, 1, 1, 0].into_iter().enumerate() {
        let (allowed, _left): (i64, i64) = script
            .key(&key)
            .arg(3)
            .arg(0.001)
            .arg(now_secs + call as f64 * 0.01)
            .arg(1)
            .invoke_async(&mut connection)
            .await
            .unwrap();
        assert_eq!(allowed, expected, "call {call}");
    }
    let bytes: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&key)
        .query_async(&mut connection)
        .await
        .unwrap();
    eprintln!("naive token bucket: MEMORY USAGE {key} = {bytes} bytes");
    assert!(bytes > 72, "{bytes}");
}
