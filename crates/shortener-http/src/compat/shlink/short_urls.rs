//! One short URL at a time: create (and `shorten`, its one-step form), get, edit and
//! delete, through the same state methods as the API's own operations; and the shape
//! Shlink's clients read a short URL in.

use poem::http::StatusCode;
use poem::web::Json;
use poem::{Body, IntoResponse as _, Request, Response, handler};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::macros::format_description;

use crate::api::fields::{FromJsonBody as _, PatchLinkRequest};
use crate::api::{ApiError, CreateLinkRequest, LinkBody};
use crate::auth::Scope;
use crate::compat::{answer, key, object, state};
use crate::state::AppState;

/// Shlink's names of the fields a create or an edit takes, and this service's.
const FIELDS: &[(&str, &str)] = &[
    ("longUrl", "url"),
    ("customSlug", "alias"),
    ("validUntil", "expires_at"),
    ("maxVisits", "max_visits"),
    ("title", "title"),
    ("tags", "tags"),
    ("crawlable", "crawlable"),
    ("forwardQuery", "forward_query"),
    ("domain", "domain"),
    ("findIfExists", "find_if_exists"),
];

/// Shlink's name of one of this service's fields, for the errors that name it.
pub(super) fn shlink_name(ours: &str) -> Option<&'static str> {
    (FIELDS.iter())
        .find(|(_, name)| *name == ours)
        .map(|(theirs, _)| *theirs)
        .or_else(|| (ours == "code").then_some("shortCode"))
}

/// `POST /short-urls`: Shlink answers a create with 200 and the short URL.
#[handler]
pub(super) async fn create(request: &Request, body: Body) -> Response {
    answer(
        create_from(request, body)
            .await
            .map(|url| Json(url).into_response()),
    )
}

async fn create_from(request: &Request, body: Body) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Create)?;
    let body = object(request, body).await?;
    let asked = CreateLinkRequest::from_json(ours(body, false)?)?;
    let owner = Some(key.owner().clone());
    if let Some(found) = state.existing_link(&asked, owner.clone()).await? {
        return short_url(&state, found).await;
    }
    let link = state.create_link(asked, owner).await?;
    short_url(&state, link).await
}

/// `GET /short-urls/shorten?apiKey=&longUrl=&format=txt|json`: a create from the query,
/// answered with the short URL as text, or as JSON.
#[handler]
pub(super) async fn shorten(request: &Request) -> Response {
    answer(shorten_from(request).await)
}

async fn shorten_from(request: &Request) -> Result<Response, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Create)?;
    let query = request.uri().query().unwrap_or_default();
    let mut long_url = None;
    let mut text = false;
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*name {
            "longUrl" => long_url = Some(value.into_owned()),
            "format" if value == "txt" => text = true,
            "format" if value == "json" => text = false,
            "format" => {
                return Err(ApiError::bad_request("format", "must be txt or json"));
            }
            _ => {}
        }
    }
    let long_url = long_url.ok_or_else(|| ApiError::bad_request("longUrl", "is required"))?;
    let mut body = Map::new();
    body.insert("url".into(), Value::String(long_url));
    let asked = CreateLinkRequest::from_json(body)?;
    let link = state.create_link(asked, Some(key.owner().clone())).await?;
    if text {
        return Ok(link
            .short_url
            .with_content_type("text/plain")
            .into_response());
    }
    Ok(Json(short_url(&state, link).await?).into_response())
}

/// `GET /short-urls/{shortCode}?domain=`: the caller's link, expired or not.
#[handler]
pub(super) async fn get_one(request: &Request) -> Response {
    answer(get_from(request).await.map(|url| Json(url).into_response()))
}

async fn get_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Read)?;
    let link_key = state.link_key(code(request), domain(request).as_deref())?;
    let link = state.visible_link(&link_key, Some(&key)).await?;
    short_url(&state, state.link_body(link)).await
}

/// `PATCH /short-urls/{shortCode}?domain=`: Shlink's edit, a merge patch.
#[handler]
pub(super) async fn edit(request: &Request, body: Body) -> Response {
    answer(
        edit_from(request, body)
            .await
            .map(|url| Json(url).into_response()),
    )
}

async fn edit_from(request: &Request, body: Body) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Update)?;
    let link_key = state.link_key(code(request), domain(request).as_deref())?;
    let body = object(request, body).await?;
    let patch = PatchLinkRequest::from_json(ours(body, true)?)?;
    let patch = state.link_patch(patch).await?;
    let link = (state.shortener)
        .update(&link_key, key.access(), &patch, OffsetDateTime::now_utc())
        .await?;
    state.invalidate(&link_key).await;
    tracing::info!(link = %link_key, key = %key.name, "link updated through the Shlink API");
    short_url(&state, state.link_body(link)).await
}

