//! One enum per port over its adapters ([`AnyRepository`], [`AnyLimiter`]): the backend
//! is chosen at run time from the configuration, and the hot path is a `match`, not a
//! `dyn` call.

use shortener_cache::CachedRepository;
use shortener_core::limiter::fallback::{BackendState, Fallback, OnError};
use shortener_core::limiter::refusals::RefusalCache;
use shortener_core::{
    AllDecision, Decision, Demand, LimiterError, LinkRepository, MultiRateLimiter, Policy,
    RateLimiter, RepositoryError, Spending, WindowCount, WindowCounter, WindowHit,
};
use shortener_memory::{MemoryRateLimiter, MemoryRepository};
use shortener_postgres::PostgresRepository;
use shortener_redis::RedisRateLimiter;
use shortener_sqlite::SqliteRepository;

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
        get_redirect, get_many, get_fresh, delete, update, list, count, tags, rename_tag, delete_tag, crawlable, links_to,
        record_visit,
        add_visits, add_dimensions, top_values, visits_by_day, claim_idempotency,
        complete_idempotency, release_idempotency, purge_idempotency, health);
}

impl shortener_core::KeyStore for AnyRepository {
    shortener_core::forward_link_repository!(each!(self) => insert_key, keys, revoke_key,
        touch_keys);
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

/// The rate limit service's calendar windows: on Redis while it answers, with `on_error`
/// deciding when it does not (`local`: this node's own counts, each limit divided by the
/// live nodes as the token buckets' shares are; otherwise the error, which the service
/// answers as that policy says). While the circuit is open, Redis is not called: the
/// node heartbeat probes it.
impl WindowCounter for AnyLimiter {
    async fn count_windows(
        &self,
        hits: &[WindowHit],
        spending: Spending,
    ) -> Result<Vec<WindowCount>, LimiterError> {
        let fallback = match self {
            Self::Memory(l) => return l.count_windows(hits, spending).await,
            Self::Redis(l) => l.inner(),
        };
        let error = if fallback.is_open() {
            fallback.last_error().unwrap_or_else(|| {
                LimiterError::Unavailable("the limiter's circuit is open".into())
            })
        } else {
            match Box::pin(fallback.primary().count_windows(hits, spending)).await {
                Ok(counts) => {
                    fallback.primary_answered();
                    return Ok(counts);
                }
                Err(error) => {
                    fallback.primary_failed(error.clone());
                    error
                }
            }
        };
        if fallback.on_error() != OnError::Local {
            return Err(error);
        }
        let nodes = fallback.nodes().max(1);
        let shares: Vec<WindowHit> = (hits.iter())
            .map(|hit| WindowHit {
                limit: hit.limit / nodes,
                ..hit.clone()
            })
            .collect();
        fallback.local().count_windows(&shares, spending).await
    }
}
