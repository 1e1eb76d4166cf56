//! A read-through cache in front of any [`LinkRepository`]: [`CachedRepository`].
//!
//! - Reads go through a moka `future::Cache` of `Option<Arc<Link>>`: found links are kept for
//!   [`CacheConfig::ttl`], unknown keys (negative entries) for
//!   [`CacheConfig::negative_ttl`]. Concurrent misses of one key make one inner read. The key
//!   is the link's domain and code, so a link on one domain is never served for another.
//! - Writes go to the inner repository first, then fix the cache: `insert` stores the new
//!   link, `delete` drops the key, and `record_visit` stores the counted link (or drops
//!   the key). `add_visits` leaves the cache alone: a visit count changes no redirect,
//!   and evicting every visited link at each flush emptied the cache under traffic spread
//!   over many links. Cached links keep the visit count they were read with, so
//!   `get_fresh` (the API's lookup) reads the inner repository.
//! - `get_shared` (a redirect's read) hands out the cached `Arc`; `get` copies the link.
//! - [`CacheStats`] counts hits and misses for `/metrics`.
//!
//! The cache is per process: another node's writes show here only when the entry
//! expires, so staleness across nodes is bounded by the ttls, not removed. Decisions
//! that must be exact (`record_visit` on a link with `max_visits`) always go to the inner
//! repository. This crate stores nothing itself.

mod expiry;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use moka::future::Cache;
use moka::ops::compute::Op;
use shortener_core::{
    Access, Claim, ClaimRequest, DayVisits, Domain, IdempotencyKey, InsertError, Link, LinkKey,
    LinkPatch, LinkRepository, ListQuery, NewLink, RepositoryError, ShortCode, StoredResponse,
    TagCount, VisitOutcome, VisitTally,
};
use time::{Date, OffsetDateTime};

use crate::expiry::PerEntryTtl;

/// How much to cache, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// Most entries kept (found and unknown codes alike); 0 turns the cache off.
    pub capacity: u64,
    /// How long a found link is served from the cache.
    pub ttl: Duration,
    /// How long an unknown code is remembered as unknown.
    pub negative_ttl: Duration,
}

impl Default for CacheConfig {
    /// The `[cache]` defaults: 100 000 entries, 60s, 5s for unknown codes.
    fn default() -> Self {
        Self {
            capacity: 100_000,
            ttl: Duration::from_secs(60),
            negative_ttl: Duration::from_secs(5),
        }
    }
}

/// Reads answered from the cache (`hits`) and reads that went to the inner repository
/// (`misses`; with the cache off, every read is one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

