//! SQLite storage for links: [`SqliteRepository`], an adapter of
//! [`shortener_core::LinkRepository`] on sqlx.
//!
//! - One table, `links`, made by the migrations embedded from this crate's `migrations/`.
//!   [`SqliteRepository::connect`] applies them when asked to, and otherwise refuses a
//!   database with pending or modified migrations. For `cargo xtask migrate`,
//!   [`SqliteRepository::connect_unchecked`] skips that check, and
//!   [`SqliteRepository::migration_status`] and [`SqliteRepository::migrate`] report and apply.
//! - Times are stored as integer unix microseconds, so they round-trip exactly at
//!   microsecond precision; a finer part is dropped (rounded down) on write.
//! - A file is created when missing and opened in WAL mode with `synchronous = NORMAL`,
//!   foreign keys on and a busy timeout: readers never block the writer, and concurrent
//!   writers wait for each other instead of failing.
//! - `sqlite::memory:` works too, on one connection that is kept open, since the database
//!   lives only as long as its connections.
//! - Errors are mapped onto the port's: a unique violation is `InsertError::CodeTaken`; a
//!   busy or locked database, a disk or IO failure, a pool timeout or a closed pool is
//!   `RepositoryError::Unavailable`; anything else is `RepositoryError::Unexpected`.
//!
//! It does not cache (that is `shortener-moka`), purge expired links, or create the
//! parent directory of the database file.

mod error;
mod migrations;
mod repository;
mod row;

use std::str::FromStr;
use std::time::Duration;

use shortener_core::RepositoryError;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::error::storage_error;

/// How long a statement waits for another connection's write lock before it fails
/// with "database is locked" (mapped to `Unavailable`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an operation waits for a free connection from the pool.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// Links in a SQLite database, behind a connection pool. Cloning shares the pool.
#[derive(Debug, Clone)]
pub struct SqliteRepository {
    pool: SqlitePool,
}

impl SqliteRepository {
    /// Opens (and creates, when missing) the database at `url`, such as
    /// `sqlite://shortener.db` or `sqlite::memory:`, with at most `max_connections`
    /// connections (one for a memory database). With `migrate`, pending migrations are
    /// applied; without, a database that is not fully migrated is refused.
    ///
    /// # Errors
    /// `Unexpected` for a malformed URL, a database with pending or modified migrations
    /// (without `migrate`) or a failed migration; `Unavailable` when the file cannot be
    /// opened or is locked.
    pub async fn connect(
        url: &str,
        max_connections: u32,
        migrate: bool,
    ) -> Result<Self, RepositoryError> {
        let repository = Self::connect_unchecked(url, max_connections).await?;
        if migrate {
            repository.migrate().await?;
        } else {
            repository.check_migrated().await?;
        }
        Ok(repository)
    }

    /// Opens the database like [`Self::connect`] but neither applies nor checks
    /// migrations: for tools that report and apply them ([`Self::migration_status`],
    /// [`Self::migrate`]). The other methods fail on a database that is not migrated.
    ///
    /// # Errors
    /// `Unexpected` for a malformed URL; `Unavailable` when the file cannot be opened.
    pub async fn connect_unchecked(
        url: &str,
        max_connections: u32,
    ) -> Result<Self, RepositoryError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| RepositoryError::Unexpected(format!("invalid sqlite url: {e}")))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let pool_options = SqlitePoolOptions::new().acquire_timeout(ACQUIRE_TIMEOUT);
        let pool_options = if is_memory_url(url) {
            // Connections to one memory database share a cache with table-level locks
            // that ignore the busy timeout, and the database ends with its last
            // connection: so one connection, never closed for idleness or age.
            pool_options
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            pool_options.max_connections(max_connections.max(1))
        };
        let pool = pool_options
            .connect_with(options)
            .await
            .map_err(storage_error)?;
        Ok(Self { pool })
    }

    /// Closes every connection, waiting for those in use to be returned. Later calls
    /// fail with `Unavailable`.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Whether `url` names a memory database (`sqlite::memory:` or `mode=memory`).
fn is_memory_url(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn file_connections_use_wal_normal_sync_busy_timeout_and_foreign_keys() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("pragmas.db").display());
        let repository = SqliteRepository::connect(&url, 2, true).await.unwrap();
        let mut connection = repository.pool.acquire().await.unwrap();
        let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&mut *connection)
            .await
            .unwrap();
        let synchronous: i64 = sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(&mut *connection)
            .await
            .unwrap();
        let busy_timeout: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
            .fetch_one(&mut *connection)
            .await
            .unwrap();
        let foreign_keys: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
            .fetch_one(&mut *connection)
            .await
            .unwrap();
        assert_eq!(journal, "wal");
        assert_eq!(synchronous, 1, "1 is NORMAL");
        assert_eq!(busy_timeout, 5000);
        assert_eq!(foreign_keys, 1);
    }

    #[test]
    fn memory_urls_are_recognised() {
        assert!(is_memory_url("sqlite::memory:"));
        assert!(is_memory_url("sqlite://links?mode=memory&cache=shared"));
        assert!(!is_memory_url("sqlite://shortener.db"));
    }
}
