//! RFC 9457 problem details, the one error shape of the API.

use poem::http::StatusCode;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object};
use shortener_core::cause::chain;
use shortener_core::{CreateError, RepositoryError, ResolveError, UpdateError};

/// An error, as `application/problem+json`.
#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A URI reference for the kind of problem (`about:blank` when the status says it all).
    #[oai(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of problem.
    pub title: String,
    /// The HTTP status code.
    pub status: u16,
    /// What went wrong with this request; for bad input it names the field.
    pub detail: String,
}

pub const PROBLEM_JSON: &str = "application/problem+json";

impl Problem {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            kind: "about:blank".into(),
            title: status.canonical_reason().unwrap_or("Error").into(),
            status: status.as_u16(),
            detail: detail.into(),
        }
    }
}

/// The problem of [`ApiError::UriTooLong`], which the HTTP layer answers without one.
static URI_TOO_LONG: std::sync::LazyLock<Problem> = std::sync::LazyLock::new(|| {
    Problem::new(StatusCode::URI_TOO_LONG, "the request line is too long")
});

/// Every error an operation can answer with.
#[derive(ApiResponse, Debug)]
pub enum ApiError {
    /// The input is invalid; the detail names the field.
    #[oai(status = 400, content_type = "application/problem+json")]
    BadRequest(Json<Problem>),
    /// A valid API key is required.
    #[oai(status = 401, content_type = "application/problem+json")]
    Unauthorized(Json<Problem>),
    /// The API key lacks the scope this operation needs.
    #[oai(status = 403, content_type = "application/problem+json")]
    Forbidden(Json<Problem>),
    /// No link with this code (or none that this caller may see).
    #[oai(status = 404, content_type = "application/problem+json")]
    NotFound(Json<Problem>),
    /// The alias is taken, or a request with the same `Idempotency-Key` is still running.
    #[oai(status = 409, content_type = "application/problem+json")]
    Conflict(Json<Problem>),
    /// The link expired or used all its visits.
    #[oai(status = 410, content_type = "application/problem+json")]
    Gone(Json<Problem>),
    /// The request body is larger than `server.max_body_bytes`, or a bulk request has
    /// more links than allowed.
    #[oai(status = 413, content_type = "application/problem+json")]
    PayloadTooLarge(Json<Problem>),
    /// The request line is longer than the HTTP layer reads: answered by it, with no
    /// body, before any operation runs.
    #[oai(status = 414)]
    UriTooLong,
    /// The request body is not `application/json` (or has no `Content-Type`).
    #[oai(status = 415, content_type = "application/problem+json")]
    UnsupportedMediaType(Json<Problem>),
    /// The `Idempotency-Key` was used before with another request body.
    #[oai(status = 422, content_type = "application/problem+json")]
    UnprocessableEntity(Json<Problem>),
    /// The rate limit is exhausted; retry after the given seconds.
    #[oai(status = 429, content_type = "application/problem+json")]
    TooManyRequests(Json<Problem>, #[oai(header = "Retry-After")] u64),
    /// An unexpected failure; the cause is logged, not returned.
    #[oai(status = 500, content_type = "application/problem+json")]
    Internal(Json<Problem>),
    /// A backend is unavailable; retry after the given seconds.
    #[oai(status = 503, content_type = "application/problem+json")]
    Unavailable(Json<Problem>, #[oai(header = "Retry-After")] u64),
}

impl ApiError {
    pub fn bad_request(field: &str, why: impl std::fmt::Display) -> Self {
        Self::BadRequest(Json(Problem::new(
            StatusCode::BAD_REQUEST,
            format!("{field}: {why}"),
        )))
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::NotFound(Json(Problem::new(StatusCode::NOT_FOUND, detail)))
    }

    pub fn status(status: StatusCode, detail: impl Into<String>) -> Self {
        let problem = Json(Problem::new(status, detail));
        match status.as_u16() {
            400 => Self::BadRequest(problem),
            401 => Self::Unauthorized(problem),
            403 => Self::Forbidden(problem),
            404 => Self::NotFound(problem),
            409 => Self::Conflict(problem),
            410 => Self::Gone(problem),
            413 => Self::PayloadTooLarge(problem),
            415 => Self::UnsupportedMediaType(problem),
            422 => Self::UnprocessableEntity(problem),
            503 => Self::Unavailable(problem, 1),
            _ => Self::Internal(problem),
        }
    }

    /// The problem inside, whatever the status.
    pub fn problem(&self) -> &Problem {
        match self {
            Self::BadRequest(p)
            | Self::Unauthorized(p)
            | Self::Forbidden(p)
            | Self::NotFound(p)
            | Self::Conflict(p)
            | Self::Gone(p)
            | Self::PayloadTooLarge(p)
            | Self::UnsupportedMediaType(p)
            | Self::UnprocessableEntity(p)
            | Self::Internal(p)
            | Self::TooManyRequests(p, _)
            | Self::Unavailable(p, _) => &p.0,
            Self::UriTooLong => &URI_TOO_LONG,
        }
    }
}

impl From<crate::passwords::Busy> for ApiError {
    /// Password work is at its bound (`links.password_memory_mb`): a 503 to retry, as a
    /// backend at capacity.
    fn from(busy: crate::passwords::Busy) -> Self {
        Self::Unavailable(
            Json(Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                busy.to_string(),
            )),
            1,
        )
    }
}

impl From<RepositoryError> for ApiError {
    fn from(error: RepositoryError) -> Self {
        match error {
            RepositoryError::Unavailable(cause) => {
                tracing::warn!(cause = %chain(&cause), "storage unavailable");
                Self::Unavailable(
                    Json(Problem::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "storage is unavailable, retry later",
                    )),
                    1,
                )
            }
            RepositoryError::Full(cause) => {
                tracing::error!(cause = %chain(&cause), "storage full: links cannot be stored until space is freed");
                Self::Unavailable(
                    Json(Problem::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "storage is full: no link can be stored until the operator frees space; \
                         existing links still work",
                    )),
                    60,
                )
            }
            RepositoryError::Unexpected(cause) => {
                tracing::error!(cause = %chain(&cause), "storage failed");
                Self::Internal(Json(Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error",
                )))
            }
        }
    }
}

