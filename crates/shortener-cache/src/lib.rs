//! A read-through cache of redirects in front of any [`LinkRepository`]:
//! [`CachedRepository`].
//!
//! - A redirect's read (`get_redirect`) goes through a `quick_cache` table of
//!   [`Redirect`]s: a found link is served for [`CacheConfig::ttl`], an unknown key (a
//!   negative entry) for [`CacheConfig::negative_ttl`], each counted from its write (a
//!   read does not extend it). An expired entry is read again from the store at its next
//!   use, or evicted first; either way the table holds about [`CacheConfig::capacity`]
//!   entries at most. Concurrent misses of one key make one inner read.
//! - The table is built to hold a million links in little memory: a key is one
//!   allocation (`domain/code`, `key::CachedKey`), a plain link is its target and three
//!   small fields ([`shortener_core::Plain`]), and the table itself has no per-entry
//!   nodes (an open-addressing index over a slab, CLOCK-like eviction: S3-FIFO's hot and
//!   cold queues). moka, used before, kept each link in five allocations.
//!   See `cargo xtask bench --only links` (RSS per cached link) in docs/BENCHMARKS.md.
//! - Writes go to the inner repository first, then fix the cache: `insert` stores the new
//!   link, `delete` and `update` drop the key, and `record_visit` stores the counted link
//!   (or drops the key). `add_visits` leaves the cache alone: a visit count changes no
//!   redirect. A write that lands while a miss is being read wins: the read's result is
//!   discarded.
//! - Every other read (`get`, `get_fresh`, listings) goes to the inner repository: the
//!   cache holds redirects, not whole links with their current visit counts.
//! - [`CacheStats`] counts the redirect reads' hits and misses for `/metrics`.
//!
//! The cache is per process: another node's writes show here only when the entry
//! expires, so staleness across nodes is bounded by the ttls, not removed. Decisions
//! that must be exact (`record_visit` on a link with `max_visits`) always go to the inner
//! repository. This crate stores nothing itself.

mod key;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use quick_cache::sync::{Cache, EntryAction, EntryResult};
use shortener_core::{
    Access, InsertError, Link, LinkKey, LinkPatch, LinkRepository, NewLink, Redirect,
    RepositoryError, VisitOutcome,
};
use time::OffsetDateTime;

use crate::key::CachedKey;

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

/// Redirect reads answered from the cache (`hits`) and those that went to the inner
/// repository (`misses`; with the cache off, every read is one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

/// A cached answer: the link's redirect, or `None` for an unknown key, until `until`
/// (milliseconds since the cache was made).
#[derive(Debug, Clone)]
struct Entry {
    until: u64,
    redirect: Option<Redirect>,
}

