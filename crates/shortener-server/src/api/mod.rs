//! The HTTP API as a poem-openapi service. The OpenAPI document generated
//! from this module is committed as `openapi/shortener.json`.

mod fields;
pub mod problem;

use std::sync::Arc;

use poem::Request;
use poem::web::Data;
use poem_openapi::auth::ApiKey;
use poem_openapi::param::Path;
use poem_openapi::payload::{Json, PlainText};
use poem_openapi::{ApiResponse, Object, OpenApi, OpenApiService, SecurityScheme, Tags};
use shortener_core::limiter::fallback::BackendState;
use shortener_core::{
    Access, Alias, CreateLink, Link, LinkRepository as _, ShortCode, TargetUrl, Visitor,
};
use time::OffsetDateTime;

use crate::limit::{limit_create, limit_redirect};
use crate::state::AppState;
pub use problem::{ApiError, PROBLEM_JSON, Problem};

#[derive(Tags)]
enum ApiTags {
    /// Short links.
    Links,
    /// Redirects from short codes.
    Redirect,
    /// Health and metrics.
    Operations,
}

/// The body of a create request.
#[derive(Object, Debug)]
pub struct CreateLinkRequest {
    /// The absolute `http`/`https` URL to redirect to (at most 8192 bytes, no user-info).
    #[oai(deserialize_with = "fields::url")]
    pub url: String,
    /// A code of your choice: 3 to 64 of `A-Z a-z 0-9 _ -`; a random code when absent.
    #[oai(deserialize_with = "fields::alias")]
    pub alias: Option<String>,
    /// When the link stops redirecting (RFC 3339, in the future).
    #[oai(deserialize_with = "fields::expires_at")]
    pub expires_at: Option<OffsetDateTime>,
    /// How many redirects the link serves in all (at least 1).
    #[oai(
        deserialize_with = "fields::max_visits",
        validator(minimum(value = "1"))
    )]
    pub max_visits: Option<u64>,
}

/// A short link.
#[derive(Object, Debug)]
pub struct LinkBody {
    /// The short code (also the path of the redirect).
    pub code: String,
    /// `server.public_url` + "/" + code.
    pub short_url: String,
    /// The target URL.
    pub url: String,
    pub created_at: OffsetDateTime,
    #[oai(skip_serializing_if_is_none)]
    pub expires_at: Option<OffsetDateTime>,
    #[oai(skip_serializing_if_is_none)]
    pub max_visits: Option<u64>,
    /// Redirects served so far.
    pub visits: u64,
}

