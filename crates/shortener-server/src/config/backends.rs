//! The backends of `[storage]` and `[limiter]`, each kind with only its own keys.
//!
//! The file keeps one flat table per section (the same TOML whatever the kind); a key
//! that belongs to another kind (`statement_timeout_ms` under `storage.kind = "sqlite"`,
//! `redis_url` under `limiter.kind = "memory"`) is an error naming the key, so a
//! configuration cannot say one thing and do another. (Not serde's internally tagged
//! enums: through their buffering, figment's errors lose the key inside the section.)

use std::time::Duration;

use figment::Figment;
use shortener_core::Algorithm;
use shortener_core::limiter::fallback::OnError;
use shortener_postgres::PoolSettings;
use shortener_redis::RedisConfig;
use shortener_sqlite::{SqliteSettings, Synchronous};

use shortener_backends::{RedisLimiter, Storage};

use super::{
    AlgorithmConfig, ConfigError, LimiterConfig, LimiterKind, OnErrorConfig, StorageConfig,
    StorageKind, SynchronousConfig,
};

/// The keys of `[storage]` only some kinds take.
const DATABASE_KEYS: [&str; 3] = ["url", "max_connections", "migrate"];
const SQLITE_KEYS: [&str; 3] = [
    "sqlite_synchronous",
    "sqlite_group_commit",
    "sqlite_wal_max_mb",
];
const POSTGRES_KEYS: [&str; 1] = ["statement_timeout_ms"];
/// The keys of `[limiter]` that only `kind = "redis"` takes.
const REDIS_KEYS: [&str; 9] = [
    "on_error",
    "redis_url",
    "redis_cluster",
    "redis_ca_file",
    "redis_pool_size",
    "timeout_ms",
    "key_prefix",
    "breaker_failures",
    "nodes",
];

/// An error when `user` (the file and the environment, without the built-in defaults)
/// sets one of `keys` of `section`, which belong to `owner` and not to `kind`.
fn reject_keys(
    user: &Figment,
    section: &str,
    keys: &[&str],
    owner: &str,
    kind: &str,
) -> Result<(), ConfigError> {
    match keys
        .iter()
        .find(|key| user.contains(&format!("{section}.{key}")))
    {
        Some(key) => Err(ConfigError(format!(
            "key `{section}.{key}` is for {section}.kind = {owner}, not \"{kind}\": remove it"
        ))),
        None => Ok(()),
    }
}

impl StorageConfig {
    pub(super) fn resolve(&self, user: &Figment) -> Result<Storage, ConfigError> {
        let bad = |why: &str| {
            Err(ConfigError(format!(
                "invalid value for key `storage.url`: {why}"
            )))
        };
        let url = self.url.expose();
        match self.kind {
            StorageKind::Memory => {
                let owner = "\"sqlite\" or \"postgres\"";
                reject_keys(user, "storage", &DATABASE_KEYS, owner, "memory")?;
                reject_keys(user, "storage", &SQLITE_KEYS, "\"sqlite\"", "memory")?;
                reject_keys(user, "storage", &POSTGRES_KEYS, "\"postgres\"", "memory")?;
                Ok(Storage::Memory)
            }
            StorageKind::Sqlite => {
                reject_keys(user, "storage", &POSTGRES_KEYS, "\"postgres\"", "sqlite")?;
                if !url.starts_with("sqlite:") {
                    return bad("kind = \"sqlite\" takes a sqlite: URL");
                }
                Ok(Storage::Sqlite {
                    url: self.url.clone(),
                    settings: SqliteSettings {
                        max_connections: match self.max_connections {
                            0 => shortener_sqlite::default_max_connections(),
                            given => given,
                        },
                        migrate: self.migrate,
                        synchronous: match self.sqlite_synchronous {
                            SynchronousConfig::Normal => Synchronous::Normal,
                            SynchronousConfig::Full => Synchronous::Full,
                        },
                        group_commit: self.sqlite_group_commit,
                        wal_max_bytes: self.sqlite_wal_max_mb << 20,
                    },
                })
            }
            StorageKind::Postgres => {
                reject_keys(user, "storage", &SQLITE_KEYS, "\"sqlite\"", "postgres")?;
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return bad("kind = \"postgres\" takes a postgres:// URL");
                }
                if let Some(mode) = query_value(url, "sslmode")
                    && !SSL_MODES.contains(&mode)
                {
                    return bad(&format!(
                        "sslmode `{mode}` is not one of {}",
                        SSL_MODES.join(", ")
                    ));
                }
                Ok(Storage::Postgres {
                    url: self.url.clone(),
                    pool: PoolSettings {
                        max_connections: match self.max_connections {
                            0 => shortener_postgres::DEFAULT_MAX_CONNECTIONS,
                            given => given,
                        },
                        statement_timeout: (self.statement_timeout_ms > 0)
                            .then(|| Duration::from_millis(self.statement_timeout_ms)),
                    },
                    migrate: self.migrate,
                })
            }
        }
    }
}

impl LimiterConfig {
    pub(super) fn algorithm(&self) -> Algorithm {
        match self.algorithm {
            AlgorithmConfig::TokenBucket => Algorithm::TokenBucket,
            AlgorithmConfig::Gcra => Algorithm::Gcra,
        }
    }

    pub(super) fn resolve(&self, user: &Figment) -> Result<Option<RedisLimiter>, ConfigError> {
        if self.kind == LimiterKind::Memory {
            reject_keys(user, "limiter", &REDIS_KEYS, "\"redis\"", "memory")?;
            return Ok(None);
        }
        self.check_redis_urls()?;
        Ok(Some(RedisLimiter {
            redis: RedisConfig {
                url: self.redis_url.clone(),
                cluster_nodes: self.redis_cluster.clone(),
                timeout: Duration::from_millis(self.timeout_ms),
                key_prefix: self.key_prefix.clone(),
                algorithm: self.algorithm(),
                pool_size: self.redis_pool_size,
                tls_ca_file: (!self.redis_ca_file.is_empty())
                    .then(|| std::path::PathBuf::from(&self.redis_ca_file)),
            },
            on_error: match self.on_error {
                OnErrorConfig::FailOpen => OnError::FailOpen,
                // `error` refuses as fail_closed does; the service answers UNAVAILABLE.
                OnErrorConfig::FailClosed | OnErrorConfig::Error => OnError::FailClosed,
                OnErrorConfig::Local => OnError::Local,
            },
            breaker_failures: self.breaker_failures,
            nodes: self.nodes,
        }))
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
