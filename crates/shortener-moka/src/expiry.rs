//! Per-entry lifetimes: found links and unknown keys expire after different times.

use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::Expiry;
use shortener_core::{Link, LinkKey};

/// `ttl` for a found link, `negative_ttl` for an unknown code, counted from the last
/// write of the entry (a read does not extend it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PerEntryTtl {
    pub(crate) ttl: Duration,
    pub(crate) negative_ttl: Duration,
}

impl PerEntryTtl {
    fn of(&self, value: &Option<Arc<Link>>) -> Duration {
        match value {
            Some(_) => self.ttl,
            None => self.negative_ttl,
        }
    }
}

impl Expiry<LinkKey, Option<Arc<Link>>> for PerEntryTtl {
    fn expire_after_create(
        &self,
        _key: &LinkKey,
        value: &Option<Arc<Link>>,
        _created_at: Instant,
    ) -> Option<Duration> {
        Some(self.of(value))
    }

    /// A replaced entry (an unknown code now found, a new visit count) starts afresh
    /// with the lifetime of its new kind; moka's default would keep the old deadline.
    fn expire_after_update(
        &self,
        _key: &LinkKey,
        value: &Option<Arc<Link>>,
        _updated_at: Instant,
        _duration_until_expiry: Option<Duration>,
    ) -> Option<Duration> {
        Some(self.of(value))
    }
}
