//! Configuration: built-in defaults, then the TOML file, then `SHORTENER_*` environment
//! variables (`__` between levels). Unknown keys and bad values are errors that name the key.

use std::net::SocketAddr;
use std::path::Path;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use figment::value::Value;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use shortener_core::RedactedUrl;

mod backends;
mod compat;
mod domains;
mod limiter;
mod links;
mod log;
mod rls;
mod settings;
mod theirs;
mod visits;

pub use compat::CompatConfig;
pub use domains::DomainConfig;
pub use limiter::{AlgorithmConfig, LimiterConfig, LimiterKind, OnErrorConfig, PolicyConfig};
pub use links::LinksConfig;
pub use log::{LogConfig, LogFormat};
pub use rls::RlsConfig;
pub use settings::Settings;
pub use shortener_backends::{RedisLimiter, Storage};
pub use shortener_http::identity::ClientIpHeader;
pub use visits::VisitsConfig;

/// The whole configuration file, section by section (README, "Choosing backends").
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub cache: CacheConfig,
    pub codes: CodesConfig,
    pub limiter: LimiterConfig,
    pub links: LinksConfig,
    /// `[[domains]]`: hosts served besides the default one of `server.public_url`.
    pub domains: Vec<DomainConfig>,
    pub api_keys: Vec<ApiKeyConfig>,
    pub rls: RlsConfig,
    pub log: LogConfig,
    pub visits: VisitsConfig,
    pub compat: CompatConfig,
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
    /// Open connections from one client network (trusted proxies exempt); more are
    /// closed at once.
    pub max_connections_per_client: usize,
    /// A connection that answered and sends no next request this long after is closed.
    pub keep_alive_timeout_ms: u64,
    /// A connection this old is closed once no HTTP/1 request is in flight on it.
    pub max_connection_age_ms: u64,
    /// HTTP/2 cleartext (prior knowledge); off, such connections are closed.
    pub http2: bool,
    /// `shortener_http_requests_total` and `shortener_http_request_duration_seconds`.
    pub request_metrics: bool,
    /// A second address for `/metrics` and `/readyz`, which the public one then hides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_bind: Option<SocketAddr>,
    /// A deadline on the whole graceful shutdown after SIGTERM/SIGINT: draining
    /// requests, flushing visit counts, closing storage.
    pub shutdown_timeout_ms: u64,
    /// How long, within that deadline, the node keeps serving after the signal before it
    /// closes its listener, answering each request with `Connection: close`: a balancer's
    /// idle connections are then closed by the balancer, not under a request it sends.
    /// After it, the listener makes no new connection but still serves those the kernel
    /// already made (a quarter second, then until none waits, at most a second more), so
    /// that its close resets none.
    pub shutdown_delay_ms: u64,
    /// Origins whose pages may call the API from a browser (CORS), e.g.
    /// `https://app.shlink.io`; none by default, and `*` for every origin.
    pub cors_origins: Vec<String>,
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
    /// The pool's size; 0: the kind's default (SQLite 4 per core, 4 to 16; PostgreSQL 16).
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
            max_connections_per_client: 64,
            keep_alive_timeout_ms: 5_000,
            max_connection_age_ms: 600_000,
            http2: false,
            request_metrics: true,
            ops_bind: None,
            shutdown_timeout_ms: 10_000,
            shutdown_delay_ms: 0,
            cors_origins: Vec::new(),
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            kind: StorageKind::Sqlite,
            url: RedactedUrl::new("sqlite://shortener.db"),
            max_connections: 0,
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

impl std::fmt::Debug for ApiKeyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyConfig")
            .field("name", &self.name)
            .field("tier", &self.tier)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// A configuration error: one line that names the key.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

impl Config {
    /// Loads defaults, then `file` (when given), then the environment, and checks.
    ///
    /// # Errors
    /// [`ConfigError`] naming the key of an unknown or bad value.
    pub fn load(file: Option<&Path>) -> Result<Settings, ConfigError> {
        let user = with_file(Figment::new(), file)?;
        let settings = Self::from_figment(user.merge(environment()?))?;
        if settings.config.on_error_is_error() {
            return Err(ConfigError(
                "invalid value for key `limiter.on_error`: \"error\" is for `shortener \
                 ratelimit-server` only; the HTTP server takes fail_open, fail_closed or local"
                    .into(),
            ));
        }
        Ok(settings)
    }

