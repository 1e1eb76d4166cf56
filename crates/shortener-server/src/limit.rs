//! The rate-limit middleware: who is asking (API key or client IP), which policy applies,
//! and the IETF `RateLimit-Policy` / `RateLimit` headers on every limited response.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use ipnet::IpNet;
use poem::http::{HeaderMap, HeaderValue, StatusCode};
use poem::{Endpoint, IntoResponse, Request, Response};
use shortener_core::{Decision, LimiterError, Policy, RateLimiter};

use crate::api::problem::problem_response;
use crate::state::AppState;

/// Limits `POST /api/v1/links` with the `create` policy.
pub fn limit_create(endpoint: impl Endpoint) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policy: "create",
    }
}

/// Limits `GET /{code}` with the `redirect` policy, when one is configured.
pub fn limit_redirect(endpoint: impl Endpoint) -> impl Endpoint {
    Limited {
        inner: endpoint,
        policy: "redirect",
    }
}

struct Limited<E> {
    inner: E,
    policy: &'static str,
}

impl<E: Endpoint> Endpoint for Limited<E> {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        let Some(state) = request.data::<Arc<AppState>>().cloned() else {
            return self
                .inner
                .call(request)
                .await
                .map(IntoResponse::into_response);
        };
        let key = match request.header("x-api-key") {
            Some(key) => match state.api_keys.find(key) {
                Some(entry) => Some(entry),
                None => {
                    return Ok(problem_response(
                        StatusCode::UNAUTHORIZED,
                        "X-API-Key: unknown API key",
                    ));
                }
            },
            None => None,
        };
        let tier = key.and_then(|entry| entry.tier.as_deref());
        // An unlimited route (no `redirect` policy, say) costs no identity at all.
        let Some(policy) = state.policies.get(tier, self.policy) else {
            return self
                .inner
                .call(request)
                .await
                .map(IntoResponse::into_response);
        };
        let identity = match key {
            Some(entry) => format!("key:{}", entry.name),
            None => {
                let peer = request
                    .remote_addr()
                    .as_socket_addr()
                    .map(std::net::SocketAddr::ip);
                client_ip(
                    peer,
                    request.headers(),
                    &state.config.server.trusted_proxies,
                )
                .to_string()
            }
        };
        let started = Instant::now();
        let result = state.limiter.acquire(&identity, policy, 1).await;
        metrics::histogram!("shortener_ratelimit_call_seconds").record(started.elapsed());
        match result {
            Ok(decision) if decision.allowed => {
                metrics::counter!("shortener_ratelimit_decisions_total", "policy" => self.policy, "outcome" => "allowed").increment(1);
                let mut response = match self.inner.call(request).await {
                    Ok(response) => response.into_response(),
                    Err(error) => error.into_response(),
                };
                set_headers(&mut response, policy, &decision);
                Ok(response)
            }
            Ok(decision) => {
                metrics::counter!("shortener_ratelimit_decisions_total", "policy" => self.policy, "outcome" => "rejected").increment(1);
                metrics::counter!("shortener_ratelimit_rejected_total", "policy" => self.policy)
                    .increment(1);
                let retry_after = decision.retry_after_secs();
                let mut response = problem_response(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "rate limit `{}` exhausted; retry after {retry_after} s",
                        self.policy
                    ),
                );
                set_headers(&mut response, policy, &decision);
                response
                    .headers_mut()
                    .insert("retry-after", HeaderValue::from(retry_after));
                Ok(response)
            }
            Err(error) => Ok(unavailable(self.policy, &error)),
        }
    }
}

