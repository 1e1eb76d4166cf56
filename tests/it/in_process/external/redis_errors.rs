//! Redis errors other than outages, on real nodes: error replies (OOM) follow
//! `on_error`, a node starts while Redis is down and uses it once it answers, and a wrong
//! password is an error in `/readyz` that follows `on_error` too.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::config::OnErrorConfig;
use shortener_tests::{Api, InProcessApp, RedisServer, TempDir, check_config, spawn_in_process};

use crate::in_process::external::fallback_bound::{metric, readiness};
use crate::support::redis_node;

/// Fills a Redis limited to 1 MB with `noeviction` until it answers OOM.
async fn fill_until_oom(url: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("noeviction")
        .query_async(&mut connection)
        .await
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1mb")
        .query_async(&mut connection)
        .await
        .unwrap();
    let filler = "x".repeat(10_000);
    for i in 0..100_000 {
        let result: redis::RedisResult<()> = redis::cmd("SET")
            .arg(format!("filler:{i}"))
            .arg(&filler)
            .query_async(&mut connection)
            .await;
        if let Err(error) = result {
            assert_eq!(error.code(), Some("OOM"), "{error}");
            return;
        }
    }
    panic!("Redis never ran out of memory");
}

async fn creates(node: &InProcessApp, count: usize) -> Vec<StatusCode> {
    let api = Api::of(node);
    let mut statuses = Vec::new();
    for _ in 0..count {
        let answer = api.create(&json!({"url": "https://example.com/"})).await;
        if answer.status == StatusCode::SERVICE_UNAVAILABLE {
            assert!(answer.headers.contains_key("retry-after"));
        }
        statuses.push(answer.status);
    }
    statuses
}

fn count(statuses: &[StatusCode], status: StatusCode) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_out_of_memory_redis_follows_on_error() {
    for (on_error, setting) in [
        ("fail_open", OnErrorConfig::FailOpen),
        ("fail_closed", OnErrorConfig::FailClosed),
        ("local", OnErrorConfig::Local),
    ] {
        let redis = RedisServer::start_private();
        let config = redis_node(redis.url(), setting).policy("create", 100, 200.0);
        let node = spawn_in_process(&config);
        fill_until_oom(redis.url()).await;
        let statuses = creates(&node, 40).await;
        let (admitted, refused, unavailable) = (
            count(&statuses, StatusCode::CREATED),
            count(&statuses, StatusCode::TOO_MANY_REQUESTS),
            count(&statuses, StatusCode::SERVICE_UNAVAILABLE),
        );
        eprintln!("OOM, {on_error}: {admitted} admitted, {refused} refused, {unavailable} 503");
        match on_error {
            "fail_open" => assert_eq!(admitted, 40, "{statuses:?}"),
            "fail_closed" => assert_eq!(unavailable, 40, "{statuses:?}"),
            _ => {
                assert_eq!(unavailable, 0, "{statuses:?}");
                // A bucket of the whole quota (this node is alone) that starts empty
                // when Redis fails: it admits what refilled since, never the burst.
                assert!(admitted < 40, "{statuses:?}");
                assert!(metric(&node, "shortener_ratelimit_fallback_decisions_total").await > 0.0);
            }
        }
        let (status, body) = readiness(&node).await;
        let expected = if on_error == "fail_closed" {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        assert_eq!(status, expected, "{on_error}: {body}");
        assert!(
            body["limiter_error"]
                .as_str()
                .unwrap_or_default()
                .contains("OOM"),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_starts_while_redis_is_down_and_uses_it_once_it_answers() {
    let mut redis = RedisServer::start_private();
    redis.kill();
    let dir = TempDir::new();
    let config = redis_node(redis.url(), OnErrorConfig::Local);
    let node = InProcessApp::start(dir.path(), &config);
    let (status, body) = readiness(&node).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["limiter"], "degraded", "{body}");
    assert!(
        body["limiter_error"]
            .as_str()
            .unwrap()
            .contains("cannot reach redis"),
        "{body}"
    );
    // Limited locally: a bucket that starts empty refuses the first request.
    let statuses = creates(&node, 3).await;
    assert_eq!(count(&statuses, StatusCode::SERVICE_UNAVAILABLE), 0);
    assert_eq!(statuses[0], StatusCode::TOO_MANY_REQUESTS, "{statuses:?}");

    // fail_closed refuses to start without its Redis: exit code 2, one line.
    let fail_closed = redis_node(redis.url(), OnErrorConfig::FailClosed);
    let (code, stderr) = check_config(dir.path(), &fail_closed.file_text(dir.path()));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("fail_closed"), "{stderr}");

    redis.restart();
    let back = Instant::now();
    loop {
        let (status, body) = readiness(&node).await;
        if status == StatusCode::OK && body["limiter"] == "ok" {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(2),
            "still {body} {:?} after Redis started",
            back.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("back on redis {:?} after it started", back.elapsed());
    // A fresh server holds a full bucket: admitted by Redis, not by the empty local one.
    assert_eq!(creates(&node, 1).await, vec![StatusCode::CREATED]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_an_error_in_readyz_and_follows_on_error() {
    let redis = RedisServer::start_private();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("right-password")
        .query_async(&mut connection)
        .await
        .unwrap();
    let port = redis.port().unwrap();
    let url = format!("redis://:wrong-password@127.0.0.1:{port}");
    let node = spawn_in_process(&redis_node(&url, OnErrorConfig::FailOpen));
    let (status, body) = readiness(&node).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["limiter"], "degraded", "{body}");
    let error = body["limiter_error"].as_str().unwrap();
    assert!(error.contains("misconfigured"), "{body}");
    assert!(
        !error.contains("wrong-password"),
        "the password leaked: {body}"
    );
    assert_eq!(creates(&node, 5).await, vec![StatusCode::CREATED; 5]);
}
