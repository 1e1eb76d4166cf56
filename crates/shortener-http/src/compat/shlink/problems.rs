//! This service's problems in Shlink's shape: the same status and detail (its field
//! named as Shlink names it), under the problem `type` Shlink's clients compare with, and
//! `invalidElements` on bad input as Shlink lists them.

use poem::http::HeaderValue;
use poem::http::StatusCode;
use poem::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use poem::{Endpoint, IntoResponse as _, Request, Response};
use serde_json::{Value, json};

use super::short_urls::shlink_name;
use crate::api_error::PROBLEM_JSON;

/// The problem `type`s of Shlink's errors.
const TYPES: &str = "https://shlink.io/api/error/";

/// Rewrites the problems that `inner` answers (see the module doc).
pub(super) struct ShlinkProblems<E> {
    pub inner: E,
}

impl<E: Endpoint> Endpoint for ShlinkProblems<E> {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        let response = match self.inner.call(request).await {
            Ok(response) => response.into_response(),
            Err(error) => crate::http::problem_of_error(error),
        };
        if response.content_type() != Some(PROBLEM_JSON) {
            return Ok(response);
        }
        let (mut parts, body) = response.into_parts();
        let Some(mut problem) = crate::compat::problem_body(body).await else {
            return Ok(Response::from_parts(parts, poem::Body::empty()));
        };
        let detail = (problem.get("detail").and_then(Value::as_str)).unwrap_or_default();
        let (field, why) = crate::compat::field_of(detail);
        let theirs = field.map(their_field);
        let detail = match &theirs {
            Some(field) => format!("{field}: {why}"),
            None => detail.to_owned(),
        };
        problem.insert("detail".into(), Value::String(detail));
        if let Some((status, kind, title)) = shape(parts.status, theirs.as_deref()) {
            problem.insert("type".into(), json!(format!("{TYPES}{kind}")));
            problem.insert("title".into(), json!(title));
            problem.insert("status".into(), json!(status.as_u16()));
            if kind == "invalid-data"
                && let Some(field) = theirs
            {
                problem.insert("invalidElements".into(), json!([field]));
            }
            parts.status = status;
        }
        parts.headers.remove(CONTENT_LENGTH);
        parts
            .headers
            .insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        let body = Value::Object(problem).to_string();
        Ok(Response::from_parts(parts, body.into()))
    }
}

/// A field as Shlink names it: a rule's (`rules[1].conditions[0].value`) as a field of
/// its `redirectRules` (`redirectRules[1].conditions[0].matchValue`).
fn their_field(ours: &str) -> String {
    match ours.strip_prefix("rules") {
        Some(rule) => {
            let rule = rule
                .replace(".value", ".matchValue")
                .replace(".key", ".matchKey");
            format!("redirectRules{}", rule.replace(".url", ".longUrl"))
        }
        None => shlink_name(ours).unwrap_or(ours).to_owned(),
    }
}

/// Shlink's status, type and title for this service's status (and the field its detail
/// names, by Shlink's name), where Shlink has one: a taken alias is Shlink's 400
/// `non-unique-slug`. Others keep this service's type.
fn shape(
    status: StatusCode,
    field: Option<&str>,
) -> Option<(StatusCode, &'static str, &'static str)> {
    Some(match status.as_u16() {
        400 => (status, "invalid-data", "Invalid data"),
        401 if field == Some("X-Api-Key") => {
            (status, "missing-authentication", "Invalid authorization")
        }
        401 => (status, "invalid-api-key", "Invalid API key"),
        404 if field == Some("oldName") => (status, "tag-not-found", "Tag not found"),
        409 if field == Some("newName") => (status, "tag-conflict", "Tag conflict"),
        404 if field == Some("shortCode") => (status, "short-url-not-found", "Short URL not found"),
        404 => (status, "not-found", "Not found"),
        409 => (
            StatusCode::BAD_REQUEST,
            "non-unique-slug",
            "Invalid custom slug",
        ),
        _ => return None,
    })
}
