//! How the service decides beside its limits ([`ServiceSettings`]): their global modes,
//! the answer's extras, and what it answers when the limiter cannot decide.

use crate::bounds::RequestBounds;

/// What the service answers when the limiter cannot decide (its `Fallback` answers
/// `fail_open` and `local` itself, so only `fail_closed` errors reach here), and for a
/// domain whose limits file did not load at start (`limiter.on_error` again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnavailable {
    /// OK (`on_error = "fail_open"` or `"local"`): for a domain whose file did not load,
    /// what theirs answers while it has no configuration.
    Allow,
    /// Every limited descriptor is over its limit (`on_error = "fail_closed"`).
    OverLimit,
    /// gRPC `UNAVAILABLE`, so that Envoy's `failure_mode_deny` decides (`on_error = "error"`).
    Error,
}

/// How the service decides, beside its limits.
#[derive(Debug, Clone)]
pub struct ServiceSettings {
    /// Their `SHADOW_MODE`: every answer is OK, and what would have been refused is counted.
    pub shadow_mode: bool,
    /// Their `QUOTA_MODE`: every limit is in quota mode (see `limits::Limit::quota_mode`).
    pub quota_mode: bool,
    /// Their `LIMIT_RESPONSE_HEADERS_ENABLED`, with the headers' names; `None`: no headers.
    pub response_headers: Option<crate::headers::HeaderNames>,
    /// Their `RESPONSE_DYNAMIC_METADATA`: every answer carries `dynamic_metadata` (see
    /// `metadata.rs`).
    pub dynamic_metadata: bool,
    /// Their `NEAR_LIMIT_RATIO`: an admission that leaves less than this share unused counts
    /// as near the limit.
    pub near_limit_ratio: f64,
    pub when_unavailable: WhenUnavailable,
    /// What one request may carry: a request past a bound is refused before anything is
    /// matched or sent to the limiter.
    pub bounds: RequestBounds,
}

impl Default for ServiceSettings {
    fn default() -> Self {
        Self {
            shadow_mode: false,
            quota_mode: false,
            response_headers: None,
            dynamic_metadata: false,
            near_limit_ratio: 0.8,
            when_unavailable: WhenUnavailable::OverLimit,
            bounds: RequestBounds::default(),
        }
    }
}
