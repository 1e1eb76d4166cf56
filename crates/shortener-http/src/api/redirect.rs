//! The redirect itself: `GET` and `HEAD` of a code, and the `POST` of a locked link's
//! form. Each asks the service where a visit goes (`service/redirect.rs`) and answers with
//! [`RedirectResponse::of`]; [`crate::redirects`] answers most `GET`s before the router,
//! with the same two.

use std::sync::Arc;

use poem::Request;
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Html;
use poem_openapi::{ApiResponse, OpenApi};

use super::unlock::{UnlockForm, UnlockResponse};
use super::{ApiError, ApiTags};
use crate::limit::limit_redirect;
use crate::state::AppState;

/// The redirect, with the link's own status or else `server.redirect_status`, and how
/// long a cache may keep it (`links.redirect_max_age_secs`; `no-store` for a link with
/// `max_visits`, and for the 302 of an ended link to its `expired_url`). A link with
/// redirect rules answers each visitor on their own: `private, max-age=0`, with a
/// `Vary` naming the request headers its rules read (`User-Agent`, `Accept-Language`).
#[derive(ApiResponse, Debug)]
pub enum RedirectResponse {
    #[oai(status = 301)]
    MovedPermanently(
        #[oai(header = "Location")] String,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Vary")] Option<String>,
    ),
    #[oai(status = 302)]
    Found(
        #[oai(header = "Location")] String,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Vary")] Option<String>,
    ),
    #[oai(status = 307)]
    TemporaryRedirect(
        #[oai(header = "Location")] String,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Vary")] Option<String>,
    ),
    #[oai(status = 308)]
    PermanentRedirect(
        #[oai(header = "Location")] String,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Vary")] Option<String>,
    ),
    /// The link is behind a password: a page asking for it, whose form posts to
    /// `unlockLink` (API clients send `X-Link-Password` instead). It shows nothing of the
    /// target and is never cached.
    #[oai(status = 200)]
    Locked(
        Html<String>,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Content-Security-Policy")] String,
    ),
}

/// The redirect and the unlock of a locked link.
#[derive(Debug, Default)]
pub struct Redirect;

#[OpenApi]
impl Redirect {
    /// Follow a short link. Visits by bots (by `User-Agent`) are counted apart and never
    /// use up `max_visits`.
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
        request: &Request,
        code: Path<String>,
        /// The password of a link behind one: the redirect follows if it is right
        /// (a token of the `unlock` policy per attempt), 403 if not.
        #[oai(name = "X-Link-Password", validator(max_length = 1024))]
        _password: poem_openapi::param::Header<Option<String>>,
    ) -> Result<RedirectResponse, ApiError> {
        let unlock = || state.unlock_from_header(request);
        let sent = state.redirect(request, &code, Some(state.visit(request)), unlock);
        Ok(RedirectResponse::of(sent.await?, request.uri().query()))
    }

    /// Open a link behind a password: the form of its page posts here. The right
    /// password redirects (303) to the target and counts the visit; every attempt takes
    /// a token of the `unlock` policy, per client and link and per link over all clients.
    #[oai(
        path = "/:code",
        method = "post",
        tag = "ApiTags::Redirect",
        operation_id = "unlockLink"
    )]
    async fn unlock(
        &self,
        state: Data<&Arc<AppState>>,
        request: &Request,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        /// The query of the visit, passed on under `forward_query` as by a redirect.
        #[oai(validator(max_length = 8192))]
        q: poem_openapi::param::Query<Option<String>>,
        form: poem_openapi::payload::Form<UnlockForm>,
    ) -> Result<UnlockResponse, ApiError> {
        super::unlock::answer(&state, request, &code, q.0.as_deref(), form.0).await
    }

    /// The same redirect as `GET`, counted as no visit (link checkers and previews).
    #[oai(
        path = "/:code",
        method = "head",
        tag = "ApiTags::Redirect",
        operation_id = "redirectHead",
        transform = "limit_redirect"
    )]
    async fn redirect_head(
        &self,
        state: Data<&Arc<AppState>>,
        request: &Request,
        code: Path<String>,
    ) -> Result<RedirectResponse, ApiError> {
        let sent = state.redirect(request, &code, None, || None).await?;
        Ok(RedirectResponse::of(sent, request.uri().query()))
    }
}
