//! One page of a key's links for `GET /api/v1/links` (the operation is in `links.rs`):
//! its filters, its order, and where it starts (a keyset cursor newest first, a count
//! from the top most visited first).

use poem_openapi::Enum;
use shortener_core::{LinkRepository as _, ListCursor, ListOrder, ListQuery, Tags};

use super::ApiError;
use super::listing::{LinkPage, MAX_PAGE};
use crate::auth::ApiKeyEntry;
use crate::state::AppState;

/// What a listing keeps of the links: those matching `q`, having every one of `tags`,
/// on `domain` (by host) when it is given.
#[derive(Debug, Default)]
pub(super) struct Filter {
    pub q: Option<String>,
    pub tags: Vec<String>,
    pub domain: Option<String>,
    pub order: LinkOrder,
}

/// The order of a page of links.
#[derive(Enum, Debug, Clone, Copy, Default, PartialEq, Eq)]
#[oai(rename_all = "snake_case")]
pub enum LinkOrder {
    /// Newest first.
    #[default]
    Created,
    /// Most visited first.
    Visits,
}

/// Where a page starts: after a link (newest first), or after this many links (most
/// visited first, whose pages are counted from the top).
enum Start {
    After(Option<ListCursor>),
    Skip(usize),
}

impl Start {
    fn read(cursor: Option<&str>, order: LinkOrder) -> Result<Self, ApiError> {
        let other = || {
            ApiError::bad_request(
                "cursor",
                "is a cursor of a listing in another order: pass the same `order` as the page it came from",
            )
        };
        match (order, cursor) {
            (LinkOrder::Created, None) => Ok(Self::After(None)),
            (LinkOrder::Visits, None) => Ok(Self::Skip(0)),
            (LinkOrder::Created, Some(cursor)) if cursor.starts_with("visits.") => Err(other()),
            (LinkOrder::Created, Some(cursor)) => ListCursor::decode(cursor)
                .map(|after| Self::After(Some(after)))
                .map_err(|e| ApiError::bad_request("cursor", e)),
            (LinkOrder::Visits, Some(cursor)) => {
                let skip = cursor.strip_prefix("visits.").ok_or_else(other)?;
                skip.parse().map(Self::Skip).map_err(|_| {
                    ApiError::bad_request("cursor", "is not a cursor returned by a listing")
                })
            }
        }
    }
}

/// One page of the links `key` reaches, in `filter`'s order, from `cursor`.
///
/// # Errors
/// 400 for a cursor this service did not make or a `q` with control characters, or a
/// storage failure.
pub(super) async fn page(
    state: &AppState,
    key: &ApiKeyEntry,
    limit: Option<u32>,
    cursor: Option<String>,
    filter: Filter,
) -> Result<LinkPage, ApiError> {
    let Filter {
        q,
        tags,
        domain,
        order,
    } = filter;
    let limit = limit.unwrap_or(20).min(MAX_PAGE) as usize;
    // PostgreSQL refuses NUL in text, and no code or URL holds a control character.
    if q.as_deref()
        .is_some_and(|q| q.chars().any(char::is_control))
    {
        return Err(ApiError::bad_request(
            "q",
            "must not contain control characters",
        ));
    }
    let start = Start::read(cursor.as_deref(), order)?;
    let (after, offset, order) = match start {
        Start::After(after) => (after, 0, ListOrder::Newest),
        Start::Skip(skip) => (None, skip, ListOrder::MostVisited),
    };
    let query = ListQuery {
        order,
        offset,
        after,
        // One more than a page tells whether another page follows.
        limit: limit + 1,
        search: q.filter(|q| !q.is_empty()),
        tags: Tags::parse(tags.iter().map(String::as_str))
            .map_err(|e| ApiError::bad_request("tag", e))?,
        domain: (domain.as_deref())
            .map(|name| state.serving.domains.named(Some(name)))
            .transpose()
            .map_err(|e| ApiError::bad_request("domain", e))?,
        within: shortener_core::ListWithin::default(),
    };
    let mut links = state
        .shortener
        .repository()
        .list(key.access(), &query)
        .await?;
    let next_cursor = if links.len() > limit {
        links.truncate(limit);
        match order {
            ListOrder::Newest => links.last().map(|link| ListCursor::after(link).encode()),
            _ => Some(format!("visits.{}", offset + limit)),
        }
    } else {
        None
    };
    let items = links
        .into_iter()
        .map(|link| state.link_body(link))
        .collect();
    Ok(LinkPage { items, next_cursor })
}
