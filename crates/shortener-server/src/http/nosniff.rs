//! `X-Content-Type-Options: nosniff` on every response, so that no browser takes a
//! problem+json, a QR code or a metrics page for a script or a page of its own.

use poem::http::{HeaderValue, header};
use poem::{Endpoint, IntoResponse as _, Request, Response};

#[derive(Debug)]
pub struct NoSniff<E> {
    pub inner: E,
}

impl<E: Endpoint> Endpoint for NoSniff<E> {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        let mut response = match self.inner.call(request).await {
            Ok(response) => response.into_response(),
            Err(error) => super::problem_of_error(error),
        };
        response.headers_mut().insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        Ok(response)
    }
}
