//! Who a caller is and what it may do: the API keys (known by the SHA-256 of their
//! secrets, compared in constant time), their scopes, and the limiter policies of each
//! tier. Parsed from the configuration by `config`, used by `api` and `limit`; the keys
//! in storage are kept by `keys`, and it names no other module of the crate but
//! `ratelimit_headers`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use poem::http::{HeaderName, HeaderValue};
use sha2::{Digest, Sha256};
use shortener_core::{Access, Owner, Policy, StoredKey};
use subtle::ConstantTimeEq;
use time::OffsetDateTime;

/// A stored key's last use is written at most this often.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

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

    /// Whether `tier` is one of `limiter.tiers`.
    pub(crate) fn has_tier(&self, tier: &str) -> bool {
        self.tiers.contains_key(tier)
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

/// An API key, known by the SHA-256 of its secret: from the configuration file, or
/// from storage.
#[derive(Debug, Clone)]
pub struct ApiKeyEntry {
    pub name: Owner,
    /// Whose links it reaches, when not its own name's (stored keys only).
    pub owner: Option<Owner>,
    pub tier: Option<String>,
    pub scopes: Scopes,
    digest: [u8; 32],
    /// A stored key's end: its expiry, and whether it was revoked.
    pub(crate) expires_at: Option<OffsetDateTime>,
    pub(crate) revoked: bool,
    pub(crate) stored: bool,
}

/// The API keys: those of the configuration, and a snapshot of those in storage that
/// `service/keys.rs` keeps current.
#[derive(Debug, Default)]
pub struct ApiKeys {
    configured: Vec<ApiKeyEntry>,
    pub(crate) stored: StoredKeys,
}

/// Which of the [`ApiKeys`] a request's key matched (see [`ApiKeys::find_id`]): an
/// index into the configured keys, or into the snapshot of stored keys it was found in.
#[derive(Debug, Clone)]
pub(crate) enum KeyId {
    Configured(usize),
    Stored(Arc<Vec<ApiKeyEntry>>, usize),
}

impl ApiKeyEntry {
    pub fn new(name: Owner, tier: Option<String>, scopes: Scopes, digest: [u8; 32]) -> Self {
        Self {
            name,
            owner: None,
            tier,
            scopes,
            digest,
            expires_at: None,
            revoked: false,
            stored: false,
        }
    }

    pub fn same_digest(&self, digest: &[u8; 32]) -> bool {
        self.digest == *digest
    }

    /// Whose links it reaches and creates: its owner, else its own name.
    pub fn owner(&self) -> &Owner {
        self.owner.as_ref().unwrap_or(&self.name)
    }

    /// The links this key reaches: all with `admin`, else its owner's.
    pub fn access(&self) -> Access<'_> {
        if self.scopes.contains(Scope::Admin) {
            Access::All
        } else {
            Access::Owner(self.owner())
        }
    }
}

impl ApiKeys {
    pub fn new(entries: Vec<ApiKeyEntry>) -> Self {
        Self {
            configured: entries,
            stored: StoredKeys::default(),
        }
    }

    /// The keys of the configuration file.
    pub fn configured(&self) -> &[ApiKeyEntry] {
        &self.configured
    }

    /// Whether a key of the configuration file has this name: such a name is not the
    /// API's to make or revoke.
    pub(crate) fn configures(&self, name: &Owner) -> bool {
        self.configured.iter().any(|key| key.name == *name)
    }

    /// The entry whose digest matches the key. Every entry is compared in constant time
    /// and none is skipped, so the timing says nothing about the configured digests.
    pub fn find(&self, key: &str) -> Option<ApiKeyEntry> {
        self.find_id(key).map(|id| self.by_id(&id).clone())
    }

    /// As [`ApiKeys::find`], naming the entry found for [`ApiKeys::by_id`], so that a
    /// request's key is hashed and compared once however often its entry is read. A
    /// stored key that was revoked or is past its expiry is found as none, and counted.
    pub(crate) fn find_id(&self, key: &str) -> Option<KeyId> {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = None;
        for (index, entry) in self.configured.iter().enumerate() {
            if bool::from(entry.digest.ct_eq(&digest)) {
                found = Some(KeyId::Configured(index));
            }
        }
        let snapshot = self.stored.snapshot();
        for (index, entry) in snapshot.iter().enumerate() {
            if bool::from(entry.digest.ct_eq(&digest)) {
                found = Some(KeyId::Stored(Arc::clone(&snapshot), index));
            }
        }
        if let Some(KeyId::Stored(snapshot, index)) = &found {
            let entry = &snapshot[*index];
            if !self.stored.admits(entry) {
                return None;
            }
        }
        found
    }

    /// The entry that [`ApiKeys::find_id`] named.
    pub(crate) fn by_id<'a>(&'a self, id: &'a KeyId) -> &'a ApiKeyEntry {
        match id {
            KeyId::Configured(index) => &self.configured[*index],
            KeyId::Stored(snapshot, index) => &snapshot[*index],
        }
    }
}

/// The stored keys as of the last read (see `crate::service::keys`), and their uses not yet
/// written.
#[derive(Debug, Default)]
pub struct StoredKeys {
    snapshot: RwLock<Arc<Vec<ApiKeyEntry>>>,
    uses: Mutex<HashMap<String, Use>>,
}

#[derive(Debug, Default)]
struct Use {
    written: Option<Instant>,
    pending: Option<OffsetDateTime>,
}

impl StoredKeys {
    /// The keys of the last read.
    pub fn snapshot(&self) -> Arc<Vec<ApiKeyEntry>> {
        Arc::clone(&self.snapshot.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether a stored key that a request presented opens anything now: not revoked,
    /// not expired (a refusal is counted). An admitted use is noted for the next write.
    pub(crate) fn admits(&self, entry: &ApiKeyEntry) -> bool {
        let now = OffsetDateTime::now_utc();
        let ended = if entry.revoked {
            Some("revoked")
        } else if entry.expires_at.is_some_and(|expiry| expiry <= now) {
            Some("expired")
        } else {
            None
        };
        if let Some(reason) = ended {
            metrics::counter!("shortener_api_key_refusals_total", "reason" => reason).increment(1);
            return false;
        }
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        let used = uses.entry(entry.name.as_str().to_owned()).or_default();
        if used
            .written
            .is_none_or(|written| written.elapsed() >= TOUCH_EVERY)
        {
            used.pending = Some(now);
        }
        true
    }

    /// Replaces the snapshot with `keys` as storage has them.
    pub(crate) fn replace(&self, keys: Vec<StoredKey>) {
        let entries: Vec<ApiKeyEntry> = keys.into_iter().map(entry).collect();
        *self
            .snapshot
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(entries);
    }

    /// The uses to write now, each marked written.
    pub(crate) fn take_uses(&self) -> Vec<(Owner, OffsetDateTime)> {
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        let mut due = Vec::new();
        for (name, used) in uses.iter_mut() {
            if let Some(at) = used.pending.take()
                && let Ok(name) = Owner::parse(name)
            {
                used.written = Some(Instant::now());
                due.push((name, at));
            }
        }
        due
    }
}

/// A stored key as the service matches it; scope names it does not know give nothing.
fn entry(key: StoredKey) -> ApiKeyEntry {
    let scopes: Scopes = (key.scopes.iter())
        .filter_map(|name| Scope::parse(name))
        .collect();
    let mut entry = ApiKeyEntry::new(key.name, key.tier, scopes, key.digest);
    entry.owner = key.owner;
    entry.expires_at = key.expires_at;
    entry.revoked = key.revoked_at.is_some();
    entry.stored = true;
    entry
}
