//! Kutt's API v2 (`/api/v2/...`), as its npm client, its browser extension and ShareX's
//! Kutt uploader call it, with `X-API-KEY` taking this service's API keys.
//!
//! Served: health, links (list with `limit`, `skip` and `search` and its total; create
//! with `customurl`, `description`, `expire_in`, `password`, `reuse` and `domain`; edit
//! and delete by id). A link's id is its code, with `@` and its host on a domain other
//! than the default one: stable for the link's life, and read back without a table of
//! ids. A link's stats come from this service's daily counts (`stats.rs` says what
//! differs: no hourly views). Errors are Kutt's `{"error": "..."}`, with this service's
//! status and detail. Kutt's users and their custom domains are not served.

mod links;
mod stats;

use poem::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use poem::{Endpoint, IntoResponse as _, Request, Response, Route, get, handler};
use serde_json::json;

use crate::api_error::PROBLEM_JSON;
use crate::limit::{limit_create, limit_lookup, limit_manage};

/// The routes under `/api/v2`.
pub(crate) fn routes() -> KuttErrors<Route> {
    KuttErrors {
        inner: Route::new()
            .at("/health", get(health))
            .at(
                "/links",
                get(limit_lookup(links::list)).post(limit_create(links::create)),
            )
            .at(
                "/links/:id",
                poem::patch(limit_manage(links::edit)).delete(limit_manage(links::delete)),
            )
            .at("/links/:id/stats", get(limit_lookup(stats::read))),
    }
}

#[handler]
fn health() -> &'static str {
    "OK"
}

/// This service's problems as Kutt's errors, `{"error": detail}`, status kept.
pub(crate) struct KuttErrors<E> {
    inner: E,
}

impl<E: Endpoint> Endpoint for KuttErrors<E> {
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
        let problem = super::problem_body(body).await;
        let detail = (problem.as_ref())
            .and_then(|problem| problem.get("detail")?.as_str())
            .map(|detail| match super::field_of(detail) {
                (Some(field), why) => format!("{}: {why}", kutt_name(field)),
                (None, detail) => detail.to_owned(),
            });
        let status = parts.status;
        let error = detail.unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("Something went wrong")
                .to_owned()
        });
        parts.headers.remove(CONTENT_LENGTH);
        parts.headers.remove(CONTENT_TYPE);
        let mut answer = Response::from_parts(parts, json!({ "error": error }).to_string().into());
        answer.headers_mut().insert(
            CONTENT_TYPE,
            poem::http::HeaderValue::from_static("application/json"),
        );
        Ok(answer)
    }
}

/// Kutt's name of one of this service's fields, for the errors that name it.
fn kutt_name(ours: &str) -> &str {
    match ours {
        "url" => "target",
        "title" => "description",
        "alias" => "customurl",
        "expires_at" => "expire_in",
        "find_if_exists" => "reuse",
        "code" => "id",
        other => other,
    }
}
