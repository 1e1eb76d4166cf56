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

use shortener_backends::AnyRepository;
use shortener_core::{Migration, MigrationStatus, RedactedUrl};

/// Runs the command on `url` and returns what to print.
///
/// # Errors
/// As [`AnyRepository::open`], [`AnyRepository::migration_status`] and
/// [`AnyRepository::migrate`].
pub async fn run(url: &str, status: bool) -> anyhow::Result<String> {
    let shown = RedactedUrl::new(url);
    let database = AnyRepository::open(url).await?;
    let mut out = String::new();
    if status {
        let _ = writeln!(out, "migrations of {shown}:");
        for MigrationStatus {
            version,
            description,
            applied,
        } in database.migration_status().await?
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
    for Migration {
        version,
        description,
        ..
    } in applied
    {
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
        let database = AnyRepository::open(&url).await.unwrap();
        let before = database.migration_status().await.unwrap();
        assert!(!before.is_empty() && before.iter().all(|status| !status.applied));
        let applied: Vec<(i64, String)> = (database.migrate().await.unwrap().into_iter())
            .map(|migration| (migration.version, migration.description))
            .collect();
        let expected: Vec<(i64, String)> = (before.into_iter())
            .map(|status| (status.version, status.description))
            .collect();
        assert_eq!(applied, expected);
        let after = database.migration_status().await.unwrap();
        assert!(after.iter().all(|status| status.applied));
        assert!(database.migrate().await.unwrap().is_empty());
        assert!(
            run(&url, false)
                .await
                .unwrap()
                .contains("no pending migration")
        );
        assert!(AnyRepository::open("mysql://db/links").await.is_err());
    }
}
