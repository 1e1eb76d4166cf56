//! Every error leaves as `application/problem+json`, with a detail that names the field.
//!
//! Our operations answer problem+json themselves ([`crate::api::ApiError`], and the
//! `FieldError` of a body). What is left are the errors that poem
//! and poem-openapi raise before a handler runs: a parameter that fails its validator, a
//! wrong content type, a missing key, an unknown path or method. They are told apart by
//! their types, never by their messages.

use poem::error::{MethodNotAllowedError, NotFoundError};
use poem::http::{HeaderMap, StatusCode, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use poem_openapi::OperationId;
use poem_openapi::error::{
    AuthorizationError, ContentTypeError, ParseParamError, ParsePathError, ParseRequestPayloadError,
};

use super::AllowedMethods;
use crate::api_error::{PROBLEM_JSON, problem_response};

/// Turns every error (an `Err`, or an error status with a body that is not JSON) into a
/// problem+json response, keeping its status and headers; adds `Allow` to a 405.
#[derive(Debug)]
pub struct Problems<E> {
    pub inner: E,
    pub allowed: AllowedMethods,
}

impl<E: Endpoint> Endpoint for Problems<E> {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        // Kept for the `Allow` header of a 405; cloning a `Uri` shares its bytes.
        let uri = request.uri().clone();
        let mut response = match self.inner.call(request).await {
            Ok(response) => {
                let response = response.into_response();
                if is_plain_error(&response) {
                    let status = response.status();
                    let (parts, body) = response.into_parts();
                    let text = body.into_string().await.unwrap_or_default();
                    let detail = if text.trim().is_empty() {
                        reason(status)
                    } else {
                        text.trim().to_owned()
                    };
                    let mut problem =
                        with_headers(problem_response(status, detail), &parts.headers);
                    if let Some(operation) = parts.extensions.get::<OperationId>() {
                        problem.set_data(*operation);
                    }
                    problem
                } else {
                    response
                }
            }
            Err(error) => {
                // The operation that failed, for the request metrics outside.
                let operation = error.data::<OperationId>().copied();
                let mut problem = problem_of_error(error);
                if let Some(operation) = operation {
                    problem.set_data(operation);
                }
                problem
            }
        };
        if response.status() == StatusCode::METHOD_NOT_ALLOWED
            && !response.headers().contains_key(header::ALLOW)
            && let Some(allow) = self.allowed.allow(uri.path())
        {
            response.headers_mut().insert(header::ALLOW, allow);
        }
        Ok(response)
    }
}

/// The problem+json response of an error, with the status and headers of its own response
/// and a detail chosen by its type (see [`detail`]).
pub fn problem_of_error(error: poem::Error) -> Response {
    let detail = detail(&error);
    let response = error.into_response();
    if response.content_type() == Some(PROBLEM_JSON) {
        return response;
    }
    with_headers(
        problem_response(response.status(), detail),
        response.headers(),
    )
}

/// `problem` with the headers of the response it replaces, but its own content type.
fn with_headers(mut problem: Response, headers: &HeaderMap) -> Response {
    for (name, value) in headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            problem.headers_mut().append(name.clone(), value.clone());
        }
    }
    problem
}

/// An error status whose body was not built as JSON on purpose. (A JSON error body is
/// kept: the readiness report of a 503 `/readyz` is one.)
fn is_plain_error(response: &Response) -> bool {
    let status = response.status();
    (status.is_client_error() || status.is_server_error())
        && !response.content_type().is_some_and(|content_type| {
            content_type == PROBLEM_JSON || content_type.starts_with("application/json")
        })
}

/// The detail of an error raised outside our handlers, naming the field where there is one.
fn detail(error: &poem::Error) -> String {
    if let Some(error) = error.downcast_ref::<ParseParamError>() {
        format!("{}: {}", error.name, error.reason)
    } else if let Some(error) = error.downcast_ref::<ParsePathError>() {
        format!("{}: {}", error.name, error.reason)
    } else if let Some(error) = error.downcast_ref::<ParseRequestPayloadError>() {
        format!("body: {}", error.reason)
    } else if let Some(error) = error.downcast_ref::<ContentTypeError>() {
        match error {
            ContentTypeError::NotSupported { content_type } => {
                format!("content-type: {content_type} is not supported; send application/json")
            }
            ContentTypeError::ExpectContentType => {
                "content-type: is required; send application/json".to_owned()
            }
        }
    } else if error.is::<AuthorizationError>() {
        "X-API-Key: a valid API key is required".to_owned()
    } else if error.is::<NotFoundError>() {
        "no such resource".to_owned()
    } else if error.is::<MethodNotAllowedError>() {
        "method: not allowed on this path; the Allow header lists those that are".to_owned()
    } else if error.status().is_client_error() {
        error.to_string()
    } else {
        // A server error's cause is logged where it happened, not shown to the client.
        reason(error.status())
    }
}

fn reason(status: StatusCode) -> String {
    status.canonical_reason().unwrap_or("error").to_lowercase()
}
