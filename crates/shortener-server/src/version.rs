//! The version the binary reports: the crate version (the workspace's), and the git
//! commit it was built from when built from a checkout (see `build.rs`).

/// The crate version, as in the OpenAPI document.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// 12 hex digits of the commit, or empty when unknown.
pub const COMMIT: &str = env!("BUILT_FROM_COMMIT");

/// `0.1.0 (1a2b3c4d5e6f)`, or `0.1.0` without a commit.
pub fn long() -> String {
    if COMMIT.is_empty() {
        VERSION.to_owned()
    } else {
        format!("{VERSION} ({COMMIT})")
    }
}