#[derive(ApiResponse, Debug)]
enum CreateResponse {
    /// The link was created.
    #[oai(status = 201)]
    Created(Json<LinkBody>, #[oai(header = "Location")] String),
}

#[derive(ApiResponse, Debug)]
enum LinkResponse {
    #[oai(status = 200)]
    Ok(Json<LinkBody>),
}

#[derive(ApiResponse, Debug)]
enum DeleteResponse {
    /// The link was deleted.
    #[oai(status = 204)]
    Deleted,
}

/// The redirect, with the status of `server.redirect_status`.
#[derive(ApiResponse, Debug)]
pub enum RedirectResponse {
    #[oai(status = 301)]
    MovedPermanently(#[oai(header = "Location")] String),
    #[oai(status = 302)]
    Found(#[oai(header = "Location")] String),
    #[oai(status = 307)]
    TemporaryRedirect(#[oai(header = "Location")] String),
    #[oai(status = 308)]
    PermanentRedirect(#[oai(header = "Location")] String),
}

#[derive(ApiResponse, Debug)]
enum ReadyResponse {
    /// This node can serve: storage answers, and the limiter decides (from Redis, or
    /// from its fallback under `on_error = "local"` or `"fail_open"`).
    #[oai(status = 200)]
    Ready(Json<Readiness>),
    /// This node cannot serve: storage is down, or Redis is down under
    /// `on_error = "fail_closed"`.
    #[oai(status = 503)]
    NotReady(Json<Readiness>),
}

/// The state of each backend.
#[derive(Object, Debug)]
#[oai(read_only_all)]
struct Readiness {
    /// `ok` or `down`.
    storage: String,
    /// `ok`; `degraded` when Redis fails and decisions follow `limiter.on_error`
    /// (`local` or `fail_open`); `down` when Redis fails under `fail_closed`.
    limiter: String,
    /// Why the limiter is not `ok`, when known (passwords are never included).
    #[oai(skip_serializing_if_is_none)]
    limiter_error: Option<String>,
}

/// An API key, sent as `X-API-Key`; the server keeps only its SHA-256.
#[derive(SecurityScheme, Debug)]
#[oai(
    ty = "api_key",
    key_name = "X-API-Key",
    key_in = "header",
    checker = "check_api_key"
)]
pub struct ApiKeyAuth(String);

async fn check_api_key(request: &Request, key: ApiKey) -> Option<String> {
    let state = request.data::<Arc<AppState>>()?;
    state
        .api_keys
        .find(&key.key)
        .map(|entry| entry.name.clone())
}

/// The operations of the API.
#[derive(Debug, Default)]
pub struct Api;

#[OpenApi]
impl Api {
    /// Create a short link.
    #[oai(
        path = "/api/v1/links",
        method = "post",
        tag = "ApiTags::Links",
        operation_id = "createLink",
        transform = "limit_create"
    )]
    async fn create(
        &self,
        state: Data<&Arc<AppState>>,
        body: Json<CreateLinkRequest>,
    ) -> Result<CreateResponse, ApiError> {
        let body = body.0;
        let request = CreateLink {
            url: TargetUrl::parse(&body.url).map_err(|e| ApiError::bad_request("url", e))?,
            alias: body
                .alias
                .as_deref()
                .map(Alias::parse)
                .transpose()
                .map_err(|e| ApiError::bad_request("alias", e))?,
            expires_at: body.expires_at,
            max_visits: body.max_visits,
            owner: None,
        };
        let link = state
            .shortener
            .create(request, OffsetDateTime::now_utc())
            .await?;
        metrics::counter!("shortener_links_created_total").increment(1);
        let body = state.link_body(link);
        let location = body.short_url.clone();
        Ok(CreateResponse::Created(Json(body), location))
    }

