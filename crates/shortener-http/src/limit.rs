//! The rate-limit middleware: who is asking (API key, or the client network that
//! [`crate::identity`] works out), which policy applies, and the IETF `RateLimit-Policy` /
//! `RateLimit` headers on every limited response.

use std::future::{Future, ready};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use futures_util::FutureExt as _;
use futures_util::future::Either;
use metrics::{Counter, Histogram};
use poem::http::{HeaderValue, StatusCode};
use poem::{Endpoint, IntoResponse, Request, Response};
use shortener_core::cause::chain;
use shortener_core::{LimiterError, RateLimiter};

use crate::api_error::problem_response;
use crate::auth::{API_KEY_HEADER, ApiKeyEntry, KeyId, LimitId};
use crate::identity::client_identity;
use crate::ratelimit_headers;
use crate::state::AppState;

/// Limits `POST /api/v1/links` with the `create` policy.
pub fn limit_create(endpoint: impl Endpoint) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policies: &["create"],
        cost: Cost::One,
        metrics: OnceLock::new(),
        state: None,
    }
}

/// Limits an operation with `policies` at a cost that `cost` reads from the request's
/// query (a QR code's format and size).
pub fn limit_by_query(
    endpoint: impl Endpoint,
    policies: &'static [&'static str],
    cost: fn(&str) -> u64,
) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policies,
        cost: Cost::Query(cost),
        metrics: OnceLock::new(),
        state: None,
    }
}

/// Limits an operation with `policies` at one token per item that `cost` counts in the
/// body (a bulk create's links), taken in one decision: all of them or none.
pub fn limit_by_body(
    endpoint: impl Endpoint,
    policies: &'static [&'static str],
    cost: BodyCost,
) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policies,
        cost: Cost::Body(cost),
        metrics: OnceLock::new(),
        state: None,
    }
}

/// Reads a body's items for their cost, once, leaving the value the operation takes in
/// the request: a body that cannot be read is its error, refused before the limiter.
pub type BodyCost =
    for<'a> fn(&'a mut Request) -> Pin<Box<dyn Future<Output = poem::Result<usize>> + Send + 'a>>;

/// Limits `GET /{code}` with the `redirect` policy, when one is configured.
pub fn limit_redirect(endpoint: impl Endpoint) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policies: &["redirect"],
        cost: Cost::One,
        metrics: OnceLock::new(),
        state: None,
    }
}

/// [`limit_redirect`] with `state` given, for a request that does not carry it (the
/// redirects answered before the router). Given rather than carried in a request
/// extension, whose insert per redirect showed in the redirect's profile.
/// See `cargo xtask bench --only http` (one hot link) in docs/BENCHMARKS.md.
pub fn limit_redirect_with(state: Arc<AppState>, endpoint: impl Endpoint) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policies: &["redirect"],
        cost: Cost::One,
        metrics: OnceLock::new(),
        state: Some(state),
    }
}

/// Limits look-ups, listings and visits with the `lookup` policy (shipped by default, so
/// that scanning codes through the API is bounded out of the box).
pub fn limit_lookup(endpoint: impl Endpoint) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policies: &["lookup"],
        cost: Cost::One,
        metrics: OnceLock::new(),
        state: None,
    }
}

/// Limits edits and deletes with the `manage` policy, when one is configured, else with
/// the `lookup` policy's bucket (shared with look-ups).
pub fn limit_manage(endpoint: impl Endpoint) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policies: &["manage", "lookup"],
        cost: Cost::One,
        metrics: OnceLock::new(),
        state: None,
    }
}

/// How many tokens a request takes.
#[derive(Clone, Copy)]
enum Cost {
    One,
    /// Read from the query.
    Query(fn(&str) -> u64),
    /// One per item of the body. The body is read here, once, into the value the
    /// operation uses: a body that cannot be read is refused before the limiter and costs
    /// nothing, because it creates nothing.
    Body(BodyCost),
}

/// The most links one bulk request may hold.
pub const MAX_BULK: usize = 1000;

