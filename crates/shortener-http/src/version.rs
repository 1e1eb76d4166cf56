//! The version the binary reports: the crate version (the workspace's), and the git
//! commit it was built from when built from a checkout (see `build.rs`).

/// The crate version, as in the OpenAPI document.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// 12 hex digits of the commit, or empty when unknown.
pub const COMMIT: &str = env!("BUILT_FROM_COMMIT");

/// `0.1.0 (1a2b3c4d5e6f)`, or `0.1.0` without a commit: what `--version` prints after
/// the name.
pub const LONG: &str = env!("BUILT_VERSION");

#[cfg(test)]
mod tests {
    #[test]
    fn the_long_version_is_the_version_then_the_commit() {
        if super::COMMIT.is_empty() {
            assert_eq!(super::LONG, super::VERSION);
        } else {
            assert_eq!(
                super::LONG,
                format!("{} ({})", super::VERSION, super::COMMIT)
            );
        }
    }
}
