//! `MemoryRepository`: links in sharded maps.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, RandomState};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use shortener_core::{
    InsertError, Link, LinkRepository, NewLink, RepositoryError, ShortCode, VisitOutcome,
};
use time::OffsetDateTime;

const SHARDS: usize = 16;

/// Links in memory, in 16 `RwLock`-guarded shards so that readers and writers of
/// different codes rarely meet. Every operation holds one shard's lock throughout, which
/// makes it atomic.
#[derive(Debug)]
pub struct MemoryRepository {
    hasher: RandomState,
    shards: Box<[RwLock<HashMap<ShortCode, Link>>]>,
}

impl Default for MemoryRepository {
    fn default() -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
        }
    }
}

impl MemoryRepository {
    /// How many links are stored.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.read().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn index(&self, code: &ShortCode) -> usize {
        // The remainder is below SHARDS, so the cast back cannot truncate.
        (self.hasher.hash_one(code) % SHARDS as u64) as usize
    }

    fn read(&self, code: &ShortCode) -> RwLockReadGuard<'_, HashMap<ShortCode, Link>> {
        self.shards[self.index(code)]
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self, code: &ShortCode) -> RwLockWriteGuard<'_, HashMap<ShortCode, Link>> {
        self.shards[self.index(code)]
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl LinkRepository for MemoryRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        let mut shard = self.write(&link.code);
        match shard.entry(link.code.clone()) {
            Entry::Occupied(_) => Err(InsertError::CodeTaken),
            Entry::Vacant(slot) => Ok(slot.insert(link.into_link()).clone()),
        }
    }

    async fn get(&self, code: &ShortCode) -> Result<Option<Link>, RepositoryError> {
        Ok(self.read(code).get(code).cloned())
    }

    async fn delete(&self, code: &ShortCode) -> Result<bool, RepositoryError> {
        Ok(self.write(code).remove(code).is_some())
    }

    async fn record_visit(
        &self,
        code: &ShortCode,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        let mut shard = self.write(code);
        let Some(link) = shard.get_mut(code) else {
            return Ok(VisitOutcome::NotFound);
        };
        Ok(if link.is_expired(now) {
            VisitOutcome::Expired
        } else if link.is_exhausted() {
            VisitOutcome::Exhausted
        } else {
            link.visits += 1;
            VisitOutcome::Counted(link.clone())
        })
    }

    async fn add_visits(&self, visits: &[(ShortCode, u64)]) -> Result<(), RepositoryError> {
        for (code, count) in visits {
            if let Some(link) = self.write(code).get_mut(code) {
                link.visits = link.visits.saturating_add(*count);
            }
        }
        Ok(())
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        Ok(())
    }
}
