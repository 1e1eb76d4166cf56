//! A link: its code, target, times, limits, owner, tags and options ([`Link`] as stored,
//! [`NewLink`] about to be), and the rules that read them at a given instant (expiry,
//! visits used up, how long a cache may keep its redirect).

use time::OffsetDateTime;

use crate::domain::{Owner, ShortCode, TargetUrl};
use crate::key::{Domain, LinkKey};
use crate::options::LinkOptions;
use crate::tags::Tags;

/// A link as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub domain: Domain,
    pub code: ShortCode,
    pub url: TargetUrl,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub max_visits: Option<u64>,
    /// Visits by people (bots are counted apart, per day).
    pub visits: u64,
    /// The API key that created the link; `None` for anonymous links.
    pub owner: Option<Owner>,
    pub tags: Tags,
    pub options: LinkOptions,
}

/// A link about to be inserted: a [`Link`] without visits yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLink {
    pub domain: Domain,
    pub code: ShortCode,
    pub url: TargetUrl,
    pub created_at: OffsetDateTime,
    pub expires_at: Option<OffsetDateTime>,
    pub max_visits: Option<u64>,
    pub owner: Option<Owner>,
    pub tags: Tags,
    pub options: LinkOptions,
}

impl NewLink {
    /// The link's domain and code.
    pub fn key(&self) -> LinkKey {
        LinkKey::new(self.domain.clone(), self.code.clone())
    }

    pub fn into_link(self) -> Link {
        Link {
            domain: self.domain,
            code: self.code,
            url: self.url,
            created_at: self.created_at,
            expires_at: self.expires_at,
            max_visits: self.max_visits,
            visits: 0,
            owner: self.owner,
            tags: self.tags,
            options: self.options,
        }
    }
}

impl Link {
    /// The link's domain and code.
    pub fn key(&self) -> LinkKey {
        LinkKey::new(self.domain.clone(), self.code.clone())
    }

    /// How long a cache (a browser, a CDN) may keep this link's redirect, in whole
    /// seconds, when the service allows `max_age_secs`; `None` when none may store it.
    ///
    /// A link with `max_visits` is never stored: each of its visits must reach the
    /// service to be counted against the limit. Nor is a link behind a password: a
    /// shared cache would hand its target to whoever asks next. A link that expires is kept no longer
    /// than until it expires (rounded down), so no cache serves it after it ended.
    pub fn cacheable_for(&self, now: OffsetDateTime, max_age_secs: u64) -> Option<u64> {
        if self.max_visits.is_some() || self.options.password.is_some() {
            return None;
        }
        Some(kept_until_expiry(self.expires_at, now, max_age_secs))
    }

    /// Whether the link is past its expiry at `now`.
    pub fn is_expired(&self, now: OffsetDateTime) -> bool {
        expired(self.expires_at, now)
    }

    /// Whether the link has used up its visits.
    pub fn is_exhausted(&self) -> bool {
        self.max_visits.is_some_and(|max| self.visits >= max)
    }
}

/// Whether a link that expires at `expires_at` (`None`: never) has ended at `now`.
pub(crate) fn expired(expires_at: Option<OffsetDateTime>, now: OffsetDateTime) -> bool {
    expires_at.is_some_and(|at| at <= now)
}

/// `max_age_secs`, but no longer than until `expires_at` (whole seconds, rounded down).
pub(crate) fn kept_until_expiry(
    expires_at: Option<OffsetDateTime>,
    now: OffsetDateTime,
    max_age_secs: u64,
) -> u64 {
    let until_expiry = expires_at.map_or(u64::MAX, |at| {
        u64::try_from((at - now).whole_seconds()).unwrap_or(0)
    });
    max_age_secs.min(until_expiry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_cacheable_until_it_ends_and_never_with_a_visit_limit() {
        let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
        let link = Link {
            domain: Domain::default(),
            code: ShortCode::parse("abc").unwrap(),
            url: TargetUrl::parse("https://example.com/").unwrap(),
            created_at: now,
            expires_at: None,
            max_visits: None,
            visits: 0,
            owner: None,
            tags: Tags::default(),
            options: crate::LinkOptions::default(),
        };
        assert_eq!(link.cacheable_for(now, 600), Some(600));
        assert_eq!(link.cacheable_for(now, 0), Some(0));
        let expiring = Link {
            expires_at: Some(now + time::Duration::milliseconds(90_500)),
            ..link.clone()
        };
        assert_eq!(expiring.cacheable_for(now, 600), Some(90));
        assert_eq!(expiring.cacheable_for(now, 60), Some(60));
        let past = Link {
            expires_at: Some(now - time::Duration::seconds(1)),
            ..link.clone()
        };
        assert_eq!(past.cacheable_for(now, 600), Some(0));
        let limited = Link {
            max_visits: Some(3),
            ..link
        };
        assert_eq!(limited.cacheable_for(now, 600), None);
    }
}