struct Limited<E> {
    inner: E,
    /// The policies that may apply, in order: the first one configured does. The first
    /// one names the route in metrics and messages.
    policies: &'static [&'static str],
    cost: Cost,
    /// Registered on the first request rather than at construction: the routes may be
    /// built before the recorder is installed, and a handle taken then would record nothing.
    metrics: OnceLock<PolicyMetrics>,
    /// The state, when given at construction; else the request's (poem's `Data`).
    state: Option<Arc<AppState>>,
}

/// The metric handles of one policy, so that no request looks up labels.
struct PolicyMetrics {
    allowed: Counter,
    rejected: Counter,
    rejected_total: Counter,
    unavailable: Counter,
    /// Labelled by policy only: a label per client would be a series per client.
    tokens_remaining: Histogram,
    /// Unlabelled: the time of one limiter call, whatever the policy.
    call_seconds: Histogram,
}

impl PolicyMetrics {
    fn new(policy: &'static str) -> Self {
        let decisions = |outcome: &'static str| metrics::counter!("shortener_ratelimit_decisions_total", "policy" => policy, "outcome" => outcome);
        Self {
            allowed: decisions("allowed"),
            rejected: decisions("rejected"),
            rejected_total: metrics::counter!("shortener_ratelimit_rejected_total", "policy" => policy),
            unavailable: decisions("unavailable"),
            tokens_remaining: metrics::histogram!(TOKENS_REMAINING, "policy" => policy),
            call_seconds: metrics::histogram!(CALL_SECONDS),
        }
    }
}

/// The histogram of the tokens left at each decision, labelled by policy.
pub(crate) const TOKENS_REMAINING: &str = "shortener_ratelimit_tokens_remaining";
/// The histogram of one limiter call's time, in seconds.
pub(crate) const CALL_SECONDS: &str = "shortener_ratelimit_call_seconds";

/// The answer to an `X-API-Key` that no configured key matches.
fn unknown_key() -> Response {
    problem_response(StatusCode::UNAUTHORIZED, "X-API-Key: unknown API key")
}

/// The inner endpoint's answer as a response: one function, so that the futures that
/// end in it have one type.
fn into_response<T: IntoResponse>(result: poem::Result<T>) -> poem::Result<Response> {
    result.map(IntoResponse::into_response)
}

impl<E: Endpoint> Limited<E> {
    /// The request's API key, if any, and the policy that applies to it, if any; `None`
    /// for an unknown key (answered [`unknown_key`]). Looked up once per request: the
    /// decision reads both back by their ids.
    fn policy(
        &self,
        state: &AppState,
        request: &Request,
    ) -> Option<(Option<KeyId>, Option<LimitId>)> {
        // A key that is not visible ASCII is no key of ours: unknown (401), never
        // taken for no key at all.
        let key = match request.headers().get(&API_KEY_HEADER) {
            Some(key) => Some(state.api_keys.find_id(key.to_str().ok()?)?),
            None => None,
        };
        let tier = (key.as_ref()).and_then(|id| state.api_keys.by_id(id).tier.as_deref());
        let limit = (self.policies.iter()).find_map(|name| state.policies.find(tier, name));
        Some((key, limit))
    }
}

impl<E: Endpoint> Endpoint for Limited<E> {
    type Output = Response;

    // Not an `async fn`: see the module doc of `http` (the request moves on). A request
    // that no policy applies to (a redirect without a `redirect` policy) goes straight
    // on, with no identity worked out and nothing awaited here.
    fn call(&self, request: Request) -> impl Future<Output = poem::Result<Response>> + Send {
        let state = self.state.as_ref();
        let limited = match state.or_else(|| request.data::<Arc<AppState>>()) {
            Some(state) => match self.policy(state, &request) {
                Some((key, Some(limit))) => Some((state.clone(), key, limit)),
                Some((_, None)) => None,
                None => return Either::Right(Either::Left(ready(Ok(unknown_key())))),
            },
            None => None,
        };
        match limited {
            // Boxed: the decision's state (the limiter's call, the identity, the
            // request kept for after it) would make every request's future larger.
            Some((state, key, limit)) => Either::Right(Either::Right(Box::pin(
                self.limited(request, state, key, limit),
            ))),
            None => Either::Left(self.inner.call(request).map(into_response)),
        }
    }
}

