//! [`WatchedFile`]: a file an operator may replace while the service runs (the deny list,
//! the country database), looked at every half second and reported when its modification
//! time or length changed. Polling, not inotify: it works the same for a file replaced by
//! a rename, on a network file system and in a container's mounted volume.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How often the file is looked at.
const POLL: Duration = Duration::from_millis(500);

/// A file and what it held when last looked at.
#[derive(Debug)]
pub struct WatchedFile {
    path: PathBuf,
    seen: Option<(Option<SystemTime>, u64)>,
}

impl WatchedFile {
    /// Watches `path` from what it holds now.
    pub fn new(path: PathBuf) -> Self {
        let seen = stamp(&path);
        Self { path, seen }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits until the file changes (`true`) or `stop` says so (`false`).
    pub async fn changed(&mut self, stop: &mut tokio::sync::watch::Receiver<bool>) -> bool {
        loop {
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                _ = stop.changed() => return false,
            }
            let now = stamp(&self.path);
            if now != self.seen {
                self.seen = now;
                return true;
            }
        }
    }
}

fn stamp(path: &Path) -> Option<(Option<SystemTime>, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok(), meta.len()))
}
