//! Config -> concrete adapters. Backends are chosen at run time by an enum per port, so
//! the hot path is a `match`, not a `dyn` call.

use std::time::Duration;

use anyhow::Context as _;
use shortener_cache::{CacheConfig, CachedRepository};
use shortener_core::limiter::fallback::{BackendState, Fallback, FallbackConfig, OnError};
use shortener_core::limiter::refusals::RefusalCache;
use shortener_core::{
    Algorithm, AllDecision, Decision, Demand, LimiterError, LinkRepository, MultiRateLimiter,
    Policy, RateLimiter, RepositoryError,
};
use shortener_memory::{MemoryRateLimiter, MemoryRepository};
use shortener_postgres::PostgresRepository;
use shortener_redis::RedisRateLimiter;
use shortener_sqlite::SqliteRepository;

use crate::config::{CacheConfig as CacheKeys, RedisLimiter, Storage};

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
    /// Boxed: it is ten times the size of the memory limiter, and built once.
    Redis(Box<RefusalCache<Fallback<RedisRateLimiter, MemoryRateLimiter>>>),
}

/// The repository stack of a configuration: the backend behind the link cache.
pub type Repository = CachedRepository<AnyRepository>;

/// Connects the configured storage (applying migrations when `storage.migrate`), behind
/// the cache of `[cache]`.
///
/// # Errors
/// When the database cannot be opened or migrated.
pub async fn repository(storage: &Storage, cache: &CacheKeys) -> anyhow::Result<Repository> {
    let backend = match storage {
        Storage::Memory => AnyRepository::Memory(MemoryRepository::default()),
        Storage::Sqlite { url, settings } => AnyRepository::Sqlite(
            SqliteRepository::connect_with(url.expose(), *settings)
                .await
                .context("cannot open the SQLite database (storage.url)")?,
        ),
        Storage::Postgres { url, pool, migrate } => AnyRepository::Postgres(
            PostgresRepository::connect_with(url.expose(), *pool, *migrate)
                .await
                .context("cannot connect to PostgreSQL (storage.url)")?,
        ),
    };
    Ok(CachedRepository::new(
        backend,
        CacheConfig {
            capacity: cache.capacity,
            ttl: Duration::from_secs(cache.ttl_secs),
            negative_ttl: Duration::from_secs(cache.negative_ttl_secs),
        },
    ))
}

/// The limiter could not be set up and `limiter.on_error = "fail_closed"` forbids
/// starting without it: the process exits with code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LimiterRefusedStart(pub String);

/// How long a node counts in the heartbeat after its last beat.
pub const HEARTBEAT_WINDOW: Duration = Duration::from_secs(5);

/// How often a node beats.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(1);

/// Connects the configured limiter.
///
/// With Redis, a server that cannot be reached (or fails its checks) at start stops the
/// start under `on_error = "fail_closed"` ([`LimiterRefusedStart`]); under `local` and
/// `fail_open` the node starts with its circuit open and connects on a later probe.
///
/// # Errors
/// [`LimiterRefusedStart`], as above.
pub async fn limiter(
    algorithm: Algorithm,
    redis: Option<&RedisLimiter>,
) -> anyhow::Result<AnyLimiter> {
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
            return Err(LimiterRefusedStart(format!(
                "the Redis limiter failed its start-up checks (limiter.redis_url / \
                 limiter.redis_cluster), and limiter.on_error = \"fail_closed\": {error}"
            ))
            .into());
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

/// A random id for this process in the node heartbeat.
pub fn node_id() -> String {
    let mut bytes = [0u8; 8];
    // Without randomness the pid and the time still tell nodes apart in practice.
    let _ = getrandom::fill(&mut bytes);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    format!("{}-{}-{nanos}", hex::encode(bytes), std::process::id())
}

/// Beats every [`HEARTBEAT_INTERVAL`] until `stop`: records this node in Redis, sets the
/// fallback's node count from the reply, and tells the breaker how Redis is doing, so
/// that `/readyz` is true and Redis is back in use within a beat even without traffic.
pub async fn heartbeat_forever(
    limiter: &RefusalCache<Fallback<RedisRateLimiter, MemoryRateLimiter>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let fallback = limiter.inner();
    let node = node_id();
    let mut ticks = tokio::time::interval(HEARTBEAT_INTERVAL);
    let mut last_error: Option<String> = None;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.changed() => return,
        }
        match fallback.primary().heartbeat(&node, HEARTBEAT_WINDOW).await {
            Ok(nodes) => {
                fallback.set_nodes(nodes);
                fallback.primary_answered();
                if last_error.take().is_some() {
                    tracing::info!(nodes, "Redis answers again");
                }
            }
            Err(error) => {
                let message = error.to_string();
                if last_error.as_deref() != Some(message.as_str()) {
                    if matches!(error, LimiterError::Misconfigured(_)) {
                        tracing::error!(%error, "the Redis limiter is misconfigured");
                    } else {
                        tracing::warn!(%error, "the Redis limiter does not answer");
                    }
                }
                last_error = Some(message);
                fallback.primary_failed(error);
            }
        }
    }
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

/// Calls the same method on whichever repository this is.
macro_rules! each {
    ($self:ident, $repository:ident => $call:expr) => {
        match $self {
            Self::Memory($repository) => $call,
            Self::Sqlite($repository) => $call,
            Self::Postgres($repository) => $call,
        }
    };
}

impl LinkRepository for AnyRepository {
    shortener_core::forward_link_repository!(each!(self) => insert, insert_many, get,
        get_redirect, get_many, get_fresh, delete, update, list, tags, crawlable, record_visit,
        add_visits, add_dimensions, top_values, visits_by_day, claim_idempotency,
        complete_idempotency, release_idempotency, purge_idempotency, health);
}

impl AnyLimiter {
    /// How the limiter is doing, and the backend's last error when it is not `Ok`.
    pub fn state(&self) -> (BackendState, Option<LimiterError>) {
        match self {
            Self::Memory(_) => (BackendState::Ok, None),
            Self::Redis(limiter) => (limiter.inner().state(), limiter.inner().last_error()),
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
            // Boxed: a network call's large future, which the memory limiter's callers (every
            // limited request) would otherwise carry and copy too.
            Self::Redis(l) => Box::pin(l.acquire(identity, policy, cost)).await,
        }
    }

    async fn health(&self) -> Result<(), LimiterError> {
        match self {
            Self::Memory(l) => l.health().await,
            Self::Redis(l) => l.health().await,
        }
    }
}

impl MultiRateLimiter for AnyLimiter {
    async fn acquire_all(
        &self,
        group: &str,
        demands: &[Demand],
    ) -> Result<AllDecision, LimiterError> {
        match self {
            Self::Memory(l) => l.acquire_all(group, demands).await,
            Self::Redis(l) => Box::pin(l.acquire_all(group, demands)).await,
        }
    }
}