impl<E: Endpoint> Limited<E> {
    /// A request that a policy applies to: its decision, then the endpoint if allowed.
    async fn limited(
        &self,
        mut request: Request,
        state: Arc<AppState>,
        key: Option<KeyId>,
        limit: LimitId,
    ) -> poem::Result<Response> {
        let key = key.as_ref().map(|id| state.api_keys.by_id(id));
        let limit = state.policies.by_id(limit);
        let policy = &limit.policy;
        let identity = identity(&state, &request, key);
        let cost = match self.cost {
            Cost::One => 1,
            Cost::Query(cost) => cost(request.uri().query().unwrap_or_default()),
            Cost::Body(cost) => match cost(&mut request).await {
                Ok(0) => {
                    return Ok(problem_response(
                        StatusCode::BAD_REQUEST,
                        "links: must hold at least one link",
                    ));
                }
                Ok(count) => count as u64,
                Err(error) => return Ok(crate::http::problem_of_error(error)),
            },
        };
        if cost > MAX_BULK as u64 {
            // Refused for its size before the limiter: it costs nothing.
            return Ok(problem_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("links: at most {MAX_BULK} links per request, not {cost}"),
            ));
        }
        if cost > policy.capacity() {
            return Ok(problem_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "links: {cost} links take {cost} tokens, more than the `{}` policy's capacity of {}; send fewer at a time",
                    policy.name(),
                    policy.capacity()
                ),
            ));
        }
        let handles = self
            .metrics
            .get_or_init(|| PolicyMetrics::new(self.policies[0]));
        let started = Instant::now();
        let result = state.limiter.acquire(&identity, policy, cost).await;
        handles.call_seconds.record(started.elapsed());
        if let Ok(decision) = &result {
            #[allow(clippy::cast_precision_loss)] // a count of tokens, far below 2^52
            handles.tokens_remaining.record(decision.remaining as f64);
        }
        match result {
            Ok(decision) if decision.allowed => {
                handles.allowed.increment(1);
                // An error becomes its problem+json here, so that it carries the headers.
                let mut response = match self.inner.call(request).await {
                    Ok(response) => response.into_response(),
                    Err(error) => crate::http::problem_of_error(error),
                };
                ratelimit_headers::set(&mut response, policy, limit.header.as_ref(), &decision);
                Ok(response)
            }
            Ok(decision) => {
                handles.rejected.increment(1);
                handles.rejected_total.increment(1);
                let retry_after = decision.retry_after_secs();
                let mut response = problem_response(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "rate limit `{}` exhausted; retry after {retry_after} s",
                        policy.name()
                    ),
                );
                ratelimit_headers::set(&mut response, policy, limit.header.as_ref(), &decision);
                response
                    .headers_mut()
                    .insert("retry-after", HeaderValue::from(retry_after));
                Ok(response)
            }
            Err(error) => {
                handles.unavailable.increment(1);
                Ok(unavailable(&error))
            }
        }
    }
}

/// Who a request counts against: its API key, or else its client's network.
pub fn identity(state: &AppState, request: &Request, key: Option<&ApiKeyEntry>) -> String {
    match key {
        Some(entry) => format!("key:{}", entry.name),
        None => {
            let peer = request
                .remote_addr()
                .as_socket_addr()
                .map(std::net::SocketAddr::ip);
            client_identity(peer, request.headers(), &state.serving.identity)
        }
    }
}

/// The limiter could not decide and `on_error = fail_closed` (or an unexpected error):
/// refuse with 503 rather than guess.
fn unavailable(error: &LimiterError) -> Response {
    // During an outage this happens on every request: the circuit breaker's counters and
    // /metrics tell the story; the log only keeps errors that are not outages.
    if error.is_transient() {
        tracing::debug!(error = %chain(error), "rate limiter unavailable, request refused");
    } else {
        tracing::error!(error = %chain(error), "rate limiter failed, request refused");
    }
    let mut response = problem_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "the rate limiter is unavailable, retry later",
    );
    response
        .headers_mut()
        .insert("retry-after", HeaderValue::from(1u64));
    response
}
