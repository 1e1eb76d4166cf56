//! Redirects answered before the router: [`Redirects`].
//!
//! `GET` and `HEAD` of `/{code}` are most of a shortener's traffic. The OpenAPI operations
//! `redirect` and `redirectHead` describe them, and the router can answer them, but the path
//! there (problem mapping, body limit, page check, two nested routers that rewrite the URI,
//! request extensions, extractors, a boxed future at each level) cost more per redirect than
//! the lookup itself, as the redirect's profile showed.
//! See `cargo xtask bench --only http` (one hot link) in docs/BENCHMARKS.md.
//!
//! [`Redirects`] answers the same requests first, with the same parts: the rate-limit
//! middleware of the operation (built by [`crate::limit::limit_redirect_with`], which
//! is `limit_redirect` given the state instead of a request extension) and
//! the service's `redirect`; the operation's answer ([`RedirectResponse::of`]) is made here
//! too, beside the direct one ([`respond`]), so the two stay byte for byte the same. It takes
//! only a path of exactly one segment that is a valid code and not a path the server
//! routes itself ([`RESERVED`]); everything else goes on to the router, which answers as
//! before (a malformed code's 400, `/metrics`, the page, the API). One difference: a
//! redirect never reads a request body, so here a `GET` that declares one larger than
//! `server.max_body_bytes` is redirected, where the router's body limit answered 413.

use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt as _;
use futures_util::future::Either;
use poem::http::{HeaderValue, Method, StatusCode, header};
use poem::{Endpoint, IntoResponse, Request, Response};
use shortener_core::{RESERVED, RedirectStatus, ShortCode};

use crate::api::RedirectResponse;
use crate::http::{measured, problem_of_error};
use crate::limit::limit_redirect_with;
use crate::service::Sent;
use crate::state::AppState;

/// `GET`/`HEAD /{code}` answered directly, everything else by `inner`.
pub struct Redirects<E, R> {
    inner: E,
    redirect: R,
    state: Arc<AppState>,
    /// The node's request metrics with `server.request_metrics`, held here so that a
    /// redirect borrows them rather than cloning a handle.
    measure: Option<measured::RequestMetrics>,
}

impl<E: Endpoint> Redirects<E, ()> {
    /// Answers redirects with `state`, in front of `inner`.
    pub fn new(inner: E, state: Arc<AppState>) -> Redirects<E, impl Endpoint> {
        Redirects {
            inner,
            redirect: limit_redirect_with(
                state.clone(),
                Redirect {
                    state: state.clone(),
                },
            ),
            measure: (state.serving.request_metrics).then(|| state.requests.clone()),
            state,
        }
    }
}

impl<E: Endpoint, R: Endpoint> Endpoint for Redirects<E, R> {
    type Output = Response;

    // Not an `async fn`: see the module doc of `http` (the request moves on).
    #[inline(always)]
    fn call(&self, request: Request) -> impl Future<Output = poem::Result<Response>> + Send {
        if !is_redirect(&request) {
            // Boxed: the router's future is large, and a redirect would carry it too.
            let routed = Box::pin(self.inner.call(request));
            return Either::Right(routed.map(|result| result.map(IntoResponse::into_response)));
        }
        let measure = self.measure.as_ref();
        let operation = if request.method() == Method::GET {
            measured::REDIRECT
        } else {
            measured::REDIRECT_HEAD
        };
        let logged = measured::request_line(&request, self.state.serving.log_requests);
        let started = Instant::now();
        Either::Left(self.redirect.call(request).map(move |result| {
            // Errors are answered as the router's stack answers them.
            let response = match result {
                Ok(response) => response.into_response(),
                Err(error) => problem_of_error(error),
            };
            if measure.is_some() || logged.is_some() {
                measured::record(
                    operation,
                    response.status(),
                    started,
                    measure,
                    logged.as_ref(),
                );
            }
            Ok(response)
        }))
    }
}

/// Whether the router would send `request` to `redirect` or `redirectHead` with a code
/// that parses: `GET` or `HEAD` of `/` and one segment of code characters, which is not
/// one of the server's own paths (the router prefers those, case-sensitively).
fn is_redirect(request: &Request) -> bool {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return false;
    }
    request
        .uri()
        .path()
        .strip_prefix('/')
        .is_some_and(|code| ShortCode::is_valid(code) && !RESERVED.contains(&code))
}

/// The redirect operation's handler, for [`Redirects`].
struct Redirect {
    state: Arc<AppState>,
}

impl Endpoint for Redirect {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        let code = request.uri().path().trim_start_matches('/');
        let visit = (request.method() == Method::GET).then(|| self.state.visit(&request));
        let unlock = || self.state.unlock_from_header(&request);
        Ok(
            match self.state.redirect(&request, code, visit, unlock).await {
                Ok(sent) => respond(sent, request.uri().query()),
                Err(error) => error.into_response(),
            },
        )
    }
}