/// `DELETE /short-urls/{shortCode}?domain=`: 204, as Shlink answers.
#[handler]
pub(super) async fn delete(request: &Request) -> Response {
    answer(delete_from(request).await)
}

async fn delete_from(request: &Request) -> Result<Response, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Delete)?;
    let link_key = state.link_key(code(request), domain(request).as_deref())?;
    if !state.shortener.delete(&link_key, key.access()).await? {
        return Err(ApiError::not_found("shortCode: no link with this code"));
    }
    state.invalidate(&link_key).await;
    tracing::info!(link = %link_key, key = %key.name, "link deleted through the Shlink API");
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The per-visit lists: refused, naming what this service keeps instead.
#[handler]
pub(super) fn visits() -> Response {
    crate::api_error::problem_response(
        StatusCode::NOT_IMPLEMENTED,
        "visits: this service keeps visits as daily counts, never a record per visit; \
         read them from GET /api/v1/links/{code}/visits",
    )
}

/// A Shlink create or edit body as this service's: fields renamed, `null`s of a create
/// left out (Shlink's clients send them for "not set"), and what has no equivalent here
/// refused by name. Fields Shlink no longer reads (`validateUrl`) and fields of later
/// Shlink versions are left out, as Shlink leaves out what it does not know.
fn ours(body: Map<String, Value>, patch: bool) -> Result<Map<String, Value>, ApiError> {
    let mut translated = Map::new();
    for (name, value) in body {
        if let Some((_, ours)) = FIELDS.iter().find(|(theirs, _)| *theirs == name) {
            if patch || !value.is_null() {
                translated.insert((*ours).to_owned(), value);
            }
            continue;
        }
        let refused = match name.as_str() {
            "validSince" if !value.is_null() => {
                "links here redirect from their creation; a redirect rule with an `after` \
                 condition sends visitors elsewhere until a date"
            }
            "shortCodeLength" if !value.is_null() => {
                "codes here have the length the service is configured with (codes.length)"
            }
            "deviceLongUrls" if !value.is_null() => {
                "set redirect rules with this service's API (PATCH /api/v1/links/{code})"
            }
            _ => continue,
        };
        return Err(ApiError::bad_request(&name, refused));
    }
    Ok(translated)
}

/// The `shortCode` of the path.
pub(super) fn code(request: &Request) -> &str {
    request.raw_path_param("code").unwrap_or_default()
}

/// The `domain` of the query: Shlink's `DEFAULT` is the default domain.
pub(super) fn domain(request: &Request) -> Option<String> {
    let query = request.uri().query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "domain")
        .map(|(_, value)| value.into_owned())
        .filter(|domain| !domain.is_empty() && domain != "DEFAULT")
}

/// A link in Shlink's shape. Visits by bots are counted per day: their sum is read from
/// the link's days.
pub(super) async fn short_url(state: &AppState, link: LinkBody) -> Result<Value, ApiError> {
    let bots = bots(state, &link).await?;
    Ok(shape(state, link, bots))
}

/// The visits by bots to a link since its creation.
async fn bots(state: &AppState, link: &LinkBody) -> Result<u64, ApiError> {
    use shortener_core::LinkRepository as _;
    let key = state.link_key(&link.code, Some(&link.domain))?;
    let today = OffsetDateTime::now_utc().date();
    let days = (state.shortener.repository())
        .visits_by_day(&key, link.created_at.date(), today)
        .await?;
    Ok(days.iter().map(|day| day.bots).sum())
}

/// A link in Shlink's shape, its bots counted.
pub(super) fn shape(state: &AppState, link: LinkBody, bots: u64) -> Value {
    let default = &state.serving.domains.default_site().host;
    json!({
        "shortCode": link.code,
        "shortUrl": link.short_url,
        "longUrl": link.url,
        "dateCreated": date(link.created_at),
        "visitsSummary": {
            "total": link.visits.saturating_add(bots),
            "nonBots": link.visits,
            "bots": bots,
        },
        "visitsCount": link.visits.saturating_add(bots),
        "meta": {
            "validSince": null,
            "validUntil": link.expires_at.map(date),
            "maxVisits": link.max_visits,
        },
        "domain": (link.domain != *default).then_some(link.domain),
        "tags": link.tags,
        "title": link.title,
        "crawlable": link.crawlable,
        "forwardQuery": link.forward_query.unwrap_or(state.serving.forward_query),
        "hasRedirectRules": !link.rules.is_empty(),
    })
}

/// A time as Shlink writes it: ISO 8601 to the second, with the offset.
fn date(at: OffsetDateTime) -> String {
    let format = format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second][offset_hour sign:mandatory]:[offset_minute]"
    );
    at.format(&format).unwrap_or_default()
}