impl From<CreateError> for ApiError {
    fn from(error: CreateError) -> Self {
        match error {
            CreateError::AliasTaken => Self::Conflict(Json(Problem::new(
                StatusCode::CONFLICT,
                "alias: is already taken",
            ))),
            CreateError::ExpiryNotInFuture => {
                Self::bad_request("expires_at", "must be in the future")
            }
            CreateError::ZeroMaxVisits => Self::bad_request("max_visits", "must be at least 1"),
            CreateError::NoFreeCode => {
                tracing::error!("no free code found: raise codes.length");
                Self::Unavailable(
                    Json(Problem::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "no free code found, retry later",
                    )),
                    1,
                )
            }
            CreateError::Storage(e) => e.into(),
        }
    }
}

impl From<ResolveError> for ApiError {
    fn from(error: ResolveError) -> Self {
        match error {
            ResolveError::NotFound => Self::not_found("code: no link with this code"),
            ResolveError::Expired(_) => {
                Self::Gone(Json(Problem::new(StatusCode::GONE, "the link has expired")))
            }
            ResolveError::Exhausted(_) => Self::Gone(Json(Problem::new(
                StatusCode::GONE,
                "the link has used all its visits",
            ))),
            ResolveError::Locked(_) => Self::Forbidden(Json(Problem::new(
                StatusCode::FORBIDDEN,
                "X-Link-Password: this link needs a password",
            ))),
            ResolveError::Storage(e) => e.into(),
        }
    }
}

impl From<UpdateError> for ApiError {
    fn from(error: UpdateError) -> Self {
        match error {
            UpdateError::NotFound => Self::not_found("code: no link with this code"),
            UpdateError::ExpiryNotInFuture => {
                Self::bad_request("expires_at", "must be in the future")
            }
            UpdateError::ZeroMaxVisits => Self::bad_request("max_visits", "must be at least 1"),
            UpdateError::Storage(e) => e.into(),
        }
    }
}

/// A problem+json response outside the typed operations (middleware, fall-through errors).
pub fn problem_response(status: StatusCode, detail: impl Into<String>) -> poem::Response {
    use poem_openapi::types::ToJSON as _;
    let body = Problem::new(status, detail).to_json_string();
    poem::Response::builder()
        .status(status)
        .content_type(PROBLEM_JSON)
        .body(body)
}
