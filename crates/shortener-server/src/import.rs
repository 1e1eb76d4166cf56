//! `shortener import --from FORMAT FILE`: the formats and the rules are
//! `shortener-transfer`'s; this opens the database by its URL, shows progress and closes
//! it (SQLite's write-ahead log folded into the file) even after a failed write.

mod progress;

use shortener_backends::AnyRepository;
pub use shortener_transfer::import::*;

pub use self::progress::Progress;

/// Writes `records` to the database at `url` (unless `dry_run`), calling `progress` with
/// the count done after each batch.
///
/// # Errors
/// When the database cannot be opened or closed. A write that fails stops the import,
/// and the report says where ([`Report::stopped`]) and what was written before.
pub async fn run(
    url: &str,
    records: Vec<Record>,
    dry_run: bool,
    progress: impl FnMut(usize),
) -> anyhow::Result<Report> {
    let database = AnyRepository::open_current(url).await?;
    let report = write(&database, records, dry_run, progress).await;
    // Closed even after a failure: what was written stays, in the file itself.
    database.close().await?;
    Ok(report)
}
