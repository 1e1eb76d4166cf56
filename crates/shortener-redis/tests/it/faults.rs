//! Redis misbehaving: scripts flushed mid-load, a server hung (SIGSTOP), killed and
//! restarted, and servers that cannot be used at all.

use std::sync::Arc;
use std::time::{Duration, Instant};

use shortener_core::{Algorithm, LimiterError, Policy, RateLimiter};
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_testkit::RedisServer;

use crate::history::check_history;
use crate::support::{Target, cluster, connect, hammer, unique};

/// What this catches is a hang (a call without a deadline waits for seconds); how close to
/// the timeout calls end is a figure of the machine, for the benchmarks, not a test.
const MARGIN: Duration = Duration::from_millis(900);

/// `SCRIPT FLUSH` on every node, `times` times, while `load` runs.
async fn flush_scripts_during(urls: Vec<String>, times: usize) -> usize {
    let mut connections = Vec::new();
    for url in urls {
        let client = redis::Client::open(url).unwrap();
        connections.push(client.get_multiplexed_async_connection().await.unwrap());
    }
    for _ in 0..times {
        tokio::time::sleep(Duration::from_millis(5)).await;
        for connection in &mut connections {
            let _: () = redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query_async(connection)
                .await
                .unwrap();
        }
    }
    times
}

async fn flush_mid_load(target: Target, urls: Vec<String>) {
    let policy = Policy::new("create", 50, 500.0).unwrap();
    for algorithm in [Algorithm::TokenBucket, Algorithm::Gcra] {
        let mut limiters = Vec::new();
        for _ in 0..3 {
            limiters.push(Arc::new(
                connect(&target, algorithm, Duration::from_secs(2)).await,
            ));
        }
        let identities: Vec<String> = (0..3).map(|_| unique("f")).collect();
        let (records, flushes) = tokio::join!(
            hammer(&limiters, 8, 3000, &identities, &policy),
            flush_scripts_during(urls.clone(), 10),
        );
        assert_eq!(flushes, 10);
        // Every call succeeded (hammer panics otherwise) and decided as the model does.
        check_history(&records, identities.len(), algorithm, &policy);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_mid_load_changes_no_decision_on_one_redis() {
    let server = RedisServer::start_private();
    let url = server.url().to_owned();
    flush_mid_load(Target::Standalone(url.clone()), vec![url.clone()]).await;
    // Calls did meet flushed scripts: more NOSCRIPT replies than the two connect-time
    // probes (one per algorithm) can explain.
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let stats: String = redis::cmd("INFO")
        .arg("errorstats")
        .query_async(&mut connection)
        .await
        .unwrap();
    let noscripts = stats
        .lines()
        .find_map(|line| line.strip_prefix("errorstat_NOSCRIPT:count="))
        .and_then(|count| count.trim().parse::<u64>().ok())
        .unwrap_or(0);
    assert!(noscripts > 2, "{noscripts} NOSCRIPT replies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_mid_load_changes_no_decision_on_a_cluster() {
    let urls = cluster().urls();
    flush_mid_load(Target::Cluster(urls.clone()), urls).await;
}

/// Every call fails with a transient error (`Unavailable` when hung, `Unreachable` when
/// dead), each within the timeout plus the margin.
async fn fails_promptly(limiter: &RedisRateLimiter, policy: &Policy, timeout: Duration) {
    for _ in 0..5 {
        let started = Instant::now();
        let result = limiter.acquire("203.0.113.9", policy, 1).await;
        let waited = started.elapsed();
        assert!(
            result.as_ref().is_err_and(LimiterError::is_transient),
            "{result:?}"
        );
        assert!(waited <= timeout + MARGIN, "a call waited {waited:?}");
    }
    // Decisions on one bucket while a call hangs queue behind it without a timer of their
    // own (the call they wait on, and the batch they leave in, carry their deadline): each
    // is still answered within the timeout of its own start, and none stays queued.
    let queued = (0..16u32).map(|i| async move {
        tokio::time::sleep(timeout * i / 6).await;
        let started = Instant::now();
        let result = limiter.acquire("203.0.113.9", policy, 1).await;
        (result, started.elapsed())
    });
    for (result, waited) in futures_util::future::join_all(queued).await {
        assert!(
            result.as_ref().is_err_and(LimiterError::is_transient),
            "{result:?}"
        );
        assert!(
            waited <= timeout + MARGIN,
            "a queued call waited {waited:?}"
        );
    }
    assert_eq!(limiter.calls_in_flight(), 0);
    let started = Instant::now();
    assert!(
        limiter
            .health()
            .await
            .as_ref()
            .is_err_and(LimiterError::is_transient)
    );
    assert!(started.elapsed() <= timeout + MARGIN);
}

/// Calls succeed again within a second.
async fn recovers(limiter: &RedisRateLimiter, policy: &Policy) {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        match limiter.acquire("203.0.113.9", policy, 1).await {
            Ok(decision) => {
                assert!(decision.allowed);
                break;
            }
            Err(error) => assert!(Instant::now() < deadline, "no recovery: {error}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    limiter.health().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_or_dead_redis_fails_within_the_timeout_and_recovers() {
    let mut server = RedisServer::start_private();
    let timeout = Duration::from_millis(100);
    let policy = Policy::new("create", 1000, 1000.0).unwrap();
    let target = Target::Standalone(server.url().to_owned());
    let limiter = connect(&target, Algorithm::Gcra, timeout).await;
    recovers(&limiter, &policy).await;

    server.pause();
    fails_promptly(&limiter, &policy, timeout).await;
    server.resume();
    recovers(&limiter, &policy).await;

    server.kill();
    fails_promptly(&limiter, &policy, timeout).await;
    let started = Instant::now();
    let connected = RedisRateLimiter::connect(RedisConfig {
        url: server.url().into(),
        timeout,
        ..RedisConfig::default()
    })
    .await;
    assert!(
        matches!(connected, Err(LimiterError::Unreachable(_))),
        "a refused connection: {connected:?}"
    );
    assert!(started.elapsed() <= timeout + MARGIN);

    server.restart();
    recovers(&limiter, &policy).await;
}

#[tokio::test]
async fn connect_refuses_what_cannot_work() {
    let bad = [
        RedisConfig {
            url: "http://127.0.0.1:1".into(),
            ..RedisConfig::default()
        },
        RedisConfig {
            pool_size: 0,
            ..RedisConfig::default()
        },
        RedisConfig {
            timeout: Duration::ZERO,
            ..RedisConfig::default()
        },
    ];
    for config in bad {
        let result = RedisRateLimiter::connect(config).await;
        assert!(
            matches!(result, Err(LimiterError::Unexpected(_))),
            "{result:?}"
        );
    }
}
