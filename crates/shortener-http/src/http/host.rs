//! The request's host as RFC 9112 (section 3.2) has it: an HTTP/1.1 request without a
//! `Host` header, or any request with more than one, is refused with a 400; what the
//! service serves is then picked by one host, the one a front end routed by.

use futures_util::future::Either;
use poem::http::{StatusCode, Version, header};
use poem::{Endpoint, IntoResponse as _, Request, Response};

use crate::api_error::problem_response;

/// Refuses requests whose host is missing or ambiguous (see the module doc).
#[derive(Debug)]
pub struct OneHost<E> {
    pub inner: E,
}

impl<E: Endpoint<Output = Response>> Endpoint for OneHost<E> {
    type Output = Response;

    // Not an `async fn`: see the module doc of `http` (the request moves on).
    #[inline(always)]
    fn call(&self, request: Request) -> impl Future<Output = poem::Result<Response>> + Send {
        match host_fault(&request) {
            None => Either::Left(self.inner.call(request)),
            Some(fault) => Either::Right(std::future::ready(Ok(problem_response(
                StatusCode::BAD_REQUEST,
                fault,
            )
            .into_response()))),
        }
    }
}

/// Why the request's host is refused, if it is.
fn host_fault(request: &Request) -> Option<&'static str> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (Some(_), Some(_)) => Some("Host: given more than once"),
        // HTTP/2 names the host in `:authority`; HTTP/1.0 need not name one.
        (None, _)
            if request.version() == Version::HTTP_11 && request.uri().authority().is_none() =>
        {
            Some("Host: required in an HTTP/1.1 request")
        }
        _ => None,
    }
}