/// A [`LinkRepository`] that answers redirects from a cache in front of `R`.
pub struct CachedRepository<R> {
    inner: R,
    config: CacheConfig,
    /// `None` when the capacity is 0: every call passes through.
    cache: Option<Cache<CachedKey, Entry>>,
    /// The origin of the entries' deadlines.
    started: Instant,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<R: LinkRepository> CachedRepository<R> {
    pub fn new(inner: R, config: CacheConfig) -> Self {
        let capacity = usize::try_from(config.capacity).unwrap_or(usize::MAX);
        Self {
            inner,
            config,
            cache: (capacity > 0).then(|| Cache::new(capacity)),
            started: Instant::now(),
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
    pub fn forget(&self, key: &LinkKey) {
        if let Some(cache) = &self.cache {
            cache.remove(key);
        }
    }

    /// Drops every cached link: changes made elsewhere may have been missed.
    pub fn forget_all(&self) {
        if let Some(cache) = &self.cache {
            cache.clear();
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The entry of `redirect` written now: it lives for the ttl of its kind.
    fn entry(&self, redirect: Option<Redirect>) -> Entry {
        let ttl = match redirect {
            Some(_) => self.config.ttl,
            None => self.config.negative_ttl,
        };
        let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        Entry {
            until: self.now().saturating_add(ttl),
            redirect,
        }
    }

    /// A redirect read that found no live entry: one of the concurrent misses on the
    /// key reads it from the store (holding the guard), the others wait for its answer.
    async fn miss(
        &self,
        cache: &Cache<CachedKey, Entry>,
        key: &LinkKey,
        now: u64,
    ) -> Result<Option<Redirect>, RepositoryError> {
        let owned = CachedKey::new(key);
        let guard = match cache
            .entry_async(&owned, |_, entry: &mut Entry| {
                if entry.until > now {
                    EntryAction::Retain(entry.redirect.clone())
                } else {
                    EntryAction::ReplaceWithGuard
                }
            })
            .await
        {
            EntryResult::Retained(redirect) => {
                self.count(true);
                return Ok(redirect);
            }
            EntryResult::Vacant(guard) | EntryResult::Replaced(guard, _) => guard,
            EntryResult::Removed(..) | EntryResult::Timeout => {
                unreachable!("neither asked for")
            }
        };
        self.count(false);
        let redirect = self.inner.get_redirect(key).await?;
        // Refused when the key was written or dropped meanwhile: that write wins.
        let _ = guard.insert(self.entry(redirect.clone()));
        Ok(redirect)
    }

    fn count(&self, hit: bool) {
        let counter = if hit { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl<R: LinkRepository> LinkRepository for CachedRepository<R> {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        let key = link.key();
        let result = self.inner.insert(link).await;
        if let Some(cache) = &self.cache {
            match &result {
                Ok(link) => {
                    let entry = self.entry(Some(Redirect::from(link.clone())));
                    cache.insert(CachedKey::new(&key), entry);
                }
                // The code exists (perhaps written by another node while a negative entry
                // was cached here), or the outcome is unknown: read it again next time.
                Err(_) => {
                    cache.remove(&key);
                }
            }
        }
        result
    }

    async fn get_redirect(&self, key: &LinkKey) -> Result<Option<Redirect>, RepositoryError> {
        let Some(cache) = &self.cache else {
            self.count(false);
            return Box::pin(self.inner.get_redirect(key)).await;
        };
        // A hit is a plain lookup under the shard's read lock, with no allocation.
        let now = self.now();
        if let Some(entry) = cache.get(key)
            && entry.until > now
        {
            self.count(true);
            return Ok(entry.redirect);
        }
        // Boxed: the read of the store is a large future, which a hit would otherwise
        // carry (and copy) too.
        Box::pin(self.miss(cache, key, now)).await
    }

    async fn delete(&self, key: &LinkKey, access: Access<'_>) -> Result<bool, RepositoryError> {
        let result = self.inner.delete(key, access).await;
        self.forget(key);
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
        self.forget(key);
        result
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
                let counted = self.entry(Some(Redirect::Full(Arc::clone(link))));
                let kept = counted.clone();
                let newer = |cached: &Entry| match cached.redirect.as_ref().and_then(Redirect::full)
                {
                    Some(cached) => cached.visits < link.visits,
                    None => true,
                };
                let result = cache
                    .entry_async(&CachedKey::new(key), |_, cached: &mut Entry| {
                        if newer(cached) {
                            *cached = kept;
                        }
                        EntryAction::Retain(())
                    })
                    .await;
                if let EntryResult::Vacant(guard) = result {
                    let _ = guard.insert(counted);
                }
            }
            _ => {
                cache.remove(key);
            }
        }
        outcome
    }

    // From the store, the cache neither read nor filled: it holds redirects, not whole
    // links (`get`, and `get_many`, an import's look-ups, in one query); a count changes
    // no target, so cached redirects stay (`add_visits`).
    shortener_core::forward_link_repository!(self.inner => get, get_many, get_fresh, list, count, tags, rename_tag, delete_tag, links_to,
        crawlable, add_visits, add_dimensions, top_values, visits_by_day, claim_idempotency,
        complete_idempotency, release_idempotency, purge_idempotency, health);
}

impl<R: fmt::Debug> fmt::Debug for CachedRepository<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedRepository")
            .field("inner", &self.inner)
            .field("config", &self.config)
            .field("entries", &self.cache.as_ref().map(Cache::len))
            .field("hits", &self.hits.load(Ordering::Relaxed))
            .field("misses", &self.misses.load(Ordering::Relaxed))
            .finish()
    }
}

/// Keys are not cached here: the service keeps its own snapshot of them.
impl<R: shortener_core::KeyStore> shortener_core::KeyStore for CachedRepository<R> {
    shortener_core::forward_link_repository!(self.inner => insert_key, keys, revoke_key,
        touch_keys);
}
