//! Config -> concrete adapters. Backends are chosen at run time by an enum per port, so
//! the hot path is a `match`, not a `dyn` call.

use std::time::Duration;

use anyhow::Context as _;
use shortener_core::limiter::fallback::{Fallback, OnError};
use shortener_core::limiter::refusals::RefusalCache;
use shortener_core::{
    Algorithm, Decision, InsertError, LimiterError, Link, LinkRepository, NewLink, Policy,
    RateLimiter, RepositoryError, ShortCode, VisitOutcome,
};
use shortener_memory::{MemoryRateLimiter, MemoryRepository};
use shortener_moka::{CacheConfig, CachedRepository};
use shortener_postgres::PostgresRepository;
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_sqlite::{SqliteRepository, SqliteSettings, Synchronous};
use time::OffsetDateTime;

use crate::config::{
    AlgorithmConfig, Config, LimiterKind, OnErrorConfig, StorageKind, SynchronousConfig,
};

/// The storage backend named by `storage.kind`.
#[derive(Debug)]
pub enum AnyRepository {
    Memory(MemoryRepository),
    Sqlite(SqliteRepository),
    Postgres(PostgresRepository),
}

/// The limiter named by `limiter.kind`: Redis always comes wrapped in the fallback of
/// `limiter.on_error` and the local cache of refusals.
#[derive(Debug)]
pub enum AnyLimiter {
    Memory(MemoryRateLimiter),
    Redis(RefusalCache<Fallback<RedisRateLimiter, MemoryRateLimiter>>),
}

/// The repository stack of a configuration: the backend behind the moka cache.
pub type Repository = CachedRepository<AnyRepository>;

/// Connects the configured storage (applying migrations when `storage.migrate`).
///
/// # Errors
/// When the database cannot be opened or migrated.
pub async fn repository(config: &Config) -> anyhow::Result<Repository> {
    let storage = &config.storage;
    let backend = match storage.kind {
        StorageKind::Memory => AnyRepository::Memory(MemoryRepository::default()),
        StorageKind::Sqlite => AnyRepository::Sqlite(
            SqliteRepository::connect_with(
                &storage.url,
                SqliteSettings {
                    max_connections: storage.max_connections,
                    migrate: storage.migrate,
                    synchronous: match storage.sqlite_synchronous {
                        SynchronousConfig::Normal => Synchronous::Normal,
                        SynchronousConfig::Full => Synchronous::Full,
                    },
                    group_commit: storage.sqlite_group_commit,
                    wal_max_bytes: storage.sqlite_wal_max_mb << 20,
                },
            )
            .await
            .context("cannot open the SQLite database (storage.url)")?,
        ),
        StorageKind::Postgres => AnyRepository::Postgres(
            PostgresRepository::connect(&storage.url, storage.max_connections, storage.migrate)
                .await
                .context("cannot connect to PostgreSQL (storage.url)")?,
        ),
    };
    let cache = &config.cache;
    Ok(CachedRepository::new(
        backend,
        CacheConfig {
            capacity: cache.capacity,
            ttl: Duration::from_secs(cache.ttl_secs),
            negative_ttl: Duration::from_secs(cache.negative_ttl_secs),
        },
    ))
}

/// Connects the configured limiter.
///
/// # Errors
/// When Redis is configured and fails its start-up checks.
pub async fn limiter(config: &Config) -> anyhow::Result<AnyLimiter> {
    let limiter = &config.limiter;
    let algorithm = match limiter.algorithm {
        AlgorithmConfig::TokenBucket => Algorithm::TokenBucket,
        AlgorithmConfig::Gcra => Algorithm::Gcra,
    };
    if limiter.kind == LimiterKind::Memory {
        return Ok(AnyLimiter::Memory(MemoryRateLimiter::new(algorithm)));
    }
    let redis = RedisRateLimiter::connect(RedisConfig {
        url: limiter.redis_url.clone(),
        cluster_nodes: limiter.redis_cluster.clone(),
        timeout: Duration::from_millis(limiter.timeout_ms),
        key_prefix: limiter.key_prefix.clone(),
        algorithm,
        pool_size: 64,
    })
    .await
    .context(
        "the Redis limiter failed its start-up checks (limiter.redis_url / limiter.redis_cluster)",
    )?;
    let on_error = match limiter.on_error {
        OnErrorConfig::FailOpen => OnError::FailOpen,
        OnErrorConfig::FailClosed => OnError::FailClosed,
        OnErrorConfig::Local => OnError::Local,
    };
    // A probe every 250 ms puts Redis back in use well within the promised second.
    let fallback = Fallback::new(
        redis,
        MemoryRateLimiter::new(algorithm),
        on_error,
        Duration::from_millis(250),
    );
    Ok(AnyLimiter::Redis(RefusalCache::new(fallback)))
}

impl AnyRepository {
    /// Closes the backend at shutdown: for SQLite, accepted creates are committed and the
    /// WAL is checkpointed and truncated before the pool closes.
    ///
    /// # Errors
    /// When the final SQLite checkpoint fails; the pool is closed all the same.
    pub async fn close(&self) -> Result<(), RepositoryError> {
        match self {
            Self::Memory(_) => Ok(()),
            Self::Sqlite(r) => r.close().await,
            Self::Postgres(r) => {
                r.close().await;
                Ok(())
            }
        }
    }
}

impl LinkRepository for AnyRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        match self {
            Self::Memory(r) => r.insert(link).await,
            Self::Sqlite(r) => r.insert(link).await,
            Self::Postgres(r) => r.insert(link).await,
        }
    }

    async fn get(&self, code: &ShortCode) -> Result<Option<Link>, RepositoryError> {
        match self {
            Self::Memory(r) => r.get(code).await,
            Self::Sqlite(r) => r.get(code).await,
            Self::Postgres(r) => r.get(code).await,
        }
    }

    async fn delete(&self, code: &ShortCode) -> Result<bool, RepositoryError> {
        match self {
            Self::Memory(r) => r.delete(code).await,
            Self::Sqlite(r) => r.delete(code).await,
            Self::Postgres(r) => r.delete(code).await,
        }
    }

    async fn record_visit(
        &self,
        code: &ShortCode,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        match self {
            Self::Memory(r) => r.record_visit(code, now).await,
            Self::Sqlite(r) => r.record_visit(code, now).await,
            Self::Postgres(r) => r.record_visit(code, now).await,
        }
    }

    async fn add_visits(&self, visits: &[(ShortCode, u64)]) -> Result<(), RepositoryError> {
        match self {
            Self::Memory(r) => r.add_visits(visits).await,
            Self::Sqlite(r) => r.add_visits(visits).await,
            Self::Postgres(r) => r.add_visits(visits).await,
        }
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        match self {
            Self::Memory(r) => r.health().await,
            Self::Sqlite(r) => r.health().await,
            Self::Postgres(r) => r.health().await,
        }
    }
}

impl RateLimiter for AnyLimiter {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        match self {
            Self::Memory(l) => l.acquire(identity, policy, cost).await,
            Self::Redis(l) => l.acquire(identity, policy, cost).await,
        }
    }

    async fn health(&self) -> Result<(), LimiterError> {
        match self {
            Self::Memory(l) => l.health().await,
            Self::Redis(l) => l.health().await,
        }
    }
}
