//! PostgreSQL storage for links: [`PostgresRepository`], an adapter of
//! [`shortener_core::LinkRepository`] on sqlx.
//!
//! - Tables `links`, `link_days`, `link_dimensions` and `idempotency_keys`, made by the migrations embedded from `migrations/`.
//!   [`PostgresRepository::connect`] applies them when asked to, and otherwise refuses a database with pending or modified migrations.
//!   [`PostgresRepository::connect_unchecked`] skips that check, for the commands that report and apply migrations.
//!   Core's [`Migrations`](shortener_core::Migrations) runs them (`migration_status`, `migrate`); `migrations.rs` says which exist and how sqlx applies them.
//! - Times are `TIMESTAMPTZ`, which keeps microseconds: they round-trip exactly at that
//!   precision, and a finer part is dropped (rounded down) on write.
//! - Concurrent creates are grouped (`insert.rs`): up to four statements at once, each inserting what queued meanwhile.
//!   A statement inserts its rows over `jsonb_to_recordset` with `ON CONFLICT DO NOTHING`, in key order, so two never deadlock.
//!   Each create is answered after its statement committed.
//!   A batch the database refuses is retried link by link, so a bad link fails alone.
//! - A visit of a link with `max_visits` is counted by one conditional `UPDATE`, so
//!   concurrent visits on any number of nodes never count more than `max_visits`.
//! - A flush of visit values first locks the flushed links, in key order (`dimensions.rs`).
//!   Flushes of several nodes on one link then take turns, and the cap of top values holds exactly.
//! - The pool waits at most [`ACQUIRE_TIMEOUT`] for a connection, so a dead server answers
//!   `Unavailable` quickly instead of hanging. Errors are mapped onto the port's: a
//!   unique violation (23505) is `InsertError::CodeTaken`; lost or refused connections,
//!   pool timeouts, server shutdown (57P01) and other transient states are
//!   `RepositoryError::Unavailable`; anything else is `RepositoryError::Unexpected`.
//!   A connection is pinged before it is lent only after a second idle, so a busy pool
//!   makes one round trip per statement, not two.
//! - With [`PoolSettings::statement_timeout`], every connection of the pool is opened
//!   with that `statement_timeout`, so a statement stuck on a lock is cancelled (57014,
//!   `Unavailable`) instead of holding a connection. Migrations are exempt.
//! - The password in a URL never reaches `Debug`, logs or error messages.
//!
//! It does not cache (that is `shortener-cache`), purge expired links, create the
//! database, or bound a statement that a stalled server never answers (the statement
//! timeout is enforced by the server itself).

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

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use shortener_core::{Migrations as _, RepositoryError};
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::error::{storage_error, with_context};
use crate::insert::Inserter;

/// How long an operation waits for a connection (including opening one) before it fails
/// with `Unavailable`.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection idle this long is pinged before the pool lends it again.
const PING_WHEN_IDLE: Duration = Duration::from_secs(1);

/// Links in a PostgreSQL database, behind a connection pool. Cloning shares the pool.
#[derive(Clone)]
pub struct PostgresRepository {
    pool: PgPool,
    /// Groups concurrent creates into one statement.
    inserter: Arc<Inserter>,
    /// The server and database as `postgres://user@host:port/database`, without password.
    target: String,
}

impl fmt::Debug for PostgresRepository {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not derived: the pool's connect options hold the password.
        f.debug_struct("PostgresRepository")
            .field("target", &self.target)
            .field("connections", &self.pool.size())
            .field("closed", &self.pool.is_closed())
            .finish()
    }
}

/// The server's pool size when `storage.max_connections` is 0 (its default): the
/// statements run in the database server's processes, not on the node's cores.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 16;

/// How the pool is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    pub max_connections: u32,
    /// PostgreSQL `statement_timeout` of every connection; `None` leaves the server's.
    pub statement_timeout: Option<Duration>,
}

impl PoolSettings {
    /// `max_connections` connections, the server's own statement timeout.
    pub fn new(max_connections: u32) -> Self {
        Self {
            max_connections,
            statement_timeout: None,
        }
    }
}

impl PostgresRepository {
    /// Connects to the database at `url` (`postgres://user:password@host:5432/database`)
    /// with at most `max_connections` connections. With `migrate`, pending migrations are
    /// applied; without, a database that is not fully migrated is refused.
    ///
    /// # Errors
    /// `Unavailable` when the server does not answer within [`ACQUIRE_TIMEOUT`] or refuses
    /// the connection for now; `Unexpected` for a malformed URL, a refused login, a
    /// database with pending or modified migrations (without `migrate`) or a failed
    /// migration.
    pub async fn connect(
        url: &str,
        max_connections: u32,
        migrate: bool,
    ) -> Result<Self, RepositoryError> {
        Self::connect_with(url, PoolSettings::new(max_connections), migrate).await
    }