/// The limiter could not decide and `on_error = fail_closed` (or an unexpected error):
/// refuse with 503 rather than guess.
fn unavailable(policy: &'static str, error: &LimiterError) -> Response {
    metrics::counter!("shortener_ratelimit_decisions_total", "policy" => policy, "outcome" => "unavailable").increment(1);
    // During an outage this happens on every request: the circuit breaker's counters and
    // /metrics tell the story; the log only keeps errors that are not outages.
    if error.is_transient() {
        tracing::debug!(%error, "rate limiter unavailable, request refused");
    } else {
        tracing::error!(%error, "rate limiter failed, request refused");
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

fn set_headers(response: &mut Response, policy: &Policy, decision: &Decision) {
    let name = policy.name();
    let reset = if decision.allowed {
        decision.reset_after_us
    } else {
        decision.retry_after_us.unwrap_or(decision.reset_after_us)
    };
    let policy_header = format!(
        "\"{name}\";q={};w={}",
        policy.capacity(),
        policy.window_secs()
    );
    let limit_header = format!(
        "\"{name}\";r={};t={}",
        decision.remaining,
        reset.div_ceil(1_000_000)
    );
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&policy_header) {
        headers.insert("ratelimit-policy", value);
    }
    if let Ok(value) = HeaderValue::from_str(&limit_header) {
        headers.insert("ratelimit", value);
    }
}

/// The client's address: the socket peer, unless the peer is a trusted proxy; then the
/// right-most address of the forwarding chain that is not itself a trusted proxy.
pub fn client_ip(peer: Option<IpAddr>, headers: &HeaderMap, trusted_proxies: &[IpNet]) -> IpAddr {
    let peer = peer.map_or(IpAddr::from([0, 0, 0, 0]), |ip| ip.to_canonical());
    let trusted = |ip: &IpAddr| trusted_proxies.iter().any(|net| net.contains(ip));
    if !trusted(&peer) {
        return peer;
    }
    let chain = forwarded_chain(headers);
    chain
        .iter()
        .rev()
        .find(|ip| !trusted(ip))
        .or(chain.first())
        .copied()
        .unwrap_or(peer)
}

/// Addresses of `Forwarded: for=` (RFC 7239), else of `X-Forwarded-For`, in order.
fn forwarded_chain(headers: &HeaderMap) -> Vec<IpAddr> {
    let mut chain = Vec::new();
    for value in headers.get_all("forwarded") {
        for element in value.to_str().unwrap_or_default().split([',', ';']) {
            let Some((key, node)) = element.trim().split_once('=') else {
                continue;
            };
            if key.trim().eq_ignore_ascii_case("for") {
                let node = node.trim().trim_matches('"');
                let host = match node.strip_prefix('[') {
                    Some(v6) => v6.split(']').next().unwrap_or_default(),
                    None => node.split(':').next().unwrap_or_default(),
                };
                chain.extend(host.parse::<IpAddr>().ok().map(|ip| ip.to_canonical()));
            }
        }
    }
    if chain.is_empty() {
        for value in headers.get_all("x-forwarded-for") {
            for part in value.to_str().unwrap_or_default().split(',') {
                chain.extend(
                    part.trim()
                        .parse::<IpAddr>()
                        .ok()
                        .map(|ip| ip.to_canonical()),
                );
            }
        }
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(peer: &str, headers: &[(&'static str, &'static str)], trusted: &[IpNet]) -> String {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(*name, HeaderValue::from_static(value));
        }
        client_ip(Some(peer.parse().unwrap()), &map, trusted).to_string()
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        assert_eq!(
            ip("198.51.100.7", &[("x-forwarded-for", "1.2.3.4")], &trusted),
            "198.51.100.7"
        );
        let chain = [("x-forwarded-for", "1.2.3.4, 203.0.113.9, 10.0.0.3")];
        assert_eq!(ip("10.0.0.2", &chain, &trusted), "203.0.113.9");
        assert_eq!(ip("10.0.0.2", &chain, &[]), "10.0.0.2");
        let forwarded = [("forwarded", "for=\"[2001:db8::1]:4711\";proto=https")];
        assert_eq!(ip("10.0.0.2", &forwarded, &trusted), "2001:db8::1");
        assert_eq!(ip("10.0.0.2", &[], &trusted), "10.0.0.2");
        assert_eq!(ip("::ffff:198.51.100.7", &[], &trusted), "198.51.100.7");
    }
}
