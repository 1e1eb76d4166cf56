//! Shared servers, limiter set-up, and load from many tasks at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use shortener_core::{Algorithm, Decision, Policy};
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_testkit::{RedisCluster, RedisServer};

/// One standalone server for the tests that do not disturb it (a static is never dropped;
/// the testing module's watchdog kills the process when the test binary exits).
pub fn server() -> &'static RedisServer {
    static SERVER: OnceLock<RedisServer> = OnceLock::new();
    SERVER.get_or_init(RedisServer::start)
}

/// One three-master cluster for the tests that do not disturb it.
pub fn cluster() -> &'static RedisCluster {
    static CLUSTER: OnceLock<RedisCluster> = OnceLock::new();
    CLUSTER.get_or_init(RedisCluster::start)
}

/// An identity no other test (or earlier run on a shared server) uses.
pub fn unique(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{tag}{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Where a limiter connects: one server or a cluster's nodes.
#[derive(Debug, Clone)]
pub enum Target {
    Standalone(String),
    Cluster(Vec<String>),
}

pub async fn connect(target: &Target, algorithm: Algorithm, timeout: Duration) -> RedisRateLimiter {
    let (url, cluster_nodes) = match target {
        Target::Standalone(url) => (url.clone(), Vec::new()),
        Target::Cluster(nodes) => (String::new(), nodes.clone()),
    };
    RedisRateLimiter::connect(RedisConfig {
        url: url.into(),
        cluster_nodes: cluster_nodes.into_iter().map(Into::into).collect(),
        timeout,
        key_prefix: "rl:".to_owned(),
        algorithm,
        pool_size: 4,
        ..RedisConfig::default()
    })
    .await
    .expect("connect to the test redis")
}

/// One decision as the audit mode reports it.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    pub key: usize,
    pub cost: u64,
    pub now_us: u64,
    pub version: u64,
    pub decision: Decision,
}

/// `calls` audited decisions spread over `identities`, from `tasks` tasks per limiter, all
/// at once; costs alternate between 1 and 2.
pub async fn hammer(
    limiters: &[Arc<RedisRateLimiter>],
    tasks: usize,
    calls: usize,
    identities: &[String],
    policy: &Policy,
) -> Vec<Record> {
    let next = Arc::new(AtomicUsize::new(0));
    let identities = Arc::new(identities.to_vec());
    let mut handles = Vec::new();
    for limiter in limiters {
        for _ in 0..tasks {
            let (limiter, next, identities) = (limiter.clone(), next.clone(), identities.clone());
            let policy = policy.clone();
            handles.push(tokio::spawn(async move {
                let mut records = Vec::new();
                loop {
                    let call = next.fetch_add(1, Ordering::Relaxed);
                    if call >= calls {
                        return records;
                    }
                    let key = call % identities.len();
                    let cost = 1 + (call / identities.len()) as u64 % 2;
                    let (decision, audit) = limiter
                        .acquire_audited(&identities[key], &policy, cost)
                        .await
                        .unwrap_or_else(|error| panic!("call {call} failed: {error}"));
                    records.push(Record {
                        key,
                        cost,
                        now_us: audit.now_us,
                        version: audit.version,
                        decision,
                    });
                }
            }));
        }
    }
    let mut records = Vec::new();
    for handle in handles {
        records.extend(handle.await.expect("hammer task"));
    }
    records
}
