//! Opening the configured backends: the storage behind the link cache ([`repository`]),
//! the limiter behind its fallback and refusal cache ([`limiter`]), and a database by its
//! URL alone for the commands that work on one ([`AnyRepository::open`]).

use std::time::Duration;

use shortener_cache::{CacheConfig, CachedRepository};
use shortener_core::limiter::fallback::{Fallback, FallbackConfig, OnError};
use shortener_core::limiter::refusals::RefusalCache;
use shortener_core::{Algorithm, LimiterError, RepositoryError};
use shortener_memory::{MemoryRateLimiter, MemoryRepository};
use shortener_postgres::PostgresRepository;
use shortener_redis::RedisRateLimiter;
use shortener_sqlite::SqliteRepository;

use crate::any::{AnyLimiter, AnyRepository, Repository};
use crate::settings::{RedisLimiter, Storage};

/// A database that could not be opened (or migrated at start), with what was being done.
#[derive(Debug, thiserror::Error)]
#[error("{context}")]
pub struct OpenError {
    context: String,
    #[source]
    source: RepositoryError,
}

impl OpenError {
    pub(crate) fn new(context: impl Into<String>, source: RepositoryError) -> Self {
        Self {
            context: context.into(),
            source,
        }
    }
}

/// Connects the configured storage (applying migrations when `storage.migrate`), behind
/// the cache of `[cache]`.
///
/// # Errors
/// When the database cannot be opened or migrated.
pub async fn repository(storage: &Storage, cache: CacheConfig) -> Result<Repository, OpenError> {
    let backend = match storage {
        Storage::Memory => AnyRepository::Memory(MemoryRepository::default()),
        Storage::Sqlite { url, settings } => AnyRepository::Sqlite(
            SqliteRepository::connect_with(url.expose(), *settings)
                .await
                .map_err(|source| {
                    OpenError::new("cannot open the SQLite database (storage.url)", source)
                })?,
        ),
        Storage::Postgres { url, pool, migrate } => AnyRepository::Postgres(
            PostgresRepository::connect_with(url.expose(), *pool, *migrate)
                .await
                .map_err(|source| {
                    OpenError::new("cannot connect to PostgreSQL (storage.url)", source)
                })?,
        ),
    };
    Ok(CachedRepository::new(backend, cache))
}

/// A start that the configuration refuses, so that restarting unchanged will not help:
/// the limiter could not be set up under `limiter.on_error = "fail_closed"`, or the rate
/// limit service's limits files cannot be read. The process exits with code 2, as for a
/// bad configuration file; any other failed start exits with 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RefusedStart(pub String);

/// Connects the configured limiter.
///
/// With Redis, a server that cannot be reached (or fails its checks) at start stops the
/// start under `on_error = "fail_closed"` ([`RefusedStart`]); under `local` and
/// `fail_open` the node starts with its circuit open and connects on a later probe.
///
/// # Errors
/// [`RefusedStart`], as above.
pub async fn limiter(
    algorithm: Algorithm,
    redis: Option<&RedisLimiter>,
) -> Result<AnyLimiter, RefusedStart> {
    let Some(settings) = redis else {
        return Ok(AnyLimiter::Memory(MemoryRateLimiter::new(algorithm)));
    };
    let redis = RedisRateLimiter::connect_lazily(settings.redis.clone());
    let on_error = settings.on_error;
    let fallback_config = FallbackConfig {
        on_error,
        // A probe every 250 ms puts Redis back in use well within the promised second.
        probe_interval: Duration::from_millis(250),
        breaker_failures: settings.breaker_failures,
        nodes: settings.nodes,
    };
    let local = MemoryRateLimiter::new(algorithm).starting_empty();
    let fallback = match redis.ensure_connected().await {
        Ok(()) => Fallback::new(redis, local, fallback_config),
        Err(error) if on_error == OnError::FailClosed => {
            return Err(RefusedStart(format!(
                "the Redis limiter failed its start-up checks (limiter.redis_url / \
                 limiter.redis_cluster), and limiter.on_error = \"fail_closed\": {error}"
            )));
        }
        Err(error) => {
            if matches!(error, LimiterError::Misconfigured(_)) {
                tracing::error!(%error, "the Redis limiter is misconfigured; limiting per node meanwhile");
            } else {
                tracing::warn!(%error, ?on_error, "Redis is out of reach at start; starting with the limiter's fallback, connecting in the background");
            }
            Fallback::new_open(redis, local, fallback_config, error)
        }
    };
    Ok(AnyLimiter::Redis(Box::new(RefusalCache::new(fallback))))
}
