//! Configuration: built-in defaults, then the TOML file, then `SHORTENER_*` environment
//! variables (`__` between levels). Unknown keys and bad values are errors that name the key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use shortener_core::{AlphabetCodeGenerator, Owner, Policy, RedactedUrl};

use crate::state::{ApiKeyEntry, ApiKeys, Policies, Scope, Scopes};

pub use crate::identity::ClientIpHeader;

/// The whole configuration file, section by section (README, "Choosing backends").
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub cache: CacheConfig,
    pub codes: CodesConfig,
    pub limiter: LimiterConfig,
    pub api_keys: Vec<ApiKeyConfig>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    pub public_url: String,
    pub redirect_status: u16,
    pub trusted_proxies: Vec<IpNet>,
    /// The one forwarding header believed from a trusted proxy.
    pub client_ip_header: ClientIpHeader,
    pub max_body_bytes: usize,
    /// A request head not complete this long after its first byte (or after the accept)
    /// closes the connection: slowloris clients hold no connection for long.
    pub header_read_timeout_ms: u64,
    /// A request not answered this long after its head (body reading included) is 503.
    pub request_timeout_ms: u64,
    /// A connection without any I/O for this long is closed (keep-alive included).
    pub idle_timeout_ms: u64,
    /// Open connections at most; more wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// A deadline on the whole graceful shutdown after SIGTERM/SIGINT: draining
    /// requests, flushing visit counts, closing storage.
    pub shutdown_timeout_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageKind {
    Sqlite,
    Postgres,
    Memory,
}

/// `storage.sqlite_synchronous`: when a SQLite commit is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SynchronousConfig {
    /// A commit survives a crash of the process, not a power cut.
    Normal,
    /// A commit survives a power cut: acknowledged means on disk.
    Full,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    pub kind: StorageKind,
    pub url: RedactedUrl,
    pub max_connections: u32,
    pub migrate: bool,
    /// PostgreSQL `statement_timeout` of every pooled connection; 0 leaves the server's.
    pub statement_timeout_ms: u64,
    pub sqlite_synchronous: SynchronousConfig,
    /// Concurrent creates are committed together by one writer (SQLite only).
    pub sqlite_group_commit: bool,
    /// The WAL is checkpointed and truncated when it passes this many MiB (SQLite only).
    pub sqlite_wal_max_mb: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    pub capacity: u64,
    pub ttl_secs: u64,
    pub negative_ttl_secs: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodesConfig {
    pub length: usize,
    pub alphabet: String,
}

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
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    pub name: String,
    /// Hex SHA-256 of the key: the key itself is never stored in config.
    pub sha256: String,
    #[serde(default)]
    pub tier: Option<String>,
    /// Of `create`, `read`, `update`, `delete`, `admin`; absent: all but `admin`.
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_url: "http://127.0.0.1:8080".into(),
            redirect_status: 302,
            trusted_proxies: Vec::new(),
            client_ip_header: ClientIpHeader::XForwardedFor,
            max_body_bytes: 65_536,
            header_read_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
            idle_timeout_ms: 60_000,
            max_connections: 1_000,
            shutdown_timeout_ms: 10_000,
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            kind: StorageKind::Sqlite,
            url: RedactedUrl::new("sqlite://shortener.db"),
            max_connections: 16,
            migrate: true,
            statement_timeout_ms: 5_000,
            sqlite_synchronous: SynchronousConfig::Full,
            sqlite_group_commit: true,
            sqlite_wal_max_mb: 64,
        }
    }
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            capacity: 100_000,
            ttl_secs: 60,
            negative_ttl_secs: 5,
        }
    }
}

impl Default for CodesConfig {
    fn default() -> Self {
        Self {
            length: 7,
            alphabet: "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".into(),
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
            policies: BTreeMap::from([(
                "create".into(),
                PolicyConfig {
                    capacity: 100,
                    refill_per_sec: 1.6667,
                },
            )]),
            tiers: BTreeMap::new(),
        }
    }
}

impl StorageConfig {
    /// The PostgreSQL pool these settings ask for.
    pub fn pool_settings(&self) -> shortener_postgres::PoolSettings {
        shortener_postgres::PoolSettings {
            max_connections: self.max_connections,
            statement_timeout: (self.statement_timeout_ms > 0)
                .then(|| std::time::Duration::from_millis(self.statement_timeout_ms)),
        }
    }
}

