//! Cargo from inside a test, a benchmark or xtask: the workspace's root, and a `cargo`
//! command that builds as an outer `cargo` would.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root directory (where `deploy/` and `config/` are).
pub fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
}

/// The target directory: `CARGO_TARGET_DIR`, else the workspace's `target/`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace().join("target"), PathBuf::from)
}

/// A `cargo` command (`$CARGO`, else `cargo` on PATH) without the variables that Cargo
/// sets for the crate running it (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `OUT_DIR`, ...).
///
/// Inherited from a test, a benchmark or xtask, they change what build scripts see (ring's
/// reads `CARGO_MANIFEST_DIR`), so the nested build and the next outer one would each
/// rebuild ring, rustls, sqlx and everything above them, minutes apiece.
pub fn cargo_command() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let per_crate = name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_")
            || matches!(
                name,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "CARGO_RUSTC_CURRENT_DIR"
                    | "OUT_DIR"
            );
        if per_crate {
            command.env_remove(name);
        }
    }
    command
}
