//! `shortener import --from FORMAT FILE`: the formats and the rules are
//! `shortener-transfer`'s; this opens the database by its URL, applies its pending
//! migrations first when `storage.migrate` says so (as the server does at start), shows
//! progress and closes it (SQLite's write-ahead log folded into the file) even after a
//! failed write.

mod progress;

use shortener_backends::AnyRepository;
use shortener_core::Migration;
pub use shortener_transfer::import::*;

pub use self::progress::Progress;

/// What to do with a database whose migrations are not all applied: `storage.migrate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// Apply them, then import (`storage.migrate = true`, the default), as `serve` does.
    Apply,
    /// Refuse the import, naming them and `shortener migrate`.
    Refuse,
}

/// What an import did: the migrations it applied first, and what became of the links.
#[derive(Debug)]
pub struct Imported {
    pub migrations: Vec<Migration>,
    pub report: Report,
}

/// Writes `records` to the database at `url` (unless `dry_run`), calling `progress` with
/// the count done after each batch. A dry run writes nothing, migrations included: it
/// refuses a database with a pending one whatever `pending` says.
///
/// # Errors
/// When the database cannot be opened, migrated or closed, or has a pending migration
/// that is not to be applied. A write that fails stops the import, and the report says
/// where ([`Report::stopped`]) and what was written before.
pub async fn run(
    url: &str,
    records: Vec<Record>,
    dry_run: bool,
    pending: Pending,
    progress: impl FnMut(usize),
) -> anyhow::Result<Imported> {
    let (database, migrations) = if pending == Pending::Apply && !dry_run {
        AnyRepository::open_migrated(url).await?
    } else {
        (AnyRepository::open_current(url).await?, Vec::new())
    };
    let report = write(&database, records, dry_run, progress).await;
    // Closed even after a failure: what was written stays, in the file itself.
    database.close().await?;
    Ok(Imported { migrations, report })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINKS: &str = concat!(
        r#"{"code":"first","url":"https://example.com/1","created_at":"2026-01-01T00:00:00Z"}"#,
        "\n",
        r#"{"code":"second","url":"https://example.com/2","created_at":"2026-01-01T00:00:00Z"}"#,
        "\n",
    );

    fn records() -> Vec<Record> {
        let now = time::OffsetDateTime::now_utc();
        let reading = read(Source::Ndjson, LINKS.as_bytes(), None, now).unwrap();
        assert!(reading.refused.is_empty(), "{:?}", reading.refused);
        reading.records
    }

    /// Into a fresh database, an import with `storage.migrate` (the default) applies
    /// every migration, then writes the links; without it, it refuses, naming the first
    /// pending migration and `shortener migrate`, and writes nothing.
    #[tokio::test]
    async fn a_fresh_database_is_migrated_first_unless_storage_migrate_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("fresh.db").display());

        let refused = run(&url, records(), false, Pending::Refuse, |_| {})
            .await
            .unwrap_err()
            .to_string();
        let status = AnyRepository::open(&url)
            .await
            .unwrap()
            .migration_status()
            .await
            .unwrap();
        assert!(status.iter().all(|migration| !migration.applied));
        let first = &status[0];
        assert!(
            refused.contains(&format!("{} pending migration(s)", status.len()))
                && refused.contains(&format!("from {} {}", first.version, first.description))
                && refused.contains("shortener migrate"),
            "{refused}"
        );
        // A dry run writes nothing, migrations included.
        let dry = run(&url, records(), true, Pending::Apply, |_| {}).await;
        assert!(dry.is_err(), "{dry:?}");

        let imported = run(&url, records(), false, Pending::Apply, |_| {})
            .await
            .unwrap();
        assert_eq!(imported.migrations.len(), status.len());
        assert_eq!(imported.report.imported, 2);
        let mut out = Vec::new();
        let exported = crate::export::run(
            &url,
            crate::export::Format::Ndjson,
            &crate::export::Reach::All,
            &mut out,
        )
        .await
        .unwrap();
        assert_eq!(exported, 2);
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains("\"first\"") && out.contains("\"second\""),
            "{out}"
        );

        // Migrated now, it is imported into either way, and nothing is applied again.
        let again = run(&url, records(), false, Pending::Refuse, |_| {})
            .await
            .unwrap();
        assert!(again.migrations.is_empty());
        assert_eq!(again.report.unchanged, 2);
    }
}
