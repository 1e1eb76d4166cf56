//! The limits files on disk, and their hot reload: a watcher reads the directory every
//! 250 ms and swaps in a new tree when any file changed, was added or was removed. A file
//! that does not load keeps the last good tree and counts a load error; requests always
//! see one whole tree, never half of one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use shortener_core::Algorithm;

use crate::limits::{Limits, LoadError};

/// How often the directory is read: a change takes effect within a second.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// The tree in use, swapped whole on reload.
#[derive(Debug, Default)]
pub struct LimitsHandle(RwLock<Arc<Limits>>);

impl LimitsHandle {
    pub fn new(limits: Limits) -> Self {
        Self(RwLock::new(Arc::new(limits)))
    }

    pub fn current(&self) -> Arc<Limits> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    pub fn replace(&self, limits: Limits) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(limits);
    }
}

/// Their layout: the files are every `*.yaml` (or `*.yml`) in
/// `RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeDirectory {
    pub root: PathBuf,
    pub subdirectory: String,
    pub appdirectory: String,
    /// Their `MERGE_DOMAIN_CONFIG`: files naming one domain add up instead of clashing.
    pub merge_domains: bool,
    /// The algorithm of the limits that name none (`rls.algorithm`).
    pub algorithm: Algorithm,
}

/// Why the files could not be read or loaded.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read the limits in {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Load(#[from] LoadError),
}

impl RuntimeDirectory {
    pub fn path(&self) -> PathBuf {
        self.root.join(&self.subdirectory).join(&self.appdirectory)
    }

    /// The files' names and texts, sorted by name; a missing directory has none.
    ///
    /// # Errors
    /// [`ReadError::Io`] when the directory or a file cannot be read.
    pub fn read(&self) -> Result<Vec<(String, String)>, ReadError> {
        let path = self.path();
        let io = |source| ReadError::Io {
            path: path.display().to_string(),
            source,
        };
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io(error)),
        };
        // Links are followed only to files inside the directory: that is how a
        // Kubernetes ConfigMap mounts its files (`x.yaml -> ..data/x.yaml`), and a link
        // elsewhere would load (and quote in errors) a file that is not a limits file.
        let inside = std::fs::canonicalize(&path).map_err(io)?;
        let mut files = Vec::new();
        walk(entries, &inside, &mut files, 0)?;
        files.sort();
        Ok(files)
    }

    /// Reads and loads the files.
    ///
    /// # Errors
    /// As [`RuntimeDirectory::read`], and the first file that does not load.
    pub fn load(&self) -> Result<(Limits, Vec<(String, String)>), ReadError> {
        let files = self.read()?;
        let limits = Limits::load(&files, self.merge_domains, self.algorithm)?;
        Ok((limits, files))
    }

    /// Polls the directory until `stop` and swaps in each new good tree. `seen` is what
    /// the tree in use was loaded from.
    pub async fn watch_forever(
        self,
        handle: Arc<LimitsHandle>,
        mut seen: Vec<(String, String)>,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut ticks = tokio::time::interval(POLL_INTERVAL);
        let mut failed: Option<String> = None;
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = stop.changed() => return,
            }
            let directory = self.clone();
            let read = tokio::task::spawn_blocking(move || directory.read()).await;
            let files = match read {
                Ok(Ok(files)) => files,
                Ok(Err(error)) => {
                    self.failed(&mut failed, &error.to_string());
                    continue;
                }
                Err(_) => continue,
            };
            if files == seen {
                continue;
            }
            match Limits::load(&files, self.merge_domains, self.algorithm) {
                Ok(limits) => {
                    handle.replace(limits);
                    crate::metrics::config_loaded(true);
                    tracing::info!(files = files.len(), "rate limit configuration reloaded");
                    failed = None;
                    seen = files;
                }
                Err(error) => {
                    self.failed(&mut failed, &error.to_string());
                    // Counted once per change of the files, not once per poll.
                    seen = files;
                }
            }
        }
    }

    fn failed(&self, last: &mut Option<String>, message: &str) {
        crate::metrics::config_loaded(false);
        if last.as_deref() != Some(message) {
            tracing::error!(
                error = message,
                "rate limit configuration not reloaded; keeping the last good one"
            );
        }
        *last = Some(message.to_owned());
    }
}

/// The largest limits file read: their largest example is a few kilobytes.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// How deep subdirectories are walked.
const MAX_DEPTH: usize = 16;

