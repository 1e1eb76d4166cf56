//! Three real nodes on the default `on_error = "local"` while Redis hiccups (SIGSTOP
//! 150 ms every 600 ms), is killed for 3 s, or is cut off from one node: admissions stay
//! within the stated bounds. Redis errors other than outages are in `redis_errors`.
//!
//! Bounds are checked by counting 201s against the client's own window (every decision
//! happens inside it); nothing here asserts how fast the machine is.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::RedisServer;
use shortener_tests::config::OnErrorConfig;
use shortener_tests::{Api, InProcessApp, TempDir, TestConfig, client};

use crate::support::{REDIS_NODE_CAPACITY, REDIS_NODE_RATE, redis_node};

const CAPACITY: u64 = REDIS_NODE_CAPACITY;
const RATE: f64 = REDIS_NODE_RATE;
const NODES: usize = 3;
const CLIENTS: usize = 24;
const RUN: Duration = Duration::from_secs(10);

fn start_nodes(config: &TestConfig) -> (Vec<TempDir>, Vec<InProcessApp>) {
    let dirs: Vec<TempDir> = (0..NODES).map(|_| TempDir::new()).collect();
    let nodes = dirs
        .iter()
        .map(|dir| InProcessApp::start(dir.path(), config))
        .collect();
    (dirs, nodes)
}

#[derive(Debug, Default)]
struct Outcome {
    admitted: u64,
    refused: u64,
    unavailable: u64,
    /// Admitted, by node.
    by_node: Vec<u64>,
    window: Duration,
}

impl Outcome {
    fn ratio(&self, bound: f64) -> f64 {
        self.admitted as f64 / bound
    }
}

/// `CLIENTS` tasks send creates round-robin over `nodes` for `run`; every request comes
/// from 127.0.0.1, so every node limits the same key. The answers' bodies are not read.
async fn hammer(nodes: &[&InProcessApp], run: Duration) -> Outcome {
    let apis: Arc<Vec<Api>> = Arc::new(nodes.iter().map(|&node| Api::of(node)).collect());
    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|task| {
            let apis = apis.clone();
            tokio::spawn(async move {
                let mut outcome = Outcome {
                    by_node: vec![0; apis.len()],
                    ..Outcome::default()
                };
                let mut i = task;
                while started.elapsed() < run {
                    let node = i % apis.len();
                    i += 1;
                    let response = apis[node]
                        .request(Method::POST, "/links")
                        .json(&json!({"url": "https://example.com/"}))
                        .send()
                        .await
                        .unwrap();
                    outcome.window = started.elapsed();
                    match response.status() {
                        StatusCode::CREATED => {
                            outcome.admitted += 1;
                            outcome.by_node[node] += 1;
                        }
                        StatusCode::TOO_MANY_REQUESTS => outcome.refused += 1,
                        StatusCode::SERVICE_UNAVAILABLE => outcome.unavailable += 1,
                        other => panic!("unexpected status {other}"),
                    }
                }
                outcome
            })
        })
        .collect();
    let mut total = Outcome {
        by_node: vec![0; nodes.len()],
        ..Outcome::default()
    };
    for task in tasks {
        let outcome = task.await.unwrap();
        total.admitted += outcome.admitted;
        total.refused += outcome.refused;
        total.unavailable += outcome.unavailable;
        for (sum, node) in total.by_node.iter_mut().zip(&outcome.by_node) {
            *sum += node;
        }
        total.window = total.window.max(outcome.window);
    }
    total
}

/// The sum of a metric's samples in a node's `/metrics`.
pub(crate) async fn metric(node: &InProcessApp, name: &str) -> f64 {
    shortener_tests::metric(&node.base, name).await
}

async fn total_metric(nodes: &[InProcessApp], name: &str) -> f64 {
    let mut sum = 0.0;
    for node in nodes {
        sum += metric(node, name).await;
    }
    sum
}

