//! `WatchedFile`: a file an operator may replace while the service runs (the deny list,
//! the country database), looked at every half second and reported when its modification
//! time or length changed. Polling, not inotify: it works the same for a file replaced by
//! a rename, on a network file system and in a container's mounted volume.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The largest run-time text file read (a deny list of a few hundred thousand hosts).
pub const MAX_TEXT_BYTES: u64 = 64 * 1024 * 1024;

/// The text of a file an operator named, read only when it is a regular file (after any
/// symlink) of at most [`MAX_TEXT_BYTES`]: a FIFO would block the read, `/dev/zero` would
/// never end, and `/dev/null` or a dangling link would read as an empty file (an empty
/// deny list). Any of these is an error, so that the caller keeps what it had.
///
/// # Errors
/// When the file cannot be read, is not a regular file, is larger than the cap, or is
/// not UTF-8. The error never quotes the content (the caller names the path).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let refused = |why: &str| std::io::Error::other(why.to_owned());
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(refused("not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_TEXT_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_TEXT_BYTES {
        return Err(refused(&format!("larger than {MAX_TEXT_BYTES} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| refused("not UTF-8 text"))
}

/// How often the file is looked at.
const POLL: Duration = Duration::from_millis(500);

/// A file and what it held when last looked at.
#[derive(Debug)]
pub(crate) struct WatchedFile {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("deny.txt");
        std::fs::write(&list, "example.org\n").unwrap();
        assert_eq!(read_text(&list).unwrap(), "example.org\n");
        // Through a link to a regular file: read.
        let link = dir.path().join("current.txt");
        std::os::unix::fs::symlink(&list, &link).unwrap();
        assert_eq!(read_text(&link).unwrap(), "example.org\n");
        // A link to /dev/null would read as an empty list; a dangling one is no file.
        let null = dir.path().join("null.txt");
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        assert!(
            read_text(&null)
                .unwrap_err()
                .to_string()
                .contains("not a regular file")
        );
        let dangling = dir.path().join("dangling.txt");
        std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
        assert!(read_text(&dangling).is_err());
        assert!(read_text(dir.path()).is_err(), "a directory");
    }
}
