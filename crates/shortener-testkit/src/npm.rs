//! JavaScript clients from the npm registry (other projects' SDKs that the compatibility
//! APIs are tested with), each installed once under the target directory, pinned to one
//! version, and the Node.js that runs them.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::cargo::target_dir;
use crate::process::{output_within, which};

/// How long a download and install may take.
const INSTALL: Duration = Duration::from_secs(600);

/// `target/npm/<name>@<version>`, a folder whose `node_modules` holds `package@version`,
/// installed now when it is not there yet (`--ignore-scripts`: nothing of the package
/// runs at install).
///
/// Installed under another name and renamed into place, so that a run stopped half-way
/// leaves nothing that looks installed.
///
/// # Errors
/// One line naming what to install when `node` or `npm` is missing, or npm's error.
pub fn package(package: &str, version: &str) -> io::Result<PathBuf> {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one = INSTALLING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    node()?;
    let home = target_dir().join("npm");
    let folder = home.join(format!("{}@{version}", package.replace('/', "+")));
    let installed = |folder: &Path| {
        folder
            .join("node_modules")
            .join(package)
            .join("package.json")
            .is_file()
    };
    if installed(&folder) {
        return Ok(folder);
    }
    std::fs::create_dir_all(&home)?;
    let staging = home.join(format!("installing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging)?;
    let npm = which("npm").ok_or_else(|| missing("npm"))?;
    let install = output_within(
        Command::new(npm)
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(&staging)
            .arg(format!("{package}@{version}")),
        INSTALL,
    )?;
    if !install.status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(io::Error::other(format!(
            "npm install {package}@{version} failed: {}",
            String::from_utf8_lossy(&install.stderr).trim()
        )));
    }
    // Another process may have won the rename: then its copy is used.
    if std::fs::rename(&staging, &folder).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    if installed(&folder) {
        Ok(folder)
    } else {
        Err(io::Error::other(format!(
            "{package} is not complete in {}",
            folder.display()
        )))
    }
}

/// The `node` on `PATH`.
///
/// # Errors
/// One line saying to install Node.js when there is none.
pub fn node() -> io::Result<PathBuf> {
    which("node").ok_or_else(|| missing("node"))
}

fn missing(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "`{what}` is needed to run other projects' JavaScript clients: install Node.js 20 or later with npm"
        ),
    )
}
