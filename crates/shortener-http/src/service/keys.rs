//! API keys in storage as a node sees them (`auth::StoredKeys`): a snapshot of every stored
//! key, read again every [`RELOAD_EVERY`] by a background task (and at once after this
//! node makes or revokes one), so that a key made or revoked on any node, or by
//! `shortener keys` on the database, is taken or refused by every node within a second,
//! with or without Redis. A stored key's last use is written at most once a minute.
//!
//! Not here: the keys, their snapshot and the constant-time look-up (`auth`), the loop
//! that reads them again (`tasks`), the API that makes and revokes keys (`api/keys.rs`).

use std::time::Duration;

use shortener_core::{KeyStore as _, Owner, RepositoryError};

use crate::state::AppState;

/// How often a node reads the stored keys again.
pub const RELOAD_EVERY: Duration = Duration::from_millis(500);

impl AppState {
    /// Reads the stored keys again, and writes the uses noted since the last read.
    ///
    /// # Errors
    /// When storage fails; the previous snapshot stays.
    pub(crate) async fn reload_keys(&self) -> Result<(), RepositoryError> {
        let repository = self.shortener.repository();
        let uses = self.api_keys.stored.take_uses();
        if !uses.is_empty() {
            repository.touch_keys(&uses).await?;
        }
        let keys = repository.keys().await?;
        self.api_keys.stored.replace(keys);
        Ok(())
    }

    /// The name of a key that is both in the configuration file and in storage, if any:
    /// such a start is refused, since one name would stand for two keys.
    pub(crate) fn key_name_clash(&self) -> Option<Owner> {
        let stored = self.api_keys.stored.snapshot();
        (self.api_keys.configured().iter())
            .find(|configured| stored.iter().any(|key| key.name == configured.name))
            .map(|configured| configured.name.clone())
    }
}
