//! SQLite storage for links: [`SqliteRepository`], an adapter of
//! [`shortener_core::LinkRepository`] on sqlx.
//!
//! - Tables `links`, `link_days`, `link_dimensions` and `idempotency_keys`, made by the migrations embedded from `migrations/`.
//!   [`SqliteRepository::connect`] applies them when asked to, and otherwise refuses a database with pending or modified migrations.
//!   [`SqliteRepository::connect_unchecked`] skips that check, for the commands that report and apply migrations.
//!   Core's [`Migrations`](shortener_core::Migrations) runs them (`migration_status`, `migrate`); `migrations.rs` says which exist and how sqlx applies them.
//! - Times are stored as integer unix microseconds, so they round-trip exactly at
//!   microsecond precision; a finer part is dropped (rounded down) on write.
//! - A file is created when missing and opened in WAL mode with `synchronous` as set
//!   ([`Synchronous`]; FULL by default), foreign keys on and a busy timeout: readers
//!   never block the writer, and concurrent writers wait for each other instead of failing.
//! - Every write takes the repository's write gate, a fair mutex, before SQLite's own lock.
//!   Writers then wait in turn, rather than in SQLite's busy handler.
//! - Inserts are group-committed by default (`writer`): one task commits concurrent
//!   inserts in one transaction and answers each after the commit.
//!   `insert.rs` holds the batch insert it shares with `insert_many`: the rows bound as one JSON array, a read of the keys that exist, then one insert.
//! - A flush of visit values is placed under the cap of top values in one write transaction (`dimensions.rs`).
//!   Core flushes values in small batches of links, so creates wait behind one short transaction, not a whole flush.
//! - The WAL is kept under a bound by a background task (`wal`), and checkpointed and
//!   truncated by [`SqliteRepository::close`], so that a restart replays nothing large.
//! - `sqlite::memory:` works too, on one connection that is kept open, since the database
//!   lives only as long as its connections.
//! - The SQLite library must be 3.45 or later (`version.rs`): the batched writes read their rows with `jsonb_each`.
//! - Errors are mapped onto the port's: a unique violation is `InsertError::CodeTaken`; a
//!   full disk (or `max_page_count` reached) is `RepositoryError::Full`; a busy or locked
//!   database, an IO failure, a pool timeout or a closed pool is
//!   `RepositoryError::Unavailable`; anything else is `RepositoryError::Unexpected`.
//!
//! It does not cache (that is `shortener-cache`), purge expired links, or create the
//! parent directory of the database file.

mod dimensions;
mod error;
mod idempotency;
mod insert;
mod keys;
mod listing;
mod manage;
mod migrations;
mod repository;
mod row;
mod tags;
mod version;
mod wal;
mod writer;

use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shortener_core::{Migrations as _, RepositoryError};
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::error::storage_error;
pub use crate::wal::WalStats;
use crate::wal::{Wal, WalTask, WriteGate};
use crate::writer::{Writer, WriterTask};

/// How long a statement waits for another connection's write lock before it fails
/// with "database is locked" (mapped to `Unavailable`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an operation waits for a free connection from the pool.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// When a commit is on disk. <https://www.sqlite.org/pragma.html#pragma_synchronous>
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synchronous {
    /// The WAL is synced at checkpoints only: a commit survives a crash of the process,
    /// but a power cut or OS crash can lose the commits since the last checkpoint.
    Normal,
    /// The WAL is synced at every commit: a commit survives a power cut too.
    Full,
}

/// How a database is opened; [`Default`] is the embedded default of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqliteSettings {
    /// At most this many connections (one for a memory database).
    pub max_connections: u32,
    /// Apply pending migrations; without, a database that is not migrated is refused.
    pub migrate: bool,
    pub synchronous: Synchronous,
    /// Inserts go through one writer task that commits concurrent ones together.
    pub group_commit: bool,
    /// The WAL is checkpointed and truncated when its file passes this many bytes.
    pub wal_max_bytes: u64,
}

impl Default for SqliteSettings {
    fn default() -> Self {
        Self {
            max_connections: default_max_connections(),
            migrate: true,
            synchronous: Synchronous::Full,
            group_commit: true,
            wal_max_bytes: 64 << 20,
        }
    }
}

