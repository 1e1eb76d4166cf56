//! A real node in front of a private Redis that is hung (SIGSTOP), killed and restarted:
//! `on_error` decides, no request waits much longer than `timeout_ms`, and the node goes
//! back to Redis within a second of it answering again.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::json;
use shortener_tests::config::OnErrorConfig;
use shortener_tests::{Api, InProcessApp, RedisServer, TestConfig, spawn_in_process};

const TIMEOUT_MS: u64 = 50;
/// A hang is what this catches: without the deadline a request would wait for seconds
/// (the client's own timeout). How close to `timeout_ms` the answers come is a figure of
/// the machine, measured by `cargo xtask bench`, not asserted here.
const MARGIN_MS: u64 = 950;

fn config(redis_url: &str, on_error: OnErrorConfig) -> TestConfig {
    TestConfig::default()
        .in_memory()
        .redis_limiter(redis_url, on_error)
        .with(|c| c.limiter.timeout_ms = TIMEOUT_MS)
        .policy("create", 5, 0.01)
}

/// Sends `count` creates one after another; returns their statuses and the longest wait.
async fn creates(app: &InProcessApp, count: usize) -> (Vec<StatusCode>, Duration) {
    let api = Api::of(app);
    let mut statuses = Vec::new();
    let mut longest = Duration::ZERO;
    for _ in 0..count {
        let started = Instant::now();
        // Timed to the answer's head: sent here rather than by `Api::create`.
        let response = api
            .request(Method::POST, "/links")
            .json(&json!({"url": "https://example.com/"}))
            .send()
            .await
            .unwrap();
        longest = longest.max(started.elapsed());
        if matches!(
            response.status(),
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
        ) {
            assert!(
                response.headers().contains_key("retry-after"),
                "{}",
                response.status()
            );
        }
        statuses.push(response.status());
    }
    (statuses, longest)
}

fn assert_bounded(longest: Duration, label: &str) {
    eprintln!("{label}: longest wait {longest:?}");
    assert!(
        longest <= Duration::from_millis(TIMEOUT_MS + MARGIN_MS),
        "{label}: waited {longest:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_closed_refuses_while_redis_is_down_and_recovers_within_a_second() {
    let mut redis = RedisServer::start_private();
    let app = spawn_in_process(&config(redis.url(), OnErrorConfig::FailClosed));
    let (statuses, _) = creates(&app, 2).await;
    assert_eq!(statuses, vec![StatusCode::CREATED; 2]);

    redis.pause();
    let (statuses, longest) = creates(&app, 20).await;
    redis.resume();
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::SERVICE_UNAVAILABLE),
        "{statuses:?}"
    );
    assert_bounded(longest, "fail_closed, redis hung");

    redis.kill();
    let (statuses, longest) = creates(&app, 20).await;
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::SERVICE_UNAVAILABLE),
        "{statuses:?}"
    );
    assert_bounded(longest, "fail_closed, redis killed");

    redis.restart();
    let back = Instant::now();
    let api = Api::of(&app);
    loop {
        let answer = api.create(&json!({"url": "https://example.com/"})).await;
        if answer.status == StatusCode::CREATED {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_millis(1_500),
            "still refusing {:?} after the restart",
            back.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("back on redis {:?} after the restart", back.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_open_admits_while_redis_is_down() {
    let mut redis = RedisServer::start_private();
    let app = spawn_in_process(&config(redis.url(), OnErrorConfig::FailOpen));
    redis.kill();
    let (statuses, longest) = creates(&app, 20).await;
    assert!(
        statuses.iter().all(|s| *s == StatusCode::CREATED),
        "{statuses:?}"
    );
    assert_bounded(longest, "fail_open, redis killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_limits_with_a_bucket_that_starts_empty_while_redis_is_down() {
    let redis = RedisServer::start_private();
    let app = spawn_in_process(&config(redis.url(), OnErrorConfig::Local));
    let (statuses, _) = creates(&app, 2).await;
    assert_eq!(statuses, vec![StatusCode::CREATED; 2], "from Redis");
    redis.pause();
    let (statuses, longest) = creates(&app, 12).await;
    redis.resume();
    // The local bucket holds only what refilled since Redis failed (0.01 a second): a
    // full one would add its whole capacity to what Redis admits.
    assert!(
        statuses.iter().all(|s| *s == StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    assert_bounded(longest, "local, redis hung");
}
