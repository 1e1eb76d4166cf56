//! `shortener export`: the formats are `shortener-transfer`'s; this opens the database by
//! its URL and closes it when the export is written.

use shortener_backends::AnyRepository;
pub use shortener_transfer::export::*;

/// Writes every link of the database at `url` that `reach` covers to `out`; returns how
/// many.
///
/// # Errors
/// When the database cannot be opened, read or closed, or `out` cannot be written.
pub async fn run(
    url: &str,
    format: Format,
    reach: &Reach,
    out: &mut impl std::io::Write,
) -> anyhow::Result<usize> {
    let database = AnyRepository::open_current(url).await?;
    let links = write(&database, format, reach, out).await?;
    database.close().await?;
    Ok(links)
}
