//! A database named by its URL alone, for the commands that work on one (`migrate`,
//! `import`, `export`): the same [`AnyRepository`] the server runs on, opened without the
//! configuration, with its migrations read and applied by core's one runner.

use shortener_core::{Migration, MigrationStatus, Migrations as _, RedactedUrl, RepositoryError};
use shortener_postgres::PostgresRepository;
use shortener_sqlite::SqliteRepository;

use crate::any::AnyRepository;
use crate::open::OpenError;

/// Why a database named by URL cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    #[error("the database URL must start with sqlite: or postgres://")]
    Scheme,
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error(
        "{url} has {count} pending migration(s), from {version} {description}: apply them first with `shortener migrate`"
    )]
    Pending {
        url: RedactedUrl,
        count: usize,
        version: i64,
        description: String,
    },
    #[error(transparent)]
    Storage(#[from] RepositoryError),
}

impl AnyRepository {
    /// Opens the database of `url` (`sqlite:…`, `postgres://…` or `postgresql://…`) with
    /// one connection, without the migration check.
    ///
    /// # Errors
    /// [`DatabaseError::Scheme`] for another scheme, [`DatabaseError::Open`] when the
    /// database cannot be opened.
    pub async fn open(url: &str) -> Result<Self, DatabaseError> {
        let context = || format!("cannot open {}", RedactedUrl::new(url));
        // One connection: migrations run one after another anyway.
        if url.starts_with("sqlite:") {
            let opened = SqliteRepository::connect_unchecked(url, 1).await;
            Ok(Self::Sqlite(
                opened.map_err(|e| OpenError::new(context(), e))?,
            ))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let opened = PostgresRepository::connect_unchecked(url, 1).await;
            Ok(Self::Postgres(
                opened.map_err(|e| OpenError::new(context(), e))?,
            ))
        } else {
            Err(DatabaseError::Scheme)
        }
    }

    /// Opens the database of `url` for reading and writing links: every migration must
    /// have been applied.
    ///
    /// # Errors
    /// As [`AnyRepository::open`], and [`DatabaseError::Pending`] for a database with a
    /// pending migration, named with the command that applies it.
    pub async fn open_current(url: &str) -> Result<Self, DatabaseError> {
        let database = Self::open(url).await?;
        let status = database.migration_status().await?;
        let pending: Vec<&MigrationStatus> = status.iter().filter(|m| !m.applied).collect();
        if let Some(first) = pending.first() {
            return Err(DatabaseError::Pending {
                url: RedactedUrl::new(url),
                count: pending.len(),
                version: first.version,
                description: first.description.clone(),
            });
        }
        Ok(database)
    }

    /// Opens the database of `url` for reading and writing links after applying its
    /// pending migrations, as the server does at start with `storage.migrate = true`;
    /// returns it with the migrations this call applied.
    ///
    /// # Errors
    /// As [`AnyRepository::open`], and [`DatabaseError::Storage`] when a migration fails
    /// (it is rolled back, and the database closed) or one applied earlier was modified.
    pub async fn open_migrated(url: &str) -> Result<(Self, Vec<Migration>), DatabaseError> {
        let database = Self::open(url).await?;
        match database.migrate().await {
            Ok(applied) => Ok((database, applied)),
            Err(error) => {
                // The failure is the one reported; closing folds SQLite's log into its file.
                let _ = database.close().await;
                Err(error.into())
            }
        }
    }

    /// Every migration of the backend, in version order; none in memory.
    ///
    /// # Errors
    /// When the database cannot be read.
    pub async fn migration_status(&self) -> Result<Vec<MigrationStatus>, RepositoryError> {
        match self {
            Self::Memory(_) => Ok(Vec::new()),
            Self::Sqlite(database) => database.migration_status().await,
            Self::Postgres(database) => database.migration_status().await,
        }
    }

    /// Applies the pending migrations; returns those applied.
    ///
    /// # Errors
    /// When a migration fails (it is rolled back) or one applied earlier was modified.
    pub async fn migrate(&self) -> Result<Vec<Migration>, RepositoryError> {
        match self {
            Self::Memory(_) => Ok(Vec::new()),
            Self::Sqlite(database) => database.migrate().await,
            Self::Postgres(database) => database.migrate().await,
        }
    }
}
