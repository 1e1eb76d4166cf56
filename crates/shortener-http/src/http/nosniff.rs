//! `X-Content-Type-Options: nosniff` on every response, so that no browser takes a
//! problem+json, a QR code or a metrics page for a script or a page of its own; and,
//! while the node drains (`server.shutdown_delay_ms`), `Connection: close`, so that the
//! connection ends after its answer rather than idle under a balancer's next request.

use futures_util::FutureExt as _;
use poem::http::{HeaderValue, header};
use poem::{Endpoint, IntoResponse as _, Request, Response};

#[derive(Debug)]
pub struct NoSniff<E> {
    pub inner: E,
    /// Set while the node drains; `None` where there is no drain (the ops listener).
    pub draining: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl<E: Endpoint> Endpoint for NoSniff<E> {
    type Output = Response;

    // Not an `async fn`: see the module doc of `http` (the request moves on).
    #[inline(always)]
    fn call(&self, request: Request) -> impl Future<Output = poem::Result<Response>> + Send {
        self.inner.call(request).map(|result| {
            let mut response = match result {
                Ok(response) => response.into_response(),
                Err(error) => super::problem_of_error(error),
            };
            response.headers_mut().insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            if (self.draining.as_ref())
                .is_some_and(|draining| draining.load(std::sync::atomic::Ordering::Relaxed))
            {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(response)
        })
    }
}
