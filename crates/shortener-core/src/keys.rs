//! API keys kept in storage ([`StoredKey`], the [`KeyStore`] port), made and revoked
//! while the service runs, beside those of the configuration file.
//!
//! A key is known by the SHA-256 of its secret; the secret itself is shown once when the
//! key is made and never stored. A revoked key stays stored (so that its refusal can be
//! told apart from an unknown key's, and its name is never given to another key).
//!
//! Not here: what a scope allows (the HTTP adapter's), making secrets, or how a node
//! learns of a revocation.

use std::future::Future;

use time::OffsetDateTime;

use crate::domain::Owner;
use crate::repository::RepositoryError;

/// An API key as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// Unique among stored keys (and, checked by the service, configured ones).
    pub name: Owner,
    /// The SHA-256 of the secret.
    pub digest: [u8; 32],
    /// Scope names, as the configuration's `scopes` has them.
    pub scopes: Vec<String>,
    /// Whose links the key reaches; `None`: the key's own name's.
    pub owner: Option<Owner>,
    /// The limiter tier whose policies apply to it.
    pub tier: Option<String>,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
    /// When it was last used, kept coarsely (at most a write a minute per key).
    pub last_used_at: Option<OffsetDateTime>,
}

impl StoredKey {
    /// The digest as lowercase hex, as storage keeps it.
    pub fn digest_hex(&self) -> String {
        self.digest
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    /// A digest from its hex (64 digits, either case).
    pub fn parse_digest(hex: &str) -> Option<[u8; 32]> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut digest = [0u8; 32];
        for (byte, pair) in digest.iter_mut().zip(hex.as_bytes().chunks(2)) {
            *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
        }
        Some(digest)
    }

    /// Whether the key opens nothing at `now`: revoked, or past its expiry.
    pub fn is_ended(&self, now: OffsetDateTime) -> bool {
        self.revoked_at.is_some() || self.expires_at.is_some_and(|expiry| expiry <= now)
    }
}

/// A key's text columns as storage keeps them: the digest as hex, the scopes joined by
/// commas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyColumns {
    pub name: String,
    pub sha256: String,
    pub scopes: String,
    pub owner: Option<String>,
    pub tier: Option<String>,
}

/// A key's times as storage keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyTimes {
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
    pub last_used_at: Option<OffsetDateTime>,
}

impl StoredKey {
    /// The columns of this key.
    pub fn columns(&self) -> KeyColumns {
        KeyColumns {
            name: self.name.as_str().to_owned(),
            sha256: self.digest_hex(),
            scopes: self.scopes.join(","),
            owner: self.owner.as_ref().map(|owner| owner.as_str().to_owned()),
            tier: self.tier.clone(),
        }
    }

    /// The key of stored columns.
    ///
    /// # Errors
    /// `Unexpected` for a name, owner or digest that storage should not hold.
    pub fn from_columns(columns: KeyColumns, times: KeyTimes) -> Result<Self, RepositoryError> {
        let bad = |what: &str| {
            RepositoryError::Unexpected(format!("stored key `{}`: bad {what}", columns.name).into())
        };
        Ok(Self {
            name: Owner::parse(&columns.name).map_err(|_| bad("name"))?,
            digest: Self::parse_digest(&columns.sha256).ok_or_else(|| bad("sha256"))?,
            scopes: (columns.scopes.split(',').filter(|scope| !scope.is_empty()))
                .map(str::to_owned)
                .collect(),
            owner: (columns.owner.as_deref())
                .map(|owner| Owner::parse(owner).map_err(|_| bad("owner")))
                .transpose()?,
            tier: columns.tier,
            created_at: times.created_at,
            expires_at: times.expires_at,
            revoked_at: times.revoked_at,
            last_used_at: times.last_used_at,
        })
    }
}

/// Why a key was not stored.
#[derive(Debug, thiserror::Error)]
pub enum KeyInsertError {
    /// A stored key, revoked or not, has the name.
    #[error("a key with this name exists")]
    NameTaken,
    #[error(transparent)]
    Repository(#[from] RepositoryError),
}

/// Where API keys are stored.
pub trait KeyStore: Send + Sync + 'static {
    /// Stores a new key.
    ///
    /// # Errors
    /// [`KeyInsertError::NameTaken`] when a stored key has its name (or its digest).
    fn insert_key(&self, key: StoredKey)
    -> impl Future<Output = Result<(), KeyInsertError>> + Send;

    /// Every stored key, revoked and expired ones too, by name.
    ///
    /// # Errors
    /// When storage fails.
    fn keys(&self) -> impl Future<Output = Result<Vec<StoredKey>, RepositoryError>> + Send;

    /// Revokes the key `name` at `at`; `false` when there is no such key or it was
    /// revoked already (the first revocation's time stays).
    ///
    /// # Errors
    /// When storage fails.
    fn revoke_key(
        &self,
        name: &Owner,
        at: OffsetDateTime,
    ) -> impl Future<Output = Result<bool, RepositoryError>> + Send;

    /// Records when keys were last used; unknown names are skipped, and a time earlier
    /// than the stored one changes nothing.
    ///
    /// # Errors
    /// When storage fails.
    fn touch_keys(
        &self,
        used: &[(Owner, OffsetDateTime)],
    ) -> impl Future<Output = Result<(), RepositoryError>> + Send;
}
