//! The short URLs list, paged by number as Shlink pages it, the tags (listed, renamed,
//! deleted) and the domains.

use futures_util::{StreamExt as _, TryStreamExt as _};
use poem::http::StatusCode;
use poem::web::Json;
use poem::{IntoResponse as _, Request, Response, handler};
use serde_json::{Value, json};
use shortener_core::{LinkRepository as _, ListOrder, ListQuery, ListWithin, Tags};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::short_urls::{domain, short_url};
use crate::api::ApiError;
use crate::auth::Scope;
use crate::compat::{answer, key, object, state};

/// The most short URLs of one page.
const MAX_ITEMS_PER_PAGE: u64 = 100;
/// How many links of a page have their bots summed at once.
const CONCURRENT_SUMS: usize = 8;

/// `GET /short-urls`: `page`, `itemsPerPage` (default 10, at most 100), `searchTerm`,
/// `tags[]` (every one, or any with `tagsMode=any`), `domain`, `startDate` and `endDate`
/// (creation), `excludeMaxVisitsReached`, `excludePastValidUntil`, and `orderBy` by
/// `dateCreated` or `nonBotVisits` (either way; newest first by default). Other orders
/// are refused by name.
#[handler]
pub(super) async fn list(request: &Request) -> Response {
    answer(
        list_from(request)
            .await
            .map(|list| Json(list).into_response()),
    )
}

/// What the list's query asks for.
#[derive(Debug, Default)]
struct Params {
    page: Option<String>,
    items_per_page: Option<String>,
    search: Option<String>,
    tags: Vec<String>,
    order: ListOrder,
    within: ListWithin,
    exclude_expired: bool,
}

fn params(query: &str) -> Result<Params, ApiError> {
    let mut params = Params::default();
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let refused = match (&*name, &*value) {
            ("page", _) => {
                params.page = Some(value.into_owned());
                continue;
            }
            ("itemsPerPage", _) => {
                params.items_per_page = Some(value.into_owned());
                continue;
            }
            ("searchTerm", _) => {
                params.search = Some(value.into_owned()).filter(|term| !term.is_empty());
                continue;
            }
            ("tags[]", _) => {
                params.tags.push(value.into_owned());
                continue;
            }
            ("orderBy", "dateCreated-DESC" | "") => {
                params.order = ListOrder::Newest;
                continue;
            }
            ("orderBy", "dateCreated-ASC") => {
                params.order = ListOrder::Oldest;
                continue;
            }
            ("orderBy", "nonBotVisits-DESC") => {
                params.order = ListOrder::MostVisited;
                continue;
            }
            ("orderBy", "nonBotVisits-ASC") => {
                params.order = ListOrder::LeastVisited;
                continue;
            }
            ("tagsMode", "all" | "any") => {
                params.within.any_tag = value == "any";
                continue;
            }
            ("excludeMaxVisitsReached", "true" | "false") => {
                params.within.with_visits_left = value == "true";
                continue;
            }
            ("excludePastValidUntil", "true" | "false") => {
                params.exclude_expired = value == "true";
                continue;
            }
            ("startDate" | "endDate", _) if value.is_empty() => continue,
            ("startDate" | "endDate", _) => {
                let Ok(at) = OffsetDateTime::parse(&value, &Rfc3339) else {
                    return Err(ApiError::bad_request(
                        &name,
                        "must be a date and time such as 2026-12-01T00:00:00+00:00",
                    ));
                };
                if name == "startDate" {
                    params.within.created_from = Some(at);
                } else {
                    params.within.created_to = Some(at);
                }
                continue;
            }
            ("tagsMode", _) => "must be `all` or `any`",
            ("orderBy", order) if order.starts_with("visits-") => {
                "order by `nonBotVisits` instead: this service orders by people's visits, and counts bots apart"
            }
            ("orderBy", _) => {
                "only `dateCreated` and `nonBotVisits`, `-ASC` or `-DESC`, are served"
            }
            ("excludeMaxVisitsReached" | "excludePastValidUntil", _) => "must be `true` or `false`",
            ("excludeTags[]" | "excludeTagsMode" | "apiKeyName", _) => "is not served",
            _ => continue,
        };
        return Err(ApiError::bad_request(&name, refused));
    }
    Ok(params)
}

