//! What the migration stories of the database adapters read, in one shape: a database's
//! migrations as `(version, description, applied)`, and what a migrate applied.
//! The stories themselves stay in each adapter's tests, since a fresh database is made
//! differently for each (a new file, a new schema).

use shortener_core::Migrations;

/// `(version, description, applied)` of every migration of `database`.
///
/// # Panics
/// When the database cannot be read.
pub async fn status_of(database: &impl Migrations) -> Vec<(i64, String, bool)> {
    (database.migration_status().await.unwrap().into_iter())
        .map(|status| (status.version, status.description, status.applied))
        .collect()
}

/// Applies the pending migrations of `database`; the versions applied.
///
/// # Panics
/// When a migration fails.
pub async fn migrate(database: &impl Migrations) -> Vec<i64> {
    (database.migrate().await.unwrap().into_iter())
        .map(|migration| migration.version)
        .collect()
}
