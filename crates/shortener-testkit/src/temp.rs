//! Temporary directories, removed on drop and, for those never dropped, after exit.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::process::Watchdog;

/// A fresh directory (made by the `tempfile` crate), removed on drop. Every one lives
/// under `shortener-<pid>` in the system temp dir, which a [`Watchdog`] removes once this
/// process has exited, however it exited.
#[derive(Debug)]
pub struct TempDir(tempfile::TempDir);

impl TempDir {
    /// # Panics
    /// When the directory cannot be made.
    pub fn new() -> Self {
        Self::with_prefix("test").unwrap_or_else(|error| panic!("{error}"))
    }

    /// A directory named `<prefix>-<random>`.
    ///
    /// # Errors
    /// When the directory cannot be made.
    pub fn with_prefix(prefix: &str) -> io::Result<Self> {
        tempfile::Builder::new()
            .prefix(&format!("{prefix}-"))
            .tempdir_in(root()?)
            .map(Self)
            .map_err(|error| {
                io::Error::new(error.kind(), format!("cannot make a temp dir: {error}"))
            })
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Default for TempDir {
    fn default() -> Self {
        Self::new()
    }
}

/// `shortener-<pid>` in the system temp dir, with the watchdog that removes it.
fn root() -> io::Result<&'static Path> {
    static ROOT: OnceLock<(PathBuf, Option<Watchdog>)> = OnceLock::new();
    let (root, _) = ROOT.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("shortener-{}", std::process::id()));
        let watchdog = Watchdog::after_exit(r#"rm -rf -- "$1""#, &[root.as_os_str()]).ok();
        (root, watchdog)
    });
    std::fs::create_dir_all(root)?;
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temp_dir_is_removed_on_drop() {
        let dir = TempDir::new();
        let path = dir.path().to_path_buf();
        assert!(path.is_dir());
        std::fs::write(path.join("file"), "x").unwrap();
        drop(dir);
        assert!(!path.exists());
    }
}
