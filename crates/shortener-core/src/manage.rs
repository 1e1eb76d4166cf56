//! The vocabulary of link management: who owns a link, what a caller may reach, edits,
//! listing pages and their cursor, and visit statistics per day.

use time::{Date, OffsetDateTime};

use crate::domain::{Owner, ParseError, ShortCode, TargetUrl};
use crate::key::{Domain, LinkKey};
use crate::link::Link;
use crate::options::{LinkOptions, OptionColumns, PasswordHash, RedirectStatus, Title};
use crate::rules::Rules;
use crate::tags::Tags;

/// Which links an operation may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access<'a> {
    /// Every link (an `admin` key).
    All,
    /// The links this key created, and no other (not even anonymous ones).
    Owner(&'a Owner),
}

impl Access<'_> {
    /// Whether a link with this owner is within reach.
    pub fn reaches(&self, owner: Option<&Owner>) -> bool {
        match self {
            Access::All => true,
            Access::Owner(me) => owner == Some(*me),
        }
    }
}

/// An edit of a link, as a JSON merge patch means it: an absent field stays as it is,
/// `Some(None)` clears an optional one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkPatch {
    pub url: Option<TargetUrl>,
    pub expires_at: Option<Option<OffsetDateTime>>,
    pub max_visits: Option<Option<u64>>,
    /// `Some(None)`: back to the service's default.
    pub redirect_status: Option<Option<RedirectStatus>>,
    /// `Some(None)`: back to the service's default.
    pub forward_query: Option<Option<bool>>,
    pub expired_url: Option<Option<TargetUrl>>,
    pub title: Option<Option<Title>>,
    pub crawlable: Option<bool>,
    /// `Some(None)` removes the password.
    pub password: Option<Option<PasswordHash>>,
    /// The link's tags, replaced whole (`Some(empty)` removes them all).
    pub tags: Option<Tags>,
    /// The link's redirect rules, replaced whole (`Some(empty)` removes them all).
    pub rules: Option<Rules>,
}

impl LinkPatch {
    /// The link as this patch leaves it.
    pub fn apply(&self, mut link: Link) -> Link {
        fn set<T: Clone>(field: &mut T, patched: Option<&T>) {
            if let Some(value) = patched {
                *field = value.clone();
            }
        }
        set(&mut link.url, self.url.as_ref());
        set(&mut link.expires_at, self.expires_at.as_ref());
        set(&mut link.max_visits, self.max_visits.as_ref());
        set(&mut link.tags, self.tags.as_ref());
        let options = &mut link.options;
        set(&mut options.redirect_status, self.redirect_status.as_ref());
        set(&mut options.forward_query, self.forward_query.as_ref());
        set(&mut options.expired_url, self.expired_url.as_ref());
        set(&mut options.title, self.title.as_ref());
        set(&mut options.crawlable, self.crawlable.as_ref());
        set(&mut options.password, self.password.as_ref());
        set(&mut options.rules, self.rules.as_ref());
        link
    }

    /// The option values this patch sets, as columns: NULL for one it clears and for one
    /// it leaves (whether it has the field tells which); `crawlable` is false unless set.
    pub fn option_columns(&self) -> OptionColumns {
        OptionColumns::from(&LinkOptions {
            redirect_status: self.redirect_status.flatten(),
            forward_query: self.forward_query.flatten(),
            expired_url: self.expired_url.clone().flatten(),
            title: self.title.clone().flatten(),
            crawlable: self.crawlable.unwrap_or_default(),
            password: self.password.clone().flatten(),
            rules: self.rules.clone().unwrap_or_default(),
        })
    }

    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Where a page of a listing starts: strictly after this link in the listing's order,
/// newest first (`created_at` descending, then `code` descending, then `domain`
/// descending: the same code may be on two domains).
///
/// A keyset, not an offset: links created during a walk sort before its cursor, so they
/// shift nothing, and a walk never repeats or skips a link that existed when it began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    pub created_at: OffsetDateTime,
    pub code: ShortCode,
    pub domain: Domain,
}

impl ListCursor {
    /// The cursor that continues after `link`.
    pub fn after(link: &Link) -> Self {
        Self {
            created_at: link.created_at,
            code: link.code.clone(),
            domain: link.domain.clone(),
        }
    }

    /// The opaque text handed to clients: the creation time in unix microseconds, the
    /// code, and `@` and the domain unless it is the default one. Clients only hand it
    /// back.
    pub fn encode(&self) -> String {
        let micros = self.created_at.unix_timestamp_nanos().div_euclid(1000);
        if self.domain.is_default() {
            format!("{micros}.{}", self.code)
        } else {
            format!("{micros}.{}@{}", self.code, self.domain.as_str())
        }
    }

    /// Reads back what [`ListCursor::encode`] wrote.
    ///
    /// # Errors
    /// When the text is not a cursor this service made.
    pub fn decode(raw: &str) -> Result<Self, ParseError> {
        let invalid = || ParseError("is not a cursor returned by a listing".into());
        let (micros, key) = raw.split_once('.').ok_or_else(invalid)?;
        let micros: i128 = micros.parse().map_err(|_| invalid())?;
        let created_at =
            OffsetDateTime::from_unix_timestamp_nanos(micros * 1000).map_err(|_| invalid())?;
        let (code, domain) = match key.split_once('@') {
            Some((code, domain)) => (code, Domain::parse(domain).map_err(|_| invalid())?),
            None => (key, Domain::default()),
        };
        let code = ShortCode::parse(code).map_err(|_| invalid())?;
        Ok(Self {
            created_at,
            code,
            domain,
        })
    }
}