impl std::fmt::Debug for ApiKeyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyConfig")
            .field("name", &self.name)
            .field("tier", &self.tier)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// A configuration that passed its checks, with what the checks parsed kept for use: the
/// policies, the API keys' digests and the code generator are built once, here. It
/// dereferences to the [`Config`] it came from.
#[derive(Debug)]
pub struct Settings {
    pub config: Config,
    pub policies: Policies,
    pub api_keys: ApiKeys,
    pub generator: AlphabetCodeGenerator,
}

impl std::ops::Deref for Settings {
    type Target = Config;

    fn deref(&self) -> &Config {
        &self.config
    }
}

/// A configuration error: one line that names the key.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

impl Config {
    /// Loads defaults, then `file` (when given), then the environment, and validates.
    ///
    /// # Errors
    /// [`ConfigError`] naming the key of an unknown or bad value.
    pub fn load(file: Option<&Path>) -> Result<Settings, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = file {
            if !file.is_file() {
                return Err(ConfigError(format!(
                    "config file {} does not exist",
                    file.display()
                )));
            }
            figment = figment.merge(Toml::file(file));
        }
        Self::from_figment(figment.merge(environment()))
    }

    /// # Errors
    /// As [`Config::load`].
    pub fn from_figment(figment: Figment) -> Result<Settings, ConfigError> {
        let config: Config = figment.extract().map_err(|e| {
            let e = e
                .into_iter()
                .next()
                .map_or_else(|| "invalid configuration".to_owned(), |e| one_line(&e));
            ConfigError(e)
        })?;
        config.check()
    }

    /// Checks every value, and keeps what the checks parse.
    fn check(self) -> Result<Settings, ConfigError> {
        self.check_values()?;
        let generator = AlphabetCodeGenerator::new(&self.codes.alphabet, self.codes.length)
            .map_err(|e| {
                let key = if e == shortener_core::CodeGeneratorConfigError::Length {
                    "codes.length"
                } else {
                    "codes.alphabet"
                };
                ConfigError(format!("invalid value for key `{key}`: {e}"))
            })?;
        let policies = self.parse_policies()?;
        let api_keys = self.parse_api_keys()?;
        Ok(Settings {
            config: self,
            policies,
            api_keys,
            generator,
        })
    }

    fn parse_policies(&self) -> Result<Policies, ConfigError> {
        let default = self
            .limiter
            .policies
            .iter()
            .map(|(name, policy)| {
                let key = format!("limiter.policies.{name}");
                Ok((name.clone(), parse_policy(&key, name, policy)?))
            })
            .collect::<Result<_, ConfigError>>()?;
        let mut tiers = BTreeMap::new();
        for (tier, policies) in &self.limiter.tiers {
            let parsed = policies
                .iter()
                .map(|(name, policy)| {
                    let key = format!("limiter.tiers.{tier}.{name}");
                    Ok((name.clone(), parse_policy(&key, name, policy)?))
                })
                .collect::<Result<_, ConfigError>>()?;
            tiers.insert(tier.clone(), parsed);
        }
        Ok(Policies::new(default, tiers))
    }

    fn parse_api_keys(&self) -> Result<ApiKeys, ConfigError> {
        let bad = |key: String, why: String| {
            Err(ConfigError(format!("invalid value for key `{key}`: {why}")))
        };
        let mut entries: Vec<ApiKeyEntry> = Vec::new();
        for (index, key) in self.api_keys.iter().enumerate() {
            let name = match Owner::parse(&key.name) {
                Ok(name) => name,
                Err(e) => return bad(format!("api_keys[{index}].name"), e.to_string()),
            };
            let Ok(digest) = <[u8; 32]>::try_from(hex::decode(&key.sha256).unwrap_or_default())
            else {
                return bad(
                    format!("api_keys[{index}].sha256"),
                    "must be 64 hex digits (a SHA-256)".into(),
                );
            };
            if let Some(tier) = &key.tier
                && !self.limiter.tiers.contains_key(tier)
            {
                return bad(
                    format!("api_keys[{index}].tier"),
                    format!("tier `{tier}` is not defined in limiter.tiers"),
                );
            }
            let scopes = match &key.scopes {
                None => Scopes::OWN_LINKS,
                Some(names) => {
                    let mut scopes = Vec::new();
                    for name in names {
                        let Some(scope) = Scope::parse(name) else {
                            return bad(
                                format!("api_keys[{index}].scopes"),
                                format!(
                                    "unknown scope `{name}`; expected create, read, update, delete or admin"
                                ),
                            );
                        };
                        scopes.push(scope);
                    }
                    scopes.into_iter().collect()
                }
            };
            // Two entries with one name would share their links and their quota; two
            // with one digest would make the key mean whichever comes last.
            for (earlier, other) in entries.iter().enumerate() {
                if other.name == name {
                    return bad(
                        format!("api_keys[{index}].name"),
                        format!("`{name}` is also the name of api_keys[{earlier}]"),
                    );
                }
                if other.same_digest(&digest) {
                    return bad(
                        format!("api_keys[{index}].sha256"),
                        format!(
                            "is also the digest of api_keys[{earlier}] (`{}`)",
                            other.name
                        ),
                    );
                }
            }
            entries.push(ApiKeyEntry::new(name, key.tier.clone(), scopes, digest));
        }
        Ok(ApiKeys::new(entries))
    }

    fn check_values(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| {
            Err(ConfigError(format!("invalid value for key `{key}`: {why}")))
        };
        if ![301, 302, 307, 308].contains(&self.server.redirect_status) {
            return bad("server.redirect_status", "must be 301, 302, 307 or 308");
        }
        let public_url = self.server.public_url.trim_end_matches('/');
        if !(public_url.starts_with("http://") || public_url.starts_with("https://"))
            || public_url.len() < 9
        {
            return bad("server.public_url", "must be an http(s) URL");
        }
        if self.server.max_body_bytes < 256 {
            return bad("server.max_body_bytes", "must be at least 256");
        }
        for (key, value) in [
            (
                "server.header_read_timeout_ms",
                self.server.header_read_timeout_ms,
            ),
            ("server.request_timeout_ms", self.server.request_timeout_ms),
            ("server.idle_timeout_ms", self.server.idle_timeout_ms),
        ] {
            if !(1..=3_600_000).contains(&value) {
                return bad(key, "must be between 1 and 3600000 (one hour)");
            }
        }
        if !(1..=1_000_000).contains(&self.server.max_connections) {
            return bad("server.max_connections", "must be between 1 and 1000000");
        }
        if self.storage.statement_timeout_ms > 3_600_000 {
            return bad(
                "storage.statement_timeout_ms",
                "must be between 0 (the server's own) and 3600000 (one hour)",
            );
        }
        if !(100..=600_000).contains(&self.server.shutdown_timeout_ms) {
            return bad(
                "server.shutdown_timeout_ms",
                "must be between 100 and 600000",
            );
        }
        if !(1..=65_536).contains(&self.storage.sqlite_wal_max_mb) {
            return bad("storage.sqlite_wal_max_mb", "must be between 1 and 65536");
        }
        if self.storage.max_connections == 0 {
            return bad("storage.max_connections", "must be at least 1");
        }
        let scheme_ok = match self.storage.kind {
            StorageKind::Sqlite => self.storage.url.expose().starts_with("sqlite:"),
            StorageKind::Postgres => {
                self.storage.url.expose().starts_with("postgres://")
                    || self.storage.url.expose().starts_with("postgresql://")
            }
            StorageKind::Memory => true,
        };
        if !scheme_ok {
            return bad(
                "storage.url",
                "does not match storage.kind (sqlite:... or postgres://...)",
            );
        }
        if self.storage.kind == StorageKind::Postgres
            && let Some(mode) = query_value(self.storage.url.expose(), "sslmode")
            && !SSL_MODES.contains(&mode)
        {
            return bad(
                "storage.url",
                &format!("sslmode `{mode}` is not one of {}", SSL_MODES.join(", ")),
            );
        }
        if self.limiter.timeout_ms == 0 || self.limiter.timeout_ms > 60_000 {
            return bad("limiter.timeout_ms", "must be between 1 and 60000");
        }
        if self.limiter.breaker_failures == 0 || self.limiter.breaker_failures > 1000 {
            return bad("limiter.breaker_failures", "must be between 1 and 1000");
        }
        if !(1..=1024).contains(&self.limiter.redis_pool_size) {
            return bad("limiter.redis_pool_size", "must be between 1 and 1024");
        }
        if self.limiter.nodes == 0 || self.limiter.nodes > 100_000 {
            return bad("limiter.nodes", "must be between 1 and 100000");
        }
        if self.limiter.ipv4_prefix > 32 {
            return bad("limiter.ipv4_prefix", "must be between 0 and 32");
        }
        if self.limiter.ipv6_prefix > 128 {
            return bad("limiter.ipv6_prefix", "must be between 0 and 128");
        }
        if self.limiter.kind == LimiterKind::Redis {
            self.limiter.check_redis_urls()?;
        }
        Ok(())
    }
}

