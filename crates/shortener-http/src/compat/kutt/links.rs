//! Kutt's links: listed, created, edited and deleted through the same state methods as
//! the API's own operations, in the shape Kutt's clients read.

use poem::http::StatusCode;
use poem::web::Json;
use poem::{Body, IntoResponse as _, Request, Response, handler};
use serde_json::{Map, Value, json};
use shortener_core::{LinkRepository as _, ListQuery, Tags};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use crate::api::fields::{FromJsonBody as _, PatchLinkRequest};
use crate::api::{ApiError, CreateLinkRequest, LinkBody};
use crate::auth::Scope;
use crate::compat::{answer, key, object, state};
use crate::state::AppState;

/// The most links of one page, as Kutt allows.
const MAX_LIMIT: u64 = 50;

/// `GET /links?limit=&skip=&search=`: the caller's links, newest first, and their total.
#[handler]
pub(super) async fn list(request: &Request) -> Response {
    answer(
        list_from(request)
            .await
            .map(|list| Json(list).into_response()),
    )
}

async fn list_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Read)?;
    let (mut limit, mut skip, mut search) = (10, 0, None);
    let query = request.uri().query().unwrap_or_default();
    for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*name {
            "limit" => match value.parse::<u64>() {
                Ok(value) if (1..=MAX_LIMIT).contains(&value) => limit = value,
                _ => return Err(ApiError::bad_request("limit", "must be from 1 to 50")),
            },
            "skip" => match value.parse::<u64>() {
                Ok(value) if value <= u64::from(u32::MAX) => skip = value,
                _ => return Err(ApiError::bad_request("skip", "must be a whole number")),
            },
            "search" if value.chars().any(char::is_control) => {
                return Err(ApiError::bad_request(
                    "search",
                    "must not contain control characters",
                ));
            }
            "search" => search = Some(value.into_owned()).filter(|text| !text.is_empty()),
            _ => {}
        }
    }
    let query = ListQuery {
        order: shortener_core::ListOrder::Newest,
        offset: usize::try_from(skip).unwrap_or(usize::MAX),
        after: None,
        limit: limit as usize,
        search,
        tags: Tags::default(),
        domain: None,
        within: shortener_core::ListWithin::default(),
    };
    let repository = state.shortener.repository();
    let total = repository.count(key.access(), &query).await?.links;
    let links = repository.list(key.access(), &query).await?;
    let data: Vec<Value> = (links.into_iter())
        .map(|link| shape(&state, state.link_body(link)))
        .collect();
    Ok(json!({"limit": limit, "skip": skip, "total": total, "data": data}))
}

/// `POST /links`: 201 and the link; with `reuse`, the caller's newest live link to the
/// same target if there is one (200), as Kutt reuses.
#[handler]
pub(super) async fn create(request: &Request, body: Body) -> Response {
    answer(create_from(request, body).await)
}

async fn create_from(request: &Request, body: Body) -> Result<Response, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Create)?;
    let mut body = ours(object(request, body).await?, false)?;
    let reuse = body.remove("find_if_exists") == Some(Value::Bool(true));
    let asked = CreateLinkRequest::from_json(body)?;
    let owner = Some(key.owner().clone());
    if reuse && let Some(found) = state.link_to_target(&asked, owner.clone()).await? {
        return Ok(Json(shape(&state, found)).into_response());
    }
    let link = state.create_link(asked, owner).await?;
    Ok(Json(shape(&state, link))
        .with_status(StatusCode::CREATED)
        .into_response())
}

/// `PATCH /links/{id}`: its target, description and expiry.
#[handler]
pub(super) async fn edit(request: &Request, body: Body) -> Response {
    answer(edit_from(request, body).await)
}

async fn edit_from(request: &Request, body: Body) -> Result<Response, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Update)?;
    let link_key = link_key(&state, request)?;
    let mut body = object(request, body).await?;
    // Kutt's clients send the address they have; another one would be a new code.
    if let Some(address) = body.remove("address")
        && address.as_str() != Some(link_key.code.as_str())
    {
        return Err(ApiError::bad_request(
            "address",
            "a link's address cannot change here: make a new link with customurl",
        ));
    }
    let patch = PatchLinkRequest::from_json(ours(body, true)?)?;
    let patch = state.link_patch(patch).await?;
    let link = (state.shortener)
        .update(&link_key, key.access(), &patch, OffsetDateTime::now_utc())
        .await?;
    state.invalidate(&link_key).await;
    tracing::info!(link = %link_key, key = %key.name, "link updated through the Kutt API");
    Ok(Json(shape(&state, state.link_body(link))).into_response())
}

