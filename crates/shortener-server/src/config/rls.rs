//! `[rls]`: the rate limit service (`shortener ratelimit-server`), and the environment
//! variables of envoyproxy/ratelimit that a deployment of theirs sets. Theirs come first:
//! our config file and `SHORTENER_*` variables override them.

use std::net::SocketAddr;
use std::path::Path;

use figment::Figment;
use figment::providers::Serialized;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Config, ConfigError, OnErrorConfig, Settings, environment, with_file};

/// `[rls]`, with their defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RlsConfig {
    /// The gRPC `RateLimitService` (their `GRPC_HOST`:`GRPC_PORT`).
    pub grpc_bind: SocketAddr,
    /// `/healthcheck` and `/metrics` (their `HOST`:`PORT`).
    pub http_bind: SocketAddr,
    /// The limits files are every `*.yaml` in `runtime_root/runtime_subdirectory/runtime_appdirectory`.
    pub runtime_root: String,
    pub runtime_subdirectory: String,
    pub runtime_appdirectory: String,
    /// Files naming one domain add up instead of being refused (`MERGE_DOMAIN_CONFIG`).
    pub merge_domain_config: bool,
    /// Every answer OK; what would be refused is counted (`SHADOW_MODE`).
    pub shadow_mode: bool,
    /// Every limit in quota mode: over its limit it refuses a request only when every
    /// such descriptor of the request is over (`QUOTA_MODE`).
    pub quota_mode: bool,
    /// The answer carries the headers below, of the descriptor closest to its limit, for
    /// Envoy to add to the response (`LIMIT_RESPONSE_HEADERS_ENABLED`).
    pub response_headers: bool,
    /// The answer carries dynamic metadata: the domain, the descriptors, and the
    /// `metadata:` of the limits that passed (`RESPONSE_DYNAMIC_METADATA`).
    pub response_dynamic_metadata: bool,
    pub limit_header: String,
    pub remaining_header: String,
    pub reset_header: String,
    /// An admission leaving less than this share of the limit counts as near it.
    pub near_limit_ratio: f64,
    /// How a limit that names no `algorithm:` of its own is decided (ours): their fixed
    /// window by default.
    pub algorithm: RlsAlgorithm,
    /// How a request spends the fixed windows' counts when one of its descriptors goes
    /// over: `each` (theirs: every descriptor counts every hit), `stop_when_over` (their
    /// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`) or `all_or_nothing` (ours).
    pub spending: RlsSpending,
    /// The start of every fixed window's Redis key (their `CACHE_KEY_PREFIX`).
    pub cache_key_prefix: String,
    /// A fixed window's key lives its unit plus up to this many seconds, at random
    /// (their `EXPIRATION_JITTER_MAX_SECONDS`).
    pub expiration_jitter_max_secs: u64,
    /// Descriptors one request may carry; more are refused (`INVALID_ARGUMENT`).
    pub max_descriptors: usize,
    /// Entries one descriptor may have.
    pub max_entries: usize,
    /// Bytes of an entry's key and value together: a descriptor's entries are its Redis key.
    pub max_entry_bytes: usize,
}

/// `rls.algorithm`: their fixed window counted per calendar unit (the default), a token
/// bucket of `requests_per_unit` refilled over the unit, or GCRA (the same decisions as
/// the bucket, one timestamp stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RlsAlgorithm {
    TokenBucket,
    Gcra,
    #[default]
    FixedWindow,
}

/// `rls.spending`, see [`RlsConfig::spending`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RlsSpending {
    #[default]
    Each,
    StopWhenOver,
    AllOrNothing,
}

impl From<RlsSpending> for shortener_core::Spending {
    fn from(spending: RlsSpending) -> Self {
        match spending {
            RlsSpending::Each => Self::Each,
            RlsSpending::StopWhenOver => Self::StopWhenOver,
            RlsSpending::AllOrNothing => Self::AllOrNothing,
        }
    }
}

impl From<RlsAlgorithm> for shortener_core::Algorithm {
    fn from(algorithm: RlsAlgorithm) -> Self {
        match algorithm {
            RlsAlgorithm::TokenBucket => Self::TokenBucket,
            RlsAlgorithm::Gcra => Self::Gcra,
            RlsAlgorithm::FixedWindow => Self::FixedWindow,
        }
    }
}

