//! Who a caller is and what it may do: the configured API keys (known by the SHA-256 of
//! their secrets, compared in constant time), their scopes, and the limiter policies of
//! each tier. Parsed from the configuration by `config`, used by `api` and `limit`; it
//! names no other module of the crate but `ratelimit_headers`.

use std::collections::BTreeMap;

use poem::http::{HeaderName, HeaderValue};
use sha2::{Digest, Sha256};
use shortener_core::{Access, Owner, Policy};
use subtle::ConstantTimeEq;

/// The header that carries an API key; a constant, so that reading it parses no name.
pub(crate) const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-api-key");

/// The limiter policies: defaults, and per tier.
#[derive(Debug, Default)]
pub struct Policies {
    limits: Vec<Limit>,
    /// Indices into `limits`, by policy name.
    default: BTreeMap<String, usize>,
    tiers: BTreeMap<String, BTreeMap<String, usize>>,
}

/// A policy and its `RateLimit-Policy` header value, written once.
#[derive(Debug)]
pub struct Limit {
    pub policy: Policy,
    pub header: Option<HeaderValue>,
}

/// Which of its [`Policies`] a request was found to take: looked up once per request
/// (names, tiers) and then read back by [`Policies::by_id`] at the cost of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LimitId(usize);

impl Policies {
    pub fn new(
        default: BTreeMap<String, Policy>,
        tiers: BTreeMap<String, BTreeMap<String, Policy>>,
    ) -> Self {
        let mut all = Vec::new();
        let mut indexed = |policies: BTreeMap<String, Policy>| {
            (policies.into_iter())
                .map(|(name, policy)| {
                    all.push(Limit {
                        header: crate::ratelimit_headers::policy_value(&policy),
                        policy,
                    });
                    (name, all.len() - 1)
                })
                .collect()
        };
        let default = indexed(default);
        let tiers = (tiers.into_iter())
            .map(|(tier, policies)| (tier, indexed(policies)))
            .collect();
        Self {
            limits: all,
            default,
            tiers,
        }
    }

    /// The policy `name` for a tier (falling back to the default policy), or for anonymous
    /// callers; `None` when that route is not limited.
    pub fn get(&self, tier: Option<&str>, name: &str) -> Option<&Policy> {
        self.limit(tier, name).map(|limit| &limit.policy)
    }

    /// As [`Policies::get`], with the policy's header.
    pub fn limit(&self, tier: Option<&str>, name: &str) -> Option<&Limit> {
        self.find(tier, name).map(|id| self.by_id(id))
    }

    /// As [`Policies::limit`], naming the policy found for [`Policies::by_id`].
    pub(crate) fn find(&self, tier: Option<&str>, name: &str) -> Option<LimitId> {
        (tier.and_then(|tier| self.tiers.get(tier)?.get(name)))
            .or_else(|| self.default.get(name))
            .map(|&index| LimitId(index))
    }

    /// The policy that [`Policies::find`] named. An id only comes from `find`, so it is
    /// always in range for the `Policies` that gave it.
    pub(crate) fn by_id(&self, id: LimitId) -> &Limit {
        &self.limits[id.0]
    }
}

/// What an API key may do. A key reads, edits and deletes only the links it created,
/// unless it has `admin`, which reaches every link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Create,
    Read,
    Update,
    Delete,
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 5] = [
        Scope::Create,
        Scope::Read,
        Scope::Update,
        Scope::Delete,
        Scope::Admin,
    ];

    /// The name used in `[[api_keys]] scopes`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Create => "create",
            Scope::Read => "read",
            Scope::Update => "update",
            Scope::Delete => "delete",
            Scope::Admin => "admin",
        }
    }

    /// Reads a scope name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scope| scope.name() == raw)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    /// What a key without a `scopes` list may do: everything on its own links.
    pub const OWN_LINKS: Scopes = Scopes(0b1111);

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(scopes: I) -> Self {
        Scopes(scopes.into_iter().fold(0, |bits, scope| bits | scope.bit()))
    }
}

/// A configured API key, known by the SHA-256 of its secret.
#[derive(Debug, Clone)]
pub struct ApiKeyEntry {
    pub name: Owner,
    pub tier: Option<String>,
    pub scopes: Scopes,
    digest: [u8; 32],
}

/// The configured API keys.
#[derive(Debug, Default)]
pub struct ApiKeys(Vec<ApiKeyEntry>);

/// Which of the [`ApiKeys`] a request's key matched (see [`ApiKeys::find_id`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyId(usize);

impl ApiKeyEntry {
    pub fn new(name: Owner, tier: Option<String>, scopes: Scopes, digest: [u8; 32]) -> Self {
        Self {
            name,
            tier,
            scopes,
            digest,
        }
    }

    pub fn same_digest(&self, digest: &[u8; 32]) -> bool {
        self.digest == *digest
    }

    /// The links this key reaches: all with `admin`, else its own.
    pub fn access(&self) -> Access<'_> {
        if self.scopes.contains(Scope::Admin) {
            Access::All
        } else {
            Access::Owner(&self.name)
        }
    }
}

impl ApiKeys {
    pub fn new(entries: Vec<ApiKeyEntry>) -> Self {
        Self(entries)
    }

    /// The entry whose digest matches the key. Every entry is compared in constant time
    /// and none is skipped, so the timing says nothing about the configured digests.
    pub fn find(&self, key: &str) -> Option<&ApiKeyEntry> {
        self.find_id(key).map(|id| self.by_id(id))
    }

    /// As [`ApiKeys::find`], naming the entry found for [`ApiKeys::by_id`], so that a
    /// request's key is hashed and compared once however often its entry is read.
    pub(crate) fn find_id(&self, key: &str) -> Option<KeyId> {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = None;
        for (index, entry) in self.0.iter().enumerate() {
            if bool::from(entry.digest.ct_eq(&digest)) {
                found = Some(KeyId(index));
            }
        }
        found
    }

    /// The entry that [`ApiKeys::find_id`] named (always in range for the keys that gave it).
    pub(crate) fn by_id(&self, id: KeyId) -> &ApiKeyEntry {
        &self.0[id.0]
    }
}
