//! The shared `LinkRepository` story, on a file (several connections, with and without
//! group commit) and in memory.

use shortener_core::{
    InsertError, Link, LinkRepository, NewLink, RepositoryError, ShortCode, VisitOutcome,
};
use shortener_sqlite::{SqliteRepository, SqliteSettings, Synchronous};
use time::OffsetDateTime;

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

    async fn get(&self, code: &ShortCode) -> Result<Option<Link>, RepositoryError> {
        self.repository.get(code).await
    }

    async fn delete(&self, code: &ShortCode) -> Result<bool, RepositoryError> {
        self.repository.delete(code).await
    }

    async fn record_visit(
        &self,
        code: &ShortCode,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        self.repository.record_visit(code, now).await
    }

    async fn add_visits(&self, visits: &[(ShortCode, u64)]) -> Result<(), RepositoryError> {
        self.repository.add_visits(visits).await
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
