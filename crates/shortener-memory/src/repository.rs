//! `MemoryRepository`: links in sharded maps, an ordered index for listings, and the
//! idempotency records in one map.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use shortener_core::dimensions::{StoredValues, placed, top};
use shortener_core::{
    Access, Claim, ClaimRequest, DayVisits, Dimension, DimensionTally, Domain, IdempotencyKey,
    InsertError, Link, LinkKey, LinkPatch, LinkRepository, ListQuery, ListTotals, NewLink, Owner,
    RepositoryError, Sharded, ShortCode, StoredResponse, Tag, TagCount, TargetUrl, TopQuery,
    ValueCount, VisitOutcome, VisitScope, VisitTally,
};
use time::{Date, OffsetDateTime};

const SHARDS: usize = 16;

/// A link and its visits per day (people, bots).
#[derive(Debug)]
pub(crate) struct Stored {
    pub(crate) link: Link,
    pub(crate) days: BTreeMap<Date, (u64, u64)>,
    /// Visits per value of each dimension, by day.
    values: BTreeMap<(Date, Dimension), HashMap<String, u64>>,
}

pub(crate) type Shard = HashMap<LinkKey, Stored>;

/// A link's place in listings: their order, then the link's key.
pub(crate) type Position = (OffsetDateTime, ShortCode, Domain);

fn position(link: &Link) -> Position {
    (link.created_at, link.code.clone(), link.domain.clone())
}

/// One idempotency key's record.
#[derive(Debug)]
struct Record {
    fingerprint: String,
    claimed_at: OffsetDateTime,
    response: Option<StoredResponse>,
}

/// Links in memory, in 16 `RwLock`-guarded shards so that readers and writers of
/// different links rarely meet. Every operation on a link holds its shard's lock
/// throughout, which makes it atomic.
///
/// Listings walk `index`, the (created_at, code, domain) triples in order; inserts and deletes
/// change it while holding the link's shard lock (shard first, then index), so a link is
/// in the index exactly while it is stored.
#[derive(Debug)]
pub struct MemoryRepository {
    shards: Sharded<Shard>,
    pub(crate) index: RwLock<BTreeSet<Position>>,
    idempotency: Mutex<HashMap<IdempotencyKey, Record>>,
    /// Held by a flush of visit values from its read of what is stored to its last
    /// write, so that two flushes never take the same free place under the cap.
    placing: Mutex<()>,
    /// API keys by name.
    pub(crate) keys: Mutex<BTreeMap<String, shortener_core::StoredKey>>,
}

impl Default for MemoryRepository {
    fn default() -> Self {
        Self {
            shards: Sharded::new(SHARDS),
            index: RwLock::default(),
            idempotency: Mutex::default(),
            placing: Mutex::default(),
            keys: Mutex::default(),
        }
    }
}

impl MemoryRepository {
    /// How many links are stored.
    pub fn len(&self) -> usize {
        self.shards.each().map(|shard| shard.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn read(&self, key: &LinkKey) -> RwLockReadGuard<'_, Shard> {
        self.shards.read(key)
    }

    pub(crate) fn write(&self, key: &LinkKey) -> RwLockWriteGuard<'_, Shard> {
        self.shards.write(key)
    }

    /// The stored link at a position of the index, if it is still there.
    pub(crate) fn at(&self, (_, code, domain): &Position) -> Option<Link> {
        let key = LinkKey::new(domain.clone(), code.clone());
        self.read(&key).get(&key).map(|stored| stored.link.clone())
    }

