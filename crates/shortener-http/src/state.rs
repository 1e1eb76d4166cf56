//! What every request handler shares: the service, the limiter, and what requests read of
//! the configuration, parsed ([`Serving`]).

use shortener_core::{AlphabetCodeGenerator, Shortener};
use shortener_redis::LinkInvalidations;

use crate::auth::{ApiKeys, Policies};
use crate::qr::QrCodes;
use crate::serving::Serving;
use crate::targets::Targets;
use crate::visit::bots::BotDetector;
use shortener_backends::{AnyLimiter, Repository};

/// The application, built once at start.
#[derive(Debug)]
pub struct AppState {
    /// What requests read of the configuration, parsed.
    pub serving: Serving,
    pub shortener: Shortener<Repository, AlphabetCodeGenerator>,
    pub limiter: AnyLimiter,
    pub policies: Policies,
    pub api_keys: ApiKeys,
    /// Which targets links may have, and the deny list as it stands.
    pub targets: Targets,
    /// Hashing and checking link passwords, a bounded number at a time.
    pub passwords: crate::passwords::Passwords,
    /// QR codes, rendered off the async workers and cached.
    pub qr: QrCodes,
    pub bots: BotDetector,
    /// The country database of visit statistics (`visits.geoip_db`).
    pub countries: crate::geoip::Countries,
    /// The `User-Agent` parser of visit statistics, with its cache.
    pub agents: crate::visit::values::Agents,
    /// Tells the other nodes that a link changed, when the limiter is on Redis.
    pub invalidations: Option<LinkInvalidations>,
    /// The last storage probe of `/readyz`: when, and whether storage answered.
    pub storage_probe: tokio::sync::Mutex<Option<(std::time::Instant, bool)>>,
    /// Set at the shutdown signal, for `server.shutdown_delay_ms`: every answer then says
    /// `Connection: close`.
    pub draining: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// This node's request counters and histograms (`server.request_metrics`).
    pub requests: crate::http::measured::RequestMetrics,
}

/// What the composition root builds the application from: the parsed configuration and
/// the connected backends.
#[derive(Debug)]
pub struct Parts {
    pub serving: Serving,
    pub shortener: Shortener<Repository, AlphabetCodeGenerator>,
    pub limiter: AnyLimiter,
    pub policies: Policies,
    pub api_keys: ApiKeys,
    pub targets: Targets,
    pub passwords: crate::passwords::Passwords,
    pub countries: crate::geoip::Countries,
    pub invalidations: Option<LinkInvalidations>,
}

impl AppState {
    /// The application of `parts`, with empty caches.
    pub fn new(parts: Parts) -> std::sync::Arc<Self> {
        let Parts {
            serving,
            shortener,
            limiter,
            policies,
            api_keys,
            targets,
            passwords,
            countries,
            invalidations,
        } = parts;
        std::sync::Arc::new(Self {
            serving,
            shortener,
            limiter,
            policies,
            api_keys,
            targets,
            passwords,
            qr: QrCodes::default(),
            bots: BotDetector::default(),
            countries,
            agents: crate::visit::values::Agents::default(),
            invalidations,
            storage_probe: tokio::sync::Mutex::default(),
            draining: std::sync::Arc::default(),
            requests: crate::http::measured::RequestMetrics::default(),
        })
    }
}
