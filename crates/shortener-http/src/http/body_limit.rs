//! The request body limit: 413 problem+json past `server.max_body_bytes`.

use poem::http::{HeaderValue, Method, StatusCode, header};
use poem::{Body, Endpoint, IntoResponse as _, Request, Response};

use crate::api_error::problem_response;

/// Refuses bodies of `POST`, `PUT` and `PATCH` over `max_body_bytes`, by `Content-Length`
/// or while reading a chunked body; the body read is handed on whole.
#[derive(Debug)]
pub struct BodyLimit<E> {
    pub inner: E,
    pub max_body_bytes: usize,
}

impl<E: Endpoint> Endpoint for BodyLimit<E> {
    type Output = Response;

    async fn call(&self, mut request: Request) -> poem::Result<Response> {
        if matches!(
            *request.method(),
            Method::POST | Method::PUT | Method::PATCH
        ) && let Err(response) = limit_body(&mut request, self.max_body_bytes).await
        {
            return Ok(response);
        }
        self.inner.call(request).await.map(|r| r.into_response())
    }
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
