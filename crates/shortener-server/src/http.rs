//! Middleware around the whole application: the request timeout (503), the request body
//! limit (413), the `Allow` header of a 405 (RFC 9110 §15.5.6) and the rule that every
//! error leaves as `application/problem+json`.

use std::time::Duration;

use poem::http::{HeaderValue, Method, StatusCode, header};
use poem::{Body, Endpoint, IntoResponse, Request, Response};

use crate::api::problem::{PROBLEM_JSON, problem_response};

/// Refuses bodies over `max_body_bytes` (by `Content-Length`, or while reading a chunked
/// body), adds `Allow` to a 405, then turns any error response that is not problem+json
/// yet into one.
#[derive(Debug)]
pub struct Guard<E> {
    pub inner: E,
    pub max_body_bytes: usize,
    pub allowed: AllowedMethods,
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
        // Kept for the `Allow` header of a 405; cloning a `Uri` shares its bytes.
        let uri = request.uri().clone();
        let mut response = match self.inner.call(request).await {
            Ok(response) => response.into_response(),
            Err(error) => error.into_response(),
        };
        if response.status() == StatusCode::METHOD_NOT_ALLOWED
            && !response.headers().contains_key(header::ALLOW)
        {
            if let Some(allow) = self.allowed.allow(uri.path()) {
                response.headers_mut().insert(header::ALLOW, allow);
            }
        }
        Ok(into_problem(response).await)
    }
}

/// Answers `503` problem+json with `Retry-After: 1` when a request (reading its body
/// included) takes longer than `server.request_timeout_ms`; the handler is dropped.
///
/// 503 rather than 504: there is no gateway here, the service itself did not answer in
/// time (its storage or limiter slow, or the body slow to arrive), which is what 503 says,
/// and `Retry-After` tells clients when to try again. As with any 5xx, a create that timed
/// out may or may not have been stored.
#[derive(Debug)]
pub struct RequestTimeout<E> {
    pub inner: E,
    pub timeout: Duration,
}

impl<E: Endpoint> Endpoint for RequestTimeout<E> {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        match tokio::time::timeout(self.timeout, self.inner.call(request)).await {
            Ok(result) => result.map(IntoResponse::into_response),
            Err(_) => {
                let mut response = problem_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "request: not answered within server.request_timeout_ms ({} ms)",
                        self.timeout.as_millis()
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(1u64));
                Ok(response)
            }
        }
    }
}

/// The methods of each path template (`/api/v1/links/{code}`), for the `Allow` header
/// that RFC 9110 requires on a 405.
#[derive(Debug, Default)]
pub struct AllowedMethods {
    routes: Vec<(Vec<Segment>, Vec<Method>)>,
}

#[derive(Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Variable,
}

impl AllowedMethods {
    /// From `(path template, method)` pairs, templates in the OpenAPI `{name}` form.
    pub fn new<'a>(operations: impl IntoIterator<Item = (&'a str, Method)>) -> Self {
        let mut allowed = Self::default();
        for (template, method) in operations {
            let segments: Vec<Segment> = split(template)
                .map(|segment| {
                    if segment.starts_with('{') && segment.ends_with('}') {
                        Segment::Variable
                    } else {
                        Segment::Literal(segment.to_owned())
                    }
                })
                .collect();
            let methods = match allowed.routes.iter_mut().find(|(s, _)| *s == segments) {
                Some((_, methods)) => methods,
                None => {
                    allowed.routes.push((segments, Vec::new()));
                    &mut allowed.routes.last_mut().expect("just pushed").1
                }
            };
            // The router answers HEAD wherever it answers GET.
            let implied = (method == Method::GET).then_some(Method::HEAD);
            for method in std::iter::once(method).chain(implied) {
                if !methods.contains(&method) {
                    methods.push(method);
                }
            }
        }
        allowed
    }

    /// The `Allow` value for `path`: the methods of the matching template with the most
    /// literal segments (the one the router picks), `None` when no template matches.
    fn allow(&self, path: &str) -> Option<HeaderValue> {
        let parts: Vec<&str> = split(path).collect();
        let (_, methods) = self
            .routes
            .iter()
            .filter(|(segments, _)| {
                segments.len() == parts.len()
                    && segments
                        .iter()
                        .zip(&parts)
                        .all(|(segment, part)| match segment {
                            Segment::Literal(literal) => literal == part,
                            Segment::Variable => true,
                        })
            })
            .max_by_key(|(segments, _)| {
                segments
                    .iter()
                    .filter(|s| matches!(s, Segment::Literal(_)))
                    .count()
            })?;
        let value = methods
            .iter()
            .map(Method::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        HeaderValue::from_str(&value).ok()
    }
}

fn split(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|segment| !segment.is_empty())
}

async fn limit_body(request: &mut Request, max: usize) -> Result<(), Response> {
    // The rest of the body is never read, so the connection cannot carry another request:
    // `Connection: close` tells the client not to reuse it (else its next request races
    // the close and fails with an incomplete message).
    let too_large = || {
        let mut response = problem_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body: larger than {max} bytes"),
        );
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
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
    // poem's own errors are plain text; a JSON error body was built on purpose by a
    // handler (the readiness report of a 503 `/readyz`), and is kept.
    if !(status.is_client_error() || status.is_server_error())
        || response.content_type() == Some(PROBLEM_JSON)
        || response
            .content_type()
            .is_some_and(|content_type| content_type.starts_with("application/json"))
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
const FIELDS: &[&str] = &[
    "url:",
    "alias:",
    "expires_at:",
    "max_visits:",
    "code:",
    "links:",
    "limit:",
    "cursor:",
    "q:",
    "from:",
    "to:",
    "format:",
    "size:",
];

/// A detail for an error produced outside our handlers (poem's parsers and router).
fn describe(status: StatusCode, text: &str) -> String {
    let text = text.trim();
    let text = text
        .strip_prefix("parse request payload error: ")
        .unwrap_or(text);
    // poem-openapi's `ParseError::custom` puts `failed to parse "<type>": ` before the
    // message of our field readers, which name the field themselves.
    let text = text
        .strip_prefix("failed to parse \"")
        .and_then(|rest| rest.split_once("\": "))
        .map_or(text, |(_, message)| message);
    // poem-openapi appends where the field error occurred; the field is already named.
    let text = text
        .split(" (occurred while parsing")
        .next()
        .unwrap_or(text);
    // A path, query or header parameter refused by poem-openapi (a validator of the
    // operation): name the parameter like our own field errors do.
    if let Some(detail) = describe_parameter(text) {
        return detail;
    }
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

/// `failed to parse parameter `code`: verification failed. pattern("^…$")` becomes
/// `code: must match the pattern ^…$`.
fn describe_parameter(text: &str) -> Option<String> {
    let rest = text.strip_prefix("failed to parse parameter `")?;
    let (name, reason) = rest.split_once("`: ")?;
    let reason = match reason
        .strip_prefix("verification failed. pattern(\"")
        .and_then(|pattern| pattern.strip_suffix("\")"))
    {
        Some(pattern) => format!("must match the pattern {pattern}"),
        None => reason.to_owned(),
    };
    Some(format!("{name}: {reason}"))
}