/// Adds the limits files of `entries` (a directory's) and of its subdirectories, as
/// theirs walks them, to `files`. Names that start with `.` are skipped, files and
/// directories alike (theirs with `RUNTIME_IGNOREDOTFILES=true`): a ConfigMap's
/// `..data` and `..2026_..` directories hold the same files as its links.
fn walk(
    entries: std::fs::ReadDir,
    inside: &Path,
    files: &mut Vec<(String, String)>,
    depth: usize,
) -> Result<(), ReadError> {
    for entry in entries {
        let entry = entry.map_err(|source| ReadError::Io {
            path: inside.display().to_string(),
            source,
        })?;
        let file = entry.path();
        let refused = |why: &str| ReadError::Io {
            path: file.display().to_string(),
            source: std::io::Error::other(why.to_owned()),
        };
        let io = |source| ReadError::Io {
            path: file.display().to_string(),
            source,
        };
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let target = match std::fs::canonicalize(&file) {
            Ok(target) => target,
            // Removed between the listing and the read: it is gone, as it will be at the
            // next poll. A dangling link is not gone: it is refused, so that the limits
            // it held do not silently lapse.
            Err(error)
                if error.kind() == std::io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(&file).is_err() =>
            {
                continue;
            }
            Err(_) if has_limits_extension(&file) => return Err(refused("a link to nothing")),
            Err(_) => continue,
        };
        if !target.starts_with(inside) {
            if has_limits_extension(&file) {
                return Err(refused("a link to a file outside the directory"));
            }
            continue;
        }
        let meta = std::fs::metadata(&target).map_err(io)?;
        if meta.is_dir() {
            // A real subdirectory, not a link to one (which would be walked twice).
            let linked = std::fs::symlink_metadata(&file)
                .map_err(io)?
                .file_type()
                .is_symlink();
            if depth < MAX_DEPTH && !linked {
                walk(
                    std::fs::read_dir(&file).map_err(io)?,
                    inside,
                    files,
                    depth + 1,
                )?;
            }
            continue;
        }
        if !has_limits_extension(&file) {
            continue;
        }
        if !meta.is_file() {
            return Err(refused("not a regular file"));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(refused(&format!("larger than {MAX_FILE_BYTES} bytes")));
        }
        match std::fs::read_to_string(&target) {
            Ok(text) => files.push((file.display().to_string(), text)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io(error)),
        }
    }
    Ok(())
}

fn has_limits_extension(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension == "yaml" || extension == "yml")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn directory(root: &Path) -> RuntimeDirectory {
        RuntimeDirectory {
            root: root.to_path_buf(),
            subdirectory: String::new(),
            appdirectory: "config".into(),
            merge_domains: false,
            algorithm: shortener_core::Algorithm::TokenBucket,
        }
    }

    const LIMITS: &str = "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n";

    #[test]
    fn links_are_followed_inside_the_directory_only() {
        let root = tempfile::tempdir().unwrap();
        let config = root.path().join("config");
        // As a Kubernetes ConfigMap mounts its files.
        std::fs::create_dir_all(config.join("..2026_12_06/")).unwrap();
        std::fs::write(config.join("..2026_12_06/limits.yaml"), LIMITS).unwrap();
        std::os::unix::fs::symlink("..2026_12_06", config.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/limits.yaml", config.join("limits.yaml")).unwrap();
        let files = directory(root.path()).read().unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].1, LIMITS);

        // A link out of the directory: refused whole, naming the file, quoting nothing.
        let outside = root.path().join("secret.txt");
        std::fs::write(&outside, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
        std::os::unix::fs::symlink(&outside, config.join("other.yaml")).unwrap();
        let error = directory(root.path()).read().unwrap_err().to_string();
        assert!(
            error.contains("other.yaml") && error.contains("outside"),
            "{error}"
        );
        assert!(!error.contains("root:x"), "{error}");
        std::fs::remove_file(config.join("other.yaml")).unwrap();

        // A subdirectory is walked as theirs are; dot directories (a ConfigMap's own)
        // and dot files are not.
        std::fs::create_dir_all(config.join("team/shop")).unwrap();
        let nested = LIMITS.replace("domain: d", "domain: nested");
        std::fs::write(config.join("team/shop/limits.yml"), &nested).unwrap();
        std::fs::write(config.join(".hidden.yaml"), "not: [yaml").unwrap();
        let files = directory(root.path()).read().unwrap();
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(files[1].0.ends_with("team/shop/limits.yml"), "{files:?}");

        // A dangling link: refused, not read as no file (its limits would lapse).
        std::os::unix::fs::symlink(config.join("gone.yaml"), config.join("lapsed.yaml")).unwrap();
        let error = directory(root.path()).read().unwrap_err().to_string();
        assert!(error.contains("lapsed.yaml"), "{error}");
    }
}
