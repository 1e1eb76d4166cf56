//! Several real `shortener` nodes sharing one Redis (standalone or a three-master
//! cluster): one client identity hammered through all of them stays within the bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{RedisCluster, RedisServer};
use shortener_tests::{TempDir, TestApp, client};

const CAPACITY: u64 = 20;
const RATE: f64 = 50.0;
const NODES: usize = 3;
const CLIENTS: usize = 48;
const RUN: Duration = Duration::from_secs(3);

fn node_config(redis: &str, algorithm: &str) -> String {
    format!(
        r#"
[server]
bind = "127.0.0.1:0"
[storage]
kind = "memory"
[limiter]
kind = "redis"
algorithm = "{algorithm}"
on_error = "fail_closed"
timeout_ms = 500
{redis}
[limiter.policies.create]
capacity = {CAPACITY}
refill_per_sec = {RATE}
"#
    )
}

struct Outcome {
    admitted: u64,
    refused: u64,
    window: Duration,
}

/// `CLIENTS` tasks send creates round-robin over the nodes for `RUN`; every request comes
/// from 127.0.0.1, so every node limits the same key.
async fn hammer(nodes: &[TestApp]) -> Outcome {
    let http = client();
    let urls: Arc<Vec<String>> = Arc::new(nodes.iter().map(|n| n.url("/api/v1/links")).collect());
    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|task| {
            let http = http.clone();
            let urls = urls.clone();
            tokio::spawn(async move {
                let (mut admitted, mut refused, mut last) = (0u64, 0u64, Duration::ZERO);
                let mut i = task;
                while started.elapsed() < RUN {
                    let response = http
                        .post(&urls[i % urls.len()])
                        .json(&json!({"url": "https://example.com/"}))
                        .send()
                        .await
                        .unwrap();
                    i += 1;
                    last = started.elapsed();
                    let headers = response.headers();
                    assert!(
                        headers.contains_key("ratelimit")
                            && headers.contains_key("ratelimit-policy")
                    );
                    match response.status() {
                        StatusCode::CREATED => admitted += 1,
                        StatusCode::TOO_MANY_REQUESTS => {
                            let retry: u64 =
                                headers["retry-after"].to_str().unwrap().parse().unwrap();
                            assert!(retry >= 1);
                            refused += 1;
                        }
                        other => panic!("unexpected status {other}"),
                    }
                }
                (admitted, refused, last)
            })
        })
        .collect();
    let mut outcome = Outcome {
        admitted: 0,
        refused: 0,
        window: Duration::ZERO,
    };
    for task in tasks {
        let (admitted, refused, last) = task.await.unwrap();
        outcome.admitted += admitted;
        outcome.refused += refused;
        outcome.window = outcome.window.max(last);
    }
    outcome
}

fn check(outcome: &Outcome, label: &str) {
    // Every decision happened inside the client's window, so Redis's window is no longer.
    let bound = CAPACITY as f64 + RATE * outcome.window.as_secs_f64();
    eprintln!(
        "{label}: admitted {} refused {} in {:?}: {:.1}% of the bound {bound:.1}",
        outcome.admitted,
        outcome.refused,
        outcome.window,
        outcome.admitted as f64 * 100.0 / bound
    );
    assert!(outcome.admitted as f64 <= bound, "{label}: over-admission");
    assert!(outcome.refused > 0, "{label}: demand must exceed the quota");
    // The exact 98% is proven with Redis timestamps in shortener-redis; here the client's
    // window also holds process start-up and request latency at both ends (0.2 s allowed).
    let lower = CAPACITY as f64 + RATE * (outcome.window.as_secs_f64() - 0.2);
    assert!(
        outcome.admitted as f64 >= lower,
        "{label}: under-admission, {} < {lower:.1}",
        outcome.admitted
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_on_one_redis_stay_within_the_bound() {
    let redis = RedisServer::start_private();
    for algorithm in ["token_bucket", "gcra"] {
        let dirs: Vec<TempDir> = (0..NODES).map(|_| TempDir::new()).collect();
        let config = node_config(
            &format!(
                "redis_url = \"{}\"\nkey_prefix = \"{algorithm}:\"",
                redis.url()
            ),
            algorithm,
        );
        let nodes: Vec<TestApp> = dirs
            .iter()
            .map(|d| TestApp::start(d.path(), &config))
            .collect();
        check(&hammer(&nodes).await, &format!("standalone {algorithm}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_on_a_redis_cluster_stay_within_the_bound() {
    let cluster = RedisCluster::start();
    let seeds = cluster
        .urls()
        .iter()
        .map(|u| format!("\"{u}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let dirs: Vec<TempDir> = (0..NODES).map(|_| TempDir::new()).collect();
    let config = node_config(&format!("redis_cluster = [{seeds}]"), "gcra");
    let nodes: Vec<TestApp> = dirs
        .iter()
        .map(|d| TestApp::start(d.path(), &config))
        .collect();
    check(&hammer(&nodes).await, "cluster gcra");
}
