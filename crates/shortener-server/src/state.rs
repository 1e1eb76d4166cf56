//! What every request handler shares: the service, the limiter, and the parsed config.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use shortener_core::{AlphabetCodeGenerator, Policy, Shortener};

use crate::config::Config;
use subtle::ConstantTimeEq;

use crate::wiring::{AnyLimiter, Repository};

/// The application, built once at start.
#[derive(Debug)]
pub struct AppState {
    pub config: Config,
    /// `server.public_url` without a trailing slash.
    pub public_url: String,
    pub shortener: Shortener<Repository, AlphabetCodeGenerator>,
    pub limiter: AnyLimiter,
    pub policies: Policies,
    pub api_keys: ApiKeys,
}

/// The limiter policies: defaults, and per tier.
#[derive(Debug, Default)]
pub struct Policies {
    default: BTreeMap<String, Policy>,
    tiers: BTreeMap<String, BTreeMap<String, Policy>>,
}

impl Policies {
    pub fn new(
        default: BTreeMap<String, Policy>,
        tiers: BTreeMap<String, BTreeMap<String, Policy>>,
    ) -> Self {
        Self { default, tiers }
    }

    /// The policy `name` for a tier (falling back to the default policy), or for anonymous
    /// callers; `None` when that route is not limited.
    pub fn get(&self, tier: Option<&str>, name: &str) -> Option<&Policy> {
        tier.and_then(|tier| self.tiers.get(tier)?.get(name))
            .or_else(|| self.default.get(name))
    }
}

/// A configured API key, known by the SHA-256 of its secret.
#[derive(Debug, Clone)]
pub struct ApiKeyEntry {
    pub name: String,
    pub tier: Option<String>,
    digest: [u8; 32],
}

/// The configured API keys.
#[derive(Debug, Default)]
pub struct ApiKeys(Vec<ApiKeyEntry>);

impl ApiKeyEntry {
    pub fn new(name: String, tier: Option<String>, digest: [u8; 32]) -> Self {
        Self { name, tier, digest }
    }
}

impl ApiKeys {
    pub fn new(entries: Vec<ApiKeyEntry>) -> Self {
        Self(entries)
    }

    /// The entry whose digest matches the key. Every entry is compared in constant time
    /// and none is skipped, so the timing says nothing about the configured digests.
    pub fn find(&self, key: &str) -> Option<&ApiKeyEntry> {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = None;
        for entry in &self.0 {
            if bool::from(entry.digest.ct_eq(&digest)) {
                found = Some(entry);
            }
        }
        found
    }
}