/// The server's default pool size on this machine: [`max_connections_for`] its cores.
pub fn default_max_connections() -> u32 {
    max_connections_for(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// 4 connections per core, at least 4 and at most 16 (the default before, kept as the
/// bound since no larger machine was measured).
///
/// A read of a cached file runs on a core (the operating system holds the pages), so
/// past a few connections per core one more only waits. Meanwhile it holds its own page
/// cache, prepared statements and worker thread. See `cargo xtask bench --only links` in
/// docs/BENCHMARKS.md; the by-hand figures are under "Where the time goes".
pub fn max_connections_for(cores: usize) -> u32 {
    u32::try_from(cores.saturating_mul(4)).map_or(16, |connections| connections.clamp(4, 16))
}

/// Links in a SQLite database, behind a connection pool. Cloning shares the pool and
/// the background tasks.
#[derive(Debug, Clone)]
pub struct SqliteRepository {
    pool: SqlitePool,
    /// Held by every write and by a TRUNCATE checkpoint, so that writers take turns here, in
    /// order, rather than in SQLite's busy handler (see `wal`).
    gate: Arc<WriteGate>,
    writer: Option<Arc<Writer>>,
    wal: Option<Arc<Wal>>,
    tasks: Arc<Mutex<Tasks>>,
}

/// The background tasks, taken out (and stopped) by [`SqliteRepository::close`].
#[derive(Debug, Default)]
struct Tasks {
    writer: Option<WriterTask>,
    wal: Option<WalTask>,
}

impl SqliteRepository {
    /// Opens (and creates, when missing) the database at `url`, such as
    /// `sqlite://shortener.db` or `sqlite::memory:`, with at most `max_connections`
    /// connections (one for a memory database) and the other settings at their
    /// defaults. With `migrate`, pending migrations are applied; without, a database
    /// that is not fully migrated is refused.
    ///
    /// # Errors
    /// As [`Self::connect_with`].
    pub async fn connect(
        url: &str,
        max_connections: u32,
        migrate: bool,
    ) -> Result<Self, RepositoryError> {
        Self::connect_with(
            url,
            SqliteSettings {
                max_connections,
                migrate,
                ..SqliteSettings::default()
            },
        )
        .await
    }

    /// Opens the database at `url` with `settings`, and starts the group-commit writer
    /// (when asked) and, for a file, the task that keeps the WAL bounded.
    ///
    /// # Errors
    /// `Unexpected` for a malformed URL, a database with pending or modified migrations
    /// (without `migrate`) or a failed migration; `Unavailable` when the file cannot be
    /// opened or is locked.
    pub async fn connect_with(
        url: &str,
        settings: SqliteSettings,
    ) -> Result<Self, RepositoryError> {
        Self::open(url, settings, |options| options).await
    }

    /// [`Self::connect_with`], with the connect options adjusted by `adjust` (tests set
    /// extra pragmas this way).
    async fn open(
        url: &str,
        settings: SqliteSettings,
        adjust: impl FnOnce(SqliteConnectOptions) -> SqliteConnectOptions,
    ) -> Result<Self, RepositoryError> {
        let options = adjust(connect_options(url, &settings)?);
        let database = options.get_filename().to_owned();
        let mut repository =
            Self::from_pool(pool(url, options.clone(), settings.max_connections).await?);
        if settings.migrate {
            let applied = repository.migrate().await?;
            if !applied.is_empty() {
                let versions: Vec<i64> =
                    applied.iter().map(|migration| migration.version).collect();
                tracing::info!(?versions, "applied sqlite migrations");
            }
        } else {
            repository.check_migrated().await?;
        }
        let mut tasks = Tasks::default();
        if settings.group_commit {
            let (writer, task) = Writer::spawn(repository.pool.clone(), repository.gate.clone());
            repository.writer = Some(Arc::new(writer));
            tasks.writer = Some(task);
        }
        if !is_memory_url(url) {
            let wal = Arc::new(Wal::new(&database, settings.wal_max_bytes));
            tasks.wal = Some(WalTask::spawn(
                options,
                wal.clone(),
                repository.gate.clone(),
            ));
            repository.wal = Some(wal);
        }
        repository.tasks = Arc::new(Mutex::new(tasks));
        Ok(repository)
    }

    /// Opens the database like [`Self::connect`] but neither applies nor checks
    /// migrations, and starts no background task: for tools that report and apply
    /// migrations ([`Self::migration_status`], [`Self::migrate`]). The other methods fail
    /// on a database that is not migrated.
    ///
    /// # Errors
    /// `Unexpected` for a malformed URL; `Unavailable` when the file cannot be opened.
    pub async fn connect_unchecked(
        url: &str,
        max_connections: u32,
    ) -> Result<Self, RepositoryError> {
        let settings = SqliteSettings {
            max_connections,
            ..SqliteSettings::default()
        };
        let options = connect_options(url, &settings)?;
        Ok(Self::from_pool(pool(url, options, max_connections).await?))
    }

    fn from_pool(pool: SqlitePool) -> Self {
        Self {
            pool,
            gate: Arc::default(),
            writer: None,
            wal: None,
            tasks: Arc::default(),
        }
    }

    /// The WAL's size and the checkpoints run to bound it (zeros for a memory database).
    pub fn wal_stats(&self) -> WalStats {
        self.wal.as_ref().map(|wal| wal.stats()).unwrap_or_default()
    }

    /// Shuts down: the writer commits the creates it accepted and stops, the WAL task
    /// stops, the WAL is checkpointed into the database and truncated, and every
    /// connection is closed (waiting for those in use). Later calls fail with
    /// `Unavailable`.
    ///
    /// # Errors
    /// When the final checkpoint fails or cannot finish; the pool is closed all the
    /// same, and the WAL left behind is replayed at the next start (nothing is lost).
    pub async fn close(&self) -> Result<(), RepositoryError> {
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some(writer) = tasks.writer {
            writer.stop().await;
        }
        if let Some(wal) = tasks.wal {
            wal.stop().await;
        }
        let checkpointed = match &self.wal {
            Some(_) if !self.pool.is_closed() => {
                match wal::checkpoint(&self.pool, wal::Mode::Truncate).await {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(RepositoryError::Unavailable(
                        "the final WAL checkpoint could not finish: a connection was still reading"
                            .into(),
                    )),
                    Err(error) => Err(error),
                }
            }
            _ => Ok(()),
        };
        self.pool.close().await;
        checkpointed
    }
}

/// The options every connection is opened with.
fn connect_options(
    url: &str,
    settings: &SqliteSettings,
) -> Result<SqliteConnectOptions, RepositoryError> {
    let synchronous = match settings.synchronous {
        Synchronous::Normal => SqliteSynchronous::Normal,
        Synchronous::Full => SqliteSynchronous::Full,
    };
    Ok(SqliteConnectOptions::from_str(url)
        .map_err(|e| RepositoryError::Unexpected(format!("invalid sqlite url: {e}").into()))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(synchronous)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
        // When SQLite rewinds the WAL, it truncates the file to this size: a quarter of
        // the bound stays allocated for reuse, the rest goes back to the disk.
        .pragma(
            "journal_size_limit",
            (settings.wal_max_bytes / 4).to_string(),
        )
        // 128 KiB of pages per connection, not SQLite's 2 MB: a node held up to 16
        // connections, each filling its own cache with the same pages, which made most of
        // a node's memory at 100 000 cached links. The operating system's page cache holds
        // the file anyway, so reads with the link cache off stayed within the noise.
        // See `cargo xtask bench --only links` (RSS per cached link) in docs/BENCHMARKS.md.
        .pragma("cache_size", "-128"))
}

async fn pool(
    url: &str,
    options: SqliteConnectOptions,
    max_connections: u32,
) -> Result<SqlitePool, RepositoryError> {
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
    let pool = (pool_options.connect_with(options).await).map_err(storage_error)?;
    version::check(&pool).await?;
    Ok(pool)
}

/// Whether `url` names a memory database (`sqlite::memory:` or `mode=memory`).
fn is_memory_url(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

#[cfg(test)]
mod tests;