    /// Look up a short link, with its visit count.
    #[oai(
        path = "/api/v1/links/:code",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "getLink"
    )]
    async fn get(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
    ) -> Result<LinkResponse, ApiError> {
        let code = parse_code(&code)?;
        match state.shortener.link(&code).await? {
            Some(link) => Ok(LinkResponse::Ok(Json(state.link_body(link)))),
            None => Err(ApiError::not_found("code: no link with this code")),
        }
    }

    /// Delete a short link (needs an API key).
    #[oai(
        path = "/api/v1/links/:code",
        method = "delete",
        tag = "ApiTags::Links",
        operation_id = "deleteLink"
    )]
    async fn delete(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        key: ApiKeyAuth,
    ) -> Result<DeleteResponse, ApiError> {
        let code = parse_code(&code)?;
        if state.shortener.delete(&code, Access::All).await? {
            tracing::info!(code = %code, key = %key.0, "link deleted");
            Ok(DeleteResponse::Deleted)
        } else {
            Err(ApiError::not_found("code: no link with this code"))
        }
    }

    /// Liveness: the process is up.
    #[oai(
        path = "/healthz",
        method = "get",
        tag = "ApiTags::Operations",
        operation_id = "healthz"
    )]
    async fn healthz(&self) -> PlainText<&'static str> {
        PlainText("ok")
    }

    /// Readiness: every configured backend answers.
    #[oai(
        path = "/readyz",
        method = "get",
        tag = "ApiTags::Operations",
        operation_id = "readyz"
    )]
    async fn readyz(&self, state: Data<&Arc<AppState>>) -> ReadyResponse {
        let storage = state.shortener.repository().health().await.is_ok();
        let (limiter, error) = state.limiter.state();
        let readiness = Readiness {
            storage: if storage { "ok" } else { "down" }.to_owned(),
            limiter: match limiter {
                BackendState::Ok => "ok",
                BackendState::Degraded => "degraded",
                BackendState::Down => "down",
            }
            .to_owned(),
            limiter_error: error.map(|error| error.to_string()),
        };
        if storage && limiter != BackendState::Down {
            ReadyResponse::Ready(Json(readiness))
        } else {
            ReadyResponse::NotReady(Json(readiness))
        }
    }

    /// Metrics in the Prometheus text format.
    #[oai(
        path = "/metrics",
        method = "get",
        tag = "ApiTags::Operations",
        operation_id = "metrics"
    )]
    async fn metrics(&self, state: Data<&Arc<AppState>>) -> PlainText<String> {
        PlainText(crate::metrics::render(&state))
    }

    /// Follow a short link.
    #[oai(
        path = "/:code",
        method = "get",
        tag = "ApiTags::Redirect",
        operation_id = "redirect",
        transform = "limit_redirect"
    )]
    async fn redirect(
        &self,
        state: Data<&Arc<AppState>>,
        code: Path<String>,
    ) -> Result<RedirectResponse, ApiError> {
        let code = ShortCode::parse(&code)
            .map_err(|_| ApiError::not_found("code: no link with this code"))?;
        let link = state
            .shortener
            .resolve(&code, OffsetDateTime::now_utc(), Some(Visitor::Person))
            .await?;
        let location = link.url.as_str().to_owned();
        Ok(match state.config.server.redirect_status {
            301 => RedirectResponse::MovedPermanently(location),
            307 => RedirectResponse::TemporaryRedirect(location),
            308 => RedirectResponse::PermanentRedirect(location),
            _ => RedirectResponse::Found(location),
        })
    }
}

fn parse_code(raw: &str) -> Result<ShortCode, ApiError> {
    ShortCode::parse(raw).map_err(|e| ApiError::bad_request("code", e))
}

impl AppState {
    fn link_body(&self, link: Link) -> LinkBody {
        LinkBody {
            short_url: format!("{}/{}", self.public_url, link.code),
            code: link.code.to_string(),
            url: link.url.as_str().to_owned(),
            created_at: link.created_at,
            expires_at: link.expires_at,
            max_visits: link.max_visits,
            visits: link.visits,
        }
    }
}

/// The poem-openapi service, with the server URL of the configuration.
pub fn service(public_url: &str) -> OpenApiService<Api, ()> {
    OpenApiService::new(Api, "shortener", env!("CARGO_PKG_VERSION"))
        .description("A URL shortener whose rate limits hold across any number of nodes.")
        .server(public_url)
}

/// The methods of every path of the API, for the `Allow` header of a 405.
pub(crate) fn allowed_methods() -> crate::http::AllowedMethods {
    let apis = <Api as OpenApi>::meta();
    crate::http::AllowedMethods::new(apis.iter().flat_map(|api| {
        api.paths.iter().flat_map(|path| {
            path.operations
                .iter()
                .map(|operation| (path.path.as_str(), operation.method.clone()))
        })
    }))
}

/// The OpenAPI document as committed in `openapi/shortener.json` (with a neutral server URL).
pub fn document() -> String {
    service("http://127.0.0.1:8080").spec()
}

#[cfg(test)]
mod tests {
    /// `openapi/shortener.json` is what clients generate from: it must match the code.
    /// `cargo xtask openapi` (which sets `UPDATE_OPENAPI=1`) rewrites it.
    #[test]
    fn openapi_document_is_committed() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi/shortener.json");
        let generated = super::document() + "\n";
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "openapi/shortener.json is stale: run `cargo xtask openapi`"
        );
    }
}