/// Waits until every node counts `expected` live nodes from the heartbeat.
async fn wait_for_heartbeats(nodes: &[InProcessApp], expected: f64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    for node in nodes {
        while metric(node, "shortener_ratelimit_nodes").await != expected {
            assert!(
                Instant::now() < deadline,
                "{} never counted {expected} nodes",
                node.base
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

pub(crate) async fn readiness(node: &InProcessApp) -> (StatusCode, Value) {
    let response = client()
        .get(node.url("/readyz"))
        .header("x-api-key", crate::support::secret("ops"))
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

/// Pauses (SIGSTOP) the server for `pause` every `period` until `stop` is set; returns
/// how many pauses it made.
fn hiccup(redis: &Mutex<RedisServer>, pause: Duration, period: Duration, stop: &AtomicBool) -> u32 {
    let mut pauses = 0;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(period - pause);
        let redis = redis.lock().unwrap();
        redis.pause();
        std::thread::sleep(pause);
        redis.resume();
        pauses += 1;
    }
    pauses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hiccups_under_load_keep_the_bound_on_local_fallback() {
    let redis = Arc::new(Mutex::new(RedisServer::start_private()));
    let url = redis.lock().unwrap().url().to_owned();
    let (_dirs, nodes) = start_nodes(&redis_node(&url, OnErrorConfig::Local));
    // limiter.nodes is 1: the share of 1/3 comes from the heartbeat.
    wait_for_heartbeats(&nodes, 3.0).await;
    let stop = Arc::new(AtomicBool::new(false));
    let pauser = {
        let (redis, stop) = (redis.clone(), stop.clone());
        tokio::task::spawn_blocking(move || {
            hiccup(
                &redis,
                Duration::from_millis(150),
                Duration::from_millis(600),
                &stop,
            )
        })
    };
    let outcome = hammer(&nodes.iter().collect::<Vec<_>>(), RUN).await;
    stop.store(true, Ordering::SeqCst);
    let pauses = pauser.await.unwrap();
    let fallbacks = total_metric(&nodes, "shortener_ratelimit_fallback_decisions_total").await;
    let settled = total_metric(&nodes, "shortener_ratelimit_debt_settled_tokens_total").await;
    let bound = CAPACITY as f64 + RATE * outcome.window.as_secs_f64();
    eprintln!(
        "hiccups ({pauses} pauses): admitted {} (by node {:?}) refused {} in {:?}; \
         bound {bound:.1}, ratio {:.3}, over by {:.1}; {fallbacks} local decisions, \
         {settled} tokens of debt settled",
        outcome.admitted,
        outcome.by_node,
        outcome.refused,
        outcome.window,
        outcome.ratio(bound),
        (outcome.admitted as f64 - bound).max(0.0),
    );
    assert!(pauses >= 5, "Redis was paused {pauses} times");
    assert!(fallbacks > 0.0, "the pauses never reached the fallback");
    assert_eq!(outcome.unavailable, 0, "local never answers 503");
    assert!(outcome.refused > 0, "demand must exceed the quota");
    assert!(
        outcome.admitted as f64 <= bound,
        "over-admission: {} > {bound:.1}",
        outcome.admitted
    );
    assert!(
        outcome.admitted as f64 >= bound / 2.0,
        "the limiter starved: {} of {bound:.1}",
        outcome.admitted
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_killed_for_three_seconds_under_load_keeps_the_bound() {
    let mut redis = RedisServer::start_private();
    let (_dirs, nodes) = start_nodes(&redis_node(redis.url(), OnErrorConfig::Local));
    wait_for_heartbeats(&nodes, 3.0).await;
    let killer = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_secs(3));
        redis.kill();
        std::thread::sleep(Duration::from_secs(3));
        // A new, empty server: the bucket comes back full, and the debts the nodes ran
        // up meanwhile are taken from it.
        redis.restart();
        redis
    });
    let outcome = hammer(&nodes.iter().collect::<Vec<_>>(), RUN).await;
    let _redis = killer.await.unwrap();
    let fallbacks = total_metric(&nodes, "shortener_ratelimit_fallback_decisions_total").await;
    let settled = total_metric(&nodes, "shortener_ratelimit_debt_settled_tokens_total").await;
    let unsettled = total_metric(&nodes, "shortener_ratelimit_debt_unsettled_tokens").await;
    let errors = total_metric(&nodes, "shortener_ratelimit_backend_errors_total").await;
    let bound = CAPACITY as f64 + RATE * outcome.window.as_secs_f64();
    eprintln!(
        "killed for 3 s: admitted {} (by node {:?}) refused {} in {:?}; bound {bound:.1}, \
         ratio {:.3}, over by {:.1}; {fallbacks} local decisions, {settled} tokens settled, \
         {unsettled} unsettled, {errors} errors",
        outcome.admitted,
        outcome.by_node,
        outcome.refused,
        outcome.window,
        outcome.ratio(bound),
        (outcome.admitted as f64 - bound).max(0.0),
    );
    assert!(fallbacks > 0.0);
    assert!(
        settled > 0.0,
        "local admissions were charged to the new server"
    );
    assert_eq!(outcome.unavailable, 0);
    assert!(
        outcome.admitted as f64 <= bound,
        "over-admission: {} > {bound:.1}",
        outcome.admitted
    );
    assert!(outcome.admitted as f64 >= bound / 2.0, "starved");
}

/// Accepts connections on a loopback port and drops them at once: a Redis that one
/// node reaches and cannot use, while the others use the real one.
fn dropping_port() -> (u16, Arc<AtomicBool>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::spawn(move || {
        while !stopped.load(Ordering::SeqCst) {
            match listener.accept() {
                Ok((stream, _)) => drop(stream),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (port, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_node_cut_off_keeps_the_partial_bound() {
    let redis = RedisServer::start_private();
    let (port, stop) = dropping_port();
    // Every node is told there are 3 nodes: the cut-off one never hears the heartbeat.
    let three = |c: &mut shortener_tests::config::Config| c.limiter.nodes = 3;
    let good = redis_node(redis.url(), OnErrorConfig::Local).with(three);
    let cut = redis_node(&format!("redis://127.0.0.1:{port}"), OnErrorConfig::Local).with(three);
    let dirs: Vec<TempDir> = (0..NODES).map(|_| TempDir::new()).collect();
    let nodes = [
        InProcessApp::start(dirs[0].path(), &good),
        InProcessApp::start(dirs[1].path(), &good),
        InProcessApp::start(dirs[2].path(), &cut),
    ];
    let (status, body) = readiness(&nodes[2]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["limiter"], "degraded", "{body}");
    let outcome = hammer(&nodes.iter().collect::<Vec<_>>(), RUN).await;
    stop.store(true, Ordering::SeqCst);
    // k = 1 of N = 3 nodes decide alone: capacity + rate * T * (1 + k / N).
    let seconds = outcome.window.as_secs_f64();
    let bound = CAPACITY as f64 + RATE * seconds * (1.0 + 1.0 / 3.0);
    eprintln!(
        "partition: admitted {} (by node {:?}) refused {} in {:?}; bound {bound:.1}, \
         ratio {:.3}, over by {:.1}",
        outcome.admitted,
        outcome.by_node,
        outcome.refused,
        outcome.window,
        outcome.ratio(bound),
        (outcome.admitted as f64 - bound).max(0.0),
    );
    assert_eq!(outcome.unavailable, 0);
    assert!(outcome.by_node[2] > 0, "the cut-off node limits locally");
    // Its share alone: capacity / 3 (rounded down) + rate / 3 * T, from an empty bucket.
    assert!(outcome.by_node[2] as f64 <= (CAPACITY / 3) as f64 + RATE / 3.0 * seconds);
    assert!(
        outcome.admitted as f64 <= bound,
        "over-admission: {} > {bound:.1}",
        outcome.admitted
    );
}
