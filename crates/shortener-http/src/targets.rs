//! The target rules of `[links]` as the running node holds them: [`Targets`].
//!
//! The rules themselves are core's ([`TargetRules`], [`DenyList`]). What lives here is the
//! deny list that changes while the node runs: `links.deny_hosts` from the configuration,
//! joined with the entries of `links.deny_hosts_file`, which [`watch_forever`] reads again
//! whenever the file changes (its modification time or its length). A file that no longer
//! parses is logged and the list it replaced stays: a typo never unblocks every host.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use shortener_core::{DenyList, TargetRefusal, TargetRules, TargetUrl};

use crate::watched::WatchedFile;

/// The target rules and the deny list as they stand now.
#[derive(Debug)]
pub struct Targets {
    rules: TargetRules,
    /// `links.deny_hosts`, which only a restart changes.
    configured: DenyList,
    file: Option<PathBuf>,
    current: RwLock<Arc<DenyList>>,
    /// Whether `current` denies anything: redirects skip the lock when it does not.
    any: AtomicBool,
}

impl Targets {
    /// The rules, `links.deny_hosts` and `links.deny_hosts_file` as read at start.
    pub fn new(
        rules: TargetRules,
        configured: DenyList,
        file: Option<(PathBuf, DenyList)>,
    ) -> Self {
        let (file, from_file) = file.map_or((None, DenyList::default()), |(path, list)| {
            (Some(path), list)
        });
        let current = configured.clone().union(&from_file);
        Self {
            rules,
            configured,
            file,
            any: AtomicBool::new(!current.is_empty()),
            current: RwLock::new(Arc::new(current)),
        }
    }

    /// Checks a new target (create, bulk, edit).
    ///
    /// # Errors
    /// The [`TargetRefusal`] that applies.
    pub fn check(&self, url: &TargetUrl) -> Result<(), TargetRefusal> {
        self.rules.check(url, &self.deny_list())
    }

    /// Whether a stored target is denied now (a redirect answers 410 then).
    pub fn denies(&self, url: &str) -> bool {
        self.any.load(Ordering::Acquire) && self.deny_list().denies_url(url)
    }

    /// The rules of `[links]` but the deny list.
    pub fn rules(&self) -> &TargetRules {
        &self.rules
    }

    /// The deny list as it stands: `links.deny_hosts` and the file's entries.
    pub fn deny_list(&self) -> Arc<DenyList> {
        match self.current.read() {
            Ok(list) => list.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn replace(&self, from_file: &DenyList) {
        let list = self.configured.clone().union(from_file);
        self.any.store(!list.is_empty(), Ordering::Release);
        match self.current.write() {
            Ok(mut current) => *current = Arc::new(list),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(list),
        }
    }
}

/// Reads `links.deny_hosts_file` again whenever it changes, until `stop` says so.
pub async fn watch_forever(targets: &Targets, mut stop: tokio::sync::watch::Receiver<bool>) {
    let Some(path) = targets.file.clone() else {
        return;
    };
    let mut file = WatchedFile::new(path);
    while file.changed(&mut stop).await {
        let path = file.path();
        let owned = path.to_path_buf();
        let read = tokio::task::spawn_blocking(move || crate::watched::read_text(&owned))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e)));
        match read
            .map_err(|e| e.to_string())
            .and_then(|text| DenyList::parse_file(&text).map_err(|e| e.to_string()))
        {
            Ok(list) => {
                tracing::info!(file = %path.display(), hosts = list.len(), "deny list reloaded");
                targets.replace(&list);
            }
            Err(error) => tracing::error!(
                file = %path.display(),
                %error,
                "links.deny_hosts_file not reloaded; the previous list stays"
            ),
        }
    }
}
