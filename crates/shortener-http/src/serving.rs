//! [`Serving`]: the configuration values that requests read, parsed once when the
//! configuration is checked (`config::Settings` builds it; this module knows nothing of
//! the config file), so that no handler looks at the raw `Config` (a number of
//! milliseconds, a status as a `u16`) or re-derives anything per request.

use std::time::Duration;

use shortener_core::{Algorithm, RedirectStatus};

use crate::domains::Domains;
use crate::identity::IdentityConfig;

/// What requests and the server loop read of the configuration, in their domain types.
#[derive(Debug, Clone)]
pub struct Serving {
    /// `server.public_url` without a trailing slash.
    pub public_url: String,
    /// The default domain (of `server.public_url`) and those of `[[domains]]`.
    pub domains: Domains,
    /// `server.redirect_status`: the status of links that do not choose their own
    pub redirect_status: RedirectStatus,
    /// `links.case_insensitive_aliases`
    pub case_insensitive_aliases: bool,
    /// `links.redirect_max_age_secs`
    pub redirect_max_age_secs: u64,
    /// `links.forward_query`
    pub forward_query: bool,
    /// `server.request_metrics`
    pub request_metrics: bool,
    /// `log.requests`
    pub log_requests: bool,
    /// `server.max_body_bytes`
    pub max_body_bytes: usize,
    /// `server.request_timeout_ms`
    pub request_timeout: Duration,
    /// `server.shutdown_timeout_ms`
    pub shutdown_timeout: Duration,
    /// `server.shutdown_delay_ms`: part of `shutdown_timeout`.
    pub shutdown_delay: Duration,
    /// Whether `server.ops_bind` is set: the public listener then does not answer the
    /// operations routes.
    pub ops_listener: bool,
    /// `server.trusted_proxies`, `server.client_ip_header`, `limiter.ipv4_prefix` and
    /// `limiter.ipv6_prefix`: who an anonymous request is.
    pub identity: IdentityConfig,
    /// `limiter.algorithm`: how the buckets of unlock attempts are kept.
    pub algorithm: Algorithm,
    /// `[visits]`: which values of a visit are counted.
    pub tracking: crate::visit::values::Tracking,
    /// `visits.flush_values_secs`: visit values are written every this many visit
    /// flushes (one a second).
    pub flush_values_every: u64,
    /// `compat.shlink`: Shlink's REST API under `/rest/`.
    pub shlink: bool,
    /// `compat.kutt`: Kutt's API v2 under `/api/v2/`.
    pub kutt: bool,
    /// `compat.yourls`: YOURLS' API at `/yourls-api.php`.
    pub yourls: bool,
    /// `server.cors_origins`: the origins whose pages may call the API from a browser.
    pub cors_origins: Vec<String>,
}
