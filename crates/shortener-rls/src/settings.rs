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
    /// The fixed windows' counting: their keys and increments, with this spending.
    pub windows: WindowSettings,
}

/// How fixed-window limits count (their `fixed_cache_impl.go`, on one Redis with theirs).
#[derive(Debug, Clone, Default)]
pub struct WindowSettings {
    /// Their `CACHE_KEY_PREFIX`: the start of every window key.
    pub key_prefix: String,
    /// Each (theirs, the default), stop when over (their
    /// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`) or all or nothing (ours).
    pub spending: shortener_core::Spending,
    /// Their `EXPIRATION_JITTER_MAX_SECONDS`: a key lives its unit plus up to this much
    /// (chosen at random per write), so that keys made together do not expire together.
    pub expiration_jitter_max_secs: u64,
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
            windows: WindowSettings::default(),
        }
    }
}
