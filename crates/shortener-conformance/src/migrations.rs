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

/// A directory holding the migrations of `migrations` older than `version`: what an
/// earlier release applied, for a story that upgrades a database it made.
///
/// # Panics
/// When the directory cannot be read or copied.
pub fn migrations_before(migrations: &std::path::Path, version: i64) -> shortener_testkit::TempDir {
    let earlier = shortener_testkit::TempDir::new();
    for entry in std::fs::read_dir(migrations).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let number: i64 = name.split('_').next().unwrap().parse().unwrap();
        if number < version {
            std::fs::copy(&path, earlier.path().join(name)).unwrap();
        }
    }
    earlier
}
