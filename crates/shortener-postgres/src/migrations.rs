//! The embedded migrations: applying them, and telling which are applied.

use std::collections::BTreeMap;

use shortener_core::RepositoryError;
use sqlx::migrate::{MigrateError, Migrator};

use crate::PostgresRepository;
use crate::error::storage_error;

/// The migrations of `migrations/`, embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// A row of sqlx's bookkeeping table: version, description, checksum.
type AppliedRow = (i64, String, Vec<u8>);

impl PostgresRepository {
    /// Every migration this build knows or the database has applied, in version order:
    /// `(version, description, applied)`.
    ///
    /// # Errors
    /// [`RepositoryError`] when the database cannot be read.
    pub async fn migration_status(&self) -> Result<Vec<(i64, String, bool)>, RepositoryError> {
        let applied = self.applied_migrations().await?;
        let mut status: BTreeMap<i64, (String, bool)> = known_migrations()
            .map(|(version, description, _)| (version, (description.to_owned(), false)))
            .collect();
        for (version, description, _) in applied {
            status.entry(version).or_insert((description, true)).1 = true;
        }
        Ok(status
            .into_iter()
            .map(|(version, (description, applied))| (version, description, applied))
            .collect())
    }

    /// Applies the pending migrations; returns the versions applied by this call.
    ///
    /// # Errors
    /// `Unexpected` when a migration fails, an applied one was modified or is unknown to
    /// this build; `Unavailable` when the database cannot be reached.
    pub async fn migrate(&self) -> Result<Vec<i64>, RepositoryError> {
        let before = self.applied_versions().await?;
        let mut connection = self.pool.acquire().await.map_err(storage_error)?;
        // A migration may rightly take longer than a request's statement; this session is
        // closed afterwards, so the pool never hands out a connection without the limit.
        connection.close_on_drop();
        sqlx::query("SET statement_timeout = 0")
            .execute(&mut *connection)
            .await
            .map_err(storage_error)?;
        // On failure too the session is closed: the migrator holds an advisory lock on it
        // until it finishes, and a session left in the pool could keep it and block every
        // later migration.
        if let Err(error) = MIGRATOR.run(&mut *connection).await {
            return Err(migrate_error(error));
        }
        drop(connection);
        let after = self.applied_versions().await?;
        let applied: Vec<i64> = after.into_iter().filter(|v| !before.contains(v)).collect();
        if !applied.is_empty() {
            tracing::info!(?applied, "applied postgres migrations");
        }
        Ok(applied)
    }

    /// Refuses a database on which a migration of this build is pending or was modified.
    pub(crate) async fn check_migrated(&self) -> Result<(), RepositoryError> {
        let applied: BTreeMap<i64, Vec<u8>> = self
            .applied_migrations()
            .await?
            .into_iter()
            .map(|(version, _, checksum)| (version, checksum))
            .collect();
        let mut pending = Vec::new();
        for (version, description, checksum) in known_migrations() {
            match applied.get(&version) {
                None => pending.push(format!("{version} ({description})")),
                Some(stored) if stored.as_slice() != checksum => {
                    return Err(RepositoryError::Unexpected(
                        format!(
                            "migration {version} ({description}) was modified after it was applied"
                        )
                        .into(),
                    ));
                }
                Some(_) => {}
            }
        }
        if pending.is_empty() {
            Ok(())
        } else {
            Err(RepositoryError::Unexpected(format!(
                "the database has pending migrations: {}; apply them with `cargo xtask migrate` \
                 or storage.migrate = true",
                pending.join(", ")
            ).into()))
        }
    }

    async fn applied_versions(&self) -> Result<Vec<i64>, RepositoryError> {
        Ok(self
            .applied_migrations()
            .await?
            .into_iter()
            .map(|(version, _, _)| version)
            .collect())
    }

    /// The successful rows of sqlx's table; none when the table does not exist yet.
    async fn applied_migrations(&self) -> Result<Vec<AppliedRow>, RepositoryError> {
        // Looked up along the search path, as the migrator creates it.
        let table_exists: bool =
            sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
                .fetch_one(&self.pool)
                .await
                .map_err(storage_error)?;
        if !table_exists {
            return Ok(Vec::new());
        }
        sqlx::query_as(
            "SELECT version, description, checksum FROM _sqlx_migrations \
             WHERE success ORDER BY version",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)
    }
}

/// This build's up migrations: version, description, checksum.
fn known_migrations() -> impl Iterator<Item = (i64, &'static str, &'static [u8])> {
    MIGRATOR
        .iter()
        .filter(|migration| !migration.migration_type.is_down_migration())
        .map(|migration| {
            (
                migration.version,
                migration.description.as_ref(),
                migration.checksum.as_ref(),
            )
        })
}

fn migrate_error(error: MigrateError) -> RepositoryError {
    match error {
        MigrateError::Execute(error) => storage_error(error),
        other => RepositoryError::Unexpected(format!("migration failed: {other}").into()),
    }
}
