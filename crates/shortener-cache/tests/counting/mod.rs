//! A repository for the cache's tests: memory storage that counts its reads and can hold
//! their answers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use shortener_core::{
    Access, Claim, ClaimRequest, DayVisits, IdempotencyKey, InsertError, Link, LinkKey, LinkPatch,
    LinkRepository, ListQuery, NewLink, RepositoryError, ShortCode, StoredResponse, TagCount,
    VisitOutcome, VisitTally,
};
use shortener_memory::MemoryRepository;
use time::{Date, OffsetDateTime};

/// A memory repository that counts its reads, each of which takes a while after it has
/// read, so that concurrent misses really overlap. A test holding `answers` for writing
/// keeps every read that has read from answering.
#[derive(Debug, Default)]
pub struct CountingRepository {
    pub links: MemoryRepository,
    gets: AtomicU64,
    pub answers: tokio::sync::RwLock<()>,
}

impl CountingRepository {
    pub fn gets(&self) -> u64 {
        self.gets.load(Ordering::SeqCst)
    }
}

impl LinkRepository for CountingRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        self.links.insert(link).await
    }

    async fn get(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        let link = self.links.get(key).await;
        self.gets.fetch_add(1, Ordering::SeqCst);
        drop(self.answers.read().await);
        tokio::time::sleep(Duration::from_millis(20)).await;
        link
    }

    async fn delete(&self, key: &LinkKey, access: Access<'_>) -> Result<bool, RepositoryError> {
        self.links.delete(key, access).await
    }

    async fn update(
        &self,
        key: &LinkKey,
        access: Access<'_>,
        patch: &LinkPatch,
    ) -> Result<Option<Link>, RepositoryError> {
        self.links.update(key, access, patch).await
    }

    async fn list(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<Vec<Link>, RepositoryError> {
        self.links.list(access, query).await
    }

    async fn tags(&self, access: Access<'_>) -> Result<Vec<TagCount>, RepositoryError> {
        self.links.tags(access).await
    }

    async fn crawlable(
        &self,
        domain: &shortener_core::Domain,
        limit: usize,
    ) -> Result<Vec<ShortCode>, RepositoryError> {
        self.links.crawlable(domain, limit).await
    }

    async fn record_visit(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        self.links.record_visit(key, now).await
    }

    async fn add_visits(&self, visits: &[VisitTally]) -> Result<(), RepositoryError> {
        self.links.add_visits(visits).await
    }

    async fn add_dimensions(
        &self,
        tallies: &[shortener_core::DimensionTally],
        top_values: usize,
    ) -> Result<(), RepositoryError> {
        self.links.add_dimensions(tallies, top_values).await
    }

    async fn top_values(
        &self,
        query: &shortener_core::TopQuery<'_>,
    ) -> Result<Vec<shortener_core::ValueCount>, RepositoryError> {
        self.links.top_values(query).await
    }

    async fn visits_by_day(
        &self,
        key: &LinkKey,
        from: Date,
        to: Date,
    ) -> Result<Vec<DayVisits>, RepositoryError> {
        self.links.visits_by_day(key, from, to).await
    }

    async fn claim_idempotency(&self, request: &ClaimRequest) -> Result<Claim, RepositoryError> {
        self.links.claim_idempotency(request).await
    }

    async fn complete_idempotency(
        &self,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), RepositoryError> {
        self.links.complete_idempotency(key, response).await
    }

    async fn release_idempotency(&self, key: &IdempotencyKey) -> Result<(), RepositoryError> {
        self.links.release_idempotency(key).await
    }

    async fn purge_idempotency(&self, before: OffsetDateTime) -> Result<u64, RepositoryError> {
        self.links.purge_idempotency(before).await
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        self.links.health().await
    }
}
