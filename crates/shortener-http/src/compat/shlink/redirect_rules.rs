//! A short URL's redirect rules in Shlink's shape: read (`GET`) and replaced whole
//! (`POST`), over this service's rules, through the same state methods as the API's edit
//! (so every rule's target is checked as the link's own is).
//!
//! Shlink's rules are a subset of ours: a link whose rules have a split, a name, their
//! own status, or a condition Shlink has no type for is answered with a problem that says
//! which rule, rather than shown as something it is not.

use poem::http::StatusCode;
use poem::web::Json;
use poem::{Body, IntoResponse as _, Request, Response, handler};
use serde_json::{Map, Value, json};
use shortener_core::Link;
use shortener_transfer::shlink_rules::{self, ShlinkRule};
use time::OffsetDateTime;

use super::short_urls::{code, domain};
use crate::api::ApiError;
use crate::api::fields::{FromJsonBody as _, PatchLinkRequest};
use crate::auth::Scope;
use crate::compat::{answer, key, object, state};

/// `GET /short-urls/{shortCode}/redirect-rules?domain=`.
#[handler]
pub(super) async fn read(request: &Request) -> Response {
    answer(
        read_from(request)
            .await
            .map(|rules| Json(rules).into_response()),
    )
}

async fn read_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Read)?;
    let link_key = state.link_key(code(request), domain(request).as_deref())?;
    let link = state.visible_link(&link_key, Some(&key)).await?;
    in_shlink_shape(&link)
}

/// `POST /short-urls/{shortCode}/redirect-rules?domain=` with `{"redirectRules": [...]}`:
/// the link's rules replaced by these (none clears them), answered as `GET` answers.
#[handler]
pub(super) async fn replace(request: &Request, body: Body) -> Response {
    answer(
        replace_from(request, body)
            .await
            .map(|rules| Json(rules).into_response()),
    )
}

async fn replace_from(request: &Request, body: Body) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Update)?;
    let link_key = state.link_key(code(request), domain(request).as_deref())?;
    let mut body = object(request, body).await?;
    let theirs = body.remove("redirectRules").unwrap_or(Value::Null);
    let theirs: Vec<ShlinkRule> = serde_json::from_value(theirs)
        .map_err(|error| ApiError::bad_request("redirectRules", error))?;
    let ours = shlink_rules::to_ours(theirs).map_err(|error| {
        // `[index]: why`, as the rule's field.
        let (at, why) = error.split_once(": ").unwrap_or(("", &error));
        ApiError::bad_request(&format!("redirectRules{at}"), why)
    })?;
    let rules = if ours.is_empty() {
        Value::Null
    } else {
        serde_json::to_value(ours).map_err(|error| ApiError::bad_request("redirectRules", error))?
    };
    let patch = PatchLinkRequest::from_json(Map::from_iter([("rules".to_owned(), rules)]))?;
    let patch = state.link_patch(patch).await?;
    let link = (state.shortener)
        .update(&link_key, key.access(), &patch, OffsetDateTime::now_utc())
        .await?;
    state.invalidate(&link_key).await;
    tracing::info!(link = %link_key, key = %key.name, "redirect rules set through the Shlink API");
    in_shlink_shape(&link)
}

/// `{"defaultLongUrl", "redirectRules"}`, or a 501 naming the rule Shlink cannot show.
fn in_shlink_shape(link: &Link) -> Result<Value, ApiError> {
    let rules = shlink_rules::to_shlink(&link.options.rules.to_specs()).map_err(|why| {
        ApiError::status(
            StatusCode::NOT_IMPLEMENTED,
            format!(
                "{why}; this link's rules are read and edited with GET and PATCH \
                 /api/v1/links/{}",
                link.code
            ),
        )
    })?;
    Ok(json!({"defaultLongUrl": link.url.as_str(), "redirectRules": rules}))
}
