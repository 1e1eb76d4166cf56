//! The shared `LinkRepository` story, on a file (several connections, with and without
//! group commit) and in memory.

use shortener_core::{
    Access, Claim, ClaimRequest, DayVisits, Domain, IdempotencyKey, InsertError, Link, LinkKey,
    LinkPatch, LinkRepository, ListQuery, NewLink, RepositoryError, ShortCode, StoredResponse,
    TagCount, VisitOutcome, VisitTally,
};
use shortener_sqlite::{SqliteRepository, SqliteSettings, Synchronous};
use time::{Date, OffsetDateTime};

use crate::TempDatabase;

/// A repository on its own database file, which is removed when it is dropped.
#[derive(Debug)]
pub struct FileRepository {
    repository: SqliteRepository,
    _database: TempDatabase,
}

impl LinkRepository for FileRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        self.repository.insert(link).await
    }

    async fn insert_many(
        &self,
        links: Vec<NewLink>,
    ) -> Result<Vec<Result<Link, InsertError>>, RepositoryError> {
        self.repository.insert_many(links).await
    }

    async fn get_many(&self, keys: &[LinkKey]) -> Result<Vec<Option<Link>>, RepositoryError> {
        self.repository.get_many(keys).await
    }

    async fn get(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        self.repository.get(key).await
    }

    async fn delete(&self, key: &LinkKey, access: Access<'_>) -> Result<bool, RepositoryError> {
        self.repository.delete(key, access).await
    }

    async fn update(
        &self,
        key: &LinkKey,
        access: Access<'_>,
        patch: &LinkPatch,
    ) -> Result<Option<Link>, RepositoryError> {
        self.repository.update(key, access, patch).await
    }

    async fn list(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<Vec<Link>, RepositoryError> {
        self.repository.list(access, query).await
    }

    async fn tags(&self, access: Access<'_>) -> Result<Vec<TagCount>, RepositoryError> {
        self.repository.tags(access).await
    }

    async fn crawlable(
        &self,
        domain: &Domain,
        limit: usize,
    ) -> Result<Vec<ShortCode>, RepositoryError> {
        self.repository.crawlable(domain, limit).await
    }

    async fn record_visit(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        self.repository.record_visit(key, now).await
    }

    async fn add_visits(&self, visits: &[VisitTally]) -> Result<(), RepositoryError> {
        self.repository.add_visits(visits).await
    }

    async fn add_dimensions(
        &self,
        tallies: &[shortener_core::DimensionTally],
        top_values: usize,
    ) -> Result<(), RepositoryError> {
        self.repository.add_dimensions(tallies, top_values).await
    }

    async fn top_values(
        &self,
        query: &shortener_core::TopQuery<'_>,
    ) -> Result<Vec<shortener_core::ValueCount>, RepositoryError> {
        self.repository.top_values(query).await
    }

    async fn visits_by_day(
        &self,
        key: &LinkKey,
        from: Date,
        to: Date,
    ) -> Result<Vec<DayVisits>, RepositoryError> {
        self.repository.visits_by_day(key, from, to).await
    }

    async fn claim_idempotency(&self, request: &ClaimRequest) -> Result<Claim, RepositoryError> {
        self.repository.claim_idempotency(request).await
    }

    async fn complete_idempotency(
        &self,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), RepositoryError> {
        self.repository.complete_idempotency(key, response).await
    }

    async fn release_idempotency(&self, key: &IdempotencyKey) -> Result<(), RepositoryError> {
        self.repository.release_idempotency(key).await
    }

    async fn purge_idempotency(&self, before: OffsetDateTime) -> Result<u64, RepositoryError> {
        self.repository.purge_idempotency(before).await
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        self.repository.health().await
    }
}

mod file {
    use super::*;

    async fn make() -> FileRepository {
        let database = TempDatabase::default();
        FileRepository {
            repository: database.connect(true).await,
            _database: database,
        }
    }

    shortener_conformance::link_repository_tests!(make);
}

/// Inserts straight on the pool (no writer task), with `synchronous = NORMAL`.
mod file_without_group_commit {
    use super::*;

    async fn make() -> FileRepository {
        let database = TempDatabase::default();
        let settings = SqliteSettings {
            max_connections: 8,
            group_commit: false,
            synchronous: Synchronous::Normal,
            ..SqliteSettings::default()
        };
        FileRepository {
            repository: SqliteRepository::connect_with(&database.url, settings)
                .await
                .expect("connect"),
            _database: database,
        }
    }

    shortener_conformance::link_repository_tests!(make);
}

mod memory {
    use super::*;

    async fn make() -> SqliteRepository {
        SqliteRepository::connect("sqlite::memory:", 8, true)
            .await
            .expect("connect to a memory database")
    }

    shortener_conformance::link_repository_tests!(make);
}