    fn index_write(&self) -> RwLockWriteGuard<'_, BTreeSet<Position>> {
        self.index.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn records(&self) -> MutexGuard<'_, HashMap<IdempotencyKey, Record>> {
        self.idempotency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl LinkRepository for MemoryRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        let key = LinkKey::new(link.domain.clone(), link.code.clone());
        let mut shard = self.write(&key);
        match shard.entry(key) {
            Entry::Occupied(_) => Err(InsertError::CodeTaken),
            Entry::Vacant(slot) => {
                let link = link.into_link();
                self.index_write().insert(position(&link));
                let stored = slot.insert(Stored {
                    link,
                    days: BTreeMap::new(),
                    values: BTreeMap::new(),
                });
                Ok(stored.link.clone())
            }
        }
    }

    async fn get(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        Ok(self.read(key).get(key).map(|stored| stored.link.clone()))
    }

    async fn delete(&self, key: &LinkKey, access: Access<'_>) -> Result<bool, RepositoryError> {
        let mut shard = self.write(key);
        let Entry::Occupied(entry) = shard.entry(key.clone()) else {
            return Ok(false);
        };
        if !access.reaches(entry.get().link.owner.as_ref()) {
            return Ok(false);
        }
        let stored = entry.remove();
        self.index_write().remove(&position(&stored.link));
        Ok(true)
    }

    async fn update(
        &self,
        key: &LinkKey,
        access: Access<'_>,
        patch: &LinkPatch,
    ) -> Result<Option<Link>, RepositoryError> {
        let mut shard = self.write(key);
        Ok(match shard.get_mut(key) {
            Some(stored) if access.reaches(stored.link.owner.as_ref()) => {
                stored.link = patch.apply(stored.link.clone());
                Some(stored.link.clone())
            }
            _ => None,
        })
    }

    async fn list(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<Vec<Link>, RepositoryError> {
        Ok(self.walk_page(access, query))
    }

    async fn count(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<ListTotals, RepositoryError> {
        Ok(self.walk_count(access, query))
    }

    async fn rename_tag(
        &self,
        access: Access<'_>,
        from: &Tag,
        to: &Tag,
    ) -> Result<u64, RepositoryError> {
        Ok(self.retag(access, |tags| tags.renamed(from, to)))
    }

    async fn delete_tag(&self, access: Access<'_>, tag: &Tag) -> Result<u64, RepositoryError> {
        Ok(self.retag(access, |tags| tags.without(tag)))
    }

    async fn tags(&self, access: Access<'_>) -> Result<Vec<TagCount>, RepositoryError> {
        Ok(self.walk_tags(access))
    }

    async fn links_to(
        &self,
        domain: &Domain,
        owner: Option<&Owner>,
        url: &TargetUrl,
        limit: usize,
    ) -> Result<Vec<Link>, RepositoryError> {
        Ok(self.walk_to(domain, owner, url, limit))
    }

    async fn crawlable(
        &self,
        domain: &Domain,
        limit: usize,
    ) -> Result<Vec<ShortCode>, RepositoryError> {
        Ok(self.walk_crawlable(domain, limit))
    }

    async fn record_visit(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        let mut shard = self.write(key);
        let Some(Stored { link, .. }) = shard.get_mut(key) else {
            return Ok(VisitOutcome::NotFound);
        };
        Ok(if link.is_expired(now) {
            VisitOutcome::Expired
        } else if link.is_exhausted() {
            VisitOutcome::Exhausted
        } else {
            link.visits += 1;
            VisitOutcome::Counted(std::sync::Arc::new(link.clone()))
        })
    }

    async fn add_visits(&self, visits: &[VisitTally]) -> Result<(), RepositoryError> {
        for tally in visits {
            if let Some(stored) = self.write(&tally.key).get_mut(&tally.key) {
                if stored.link.max_visits.is_none() {
                    stored.link.visits = stored.link.visits.saturating_add(tally.visits);
                }
                let day = stored.days.entry(tally.day).or_default();
                day.0 = day.0.saturating_add(tally.visits);
                day.1 = day.1.saturating_add(tally.bots);
            }
        }
        Ok(())
    }

    async fn add_dimensions(
        &self,
        tallies: &[DimensionTally],
        top_values: usize,
    ) -> Result<(), RepositoryError> {
        // What each (link, day, dimension) holds, then the rows placed against it, with no
        // other flush in between.
        let _placing = self.placing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stored_values = StoredValues::new();
        for tally in tallies {
            let group = (tally.key.clone(), tally.day, tally.dimension);
            if stored_values.contains_key(&group) {
                continue;
            }
            let shard = self.read(&tally.key);
            let known = (shard.get(&tally.key))
                .and_then(|stored| stored.values.get(&(tally.day, tally.dimension)))
                .map(|values| values.keys().cloned().collect())
                .unwrap_or_default();
            stored_values.insert(group, known);
        }
        for row in placed(tallies, stored_values, top_values) {
            if let Some(stored) = self.write(&row.key).get_mut(&row.key) {
                let values = stored.values.entry((row.day, row.dimension)).or_default();
                let count = values.entry(row.value).or_default();
                *count = count.saturating_add(row.visits);
            }
        }
        Ok(())
    }

    async fn top_values(&self, query: &TopQuery<'_>) -> Result<Vec<ValueCount>, RepositoryError> {
        let mut counts: Vec<(String, u64)> = Vec::new();
        let mut take = |stored: &Stored| {
            for ((day, dimension), values) in &stored.values {
                if *dimension == query.dimension && (query.from..=query.to).contains(day) {
                    counts.extend(values.iter().map(|(value, n)| (value.clone(), *n)));
                }
            }
        };
        match query.scope {
            VisitScope::Link(key) => {
                if let Some(stored) = self.read(key).get(key) {
                    take(stored);
                }
            }
            VisitScope::Within(access, tags) => {
                for shard in self.shards.each() {
                    (shard.values())
                        .filter(|stored| access.reaches(stored.link.owner.as_ref()))
                        .filter(|stored| stored.link.tags.contains_all(tags))
                        .for_each(&mut take);
                }
            }
        }
        Ok(top(counts, query.limit))
    }

    async fn visits_by_day(
        &self,
        key: &LinkKey,
        from: Date,
        to: Date,
    ) -> Result<Vec<DayVisits>, RepositoryError> {
        if from > to {
            return Ok(Vec::new());
        }
        Ok(self.read(key).get(key).map_or_else(Vec::new, |stored| {
            stored
                .days
                .range(from..=to)
                .map(|(&day, &(visits, bots))| DayVisits { day, visits, bots })
                .collect()
        }))
    }

    async fn claim_idempotency(&self, request: &ClaimRequest) -> Result<Claim, RepositoryError> {
        let mut records = self.records();
        if let Some(record) = records.get(&request.key) {
            let expired = record.claimed_at < request.expired_before();
            let abandoned = record.response.is_none() && record.claimed_at < request.lease_before();
            if !expired && !abandoned {
                return Ok(if record.fingerprint != request.fingerprint {
                    Claim::Mismatch
                } else if let Some(response) = &record.response {
                    Claim::Replay(response.clone())
                } else {
                    Claim::InFlight
                });
            }
        }
        records.insert(
            request.key.clone(),
            Record {
                fingerprint: request.fingerprint.clone(),
                claimed_at: request.now,
                response: None,
            },
        );
        Ok(Claim::Claimed)
    }

    async fn complete_idempotency(
        &self,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), RepositoryError> {
        if let Some(record) = self.records().get_mut(key) {
            record.response = Some(response.clone());
        }
        Ok(())
    }

    async fn release_idempotency(&self, key: &IdempotencyKey) -> Result<(), RepositoryError> {
        let mut records = self.records();
        if records
            .get(key)
            .is_some_and(|record| record.response.is_none())
        {
            records.remove(key);
        }
        Ok(())
    }

    async fn purge_idempotency(&self, before: OffsetDateTime) -> Result<u64, RepositoryError> {
        let mut records = self.records();
        let was = records.len();
        records.retain(|_, record| record.claimed_at >= before);
        Ok((was - records.len()) as u64)
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        Ok(())
    }
}
