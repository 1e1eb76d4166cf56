//! API keys in memory: a map by name, under one lock.

use std::sync::PoisonError;

use shortener_core::{KeyInsertError, KeyStore, Owner, RepositoryError, StoredKey};
use time::OffsetDateTime;

use crate::MemoryRepository;

impl KeyStore for MemoryRepository {
    async fn insert_key(&self, key: StoredKey) -> Result<(), KeyInsertError> {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = keys.contains_key(key.name.as_str())
            || keys.values().any(|stored| stored.digest == key.digest);
        if taken {
            return Err(KeyInsertError::NameTaken);
        }
        keys.insert(key.name.as_str().to_owned(), key);
        Ok(())
    }

    async fn keys(&self) -> Result<Vec<StoredKey>, RepositoryError> {
        let keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(keys.values().cloned().collect())
    }

    async fn revoke_key(&self, name: &Owner, at: OffsetDateTime) -> Result<bool, RepositoryError> {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        match keys.get_mut(name.as_str()) {
            Some(key) if key.revoked_at.is_none() => {
                key.revoked_at = Some(at);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn touch_keys(&self, used: &[(Owner, OffsetDateTime)]) -> Result<(), RepositoryError> {
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, at) in used {
            if let Some(key) = keys.get_mut(name.as_str())
                && key.last_used_at.is_none_or(|last| last < *at)
            {
                key.last_used_at = Some(*at);
            }
        }
        Ok(())
    }
}
