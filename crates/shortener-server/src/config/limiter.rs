//! `[limiter]`: which limiter, how it reaches Redis and what it does when Redis fails, and
//! the policies by name and by tier.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use shortener_core::RedactedUrl;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimiterKind {
    Memory,
    Redis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlgorithmConfig {
    TokenBucket,
    Gcra,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnErrorConfig {
    FailOpen,
    FailClosed,
    Local,
    /// The rate limit service only: gRPC `UNAVAILABLE`, for Envoy's `failure_mode_deny`.
    Error,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimiterConfig {
    pub kind: LimiterKind,
    pub algorithm: AlgorithmConfig,
    pub on_error: OnErrorConfig,
    pub redis_url: RedactedUrl,
    pub redis_cluster: Vec<RedactedUrl>,
    /// Connections to a standalone Redis, each multiplexed (cluster connections are one
    /// per node). Concurrent decisions share a connection, and the calls waiting on one
    /// leave in one write: a few connections decide more per second than many.
    pub redis_pool_size: usize,
    /// PEM file of the CAs that `rediss://` servers must chain to; empty: the system's
    /// store (which `SSL_CERT_FILE` replaces).
    pub redis_ca_file: String,
    pub timeout_ms: u64,
    pub key_prefix: String,
    /// Consecutive Redis errors that open the circuit (a refused connection opens it at once).
    pub breaker_failures: u32,
    /// Nodes sharing the quota, until the node heartbeat in Redis says how many are alive:
    /// with `on_error = "local"` each node falls back to `capacity / nodes`.
    pub nodes: u64,
    /// Anonymous clients are limited per network of this many leading bits.
    pub ipv4_prefix: u8,
    pub ipv6_prefix: u8,
    /// Default policies by name (`create`, `redirect`); a missing one is not limited.
    pub policies: BTreeMap<String, PolicyConfig>,
    /// Policies per tier name, for requests with an API key of that tier.
    pub tiers: BTreeMap<String, BTreeMap<String, PolicyConfig>>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    pub capacity: u64,
    pub refill_per_sec: f64,
    /// On the Redis limiter: most tokens a node leases from the shared bucket in one call,
    /// to admit a busy client's next requests in memory; absent: every request is a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<u64>,
    /// How long leased tokens may be used after their call was sent (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<u64>,
}

impl PolicyConfig {
    /// A policy without a lease.
    pub fn new(capacity: u64, refill_per_sec: f64) -> Self {
        Self {
            capacity,
            refill_per_sec,
            lease: None,
            lease_ms: None,
        }
    }
}

impl Default for LimiterConfig {
    fn default() -> Self {
        Self {
            kind: LimiterKind::Memory,
            algorithm: AlgorithmConfig::TokenBucket,
            on_error: OnErrorConfig::Local,
            redis_url: RedactedUrl::new("redis://127.0.0.1:6379"),
            redis_cluster: Vec::new(),
            redis_pool_size: 4,
            redis_ca_file: String::new(),
            timeout_ms: 50,
            key_prefix: "rl:".into(),
            breaker_failures: 3,
            nodes: 1,
            ipv4_prefix: 32,
            ipv6_prefix: 64,
            policies: BTreeMap::from([
                ("create".into(), PolicyConfig::new(100, 1.6667)),
                ("lookup".into(), PolicyConfig::new(300, 5.0)),
                // Guesses at a link's password: 5 a minute per client and link, and 30
                // a minute per link over every client (six clients' worth).
                ("unlock".into(), PolicyConfig::new(5, 5.0 / 60.0)),
                ("unlock_link".into(), PolicyConfig::new(30, 0.5)),
            ]),
            tiers: BTreeMap::new(),
        }
    }
}