/// A [`LinkRepository`] that answers `get` from a moka cache in front of `R`.
pub struct CachedRepository<R> {
    inner: R,
    config: CacheConfig,
    /// `None` when the capacity is 0: every call passes through.
    cache: Option<Cache<LinkKey, Option<Arc<Link>>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<R: LinkRepository> CachedRepository<R> {
    pub fn new(inner: R, config: CacheConfig) -> Self {
        let cache = (config.capacity > 0).then(|| {
            Cache::builder()
                .max_capacity(config.capacity)
                .expire_after(PerEntryTtl {
                    ttl: config.ttl,
                    negative_ttl: config.negative_ttl,
                })
                .build()
        });
        Self {
            inner,
            config,
            cache,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub fn inner(&self) -> &R {
        &self.inner
    }

    pub fn config(&self) -> CacheConfig {
        self.config
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// Drops the cached copy of `key`: its link changed elsewhere (another node).
    pub async fn forget(&self, key: &LinkKey) {
        if let Some(cache) = &self.cache {
            cache.invalidate(key).await;
        }
    }

    /// Drops every cached link: changes made elsewhere may have been missed.
    pub fn forget_all(&self) {
        if let Some(cache) = &self.cache {
            cache.invalidate_all();
        }
    }
}

impl<R: LinkRepository> LinkRepository for CachedRepository<R> {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        let key = LinkKey::new(link.domain.clone(), link.code.clone());
        let result = self.inner.insert(link).await;
        if let Some(cache) = &self.cache {
            match &result {
                Ok(link) => cache.insert(key, Some(Arc::new(link.clone()))).await,
                // The code exists (perhaps written by another node while a negative entry
                // was cached here), or the outcome is unknown: read it again next time.
                Err(_) => cache.invalidate(&key).await,
            }
        }
        result
    }

    async fn get(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        Ok(self.get_shared(key).await?.map(Arc::unwrap_or_clone))
    }

    async fn get_shared(&self, key: &LinkKey) -> Result<Option<Arc<Link>>, RepositoryError> {
        let Some(cache) = &self.cache else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return self.inner.get_shared(key).await;
        };
        // A hit is a plain lookup: the entry API below costs more (it registers with
        // moka's initializer map), and redirects are mostly hits.
        if let Some(link) = cache.get(key).await {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(link);
        }
        // Of concurrent misses on one code, one runs `init` (a fresh entry, the miss) and
        // the others wait for its result.
        let entry = cache
            .entry_by_ref(key)
            .or_try_insert_with(self.inner.get_shared(key))
            .await
            .map_err(|error| (*error).clone())?;
        let counter = if entry.is_fresh() {
            &self.misses
        } else {
            &self.hits
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(entry.into_value())
    }

    async fn delete(&self, key: &LinkKey, access: Access<'_>) -> Result<bool, RepositoryError> {
        let result = self.inner.delete(key, access).await;
        self.forget(key).await;
        result
    }

    async fn update(
        &self,
        key: &LinkKey,
        access: Access<'_>,
        patch: &LinkPatch,
    ) -> Result<Option<Link>, RepositoryError> {
        let result = self.inner.update(key, access, patch).await;
        // Forgotten whatever the outcome: an error may have left the edit done.
        self.forget(key).await;
        result
    }

    async fn list(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<Vec<Link>, RepositoryError> {
        self.inner.list(access, query).await
    }

    async fn tags(&self, access: Access<'_>) -> Result<Vec<TagCount>, RepositoryError> {
        self.inner.tags(access).await
    }

    async fn crawlable(
        &self,
        domain: &Domain,
        limit: usize,
    ) -> Result<Vec<ShortCode>, RepositoryError> {
        self.inner.crawlable(domain, limit).await
    }

    async fn record_visit(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        let outcome = self.inner.record_visit(key, now).await;
        let Some(cache) = &self.cache else {
            return outcome;
        };
        match &outcome {
            Ok(VisitOutcome::Counted(link)) => {
                // Concurrent visits finish in any order: keep the highest count seen.
                let counted = Arc::clone(link);
                cache
                    .entry_by_ref(key)
                    .and_compute_with(|cached| async move {
                        match cached.map(|entry| entry.into_value()) {
                            Some(Some(cached)) if cached.visits >= counted.visits => Op::Nop,
                            _ => Op::Put(Some(counted)),
                        }
                    })
                    .await;
            }
            _ => cache.invalidate(key).await,
        }
        outcome
    }

    /// From the store, in one query, without filling the cache (an import's look-ups,
    /// not redirects).
    async fn get_many(&self, keys: &[LinkKey]) -> Result<Vec<Option<Link>>, RepositoryError> {
        self.inner.get_many(keys).await
    }

    async fn get_fresh(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        self.inner.get_fresh(key).await
    }

    /// Leaves cached redirects alone: a count changes no target.
    async fn add_visits(&self, visits: &[VisitTally]) -> Result<(), RepositoryError> {
        self.inner.add_visits(visits).await
    }

    async fn add_dimensions(
        &self,
        tallies: &[shortener_core::DimensionTally],
        top_values: usize,
    ) -> Result<(), RepositoryError> {
        self.inner.add_dimensions(tallies, top_values).await
    }

    async fn top_values(
        &self,
        query: &shortener_core::TopQuery<'_>,
    ) -> Result<Vec<shortener_core::ValueCount>, RepositoryError> {
        self.inner.top_values(query).await
    }

    async fn visits_by_day(
        &self,
        key: &LinkKey,
        from: Date,
        to: Date,
    ) -> Result<Vec<DayVisits>, RepositoryError> {
        self.inner.visits_by_day(key, from, to).await
    }

    async fn claim_idempotency(&self, request: &ClaimRequest) -> Result<Claim, RepositoryError> {
        self.inner.claim_idempotency(request).await
    }

    async fn complete_idempotency(
        &self,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), RepositoryError> {
        self.inner.complete_idempotency(key, response).await
    }

    async fn release_idempotency(&self, key: &IdempotencyKey) -> Result<(), RepositoryError> {
        self.inner.release_idempotency(key).await
    }

    async fn purge_idempotency(&self, before: OffsetDateTime) -> Result<u64, RepositoryError> {
        self.inner.purge_idempotency(before).await
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        self.inner.health().await
    }
}

impl<R: fmt::Debug> fmt::Debug for CachedRepository<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedRepository")
            .field("inner", &self.inner)
            .field("config", &self.config)
            .field("entries", &self.cache.as_ref().map(Cache::entry_count))
            .field("hits", &self.hits.load(Ordering::Relaxed))
            .field("misses", &self.misses.load(Ordering::Relaxed))
            .finish()
    }
}