/// The order of a listing. Ties are broken newest first, then by code and domain, so
/// that every store pages one order.
///
/// Only [`ListOrder::Newest`] walks by keyset ([`ListCursor`]); the others page by
/// offset, and a link whose visits change during a walk may move to another page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// Newest first: the keyset order of [`ListCursor`].
    #[default]
    Newest,
    /// Oldest first.
    Oldest,
    /// Most visited first (visits by people, as of the last flush).
    MostVisited,
    /// Least visited first.
    LeastVisited,
}

impl ListOrder {
    /// Whether `a` comes before `b` in this order: what an SQL store's `ORDER BY` does,
    /// written for the stores that sort in memory.
    pub fn compare(self, a: &Link, b: &Link) -> std::cmp::Ordering {
        let newest = (b.created_at, &b.code, &b.domain).cmp(&(a.created_at, &a.code, &a.domain));
        match self {
            Self::Newest => newest,
            Self::Oldest => newest.reverse(),
            Self::MostVisited => b.visits.cmp(&a.visits).then(newest),
            Self::LeastVisited => a.visits.cmp(&b.visits).then(newest),
        }
    }
}

/// One page request of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Start after this link; `None` starts at the newest. Only with
    /// [`ListOrder::Newest`]: the other orders page by `offset`.
    pub after: Option<ListCursor>,
    /// The order of the links.
    pub order: ListOrder,
    /// Skip this many matching links first: where a page asked for by its number starts
    /// (a walk by cursor leaves it 0).
    pub offset: usize,
    /// At most this many links.
    pub limit: usize,
    /// Only links whose code, URL or title contains this text, ASCII case ignored.
    pub search: Option<String>,
    /// Only links that have every one of these tags.
    pub tags: Tags,
    /// Only links on this domain; `None`: on every domain.
    pub domain: Option<Domain>,
    /// The filters that few clients ask for; the default narrows nothing.
    pub within: ListWithin,
}

/// A listing's filters past its text, tags and domain (Shlink's list asks for them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListWithin {
    /// The links that have one of the query's tags at least, rather than every one.
    pub any_tag: bool,
    /// Created at or after this instant.
    pub created_from: Option<OffsetDateTime>,
    /// Created at or before this instant.
    pub created_to: Option<OffsetDateTime>,
    /// Only links with visits left (no `max_visits`, or fewer visits than it).
    pub with_visits_left: bool,
    /// Only links that have not expired at this instant.
    pub live_at: Option<OffsetDateTime>,
}

impl ListWithin {
    /// Whether `link` passes these filters.
    pub fn matches(&self, link: &Link, tags: &Tags) -> bool {
        let tagged = if self.any_tag {
            link.tags.contains_any(tags)
        } else {
            link.tags.contains_all(tags)
        };
        tagged
            && self.created_from.is_none_or(|from| link.created_at >= from)
            && self.created_to.is_none_or(|to| link.created_at <= to)
            && (!self.with_visits_left || link.max_visits.is_none_or(|max| link.visits < max))
            && self
                .live_at
                .is_none_or(|at| link.expires_at.is_none_or(|expires| expires > at))
    }
}

/// What [`crate::LinkRepository::count`] answers: the links a listing's filters match,
/// their visits by people and their visits by bots (as of the last flush).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListTotals {
    pub links: u64,
    pub visits: u64,
    pub bots: u64,
}

impl ListQuery {
    /// Whether `link` passes every filter.
    pub fn matches(&self, link: &Link) -> bool {
        if self
            .domain
            .as_ref()
            .is_some_and(|domain| *domain != link.domain)
        {
            return false;
        }
        if !self.within.matches(link, &self.tags) {
            return false;
        }
        let Some(search) = &self.search else {
            return true;
        };
        let needle = search.to_ascii_lowercase();
        let title = link.options.title.as_ref().map(Title::as_str);
        [
            link.code.as_str(),
            link.url.as_str(),
            title.unwrap_or_default(),
        ]
        .iter()
        .any(|text| text.to_ascii_lowercase().contains(&needle))
    }
}

/// Visits of one link on one UTC day, counted in memory and added by a flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisitTally {
    pub key: LinkKey,
    pub day: Date,
    /// Visits by people. They also add to the link's total, except on links with
    /// `max_visits`, whose total was counted atomically when each visit was admitted.
    pub visits: u64,
    /// Visits by bots (by User-Agent): kept apart, never in a total or a limit.
    pub bots: u64,
}

/// The visits of one link on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayVisits {
    pub day: Date,
    pub visits: u64,
    pub bots: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_forgeries() {
        let cursor = ListCursor {
            created_at: OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_000)
                .unwrap(),
            code: ShortCode::parse("a-Z_9").unwrap(),
            domain: Domain::default(),
        };
        assert_eq!(ListCursor::decode(&cursor.encode()).unwrap(), cursor);
        let elsewhere = ListCursor {
            domain: Domain::parse("go.example.org:8080").unwrap(),
            ..cursor
        };
        assert_eq!(ListCursor::decode(&elsewhere.encode()).unwrap(), elsewhere);
        for bad in [
            "",
            "12",
            "x.abc",
            "12.",
            "12.a b",
            "12.abc@",
            "12.abc@a b",
            "99999999999999999999999.abc",
        ] {
            assert!(ListCursor::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn owners_are_validated() {
        assert!(Owner::parse("ci-bot.v2_1").is_ok());
        for bad in ["", "a b", "ä", &"x".repeat(65)] {
            assert!(Owner::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn access_reaches_own_links_only() {
        let me = Owner::parse("me").unwrap();
        let other = Owner::parse("other").unwrap();
        assert!(Access::Owner(&me).reaches(Some(&me)));
        assert!(!Access::Owner(&me).reaches(Some(&other)));
        assert!(!Access::Owner(&me).reaches(None));
        assert!(Access::All.reaches(None));
    }
}
