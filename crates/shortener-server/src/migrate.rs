//! `shortener migrate [--status] [--database-url URL]`: applies the pending migrations of
//! the configured database (`storage.url`, or the URL given), or with `--status` lists each
//! one as applied or pending.
//!
//! The migrations are the adapters' own, embedded in `shortener-sqlite` and
//! `shortener-postgres`, and applied by core's one runner (`Migrations::migrate`), the
//! code the server runs at start when `storage.migrate = true`: this command only picks the adapter and prints,
//! so the two can never disagree. A relative SQLite path is relative to the current
//! directory, as for the server.

use std::fmt::Write as _;

use anyhow::{Context as _, bail};
use shortener_core::{MigrationStatus, Migrations as _, RedactedUrl};
use shortener_postgres::PostgresRepository;
use shortener_sqlite::SqliteRepository;

/// The adapter of the backend a URL names, connected without the migration check.
#[derive(Debug)]
pub enum Database {
    Sqlite(SqliteRepository),
    Postgres(PostgresRepository),
}

impl Database {
    /// Opens the database of `url` (`sqlite:…`, `postgres://…` or `postgresql://…`).
    ///
    /// # Errors
    /// Another scheme, or a database that cannot be opened.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let shown = RedactedUrl::new(url);
        // One connection: migrations run one after another anyway.
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite(
                SqliteRepository::connect_unchecked(url, 1)
                    .await
                    .with_context(|| format!("cannot open {shown}"))?,
            ))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres(
                PostgresRepository::connect_unchecked(url, 1)
                    .await
                    .with_context(|| format!("cannot open {shown}"))?,
            ))
        } else {
            bail!("the database URL must start with sqlite: or postgres://")
        }
    }

    /// Opens the database of `url` for reading and writing links: every migration must have
    /// been applied.
    ///
    /// # Errors
    /// As [`Database::connect`], and a database with a pending migration, which the error
    /// names with the command that applies it.
    pub async fn connect_current(url: &str) -> anyhow::Result<Self> {
        let database = Self::connect(url).await?;
        let status = database.status().await?;
        let pending: Vec<&MigrationStatus> = status.iter().filter(|m| !m.applied).collect();
        if let Some(first) = pending.first() {
            bail!(
                "{} has {} pending migration(s), from {} {}: apply them first with `shortener migrate`",
                RedactedUrl::new(url),
                pending.len(),
                first.version,
                first.description
            );
        }
        Ok(database)
    }

    /// Every migration, in version order.
    ///
    /// # Errors
    /// When the database cannot be read.
    pub async fn status(&self) -> anyhow::Result<Vec<MigrationStatus>> {
        Ok(match self {
            Self::Sqlite(database) => database.migration_status().await?,
            Self::Postgres(database) => database.migration_status().await?,
        })
    }

    /// Applies the pending migrations; returns those applied, with their descriptions.
    ///
    /// # Errors
    /// When a migration fails (it is rolled back) or one applied earlier was modified.
    pub async fn migrate(&self) -> anyhow::Result<Vec<(i64, String)>> {
        let applied = match self {
            Self::Sqlite(database) => database.migrate().await?,
            Self::Postgres(database) => database.migrate().await?,
        };
        Ok(applied
            .into_iter()
            .map(|migration| (migration.version, migration.description))
            .collect())
    }

    /// Closes every connection cleanly. SQLite then moves its write-ahead log into the
    /// file and removes it, so that the file alone holds all that was written (a copy of
    /// it is a whole backup); a process that exits with the connections open leaves the
    /// log beside the file, replayed by the next opener.
    ///
    /// # Errors
    /// When SQLite's final checkpoint fails; nothing written is lost then either.
    pub async fn close(&self) -> anyhow::Result<()> {
        match self {
            Self::Sqlite(database) => database.close().await?,
            Self::Postgres(database) => database.close().await,
        }
        Ok(())
    }
}

/// Runs the command on `url` and returns what to print.
///
/// # Errors
/// As [`Database::connect`], [`Database::status`] and [`Database::migrate`].
pub async fn run(url: &str, status: bool) -> anyhow::Result<String> {
    let shown = RedactedUrl::new(url);
    let database = Database::connect(url).await?;
    let mut out = String::new();
    if status {
        let _ = writeln!(out, "migrations of {shown}:");
        for MigrationStatus {
            version,
            description,
            applied,
        } in database.status().await?
        {
            let state = if applied { "applied" } else { "pending" };
            let _ = writeln!(out, "  {version:04} {description:<32} {state}");
        }
        database.close().await?;
        return Ok(out);
    }
    // Closed even after a failed migration; that failure is the one reported.
    let applied = database.migrate().await;
    let closed = database.close().await;
    let applied = applied?;
    closed?;
    if applied.is_empty() {
        let _ = writeln!(out, "{shown}: no pending migration");
    }
    for (version, description) in applied {
        let _ = writeln!(out, "{shown}: applied {version:04} {description}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_fresh_sqlite_file_is_pending_then_migrated_once() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("fresh.db").display());
        let database = Database::connect(&url).await.unwrap();
        let before = database.status().await.unwrap();
        assert!(!before.is_empty() && before.iter().all(|status| !status.applied));
        let applied = database.migrate().await.unwrap();
        let expected: Vec<(i64, String)> = (before.into_iter())
            .map(|status| (status.version, status.description))
            .collect();
        assert_eq!(applied, expected);
        let after = database.status().await.unwrap();
        assert!(after.iter().all(|status| status.applied));
        assert_eq!(database.migrate().await.unwrap(), Vec::new());
        assert!(
            run(&url, false)
                .await
                .unwrap()
                .contains("no pending migration")
        );
        assert!(Database::connect("mysql://db/links").await.is_err());
    }
}
