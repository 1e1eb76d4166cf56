//! The embedded migrations, run by core's one migration runner ([`Migrations`]): this
//! file says only which migrations the build knows, which the database has applied, and
//! how sqlx applies the pending ones; neither is bound by the pool's statement timeout
//! (the reads have a minute, the migrations no limit).

use shortener_core::{Migration, Migrations, RepositoryError};
use sqlx::migrate::{MigrateError, Migrator};

use crate::PostgresRepository;
use crate::error::storage_error;

/// The migrations of `migrations/`, embedded at build time.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

impl Migrations for PostgresRepository {
    const ENGINE: &'static str = "postgres";

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
        // Read when a node starts, before it serves: not a request's statement, so not
        // bound by `storage.statement_timeout_ms` either. A catalog read on a fresh
        // session of a loaded server can take longer than a request's budget, and a node
        // that failed its start for it would have nothing to retry. A minute still ends
        // a start that waits on something stuck, with the database's own error.
        let mut transaction = self.pool.begin().await.map_err(storage_error)?;
        sqlx::query("SET LOCAL statement_timeout = '60s'")
            .execute(&mut *transaction)
            .await
            .map_err(storage_error)?;
        // Looked up along the search path, as the migrator creates it.
        let table_exists: bool =
            sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
                .fetch_one(&mut *transaction)
                .await
                .map_err(storage_error)?;
        let rows: Vec<(i64, String, Vec<u8>)> = if table_exists {
            sqlx::query_as(
                "SELECT version, description, checksum FROM _sqlx_migrations \
                 WHERE success ORDER BY version",
            )
            .fetch_all(&mut *transaction)
            .await
            .map_err(storage_error)?
        } else {
            Vec::new()
        };
        transaction.commit().await.map_err(storage_error)?;
        Ok(rows.into_iter().map(Migration::from).collect())
    }

    async fn apply_pending(&self) -> Result<(), RepositoryError> {
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
        // `run_direct` rather than `run`: sqlx's own way around the "implementation of
        // `Acquire` is not general enough" error that a `Send` future over `run` meets.
        MIGRATOR
            .run_direct(None, &mut *connection, false)
            .await
            .map_err(|error| match error {
                MigrateError::Execute(error) => storage_error(error),
                other => RepositoryError::Unexpected(format!("migration failed: {other}").into()),
            })
    }
}
