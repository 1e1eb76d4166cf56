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
pub const POLL_INTERVAL: Duration = Duration::from_millis(250);

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
    #[error("cannot read the limits directory {path}: {source}")]
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
        let mut files = Vec::new();
        for entry in entries {
            let file = entry.map_err(io)?.path();
            if !is_limits_file(&file) {
                continue;
            }
            match std::fs::read_to_string(&file) {
                Ok(text) => files.push((file.display().to_string(), text)),
                // Removed between the listing and the read: it is gone, as it will be
                // at the next poll.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(io(error)),
            }
        }
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

fn is_limits_file(path: &Path) -> bool {
    path.is_file()
        && path
            .extension()
            .is_some_and(|extension| extension == "yaml" || extension == "yml")
}
