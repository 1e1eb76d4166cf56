//! Middleware around the whole application: the request body limit (413) and the rule
//! that every error leaves as `application/problem+json`.

use poem::http::{Method, StatusCode, header};
use poem::{Body, Endpoint, IntoResponse, Request, Response};

use crate::api::problem::{PROBLEM_JSON, problem_response};

/// Refuses bodies over `max_body_bytes` (by `Content-Length`, or while reading a chunked
/// body), then turns any error response that is not problem+json yet into one.
#[derive(Debug)]
pub struct Guard<E> {
    pub inner: E,
    pub max_body_bytes: usize,
}

impl<E: Endpoint> Endpoint for Guard<E> {
    type Output = Response;

    async fn call(&self, mut request: Request) -> poem::Result<Response> {
        if matches!(
            *request.method(),
            Method::POST | Method::PUT | Method::PATCH
        ) {
            if let Err(response) = limit_body(&mut request, self.max_body_bytes).await {
                return Ok(response);
            }
        }
        let response = match self.inner.call(request).await {
            Ok(response) => response.into_response(),
            Err(error) => error.into_response(),
        };
        Ok(into_problem(response).await)
    }
}

async fn limit_body(request: &mut Request, max: usize) -> Result<(), Response> {
    let too_large = || {
        problem_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body: larger than {max} bytes"),
        )
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > max as u64) {
        return Err(too_large());
    }
    let body = request.take_body();
    match body.into_bytes_limit(max).await {
        Ok(bytes) => {
            request.set_body(Body::from(bytes));
            Ok(())
        }
        Err(poem::error::ReadBodyError::PayloadTooLarge) => Err(too_large()),
        Err(error) => Err(problem_response(
            StatusCode::BAD_REQUEST,
            format!("body: {error}"),
        )),
    }
}

async fn into_problem(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || response.content_type() == Some(PROBLEM_JSON)
    {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = body.into_string().await.unwrap_or_default();
    let detail = describe(status, &text);
    let mut problem = problem_response(status, detail);
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            problem.headers_mut().append(name.clone(), value.clone());
        }
    }
    problem
}

/// Prefixes of the details that already name a field.
const FIELDS: &[&str] = &["url:", "alias:", "expires_at:", "max_visits:", "code:"];

/// A detail for an error produced outside our handlers (poem's parsers and router).
fn describe(status: StatusCode, text: &str) -> String {
    let text = text.trim();
    let text = text
        .strip_prefix("parse request payload error: ")
        .unwrap_or(text);
    // poem-openapi appends where the field error occurred; the field is already named.
    let text = text
        .split(" (occurred while parsing")
        .next()
        .unwrap_or(text);
    match status {
        StatusCode::NOT_FOUND if text.is_empty() || text == "not found" => {
            "no such resource".into()
        }
        StatusCode::UNAUTHORIZED => "X-API-Key: a valid API key is required".into(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            format!("content-type: {text}; send application/json")
        }
        // Our field readers name the field; anything else is about the body as a whole
        // (not JSON, not an object, empty).
        StatusCode::BAD_REQUEST if !FIELDS.iter().any(|field| text.starts_with(field)) => {
            format!("body: {text}")
        }
        _ if text.is_empty() => status.canonical_reason().unwrap_or("error").to_lowercase(),
        _ => text.to_owned(),
    }
}
