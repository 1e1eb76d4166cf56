//! Their `LIMIT_RESPONSE_HEADERS_ENABLED`: the answer carries `RateLimit-Limit`,
//! `RateLimit-Remaining` and `RateLimit-Reset` (names configurable, as theirs) of the
//! descriptor closest to its limit, for Envoy to add to the response.

use envoy_types::pb::envoy::config::core::v3::HeaderValue;
use envoy_types::pb::envoy::service::ratelimit::v3::rate_limit_response::DescriptorStatus;

/// The names of the three headers (their `LIMIT_*_HEADER`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderNames {
    pub limit: String,
    pub remaining: String,
    pub reset: String,
}

impl Default for HeaderNames {
    fn default() -> Self {
        Self {
            limit: "RateLimit-Limit".to_owned(),
            remaining: "RateLimit-Remaining".to_owned(),
            reset: "RateLimit-Reset".to_owned(),
        }
    }
}

/// The headers of the descriptor closest to its limit: of those with a limit, the one
/// with the fewest requests left (the first of equals), or the last whose own limit
/// refuses the request, as theirs picks it; none when no descriptor has a limit.
/// `refusing[i]` says whether status `i` refuses the request by itself.
pub(crate) fn closest(
    names: &HeaderNames,
    statuses: &[DescriptorStatus],
    refusing: &[bool],
) -> Vec<HeaderValue> {
    let mut closest: Option<&DescriptorStatus> = None;
    for (status, &refuses) in statuses.iter().zip(refusing) {
        if status.current_limit.is_none() {
            continue;
        }
        let fewer = closest.is_none_or(|best| status.limit_remaining < best.limit_remaining);
        if refuses || fewer {
            closest = Some(status);
        }
    }
    let Some(status) = closest else {
        return Vec::new();
    };
    let limit = status
        .current_limit
        .as_ref()
        .map_or(0, |limit| limit.requests_per_unit);
    let reset = status.duration_until_reset.map_or(0, |reset| reset.seconds);
    [
        (&names.limit, limit.to_string()),
        (&names.remaining, status.limit_remaining.to_string()),
        (&names.reset, reset.to_string()),
    ]
    .into_iter()
    .map(|(key, value)| HeaderValue {
        key: key.clone(),
        value,
        ..HeaderValue::default()
    })
    .collect()
}
