//! Other shorteners' APIs, spoken over the same core as this service's own: a tool
//! written for one of them keeps working once its server address points here.
//!
//! Each is a driving adapter of its own that maps its requests onto the same creates,
//! look-ups and edits as [`crate::api`] (the same checks of targets and aliases, the same
//! `create` policy and its tokens, the same owner), and its answers and errors onto the
//! shapes its clients read. Each is off unless `[compat]` switches it on.
//!
//! - [`shlink`]: Shlink's REST API under `/rest/`;
//! - [`kutt`]: Kutt's API v2 under `/api/v2/`;
//! - [`yourls`]: YOURLS' API at `/yourls-api.php`.

pub(crate) mod kutt;
pub(crate) mod shlink;
pub(crate) mod yourls;

use std::sync::Arc;

use poem::http::StatusCode;
use poem::{Body, Request, Response};
use serde_json::{Map, Value};

use crate::api::ApiError;
use crate::api::auth::ApiKeyAuth;
use crate::auth::{API_KEY_HEADER, ApiKeyEntry, Scope};
use crate::state::AppState;

/// The caller's key with `scope`: 401 when none was sent (an unknown one was refused
/// by the rate limit already), 403 without the scope.
pub(crate) fn key(
    state: &AppState,
    request: &Request,
    scope: Scope,
) -> Result<ApiKeyEntry, ApiError> {
    let sent = request
        .headers()
        .get(&API_KEY_HEADER)
        .and_then(|key| key.to_str().ok());
    let Some(entry) = sent.and_then(|key| state.api_keys.find(key)) else {
        return Err(ApiError::status(
            poem::http::StatusCode::UNAUTHORIZED,
            "X-Api-Key: an API key is required",
        ));
    };
    ApiKeyAuth(entry).require(scope).cloned()
}

/// The state every route is given.
pub(crate) fn state(request: &Request) -> Result<Arc<AppState>, ApiError> {
    request.data::<Arc<AppState>>().cloned().ok_or_else(|| {
        ApiError::status(
            poem::http::StatusCode::INTERNAL_SERVER_ERROR,
            "the service state is missing",
        )
    })
}

/// What a handler answers: its value, or its error as a response (which
/// each API's error wrapper puts in its shape).
pub(crate) fn answer(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(poem::IntoResponse::into_response)
}

/// A body as an object of fields: JSON, or a form (as some tools post to Shlink), whose
/// `true` and `false` are booleans, numbers of `maxVisits` a number, and `tags[]` a
/// list.
pub(crate) async fn object(request: &Request, body: Body) -> Result<Map<String, Value>, ApiError> {
    let bytes = body
        .into_vec()
        .await
        .map_err(|error| ApiError::status(StatusCode::BAD_REQUEST, format!("body: {error}")))?;
    let form = (request.content_type())
        .is_some_and(|kind| kind.starts_with("application/x-www-form-urlencoded"));
    if !form {
        return match crate::api::json::parse(&bytes)? {
            Value::Object(body) => Ok(body),
            _ => Err(ApiError::bad_request("body", "must be a JSON object")),
        };
    }
    let mut body = Map::new();
    for (name, value) in url::form_urlencoded::parse(&bytes) {
        let value = match (&*name, &*value) {
            (_, "true") => Value::Bool(true),
            (_, "false") => Value::Bool(false),
            ("maxVisits", number) => number
                .parse::<u64>()
                .map_or_else(|_| Value::String(number.to_owned()), Value::from),
            _ => Value::String(value.into_owned()),
        };
        if name == "tags[]" {
            let tags = body
                .entry("tags")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(tags) = tags {
                tags.push(value);
            }
        } else if body.insert(name.clone().into_owned(), value).is_some() {
            return Err(ApiError::bad_request(&name, "is given more than once"));
        }
    }
    Ok(body)
}

/// The largest problem body the adapters rewrite: this service's are a line of text.
const MAX_PROBLEM_BYTES: usize = 16 * 1024;

/// A problem's body as JSON, for the adapters that answer this service's problems in
/// their API's shape; `None` when it is larger than a problem is, or not an object.
pub(crate) async fn problem_body(body: Body) -> Option<Map<String, Value>> {
    let bytes = body.into_bytes_limit(MAX_PROBLEM_BYTES).await.ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(problem) => Some(problem),
        _ => None,
    }
}

/// A problem's detail split at the field it names (`url: must be ...`); no field when
/// it names none.
pub(crate) fn field_of(detail: &str) -> (Option<&str>, &str) {
    match detail.split_once(": ") {
        Some((field, why)) => (Some(field), why),
        None => (None, detail),
    }
}
