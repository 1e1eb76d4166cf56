//! The shared `LinkRepository` story, on a file (several connections, with and without
//! group commit) and in memory.

use shortener_core::LinkRepository;
use shortener_sqlite::{SqliteRepository, SqliteSettings, Synchronous};

use crate::TempDatabase;

/// A repository on its own database file, which is removed when it is dropped.
#[derive(Debug)]
pub struct FileRepository {
    repository: SqliteRepository,
    _database: TempDatabase,
}

impl LinkRepository for FileRepository {
    shortener_core::forward_link_repository!(self.repository => insert, insert_many, get,
        get_redirect, get_many, get_fresh, delete, update, list, count, tags, rename_tag, delete_tag, crawlable, links_to,
        record_visit,
        add_visits, add_dimensions, top_values, visits_by_day, claim_idempotency,
        complete_idempotency, release_idempotency, purge_idempotency, health);
}

impl shortener_core::KeyStore for FileRepository {
    shortener_core::forward_link_repository!(self.repository => insert_key, keys, revoke_key,
        touch_keys);
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
