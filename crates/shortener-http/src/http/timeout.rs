//! The request timeout: 503 problem+json when a request takes too long.

use std::time::Duration;

use futures_util::FutureExt as _;
use poem::http::{HeaderValue, StatusCode, header};
use poem::{Endpoint, IntoResponse, Request, Response};

use crate::api_error::problem_response;

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

    // Not an `async fn`: see the module doc of `http` (the request moves on).
    #[inline(always)]
    fn call(&self, request: Request) -> impl Future<Output = poem::Result<Response>> + Send {
        let timeout = self.timeout;
        tokio::time::timeout(timeout, self.inner.call(request)).map(move |result| match result {
            Ok(result) => result.map(IntoResponse::into_response),
            Err(_) => {
                let mut response = problem_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "request: not answered within server.request_timeout_ms ({} ms)",
                        timeout.as_millis()
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(1u64));
                Ok(response)
            }
        })
    }
}
