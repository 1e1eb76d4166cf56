//! What a redirect reads of a link: [`Redirect`].
//!
//! Most links are plain: no password, no visit limit, no fallback URL, no rules. Resolving one
//! needs only its target, its expiry and the two options of its response, so a cache
//! keeps a plain link as those four ([`Plain`]: one allocation, the target's text)
//! instead of the whole [`Link`] (about 270 bytes and three or more strings). Any other
//! link is kept whole, since resolving it reads the rest.

use std::sync::Arc;

use time::OffsetDateTime;

use crate::domain::merge_query;
use crate::link::{expired, kept_until_expiry};
use crate::rules::Rules;
use crate::{Link, RedirectStatus};

/// A link as a redirect reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// A link without password, visit limit or fallback URL.
    Plain(Plain),
    /// Any other link.
    Full(Arc<Link>),
}

/// What a redirect needs of a plain link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plain {
    /// The target's text (a valid [`crate::TargetUrl`]).
    url: Arc<str>,
    expires_at: Option<OffsetDateTime>,
    redirect_status: Option<RedirectStatus>,
    forward_query: Option<bool>,
}

impl Redirect {
    /// The link's target.
    pub fn url(&self) -> &str {
        match self {
            Self::Plain(plain) => &plain.url,
            Self::Full(link) => link.url.as_str(),
        }
    }

    /// The link's own redirect status; `None`: the service's.
    pub fn redirect_status(&self) -> Option<RedirectStatus> {
        match self {
            Self::Plain(plain) => plain.redirect_status,
            Self::Full(link) => link.options.redirect_status,
        }
    }

    /// Whether the link merges a request's query into its target; `None`: as the
    /// service does.
    pub fn forward_query(&self) -> Option<bool> {
        match self {
            Self::Plain(plain) => plain.forward_query,
            Self::Full(link) => link.options.forward_query,
        }
    }

    /// The target with a request's `query` merged into its own (see `merge_query`).
    pub fn url_with_query(&self, query: &str) -> String {
        merge_query(self.url(), query)
    }

    /// Whether the link is past its expiry at `now`.
    pub fn is_expired(&self, now: OffsetDateTime) -> bool {
        match self {
            Self::Plain(plain) => expired(plain.expires_at, now),
            Self::Full(link) => link.is_expired(now),
        }
    }

    /// How long a browser or proxy may keep the redirect, as [`Link::cacheable_for`].
    pub fn cacheable_for(&self, now: OffsetDateTime, max_age_secs: u64) -> Option<u64> {
        match self {
            Self::Plain(plain) => Some(kept_until_expiry(plain.expires_at, now, max_age_secs)),
            Self::Full(link) => link.cacheable_for(now, max_age_secs),
        }
    }

    /// The link's redirect rules, when it has any (a link with rules is never plain).
    pub fn rules(&self) -> Option<&Rules> {
        match self {
            Self::Plain(_) => None,
            Self::Full(link) => Some(&link.options.rules).filter(|rules| !rules.is_empty()),
        }
    }

    /// The whole link, when it is not plain.
    pub fn full(&self) -> Option<&Arc<Link>> {
        match self {
            Self::Plain(_) => None,
            Self::Full(link) => Some(link),
        }
    }
}

/// Plain when it can be: the link's target, expiry and response options only.
impl From<Arc<Link>> for Redirect {
    fn from(link: Arc<Link>) -> Self {
        let options = &link.options;
        if link.max_visits.is_some()
            || options.password.is_some()
            || options.expired_url.is_some()
            || !options.rules.is_empty()
        {
            return Self::Full(link);
        }
        Self::Plain(Plain {
            url: Arc::from(link.url.as_str()),
            expires_at: link.expires_at,
            redirect_status: options.redirect_status,
            forward_query: options.forward_query,
        })
    }
}

impl From<Link> for Redirect {
    fn from(link: Link) -> Self {
        Self::from(Arc::new(link))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Domain, LinkOptions, PasswordHash, ShortCode, Tags, TargetUrl};

    fn link(options: LinkOptions, max_visits: Option<u64>) -> Link {
        Link {
            domain: Domain::default(),
            code: ShortCode::parse("abc").unwrap(),
            url: TargetUrl::parse("https://example.com/a?x=1").unwrap(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            expires_at: Some(OffsetDateTime::UNIX_EPOCH + time::Duration::days(2)),
            max_visits,
            visits: 0,
            owner: None,
            tags: Tags::default(),
            options,
        }
    }

    #[test]
    fn a_plain_link_answers_as_the_whole_one_would() {
        let options = LinkOptions {
            redirect_status: Some(RedirectStatus::TemporaryRedirect),
            forward_query: Some(true),
            ..LinkOptions::default()
        };
        let whole = Arc::new(link(options, None));
        let plain = Redirect::from(Arc::clone(&whole));
        assert!(matches!(plain, Redirect::Plain(_)));
        let full = Redirect::Full(whole);
        let day = |days| OffsetDateTime::UNIX_EPOCH + time::Duration::days(days);
        for redirect in [&plain, &full] {
            assert_eq!(redirect.url(), "https://example.com/a?x=1");
            assert_eq!(
                redirect.redirect_status(),
                Some(RedirectStatus::TemporaryRedirect)
            );
            assert_eq!(redirect.forward_query(), Some(true));
            assert_eq!(
                redirect.url_with_query("x=2&y"),
                "https://example.com/a?x=2&y"
            );
            assert!(!redirect.is_expired(day(1)));
            assert!(redirect.is_expired(day(2)));
            assert_eq!(redirect.cacheable_for(day(1), 3_600), Some(3_600));
            assert_eq!(redirect.cacheable_for(day(1), 1_000_000), Some(86_400));
        }
    }

    #[test]
    fn a_link_with_a_password_a_limit_or_a_fallback_stays_whole() {
        let password = LinkOptions {
            password: Some(
                PasswordHash::parse("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA").unwrap(),
            ),
            ..LinkOptions::default()
        };
        let fallback = LinkOptions {
            expired_url: Some(TargetUrl::parse("https://example.com/gone").unwrap()),
            ..LinkOptions::default()
        };
        for whole in [
            link(password, None),
            link(fallback, None),
            link(LinkOptions::default(), Some(3)),
        ] {
            assert!(Redirect::from(whole).full().is_some());
        }
    }
}
