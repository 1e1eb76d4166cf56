//! Three limiter instances (separate pools, as separate app nodes have) with 16 tasks each
//! hammer three keys: every key's history is one total order that the core model replays
//! exactly, never over-admits, and admits at least 98% of the bound.

use std::sync::Arc;
use std::time::Duration;

use shortener_core::{Algorithm, Policy};

use crate::history::check_history;
use crate::support::{Target, cluster, connect, hammer, server, unique};

const NODES: usize = 3;
const TASKS: usize = 16;
const CALLS: usize = 6000;
const KEYS: usize = 3;

async fn exact_across_nodes(target: Target, algorithm: Algorithm) {
    // 50 of burst at 500/s: demand stays far above it even on a busy machine, and only a
    // stall of 100 ms (an empty bucket filling up) would waste any of the quota.
    let policy = Policy::new("create", 50, 500.0).unwrap();
    let mut limiters = Vec::new();
    for _ in 0..NODES {
        let limiter = connect(&target, algorithm, Duration::from_secs(2)).await;
        limiters.push(Arc::new(limiter));
    }
    let identities: Vec<String> = (0..KEYS).map(|_| unique("c")).collect();
    let started = std::time::Instant::now();
    let records = hammer(&limiters, TASKS, CALLS, &identities, &policy).await;
    let elapsed = started.elapsed();
    assert_eq!(records.len(), CALLS);
    let refused = records.iter().filter(|r| !r.decision.allowed).count();
    assert!(
        refused > CALLS / 2,
        "demand did not exceed the quota: {refused} refused"
    );
    let lowest = check_history(&records, KEYS, algorithm, &policy);
    let percent = lowest * 100.0;
    eprintln!("{target:?} {algorithm:?}: {CALLS} calls in {elapsed:?}, admission {percent:.2}%");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_bucket_is_exact_across_nodes_on_one_redis() {
    let target = Target::Standalone(server().url().to_owned());
    exact_across_nodes(target, Algorithm::TokenBucket).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcra_is_exact_across_nodes_on_one_redis() {
    let target = Target::Standalone(server().url().to_owned());
    exact_across_nodes(target, Algorithm::Gcra).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_bucket_is_exact_across_nodes_on_a_cluster() {
    let target = Target::Cluster(cluster().urls());
    exact_across_nodes(target, Algorithm::TokenBucket).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcra_is_exact_across_nodes_on_a_cluster() {
    let target = Target::Cluster(cluster().urls());
    exact_across_nodes(target, Algorithm::Gcra).await;
}
