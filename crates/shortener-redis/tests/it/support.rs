//! Shared servers, limiter set-up, and the history checks of the concurrency tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use shortener_core::limiter::{gcra, token_bucket};
use shortener_core::{Algorithm, Decision, Policy};
use shortener_redis::testing::{RedisCluster, RedisServer};
use shortener_redis::{RedisConfig, RedisRateLimiter};

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
        url,
        cluster_nodes,
        timeout,
        key_prefix: "rl:".to_owned(),
        algorithm,
        pool_size: 4,
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

/// The model's state for either algorithm.
#[derive(Debug, Clone, Copy)]
enum State {
    Bucket(Option<token_bucket::Bucket>),
    Tat(Option<u64>),
}

impl State {
    fn new(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::TokenBucket => Self::Bucket(None),
            Algorithm::Gcra => Self::Tat(None),
        }
    }

    /// The model's decision, and the state it writes (if any).
    fn step(self, policy: &Policy, now_us: u64, cost: u64) -> (Decision, Option<Self>) {
        match self {
            Self::Bucket(bucket) => {
                let (decision, next) = token_bucket::step(bucket, policy, now_us, cost);
                (decision, next.map(|next| Self::Bucket(Some(next))))
            }
            Self::Tat(tat) => {
                let (decision, next) = gcra::step(tat, policy, now_us, cost);
                (decision, next.map(|next| Self::Tat(Some(next))))
            }
        }
    }
}

/// Checks one key's history and returns (admitted cost, the bound over its span).
///
/// Every admitted decision wrote the next version, so their versions must be exactly
/// 1..=n, a total order. Replaying them in that order through the model, each at its
/// recorded time, must give the recorded decisions; and a refused decision, which read
/// state `v` and wrote nothing, must be what the model decides from state `v` at its time.
/// Then, for every pair of admitted times t1 <= t2, the cost admitted in [t1, t2] is at
/// most the burst plus the refill over t2 - t1.
pub fn check_key(
    records: &[Record],
    algorithm: Algorithm,
    policy: &Policy,
) -> Result<(u64, u64), String> {
    let mut admitted: Vec<&Record> = records.iter().filter(|r| r.decision.allowed).collect();
    admitted.sort_by_key(|r| r.version);
    for (index, record) in admitted.iter().enumerate() {
        if record.version != index as u64 + 1 {
            return Err(format!(
                "versions of admitted decisions are not 1..=n: {record:?} at {index}"
            ));
        }
    }
    let mut states = vec![State::new(algorithm)];
    for record in &admitted {
        let state = *states.last().unwrap();
        let (decision, next) = state.step(policy, record.now_us, record.cost);
        if decision != record.decision {
            return Err(format!("replay of {record:?} gives {decision:?}"));
        }
        states.push(next.ok_or_else(|| format!("the model wrote nothing for {record:?}"))?);
    }
    for record in records.iter().filter(|r| !r.decision.allowed) {
        let state = states
            .get(record.version as usize)
            .ok_or_else(|| format!("refused {record:?} read a version never written"))?;
        let (decision, next) = state.step(policy, record.now_us, record.cost);
        if decision != record.decision || next.is_some() {
            return Err(format!("replay of refused {record:?} gives {decision:?}"));
        }
    }

    admitted.sort_by_key(|r| (r.now_us, r.version));
    let mut prefix = vec![0u64];
    for record in &admitted {
        prefix.push(prefix.last().unwrap() + record.cost);
    }
    for (i, first) in admitted.iter().enumerate() {
        // From the first admission at t1 (ties included) to the last one at each t2.
        let start = admitted.partition_point(|r| r.now_us < first.now_us);
        for last in &admitted[i..] {
            let end = admitted.partition_point(|r| r.now_us <= last.now_us);
            let cost = prefix[end] - prefix[start];
            let elapsed = last.now_us - first.now_us;
            if cost * policy.interval_us() > policy.burst_us() + elapsed {
                return Err(format!(
                    "over-admission: cost {cost} in [{}, {}]",
                    first.now_us, last.now_us
                ));
            }
        }
    }

    let first = records.iter().map(|r| r.now_us).min().unwrap_or(0);
    let last = records.iter().map(|r| r.now_us).max().unwrap_or(0);
    let bound = policy.capacity() + (last - first) / policy.interval_us();
    Ok((*prefix.last().unwrap(), bound))
}

/// [`check_key`] for every key, and admission within 2% of the bound while demand exceeds
/// it. Returns the lowest admitted / bound ratio.
pub fn check_history(
    records: &[Record],
    keys: usize,
    algorithm: Algorithm,
    policy: &Policy,
) -> f64 {
    let mut lowest = f64::INFINITY;
    for key in 0..keys {
        let history: Vec<Record> = records.iter().filter(|r| r.key == key).copied().collect();
        let (admitted, bound) = check_key(&history, algorithm, policy)
            .unwrap_or_else(|error| panic!("{algorithm:?}, key {key}: {error}"));
        let ratio = admitted as f64 / bound as f64;
        assert!(
            ratio >= 0.98,
            "{algorithm:?}, key {key}: admitted {admitted} of a bound of {bound}"
        );
        lowest = lowest.min(ratio);
    }
    lowest
}
