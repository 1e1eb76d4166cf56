//! The git commit the binary is built from, as `BUILT_FROM_COMMIT` (12 hex digits; outside
//! a git checkout, or without git on PATH, the one the variable of that name gives, else
//! empty), and `BUILT_VERSION`, the
//! crate version followed by that commit: `shortener --version` and the
//! `shortener_build_info` metric report them. Not a
//! `SHORTENER_` name: Cargo also sets it when it runs the crate's tests, and the config
//! reads every `SHORTENER_*` variable as a key.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let root = Path::new(&manifest).join("../..");
    // Asked of git, not assumed to be `.git/`: in a worktree `.git` is a file, HEAD is in
    // the worktree's own directory and the branches in the repository's common one.
    if let (Some(git), Some(common)) = (
        git_path(&root, "--absolute-git-dir"),
        git_path(&root, "--git-common-dir"),
    ) {
        // A new commit moves HEAD or the branch it names (loose, or packed). Only files
        // that exist are named: Cargo runs the script again at every build for a missing one.
        let mut watched = vec![git.join("HEAD"), common.join("packed-refs")];
        if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
            && let Some(branch) = head.trim().strip_prefix("ref: ")
        {
            watched.push(common.join(branch));
        }
        for file in watched.iter().filter(|file| file.is_file()) {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|commit| commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()))
        .or_else(given_commit)
        .unwrap_or_default();
    println!("cargo:rustc-env=BUILT_FROM_COMMIT={commit}");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    if commit.is_empty() {
        println!("cargo:rustc-env=BUILT_VERSION={version}");
    } else {
        println!("cargo:rustc-env=BUILT_VERSION={version} ({commit})");
    }
}

/// A directory `git rev-parse` names for the checkout at `root` (relative answers are
/// relative to `root`), or `None` outside a checkout or without git.
fn git_path(root: &Path, question: &str) -> Option<std::path::PathBuf> {
    let output = Command::new("git")
        .args(["rev-parse", question])
        .current_dir(root)
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (!path.is_empty()).then(|| root.join(path))
}

/// Outside a checkout (a container build's context holds no `.git`), the commit the
/// builder names in the variable `BUILT_FROM_COMMIT`: 12 to 40 hex digits, kept to 12.
fn given_commit() -> Option<String> {
    println!("cargo:rerun-if-env-changed=BUILT_FROM_COMMIT");
    let given = std::env::var("BUILT_FROM_COMMIT").ok()?;
    let given = given.trim();
    (given.len() >= 12 && given.len() <= 40 && given.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| given[..12].to_ascii_lowercase())
}