/// A positive whole number of the query, or its default.
fn number(name: &str, raw: Option<&str>, default: u64, max: u64) -> Result<u64, ApiError> {
    let Some(raw) = raw else {
        return Ok(default);
    };
    match raw.parse::<u64>() {
        Ok(value) if (1..=max).contains(&value) => Ok(value),
        _ => Err(ApiError::bad_request(
            name,
            format!("must be a whole number from 1 to {max}"),
        )),
    }
}

async fn list_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Read)?;
    let params = params(request.uri().query().unwrap_or_default())?;
    let per_page = number(
        "itemsPerPage",
        params.items_per_page.as_deref(),
        10,
        MAX_ITEMS_PER_PAGE,
    )?;
    let page = number("page", params.page.as_deref(), 1, u64::from(u32::MAX))?;
    // PostgreSQL refuses NUL in text, and no code or URL holds a control character.
    if (params.search.as_deref()).is_some_and(|term| term.chars().any(char::is_control)) {
        return Err(ApiError::bad_request(
            "searchTerm",
            "must not contain control characters",
        ));
    }
    let query = ListQuery {
        order: params.order,
        within: ListWithin {
            live_at: params.exclude_expired.then(OffsetDateTime::now_utc),
            ..params.within
        },
        offset: usize::try_from((page - 1) * per_page).unwrap_or(usize::MAX),
        after: None,
        limit: per_page as usize,
        search: params.search,
        tags: Tags::parse(params.tags.iter().map(String::as_str))
            .map_err(|e| ApiError::bad_request("tags", e))?,
        domain: (domain(request).as_deref())
            .map(|name| state.serving.domains.named(Some(name)))
            .transpose()
            .map_err(|e| ApiError::bad_request("domain", e))?,
    };
    let repository = state.shortener.repository();
    let total = repository.count(key.access(), &query).await?.links;
    let links = repository.list(key.access(), &query).await?;
    let state = &state;
    let data: Vec<Value> = futures_util::stream::iter(links)
        .map(|link| short_url(state, state.link_body(link)))
        .buffered(CONCURRENT_SUMS)
        .try_collect()
        .await?;
    Ok(json!({
        "shortUrls": {
            "pagination": {
                "currentPage": page,
                "pagesCount": total.div_ceil(per_page),
                "itemsPerPage": per_page,
                "itemsInCurrentPage": data.len(),
                "totalItems": total,
            },
            "data": data,
        }
    }))
}

/// `GET /tags`: the names of the tags of the caller's links, in order.
#[handler]
pub(super) async fn tags(request: &Request) -> Response {
    answer(
        tags_from(request)
            .await
            .map(|tags| Json(tags).into_response()),
    )
}

async fn tags_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Read)?;
    let counts = state.shortener.repository().tags(key.access()).await?;
    let names: Vec<&str> = counts.iter().map(|count| count.tag.as_str()).collect();
    Ok(json!({"tags": {"data": names}}))
}

/// `GET /tags/stats`: each tag with its links and their visits, people and bots apart.
#[handler]
pub(super) async fn tag_stats(request: &Request) -> Response {
    answer(
        tag_stats_from(request)
            .await
            .map(|stats| Json(stats).into_response()),
    )
}

async fn tag_stats_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Read)?;
    let counts = state.shortener.repository().tags(key.access()).await?;
    let data: Vec<Value> = (counts.iter())
        .map(|count| {
            json!({
                "tag": count.tag.as_str(),
                "shortUrlsCount": count.links,
                "visitsSummary": summary(count.visits, count.bots),
                "visitsCount": count.visits.saturating_add(count.bots),
            })
        })
        .collect();
    Ok(json!({"tags": {"data": data}}))
}

/// `GET /visits`: the visits of the caller's links, people and bots apart. Visits to
/// codes that do not exist (Shlink's orphan visits) are not recorded here: they are 0.
#[handler]
pub(super) async fn visits_overview(request: &Request) -> Response {
    answer(
        overview_from(request)
            .await
            .map(|visits| Json(visits).into_response()),
    )
}

