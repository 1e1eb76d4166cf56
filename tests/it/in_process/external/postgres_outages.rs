//! Three real `shortener` nodes on one PostgreSQL database whose sessions are killed
//! under load: creates answer 503 (with `Retry-After`), never 500, no acknowledged link is
//! lost, and the nodes recover.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{Api, TestDatabase, client};

use crate::in_process::external::postgres_nodes::{NODES, SLACK, code_of, node_dirs, start_nodes};
use crate::support::postgres_node;

/// What the load of [`killed_sessions_give_503_never_500_and_the_nodes_recover`] saw.
#[derive(Debug, Default)]
struct Load {
    /// `(node, code, url)` of every 201.
    created: Vec<(usize, String, String)>,
    unavailable: usize,
    /// Anything but 201 or 503 with `Retry-After`: status and body.
    unexpected: Vec<String>,
}

/// Sends creates round-robin over the nodes until `stop`.
async fn create_until(apis: Vec<Api>, worker: usize, stop: Arc<AtomicBool>) -> Load {
    let mut load = Load::default();
    let mut i = worker;
    while !stop.load(Ordering::Relaxed) {
        let node = i % apis.len();
        let url = format!("https://example.com/{worker}/{i}");
        i += 1;
        let answer = apis[node].create(&json!({"url": url})).await;
        let retry_after = answer.header("retry-after").parse::<u64>().ok();
        let (status, body) = (answer.status, answer.body);
        match status {
            StatusCode::CREATED => load.created.push((node, code_of(&body), url)),
            StatusCode::SERVICE_UNAVAILABLE if retry_after.is_some_and(|s| s >= 1) => {
                load.unavailable += 1;
            }
            other => load
                .unexpected
                .push(format!("{other} (retry-after {retry_after:?}) {body}")),
        }
    }
    load
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_sessions_give_503_never_500_and_the_nodes_recover() {
    let database = Arc::new(TestDatabase::create());
    let dirs = node_dirs();
    let nodes = start_nodes(&dirs, &postgres_node(database.url()));
    let http = client();
    let apis: Vec<Api> = nodes.iter().map(Api::of).collect();

    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..12)
        .map(|worker| tokio::spawn(create_until(apis.clone(), worker, stop.clone())))
        .collect();
    // Under load first, so that every pool holds sessions to kill.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killer = {
        let database = database.clone();
        tokio::task::spawn_blocking(move || {
            database.terminate_sessions_for(Duration::from_millis(1500), Duration::from_millis(20))
        })
    };
    let (terminated, rounds) = killer.await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut load = Load::default();
    for worker in workers {
        let part = worker.await.unwrap();
        load.created.extend(part.created);
        load.unavailable += part.unavailable;
        load.unexpected.extend(part.unexpected);
    }
    eprintln!(
        "{terminated} sessions terminated in {rounds} rounds; {} creates 201, {} 503",
        load.created.len(),
        load.unavailable
    );
    assert!(
        terminated > 0,
        "the test killed no session: it proves nothing"
    );
    assert!(
        load.unexpected.is_empty(),
        "not 201 nor 503 + Retry-After: {:?}",
        load.unexpected
    );

    // Each node recovers on its own: creates succeed again and it reports ready.
    for (node, api) in nodes.iter().zip(&apis) {
        let started = Instant::now();
        loop {
            let answer = api
                .create(&json!({"url": "https://example.com/after"}))
                .await;
            if answer.status == StatusCode::CREATED {
                break;
            }
            assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
            assert!(started.elapsed() < SLACK, "{} does not recover", node.base);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let ready = http.get(node.url("/readyz")).send().await.unwrap();
        assert_eq!(ready.status(), StatusCode::OK, "{}", node.base);
    }

    // Every acknowledged link resolves, read on another node than the one that made it.
    let created = Arc::new(load.created);
    let checkers: Vec<_> = (0..8)
        .map(|checker| {
            let (http, created) = (http.clone(), created.clone());
            let bases: Vec<String> = nodes.iter().map(|node| node.base.clone()).collect();
            tokio::spawn(async move {
                for (node, code, url) in created.iter().skip(checker).step_by(8) {
                    let base = &bases[(node + 1) % NODES];
                    let response = http.get(format!("{base}/{code}")).send().await.unwrap();
                    assert_eq!(
                        response.status(),
                        StatusCode::FOUND,
                        "acknowledged link {code}"
                    );
                    assert_eq!(response.headers()["location"], url.as_str());
                }
            })
        })
        .collect();
    for checker in checkers {
        checker.await.unwrap();
    }
}