/// The `sslmode`s of a PostgreSQL URL (libpq's).
const SSL_MODES: [&str; 6] = [
    "disable",
    "allow",
    "prefer",
    "require",
    "verify-ca",
    "verify-full",
];

/// The value of `name` in the query of `url`, if there.
fn query_value<'a>(url: &'a str, name: &str) -> Option<&'a str> {
    let (_, query) = url.split_once('?')?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// `redis`, `rediss`, ... of a URL, lowercased; empty without `://`.
fn scheme(url: &str) -> String {
    url.split_once("://")
        .map_or(String::new(), |(scheme, _)| scheme.to_ascii_lowercase())
}

impl LimiterConfig {
    /// The URLs in use are Redis URLs, cluster nodes agree on TLS, and a CA file comes
    /// with `rediss://` URLs and can be read.
    fn check_redis_urls(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| {
            Err(ConfigError(format!("invalid value for key `{key}`: {why}")))
        };
        let tls = if self.redis_cluster.is_empty() {
            let scheme = scheme(self.redis_url.expose());
            if !matches!(scheme.as_str(), "redis" | "rediss" | "redis+unix" | "unix") {
                return bad(
                    "limiter.redis_url",
                    "must be a redis://, rediss:// or redis+unix:// URL",
                );
            }
            scheme == "rediss"
        } else {
            let first = scheme(self.redis_cluster[0].expose());
            for (index, node) in self.redis_cluster.iter().enumerate() {
                let node_scheme = scheme(node.expose());
                if !matches!(node_scheme.as_str(), "redis" | "rediss") {
                    return bad(
                        &format!("limiter.redis_cluster[{index}]"),
                        "must be a redis:// or rediss:// URL",
                    );
                }
                if node_scheme != first {
                    return bad(
                        &format!("limiter.redis_cluster[{index}]"),
                        "mixes redis:// and rediss://: TLS is used with every node or none",
                    );
                }
            }
            first == "rediss"
        };
        if !self.redis_ca_file.is_empty() {
            if !tls {
                return bad("limiter.redis_ca_file", "is only used with rediss:// URLs");
            }
            if let Err(error) = std::fs::File::open(&self.redis_ca_file) {
                return bad(
                    "limiter.redis_ca_file",
                    &format!("cannot read {}: {error}", self.redis_ca_file),
                );
            }
        }
        Ok(())
    }
}

fn parse_policy(key: &str, name: &str, policy: &PolicyConfig) -> Result<Policy, ConfigError> {
    if !matches!(name, "create" | "redirect" | "lookup") {
        return Err(ConfigError(format!(
            "unknown key `{key}`: policies are `create`, `redirect` and `lookup`"
        )));
    }
    Policy::new(name, policy.capacity, policy.refill_per_sec)
        .map_err(|e| ConfigError(format!("invalid value for key `{key}`: {e}")))
}

/// `SHORTENER_<SECTION>__<KEY>`; `SHORTENER_CONFIG` names the file and `SHORTENER_TEST_*`
/// belong to the test suite, so neither is a config key.
fn environment() -> Env {
    Env::prefixed("SHORTENER_").split("__").filter(|key| {
        let key = key.as_str().to_ascii_lowercase();
        key != "config" && !key.starts_with("test_")
    })
}

fn one_line(error: &figment::Error) -> String {
    let mut line = error.to_string().replace('\n', " ");
    if !error.path.is_empty() && !line.contains(&error.path.join(".")) {
        line = format!("{line} (key `{}`)", error.path.join("."));
    }
    line
}

#[cfg(test)]
mod tests;
