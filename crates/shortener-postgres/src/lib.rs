//! PostgreSQL storage for links: [`PostgresRepository`], an adapter of
//! [`shortener_core::LinkRepository`] on sqlx.
//!
//! - One table, `links`, made by the migrations embedded from this crate's `migrations/`.
//!   [`PostgresRepository::connect`] applies them when asked to, and otherwise refuses a
//!   database with pending or modified migrations. For `cargo xtask migrate`,
//!   [`PostgresRepository::connect_unchecked`] skips that check, and
//!   [`PostgresRepository::migration_status`] and [`PostgresRepository::migrate`] report and apply.
//! - Times are `TIMESTAMPTZ`, which keeps microseconds: they round-trip exactly at that
//!   precision, and a finer part is dropped (rounded down) on write.
//! - A visit of a link with `max_visits` is counted by one conditional `UPDATE`, so
//!   concurrent visits on any number of nodes never count more than `max_visits`.
//! - The pool waits at most [`ACQUIRE_TIMEOUT`] for a connection, so a dead server answers
//!   `Unavailable` quickly instead of hanging. Errors are mapped onto the port's: a
//!   unique violation (23505) is `InsertError::CodeTaken`; lost or refused connections,
//!   pool timeouts, server shutdown (57P01) and other transient states are
//!   `RepositoryError::Unavailable`; anything else is `RepositoryError::Unexpected`.
//! - The password in a URL never reaches `Debug`, logs or error messages.
//!
//! It does not cache (that is `shortener-moka`), purge expired links, create the
//! database, or bound a statement that a stalled server never answers.

mod error;
mod migrations;
mod repository;
mod row;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use shortener_core::RepositoryError;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::error::{storage_error, with_context};

/// How long an operation waits for a connection (including opening one) before it fails
/// with `Unavailable`.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// Links in a PostgreSQL database, behind a connection pool. Cloning shares the pool.
#[derive(Clone)]
pub struct PostgresRepository {
    pool: PgPool,
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
        let repository = Self::connect_unchecked(url, max_connections).await?;
        if migrate {
            repository.migrate().await?;
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
        let mut options = PgConnectOptions::from_str(url)
            .map_err(|e| RepositoryError::Unexpected(format!("invalid postgres url: {e}")))?;
        if options.get_application_name().is_none() {
            // Names the service's sessions in pg_stat_activity.
            options = options.application_name("shortener");
        }
        let target = redacted_target(&options);
        // The pool opens a first connection now, so that a wrong URL fails at start.
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| with_context(storage_error(e), &format!("cannot connect to {target}")))?;
        tracing::debug!(database = %target, "connected to postgres");
        Ok(Self { pool, target })
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
}