/// The response [`RedirectResponse::of`] makes, header for header, built without its
/// costs on every redirect: the derived conversion parses each header's name from a
/// string (`"LOCATION"`) and copies each value into a new buffer, where this takes the
/// names as constants and the values' own strings.
fn respond(sent: Sent, query: Option<&str>) -> Response {
    let Sent::To {
        status,
        location,
        cache,
        vary,
    } = sent
    else {
        return RedirectResponse::of(sent, query).into_response();
    };
    let status = match status {
        RedirectStatus::MovedPermanently => StatusCode::MOVED_PERMANENTLY,
        RedirectStatus::Found => StatusCode::FOUND,
        RedirectStatus::TemporaryRedirect => StatusCode::TEMPORARY_REDIRECT,
        RedirectStatus::PermanentRedirect => StatusCode::PERMANENT_REDIRECT,
    };
    let mut response = status.into_response();
    let headers = response.headers_mut();
    // As the derived conversion: a value that is not a valid header value is left out.
    for (name, value) in [(header::LOCATION, location), (header::CACHE_CONTROL, cache)] {
        if let Ok(value) = HeaderValue::try_from(value) {
            headers.insert(name, value);
        }
    }
    if let Some(vary) = vary
        && let Ok(value) = HeaderValue::try_from(vary)
    {
        headers.insert(header::VARY, value);
    }
    response
}

impl RedirectResponse {
    /// The answer that sends a visit where the service says (`query`: the visit's, which
    /// a locked link's form carries on).
    pub(crate) fn of(sent: Sent, query: Option<&str>) -> Self {
        match sent {
            Sent::To {
                status,
                location,
                cache,
                vary,
            } => match status {
                RedirectStatus::MovedPermanently => Self::MovedPermanently(location, cache, vary),
                RedirectStatus::Found => Self::Found(location, cache, vary),
                RedirectStatus::TemporaryRedirect => Self::TemporaryRedirect(location, cache, vary),
                RedirectStatus::PermanentRedirect => Self::PermanentRedirect(location, cache, vary),
            },
            Sent::Locked(key) => Self::Locked(
                crate::api::unlock::page(&key, query, None),
                "no-store".into(),
                crate::web::CONTENT_SECURITY_POLICY.into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use poem::Request;
    use poem::http::Method;
    use shortener_core::{RESERVED, RedirectStatus};

    use super::{is_redirect, respond};
    use crate::api::{Api, RedirectResponse};
    use crate::service::Sent;

    fn request(method: Method, uri: &str) -> Request {
        Request::builder()
            .header("host", "127.0.0.1:8080")
            .method(method)
            .uri_str(uri)
            .finish()
    }

    /// Every redirect status, and a value no header may carry, made by [`respond`] and by
    /// the derived conversion it replaces: the same status and headers. A locked link
    /// takes the derived conversion itself.
    #[test]
    fn respond_makes_the_derived_response_for_every_status() {
        use poem::IntoResponse;
        let values = [
            ("https://example.com/a?b=c", "public, max-age=60", None),
            ("https://example.com/\u{7f}", "no-store", None),
            (
                "https://example.com/fr",
                "private, max-age=0",
                Some("User-Agent, Accept-Language"),
            ),
        ];
        for status in [301, 302, 307, 308] {
            let status = RedirectStatus::parse(status).unwrap();
            for (location, cache, vary) in values {
                let sent = || Sent::To {
                    status,
                    location: location.to_owned(),
                    cache: cache.to_owned(),
                    vary: vary.map(str::to_owned),
                };
                let ours = respond(sent(), None);
                let derived = RedirectResponse::of(sent(), None).into_response();
                assert_eq!(ours.status(), derived.status());
                assert_eq!(ours.status().as_u16(), status.code());
                assert_eq!(ours.headers(), derived.headers(), "{location}");
            }
        }
    }

    #[test]
    fn only_a_code_of_one_segment_is_a_redirect() {
        assert!(is_redirect(&request(Method::GET, "/abc_D-9")));
        assert!(is_redirect(&request(Method::HEAD, "/abc?utm=1")));
        assert!(is_redirect(&request(Method::GET, "/Metrics")));
        for uri in [
            "/",
            "/metrics",
            "/docs",
            "/a/b",
            "/a%41",
            "/a.b",
            "/api",
            &format!("/{}", "a".repeat(65)),
        ] {
            assert!(!is_redirect(&request(Method::GET, uri)), "{uri}");
        }
        assert!(!is_redirect(&request(Method::POST, "/abc")));
        assert!(!is_redirect(&request(Method::DELETE, "/abc")));
    }

    /// Every path of one segment that the API routes is reserved, so that the router
    /// keeps answering it.
    #[test]
    fn the_api_paths_of_one_segment_are_reserved() {
        for api in <Api as poem_openapi::OpenApi>::meta() {
            for path in &api.paths {
                let segments: Vec<&str> = path.path.split('/').filter(|s| !s.is_empty()).collect();
                if let [segment] = segments[..]
                    && !segment.starts_with('{')
                {
                    assert!(RESERVED.contains(&segment), "{segment} is not reserved");
                }
            }
        }
    }
}