/// `DELETE /links/{id}`.
#[handler]
pub(super) async fn delete(request: &Request) -> Response {
    answer(delete_from(request).await)
}

async fn delete_from(request: &Request) -> Result<Response, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Delete)?;
    let link_key = link_key(&state, request)?;
    if !state.shortener.delete(&link_key, key.access()).await? {
        return Err(ApiError::not_found("id: no link with this id"));
    }
    state.invalidate(&link_key).await;
    tracing::info!(link = %link_key, key = %key.name, "link deleted through the Kutt API");
    Ok(Json(json!({"message": "Link has been deleted successfully."})).into_response())
}

/// The link a path's id names: its code, and `@` and its host off the default domain.
pub(super) fn link_key(
    state: &AppState,
    request: &Request,
) -> Result<shortener_core::LinkKey, ApiError> {
    let id = request.raw_path_param("id").unwrap_or_default();
    let (code, host) = match id.split_once('@') {
        Some((code, host)) => (code, Some(host)),
        None => (id, None),
    };
    state
        .link_key(code, host)
        .map_err(|_| ApiError::not_found("id: no link with this id"))
}

/// A Kutt create or edit body as this service's (see the module doc).
fn ours(body: Map<String, Value>, patch: bool) -> Result<Map<String, Value>, ApiError> {
    let mut translated = Map::new();
    for (name, value) in body {
        let ours = match name.as_str() {
            "target" => "url",
            "description" => "title",
            "password" => "password",
            "customurl" if !patch => "alias",
            "reuse" if !patch => "find_if_exists",
            "domain" if !patch => "domain",
            "expire_in" => {
                let at = match &value {
                    Value::Null => Value::Null,
                    Value::String(text) => json!(expiry(text)?),
                    _ => return Err(ApiError::bad_request("expire_in", "must be a string")),
                };
                if patch || !at.is_null() {
                    translated.insert("expires_at".into(), at);
                }
                continue;
            }
            _ => continue,
        };
        // Kutt's forms send "" for a field left empty.
        let empty = value.is_null() || value.as_str() == Some("");
        if !empty {
            translated.insert(ours.into(), value);
        } else if patch && ours == "title" {
            translated.insert(ours.into(), Value::Null);
        }
    }
    Ok(translated)
}

/// When a link expires that `expire_in` (`"2 hours"`, `"30 minutes"`, `"1d"`) from now
/// says: at least a minute, at most ten years.
fn expiry(text: &str) -> Result<String, ApiError> {
    let bad = || {
        ApiError::bad_request(
            "expire_in",
            "must be a number and a unit: minutes, hours, days, weeks or years",
        )
    };
    let text = text.trim().to_ascii_lowercase();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number: f64 = text[..split].parse().map_err(|_| bad())?;
    let seconds = match text[split..].trim() {
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600.0,
        "d" | "day" | "days" => 86_400.0,
        "w" | "week" | "weeks" => 604_800.0,
        "y" | "yr" | "yrs" | "year" | "years" => 31_536_000.0,
        _ => return Err(bad()),
    } * number;
    if !(60.0..=315_360_000.0).contains(&seconds) {
        return Err(ApiError::bad_request(
            "expire_in",
            "must be from 1 minute to 10 years",
        ));
    }
    #[allow(clippy::cast_possible_truncation)] // within ten years of seconds, checked above
    let at = OffsetDateTime::now_utc() + Duration::seconds(seconds as i64);
    Ok(at.format(&Rfc3339).unwrap_or_default())
}

/// A link in Kutt's shape.
pub(super) fn shape(state: &AppState, link: LinkBody) -> Value {
    let default = &state.serving.domains.default_site().host;
    let on_default = link.domain == *default;
    let time = |at: OffsetDateTime| at.format(&Rfc3339).unwrap_or_default();
    json!({
        "id": if on_default { link.code.clone() } else { format!("{}@{}", link.code, link.domain) },
        "address": link.code,
        "description": link.title,
        "banned": false,
        "password": link.password_protected,
        "expire_in": link.expires_at.map(time),
        "target": link.url,
        "visit_count": link.visits,
        "domain": (!on_default).then_some(link.domain),
        "created_at": time(link.created_at),
        "updated_at": null,
        "link": link.short_url,
    })
}