    /// The `log.format` that `file` and the environment ask for (and, for the rate limit
    /// service, its `LOG_FORMAT` before them), read on its own: a configuration that does
    /// not load is said in the format its log would have had. Text when that does not read
    /// either.
    pub fn log_format_of(file: Option<&Path>, rls: bool) -> LogFormat {
        let variable = |name: &str| {
            let value = std::env::var(name).ok()?.to_ascii_lowercase();
            Some(Serialized::default("log.format", value))
        };
        let mut user = Figment::new();
        if rls && let Some(theirs) = variable("LOG_FORMAT") {
            user = user.merge(theirs);
        }
        let mut user = with_file(user.clone(), file).unwrap_or(user);
        if let Some(ours) = variable("SHORTENER_LOG__FORMAT") {
            user = user.merge(ours);
        }
        user.extract_inner("log.format").unwrap_or_default()
    }

    /// The built-in defaults, then `user` (what the user wrote), checked.
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn from_figment(user: Figment) -> Result<Settings, ConfigError> {
        let config: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(user.clone())
            .extract()
            .map_err(|e| {
                let e = e
                    .into_iter()
                    .next()
                    .map_or_else(|| "invalid configuration".to_owned(), |e| one_line(&e));
                ConfigError(e)
            })?;
        config.check(&user)
    }
}

/// `user` with the TOML `file` merged over it, when one is given.
fn with_file(user: Figment, file: Option<&Path>) -> Result<Figment, ConfigError> {
    let Some(file) = file else {
        return Ok(user);
    };
    if !file.is_file() {
        return Err(ConfigError(format!(
            "config file {} does not exist",
            file.display()
        )));
    }
    Ok(user.merge(Toml::file(file)))
}

/// The environment: `SHORTENER_<SECTION>__<KEY>` sets a key, and
/// `SHORTENER_<SECTION>__<KEY>_FILE` sets it to the content of the file it names (without
/// the final line break): a secret mounted as a file (Docker and Kubernetes secrets) need
/// not pass through a variable. A name that is a key itself (`links.deny_hosts_file`)
/// stays that key. `SHORTENER_CONFIG` names the file and `SHORTENER_TEST_*` belong to the
/// test suite, so neither is a config key.
fn environment() -> Result<Figment, ConfigError> {
    let defaults = Figment::from(Serialized::defaults(Config::default()));
    let variables = || {
        Env::prefixed("SHORTENER_").split("__").filter(|key| {
            let key = key.as_str().to_ascii_lowercase();
            key != "config" && !key.starts_with("test_")
        })
    };
    let mut from_files = Figment::new();
    let mut file_keys = std::collections::HashSet::new();
    for (key, path) in variables().iter() {
        let key = key.as_str().to_ascii_lowercase();
        let Some(target) = key.strip_suffix("_file") else {
            continue;
        };
        if defaults.find_value(&key).is_ok() {
            continue;
        }
        let Ok(default) = defaults.find_value(target) else {
            continue;
        };
        let variable = format!("SHORTENER_{}", key.replace('.', "__").to_ascii_uppercase());
        let content = std::fs::read_to_string(&path).map_err(|error| {
            ConfigError(format!(
                "invalid value for key `{target}`: cannot read {path} (from {variable}): {error}"
            ))
        })?;
        let content = content.trim_end_matches(['\n', '\r']);
        // A text key takes the file as it is; another kind parses as a variable would.
        let value = match default {
            Value::String(..) => Value::from(content.to_owned()),
            _ => content
                .parse::<Value>()
                .unwrap_or_else(|never| match never {}),
        };
        from_files = from_files.merge(Serialized::default(target, value));
        file_keys.insert(key);
    }
    let variables =
        variables().filter(move |key| !file_keys.contains(&key.as_str().to_ascii_lowercase()));
    Ok(Figment::from(variables).merge(from_files))
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