impl Default for RlsConfig {
    fn default() -> Self {
        Self {
            grpc_bind: SocketAddr::from(([0, 0, 0, 0], 8081)),
            http_bind: SocketAddr::from(([0, 0, 0, 0], 8080)),
            runtime_root: "/srv/runtime_data/current".to_owned(),
            runtime_subdirectory: String::new(),
            runtime_appdirectory: "config".to_owned(),
            merge_domain_config: false,
            shadow_mode: false,
            quota_mode: false,
            response_headers: false,
            response_dynamic_metadata: false,
            limit_header: "RateLimit-Limit".to_owned(),
            remaining_header: "RateLimit-Remaining".to_owned(),
            reset_header: "RateLimit-Reset".to_owned(),
            near_limit_ratio: 0.8,
            algorithm: RlsAlgorithm::FixedWindow,
            spending: RlsSpending::Each,
            cache_key_prefix: String::new(),
            expiration_jitter_max_secs: 300,
            max_descriptors: 64,
            max_entries: 16,
            max_entry_bytes: 1024,
        }
    }
}

impl Config {
    /// As [`Config::load`], for the rate limit service: envoyproxy/ratelimit's variables
    /// first (see `their_environment`), then `file`, then `SHORTENER_*`; `on_error =
    /// "error"` is allowed here.
    ///
    /// # Errors
    /// [`ConfigError`] naming the key, or the variable of theirs that is not supported.
    pub fn load_for_rls(
        file: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Settings, ConfigError> {
        let (theirs, warnings) = their_environment(vars)?;
        let user = with_file(Figment::from(Serialized::defaults(theirs)), file)?;
        let mut settings = Self::from_figment(user.merge(environment()?))?;
        settings.warnings = warnings;
        if !(settings.config.rls.near_limit_ratio > 0.0
            && settings.config.rls.near_limit_ratio <= 1.0)
        {
            return Err(ConfigError(
                "invalid value for key `rls.near_limit_ratio`: must be above 0 and at most 1"
                    .into(),
            ));
        }
        for (key, value, most) in [
            (
                "rls.max_descriptors",
                settings.config.rls.max_descriptors,
                10_000,
            ),
            ("rls.max_entries", settings.config.rls.max_entries, 1_000),
            (
                "rls.max_entry_bytes",
                settings.config.rls.max_entry_bytes,
                1_048_576,
            ),
        ] {
            if !(1..=most).contains(&value) {
                return Err(ConfigError(format!(
                    "invalid value for key `{key}`: must be between 1 and {most}"
                )));
            }
        }
        Ok(settings)
    }

    /// Whether `on_error = "error"` was asked for (only the rate limit service has it).
    pub(crate) fn on_error_is_error(&self) -> bool {
        self.limiter.on_error == OnErrorConfig::Error
    }
}

/// envoyproxy/ratelimit's environment variables as our keys (README, "Behind Envoy"),
/// and a warning for each of theirs that changes nothing here (see `theirs`).
///
/// # Errors
/// A value that cannot be honoured: a Unix socket or Sentinel for Redis, a backend other
/// than Redis, a feature that is not served (xDS, quota mode, dynamic metadata...), a bad
/// number or boolean.
pub(crate) fn their_environment(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<(Value, Vec<String>), ConfigError> {
    let vars: std::collections::HashMap<String, String> = vars.into_iter().collect();
    let warnings = super::theirs::check(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let get = |name: &str| vars.get(name).map(String::as_str).filter(|v| !v.is_empty());
    let bad = |name: &str, why: &str| ConfigError(format!("environment variable {name}: {why}"));
    let flag = |name: &str| -> Result<Option<bool>, ConfigError> {
        get(name)
            .map(|value| match value.to_ascii_lowercase().as_str() {
                "1" | "t" | "true" => Ok(true),
                "0" | "f" | "false" => Ok(false),
                _ => Err(bad(name, "must be true or false")),
            })
            .transpose()
    };
    let mut limiter = Map::new();
    let mut rls = Map::new();
    if let Some(backend) = get("BACKEND_TYPE") {
        if backend != "redis" {
            return Err(bad("BACKEND_TYPE", "only redis is supported"));
        }
        limiter.insert("kind".into(), json!("redis"));
    }
    if let Some(address) = get("REDIS_URL") {
        if address.starts_with('/') || address.starts_with("unix") {
            return Err(bad(
                "REDIS_URL",
                "Unix sockets are not supported; give host:port",
            ));
        }
        let scheme = if flag("REDIS_TLS")?.unwrap_or(false) {
            "rediss"
        } else {
            "redis"
        };
        let auth = get("REDIS_AUTH")
            .map(|auth| format!("{auth}@"))
            .unwrap_or_default();
        let urls: Vec<String> = address
            .split(',')
            .map(|node| format!("{scheme}://{auth}{}", node.trim()))
            .collect();
        limiter.insert("kind".into(), json!("redis"));
        if let Some(ca) = get("REDIS_TLS_CACERT") {
            limiter.insert("redis_ca_file".into(), json!(ca));
        }
        if let Some(prefix) = get("CACHE_KEY_PREFIX") {
            limiter.insert("key_prefix".into(), json!(prefix));
        }
        match get("REDIS_TYPE")
            .unwrap_or("single")
            .to_ascii_lowercase()
            .as_str()
        {
            "single" => {
                limiter.insert("redis_url".into(), json!(urls[0]));
            }
            "cluster" => {
                limiter.insert("redis_cluster".into(), json!(urls));
            }
            _ => {
                return Err(bad(
                    "REDIS_TYPE",
                    "single or cluster (sentinel is not supported)",
                ));
            }
        }
    }
    if let Some(size) = get("REDIS_POOL_SIZE") {
        let size: usize = size
            .parse()
            .map_err(|_| bad("REDIS_POOL_SIZE", "must be a number"))?;
        limiter.insert("redis_pool_size".into(), json!(size));
    }
    let port = |name: &str| -> Result<Option<u16>, ConfigError> {
        get(name)
            .map(|port| port.parse().map_err(|_| bad(name, "must be a port number")))
            .transpose()
    };
    let bind = |host: &str,
                port: Option<u16>,
                default: SocketAddr|
     -> Result<Option<Value>, ConfigError> {
        if get(host).is_none() && port.is_none() {
            return Ok(None);
        }
        let host_value = get(host).map_or_else(|| default.ip().to_string(), str::to_owned);
        let address = format!("{host_value}:{}", port.unwrap_or(default.port()));
        address
            .parse::<SocketAddr>()
            .map(|address| Some(json!(address.to_string())))
            .map_err(|_| bad(host, "must be an IP address"))
    };
    let defaults = RlsConfig::default();
    if let Some(grpc) = bind("GRPC_HOST", port("GRPC_PORT")?, defaults.grpc_bind)? {
        rls.insert("grpc_bind".into(), grpc);
    }
    if let Some(http) = bind("HOST", port("PORT")?, defaults.http_bind)? {
        rls.insert("http_bind".into(), http);
    }
    for (name, key) in [
        ("LIMIT_LIMIT_HEADER", "limit_header"),
        ("LIMIT_REMAINING_HEADER", "remaining_header"),
        ("LIMIT_RESET_HEADER", "reset_header"),
        ("RUNTIME_ROOT", "runtime_root"),
        ("RUNTIME_SUBDIRECTORY", "runtime_subdirectory"),
        ("RUNTIME_APPDIRECTORY", "runtime_appdirectory"),
    ] {
        if let Some(value) = get(name) {
            rls.insert(key.into(), json!(value));
        }
    }
    for (name, key) in [
        ("SHADOW_MODE", "shadow_mode"),
        ("QUOTA_MODE", "quota_mode"),
        ("LIMIT_RESPONSE_HEADERS_ENABLED", "response_headers"),
        ("RESPONSE_DYNAMIC_METADATA", "response_dynamic_metadata"),
        ("MERGE_DOMAIN_CONFIG", "merge_domain_config"),
    ] {
        if let Some(value) = flag(name)? {
            rls.insert(key.into(), json!(value));
        }
    }
    // Their fixed windows' keys: the prefix leads them whatever the backend.
    if let Some(prefix) = get("CACHE_KEY_PREFIX") {
        rls.insert("cache_key_prefix".into(), json!(prefix));
    }
    if let Some(stop) = flag("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT")? {
        let spending = if stop { "stop_when_over" } else { "each" };
        rls.insert("spending".into(), json!(spending));
    }
    if let Some(jitter) = get("EXPIRATION_JITTER_MAX_SECONDS") {
        let jitter: u64 = jitter
            .parse()
            .map_err(|_| bad("EXPIRATION_JITTER_MAX_SECONDS", "must be a whole number"))?;
        rls.insert("expiration_jitter_max_secs".into(), json!(jitter));
    }
    if let Some(ratio) = get("NEAR_LIMIT_RATIO") {
        let ratio: f64 = ratio
            .parse()
            .map_err(|_| bad("NEAR_LIMIT_RATIO", "must be a number"))?;
        rls.insert("near_limit_ratio".into(), json!(ratio));
    }
    let mut log = Map::new();
    if let Some(level) = get("LOG_LEVEL") {
        let level = match level.to_ascii_lowercase().as_str() {
            level @ ("trace" | "debug" | "info" | "warn" | "error") => level.to_owned(),
            "warning" => "warn".to_owned(),
            "fatal" | "panic" => "error".to_owned(),
            _ => return Err(bad("LOG_LEVEL", "must be debug, info, warn or error")),
        };
        log.insert("level".into(), json!(level));
    }
    if let Some(format) = get("LOG_FORMAT") {
        let format = format.to_ascii_lowercase();
        if format != "text" && format != "json" {
            return Err(bad("LOG_FORMAT", "must be text or json"));
        }
        log.insert("format".into(), json!(format));
    }
    let mut root = Map::new();
    if !log.is_empty() {
        root.insert("log".into(), Value::Object(log));
    }
    if !limiter.is_empty() {
        root.insert("limiter".into(), Value::Object(limiter));
    }
    if !rls.is_empty() {
        root.insert("rls".into(), Value::Object(rls));
    }
    Ok((Value::Object(root), warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn their_variables_become_our_keys() {
        let (value, warnings) = their_environment(vars(&[
            ("REDIS_URL", "redis.internal:6380"),
            ("REDIS_AUTH", "user:secret"),
            ("REDIS_TLS", "true"),
            ("REDIS_TLS_CACERT", "/etc/ca.pem"),
            ("CACHE_KEY_PREFIX", "rl_"),
            ("GRPC_PORT", "9090"),
            ("PORT", "9091"),
            ("RUNTIME_ROOT", "/data"),
            ("RUNTIME_SUBDIRECTORY", "ratelimit"),
            ("SHADOW_MODE", "1"),
            ("NEAR_LIMIT_RATIO", "0.9"),
            ("LOG_LEVEL", "WARN"),
            ("LOG_FORMAT", "json"),
            ("USE_STATSD", "true"),
        ]))
        .unwrap();
        assert_eq!(value["limiter"]["redis_ca_file"], "/etc/ca.pem");
        assert_eq!(value["limiter"]["key_prefix"], "rl_");
        assert_eq!(value["log"]["level"], "warn");
        assert_eq!(value["log"]["format"], "json");
        assert_eq!(warnings.len(), 1, "USE_STATSD: {warnings:?}");
        assert_eq!(value["limiter"]["kind"], "redis");
        assert_eq!(
            value["limiter"]["redis_url"],
            "rediss://user:secret@redis.internal:6380"
        );
        assert_eq!(value["rls"]["grpc_bind"], "0.0.0.0:9090");
        assert_eq!(value["rls"]["http_bind"], "0.0.0.0:9091");
        assert_eq!(value["rls"]["runtime_root"], "/data");
        assert_eq!(value["rls"]["shadow_mode"], true);
        assert_eq!(value["rls"]["near_limit_ratio"], 0.9);
        let (cluster, _) = their_environment(vars(&[
            ("REDIS_URL", "a:7000,b:7001"),
            ("REDIS_TYPE", "cluster"),
        ]))
        .unwrap();
        assert_eq!(
            cluster["limiter"]["redis_cluster"],
            json!(["redis://a:7000", "redis://b:7001"])
        );
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_by_name() {
        for (pairs, named) in [
            (
                vec![("REDIS_URL", "/var/run/nutcracker/ratelimit.sock")],
                "REDIS_URL",
            ),
            (
                vec![("REDIS_URL", "a:1"), ("REDIS_TYPE", "sentinel")],
                "REDIS_TYPE",
            ),
            (vec![("BACKEND_TYPE", "memcache")], "BACKEND_TYPE"),
            (vec![("SHADOW_MODE", "maybe")], "SHADOW_MODE"),
            (vec![("GRPC_PORT", "http")], "GRPC_PORT"),
            (vec![("LOG_LEVEL", "chatty")], "LOG_LEVEL"),
            (vec![("CONFIG_TYPE", "GRPC_XDS_SOTW")], "CONFIG_TYPE"),
        ] {
            let error = their_environment(vars(&pairs)).unwrap_err();
            assert!(error.to_string().contains(named), "{error}");
        }
    }

    #[test]
    fn our_keys_override_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rls.toml");
        std::fs::write(&file, "[rls]\ngrpc_bind = \"127.0.0.1:7000\"\n").unwrap();
        let settings = Config::load_for_rls(
            Some(&file),
            vars(&[("GRPC_PORT", "9090"), ("PORT", "9091")]),
        )
        .unwrap();
        assert_eq!(settings.config.rls.grpc_bind.to_string(), "127.0.0.1:7000");
        assert_eq!(settings.config.rls.http_bind.to_string(), "0.0.0.0:9091");
    }

    #[test]
    fn the_algorithm_is_read_and_a_wrong_one_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rls.toml");
        std::fs::write(&file, "[rls]\nalgorithm = \"fixed_window\"\n").unwrap();
        let settings = Config::load_for_rls(Some(&file), vars(&[])).unwrap();
        assert_eq!(settings.config.rls.algorithm, RlsAlgorithm::FixedWindow);
        std::fs::write(&file, "[rls]\nalgorithm = \"leaky\"\n").unwrap();
        let error = Config::load_for_rls(Some(&file), vars(&[])).unwrap_err();
        assert!(error.to_string().contains("rls.algorithm"), "{error}");
    }
}
