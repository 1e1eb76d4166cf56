//! The embedded migrations, run by core's one migration runner ([`Migrations`]): this
//! file says only which migrations the build knows, which the database has applied, and
//! how sqlx applies the pending ones.

use shortener_core::{Migration, Migrations, RepositoryError};
use sqlx::migrate::{MigrateError, Migrator};

use crate::SqliteRepository;
use crate::error::storage_error;

/// The migrations of `migrations/`, embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

impl Migrations for SqliteRepository {
    const ENGINE: &'static str = "sqlite";

    fn known(&self) -> Vec<Migration> {
        MIGRATOR
            .iter()
            .filter(|migration| !migration.migration_type.is_down_migration())
            .map(|migration| Migration {
                version: migration.version,
                description: migration.description.to_string(),
                checksum: migration.checksum.to_vec(),
            })
            .collect()
    }

    async fn applied(&self) -> Result<Vec<Migration>, RepositoryError> {
        let table_exists: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM sqlite_master \
             WHERE type = 'table' AND name = '_sqlx_migrations'",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(storage_error)?;
        if table_exists == 0 {
            return Ok(Vec::new());
        }
        let rows: Vec<(i64, String, Vec<u8>)> = sqlx::query_as(
            "SELECT version, description, checksum FROM _sqlx_migrations \
             WHERE success ORDER BY version",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(rows.into_iter().map(Migration::from).collect())
    }

    async fn apply_pending(&self) -> Result<(), RepositoryError> {
        MIGRATOR.run(&self.pool).await.map_err(migrate_error)
    }
}

fn migrate_error(error: MigrateError) -> RepositoryError {
    match error {
        MigrateError::Execute(error) => storage_error(error),
        other => RepositoryError::Unexpected(format!("migration failed: {other}").into()),
    }
}
