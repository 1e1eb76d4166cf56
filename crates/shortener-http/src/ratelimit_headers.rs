//! The IETF rate-limit headers of a limited response: `RateLimit-Policy`,
//! `"name";q=capacity;w=window`, the same for every response under one policy and so
//! written once, when the configuration is read ([`policy_value`]); and `RateLimit`,
//! `"name";r=remaining;t=seconds`, written per decision ([`set`]). It names no other
//! module of the crate.

use poem::Response;
use poem::http::{HeaderName, HeaderValue};
use shortener_core::{Decision, Policy};

/// The header names, as constants: a name given as `&str` is parsed on every insert.
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// `RateLimit-Policy` for `policy`; `None` for a name that cannot be a header value (the
/// configuration allows none such).
pub(crate) fn policy_value(policy: &Policy) -> Option<HeaderValue> {
    let mut text = String::with_capacity(policy.name().len() + 48);
    let (capacity, window) = (policy.capacity(), policy.window_secs());
    push_item(
        &mut text,
        policy.name(),
        [(";q=", capacity), (";w=", window)],
    );
    HeaderValue::from_str(&text).ok()
}

/// Both headers on `response`: `policy_value` is [`policy_value`] of `policy`.
pub(crate) fn set(
    response: &mut Response,
    policy: &Policy,
    policy_value: Option<&HeaderValue>,
    decision: &Decision,
) {
    let name = policy.name();
    let reset = if decision.allowed {
        decision.reset_after_us
    } else {
        decision.retry_after_us.unwrap_or(decision.reset_after_us)
    };
    // Numbers by `itoa`, not `write!`, whose formatting showed on every limited response.
    // See `cargo xtask bench --only http` (the Redis `redirect` policy rows).
    let mut text = String::with_capacity(name.len() + 48);
    let (remaining, seconds) = (decision.remaining, reset.div_ceil(1_000_000));
    push_item(&mut text, name, [(";r=", remaining), (";t=", seconds)]);
    let headers = response.headers_mut();
    if let Some(value) = policy_value {
        headers.insert(RATELIMIT_POLICY, value.clone());
    }
    // From the `String` itself: its buffer becomes the value's, without a copy.
    if let Ok(value) = HeaderValue::try_from(text) {
        headers.insert(RATELIMIT, value);
    }
}

/// `"name";a=1;b=2`: an item of the rate-limit headers with its two parameters.
fn push_item(text: &mut String, name: &str, parameters: [(&str, u64); 2]) {
    let mut number = itoa::Buffer::new();
    text.push('"');
    text.push_str(name);
    text.push('"');
    for (key, value) in parameters {
        text.push_str(key);
        text.push_str(number.format(value));
    }
}