async fn overview_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Read)?;
    let every = ListQuery {
        order: shortener_core::ListOrder::Newest,
        offset: 0,
        after: None,
        limit: 0,
        search: None,
        tags: Tags::default(),
        domain: None,
        within: shortener_core::ListWithin::default(),
    };
    let totals = state
        .shortener
        .repository()
        .count(key.access(), &every)
        .await?;
    Ok(json!({
        "visits": {
            "nonOrphanVisits": summary(totals.visits, totals.bots),
            "orphanVisits": summary(0, 0),
            "visitsCount": totals.visits.saturating_add(totals.bots),
            "orphanVisitsCount": 0,
        }
    }))
}

/// Shlink's `visitsSummary`.
fn summary(people: u64, bots: u64) -> Value {
    json!({"total": people.saturating_add(bots), "nonBots": people, "bots": bots})
}

/// `PUT /tags` with `{oldName, newName}`: a rename over the caller's links, 204. As
/// Shlink: 404 when none has the old name, 409 when some have the new one (this
/// service's own API merges them instead).
#[handler]
pub(super) async fn rename_tag(request: &Request, body: poem::Body) -> Response {
    answer(rename_from(request, body).await)
}

async fn rename_from(request: &Request, body: poem::Body) -> Result<Response, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Update)?;
    let body = object(request, body).await?;
    let name = |field: &str| match body.get(field) {
        Some(Value::String(name)) => crate::api::tags::parse(field, name),
        _ => Err(ApiError::bad_request(field, "is required, a string")),
    };
    let (from, to) = (name("oldName")?, name("newName")?);
    let repository = state.shortener.repository();
    let counts = repository.tags(key.access()).await?;
    if !counts.iter().any(|count| count.tag == from) {
        return Err(ApiError::not_found(format!(
            "oldName: no link of this key has the tag `{from}`"
        )));
    }
    if from != to && counts.iter().any(|count| count.tag == to) {
        return Err(ApiError::status(
            StatusCode::CONFLICT,
            format!("newName: the tag `{to}` exists"),
        ));
    }
    repository.rename_tag(key.access(), &from, &to).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `DELETE /tags?tags[]=`: each tag taken off the caller's links, 204.
#[handler]
pub(super) async fn delete_tags(request: &Request) -> Response {
    answer(delete_from(request).await)
}

async fn delete_from(request: &Request) -> Result<Response, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Update)?;
    let query = request.uri().query().unwrap_or_default();
    let named = (url::form_urlencoded::parse(query.as_bytes()))
        .filter(|(name, _)| name == "tags[]")
        .map(|(_, tag)| crate::api::tags::parse("tags", &tag))
        .collect::<Result<Vec<_>, _>>()?;
    if named.len() > MAX_ITEMS_PER_PAGE as usize {
        return Err(ApiError::bad_request("tags", "at most 100 at once"));
    }
    for tag in &named {
        state
            .shortener
            .repository()
            .delete_tag(key.access(), tag)
            .await?;
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET /domains`: the served domains, with the fallbacks of each (where `/` and an
/// unknown code go); Shlink's "invalid short URL" and "regular 404" are one here.
#[handler]
pub(super) async fn domains(request: &Request) -> Response {
    answer(domains_from(request).map(|domains| Json(domains).into_response()))
}

fn domains_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    key(&state, request, Scope::Read)?;
    let redirects = |site: &crate::domains::Site| {
        let not_found = site
            .not_found_url
            .as_ref()
            .map(|url| url.as_str().to_owned());
        json!({
            "baseUrlRedirect": site.root_redirect.as_ref().map(|url| url.as_str().to_owned()),
            "regular404Redirect": not_found,
            "invalidShortUrlRedirect": not_found,
        })
    };
    let served = &state.serving.domains;
    let data: Vec<Value> = (served.sites().iter())
        .map(|site| {
            json!({
                "domain": site.host,
                "isDefault": site.domain.is_default(),
                "redirects": redirects(site),
            })
        })
        .collect();
    Ok(json!({
        "domains": {
            "data": data,
            "defaultRedirects": redirects(served.default_site()),
        }
    }))
}
