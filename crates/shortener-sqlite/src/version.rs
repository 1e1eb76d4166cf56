//! The SQLite library's version, checked when a pool opens: the batched writes read their
//! rows with `jsonb_each` (SQLite 3.45 and later). The build bundles a recent SQLite; a
//! build linked against an older system library (`LIBSQLITE3_SYS_USE_PKG_CONFIG`) would
//! otherwise start and then fail every visit flush and import.

use shortener_core::RepositoryError;
use sqlx::SqlitePool;

use crate::error::storage_error;

/// The oldest SQLite with `jsonb_each`.
const NEEDED: (u32, u32) = (3, 45);

/// `Unexpected`, naming both versions, when the library is older than [`NEEDED`].
pub(crate) async fn check(pool: &SqlitePool) -> Result<(), RepositoryError> {
    let (version,): (String,) = sqlx::query_as("SELECT sqlite_version()")
        .fetch_one(pool)
        .await
        .map_err(storage_error)?;
    if is_recent_enough(&version) {
        return Ok(());
    }
    let (major, minor) = NEEDED;
    Err(RepositoryError::Unexpected(
        format!("SQLite {major}.{minor} or later is needed (jsonb_each), this build links {version}: build with the bundled SQLite").into(),
    ))
}

/// Whether `version` (`major.minor.patch`) is at least [`NEEDED`].
fn is_recent_enough(version: &str) -> bool {
    let mut parts = version.split('.').map(str::parse::<u32>);
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => (major, minor) >= NEEDED,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_3_45_on_are_enough() {
        for (version, enough) in [
            ("3.40.1", false),
            ("3.44.9", false),
            ("3.45.0", true),
            ("3.51.3", true),
            ("4.0.0", true),
            ("garbage", false),
        ] {
            assert_eq!(is_recent_enough(version), enough, "{version}");
        }
    }
}