    /// [`Self::connect`] with every [`PoolSettings`].
    ///
    /// # Errors
    /// As [`Self::connect`].
    pub async fn connect_with(
        url: &str,
        settings: PoolSettings,
        migrate: bool,
    ) -> Result<Self, RepositoryError> {
        let repository = Self::connect_unchecked_with(url, settings).await?;
        if migrate {
            let applied = repository.migrate().await?;
            if !applied.is_empty() {
                let versions: Vec<i64> =
                    applied.iter().map(|migration| migration.version).collect();
                tracing::info!(?versions, "applied postgres migrations");
            }
        } else {
            repository.check_migrated().await?;
        }
        Ok(repository)
    }

    /// Connects like [`Self::connect`] but neither applies nor checks migrations: for
    /// tools that report and apply them ([`Self::migration_status`], [`Self::migrate`]).
    /// The other methods fail on a database that is not migrated.
    ///
    /// # Errors
    /// `Unavailable` when the server does not answer within [`ACQUIRE_TIMEOUT`];
    /// `Unexpected` for a malformed URL or a refused login.
    pub async fn connect_unchecked(
        url: &str,
        max_connections: u32,
    ) -> Result<Self, RepositoryError> {
        Self::connect_unchecked_with(url, PoolSettings::new(max_connections)).await
    }

    /// [`Self::connect_unchecked`] with every [`PoolSettings`].
    ///
    /// # Errors
    /// As [`Self::connect_unchecked`].
    pub async fn connect_unchecked_with(
        url: &str,
        settings: PoolSettings,
    ) -> Result<Self, RepositoryError> {
        let mut options = PgConnectOptions::from_str(url).map_err(|e| {
            RepositoryError::Unexpected(format!("invalid postgres url: {e}").into())
        })?;
        if options.get_application_name().is_none() {
            // Names the service's sessions in pg_stat_activity.
            options = options.application_name("shortener");
        }
        if let Some(timeout) = settings.statement_timeout {
            // A startup parameter: set by the server as each connection opens, so every
            // connection the pool ever makes has it, with no extra round trip.
            options =
                options.options([("statement_timeout", format!("{}ms", timeout.as_millis()))]);
        }
        let target = redacted_target(&options);
        // The pool opens a first connection now, so that a wrong URL fails at start.
        // sqlx pings a connection (a round trip) before lending it, and again when it
        // comes back: with the first, a create made three round trips where pgbench makes
        // one. Only a connection idle for a while is pinged before it is lent (one that
        // a restart or an idle timeout closed is then replaced, not failed on); one in
        // steady use was just checked on its way back.
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections.max(1))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .test_before_acquire(false)
            .before_acquire(|connection, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_WHEN_IDLE {
                        sqlx::Connection::ping(connection).await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| with_context(storage_error(e), &format!("cannot connect to {target}")))?;
        tracing::debug!(database = %target, "connected to postgres");
        let inserter = Arc::new(Inserter::spawn(pool.clone()));
        Ok(Self {
            pool,
            inserter,
            target,
        })
    }

    /// Closes every connection, waiting for those in use to be returned. Later calls
    /// fail with `Unavailable`.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// `postgres://user@host:port/database`: where the options point, with no password.
fn redacted_target(options: &PgConnectOptions) -> String {
    let host = match options.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => options.get_host().to_owned(),
    };
    format!(
        "postgres://{}@{}:{}/{}",
        options.get_username(),
        host,
        options.get_port(),
        options.get_database().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_never_show_the_password() {
        let options =
            PgConnectOptions::from_str("postgres://app:hunter2@db.internal:6543/links").unwrap();
        let target = redacted_target(&options);
        assert_eq!(target, "postgres://app@db.internal:6543/links");
    }

    /// On the server's maintenance database, which it only reads: `SHOW` on three live
    /// connections held at once, so each is a connection the pool opened itself.
    #[tokio::test]
    async fn every_pooled_connection_has_the_statement_timeout() {
        let url = std::env::var("SHORTENER_TEST_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        for (timeout, expected) in [(Some(1234), "1234ms"), (Some(60_000), "1min")] {
            let settings = PoolSettings {
                max_connections: 3,
                statement_timeout: timeout.map(Duration::from_millis),
            };
            let repository = PostgresRepository::connect_unchecked_with(&url, settings)
                .await
                .expect("PostgreSQL at SHORTENER_TEST_PG_URL");
            let mut held = Vec::new();
            for _ in 0..3 {
                held.push(repository.pool.acquire().await.expect("a connection"));
            }
            for connection in &mut held {
                let value: String = sqlx::query_scalar("SHOW statement_timeout")
                    .fetch_one(&mut **connection)
                    .await
                    .expect("SHOW");
                assert_eq!(value, expected);
            }
            drop(held);
            repository.close().await;
        }
    }
}
