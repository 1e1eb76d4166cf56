//! `/metrics`: the `metrics` facade with the Prometheus exporter. Counters from the
//! request path are recorded where they happen; counters kept by adapters (cache hits,
//! fallbacks) are read at scrape time.

use std::cell::RefCell;
use std::sync::OnceLock;

use metrics_exporter_prometheus::{
    BuildError, Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use crate::http::measured::DURATION;
use crate::limit::{CALL_SECONDS, TOKENS_REMAINING};

use crate::state::AppState;
use shortener_backends::{AnyLimiter, AnyRepository};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Seconds: the buckets of the request duration histogram, from a cached redirect to a
/// request near `server.request_timeout_ms`.
const DURATION_BUCKETS: [f64; 14] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Seconds: the buckets of a limiter call and of a rate limit service decision, from a
/// Redis round trip on loopback to past any sensible `limiter.timeout_ms`.
const CALL_BUCKETS: [f64; 12] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5,
];

/// Tokens left at a decision: `0` counts the refusals and the last tokens taken.
const TOKENS_BUCKETS: [f64; 12] = [
    0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1e3, 1e4, 1e5, 1e6,
];

/// Installs the process-wide recorder (once; later calls are no-ops), unless this thread
/// records into a node's own ([`NodeRecorder`]).
///
/// Every histogram has buckets, none is a summary: buckets add up across nodes (a
/// quantile of one node's summary does not), and a sample costs a bucket's count rather
/// than a sketch updated at upkeep (`cargo xtask bench --only http`, a limited redirect).
pub fn install() {
    install_with(&[]);
}

/// As [`install`], with more histograms of the limiter-call buckets (50 us to 0.5 s): the
/// rate limit service's decisions (`shortener_rls_decision_seconds`).
pub fn install_with(limiter_calls: &[&'static str]) {
    if LOCAL.with(|local| local.borrow().is_some()) {
        return;
    }
    HANDLE.get_or_init(|| match builder(limiter_calls) {
        Ok(builder) => builder
            .install_recorder()
            .inspect_err(|error| tracing::warn!(%error, "metrics recorder not installed"))
            .ok(),
        Err(error) => {
            tracing::warn!(%error, "metrics recorder not installed");
            None
        }
    });
}

/// The exporter with every histogram's buckets.
fn builder(limiter_calls: &[&'static str]) -> Result<PrometheusBuilder, BuildError> {
    let buckets = [
        (DURATION, &DURATION_BUCKETS[..]),
        (CALL_SECONDS, &CALL_BUCKETS[..]),
        (TOKENS_REMAINING, &TOKENS_BUCKETS[..]),
    ];
    let more = (limiter_calls.iter()).map(|name| (*name, &CALL_BUCKETS[..]));
    buckets.into_iter().chain(more).try_fold(
        PrometheusBuilder::new(),
        |builder, (name, buckets)| {
            builder.set_buckets_for_metric(Matcher::Full(name.to_owned()), buckets)
        },
    )
}

thread_local! {
    /// The handle of the [`NodeRecorder`] this thread records into, if any.
    static LOCAL: RefCell<Option<PrometheusHandle>> = const { RefCell::new(None) };
}

/// A recorder of one node's own, for nodes that share a process (the in-process tests
/// run several): each thread of the node's runtime enters it, and its `/metrics` shows
/// that node's traffic only. A process of its own uses the process-wide recorder.
#[derive(Clone)]
pub struct NodeRecorder {
    recorder: &'static PrometheusRecorder,
}

impl NodeRecorder {
    /// A new recorder, with the buckets [`install_with`] gives (`limiter_calls` too).
    /// It lives as long as the process: a node's threads may record until they end.
    ///
    /// # Panics
    /// When a bucket list is empty (they are constants).
    #[must_use]
    pub fn new(limiter_calls: &[&'static str]) -> Self {
        let builder = builder(limiter_calls).expect("every bucket list has buckets");
        Self {
            recorder: Box::leak(Box::new(builder.build_recorder())),
        }
    }

    /// Makes this thread record into this recorder, for the rest of its life.
    pub fn enter(&self) {
        std::mem::forget(metrics::set_default_local_recorder(self.recorder));
        LOCAL.with(|local| *local.borrow_mut() = Some(self.recorder.handle()));
    }
}

impl std::fmt::Debug for NodeRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeRecorder")
    }
}

/// The handle this thread's metrics render from.
fn handle() -> Option<PrometheusHandle> {
    LOCAL
        .with(|local| local.borrow().clone())
        .or_else(|| HANDLE.get().cloned().flatten())
}

/// Moves the histogram samples recorded since the last call into their buckets. The
/// exporter keeps every sample of a histogram until then: without it, a node that is not
/// scraped holds two samples per limited request for ever. The visit flush calls it once
/// a second.
pub(crate) fn upkeep() {
    if let Some(handle) = handle() {
        handle.run_upkeep();
    }
}

/// The Prometheus text of every metric.
pub fn render(state: &AppState) -> String {
    let cache = state.shortener.repository().stats();
    metrics::counter!("shortener_cache_hits_total").absolute(cache.hits);
    metrics::counter!("shortener_cache_misses_total").absolute(cache.misses);
    let lookups = cache.hits + cache.misses;
    #[allow(clippy::cast_precision_loss)] // a ratio for humans
    metrics::gauge!("shortener_cache_hit_ratio").set(if lookups == 0 {
        0.0
    } else {
        cache.hits as f64 / lookups as f64
    });
    // Visits counted in memory and not yet written: what a crash would lose, and what
    // a flush that falls behind holds in memory.
    for (buffer, links) in [
        ("counts", state.shortener.pending_links()),
        ("values", state.shortener.pending_value_links()),
    ] {
        #[allow(clippy::cast_precision_loss)] // a count far below 2^52
        metrics::gauge!("shortener_visits_pending_links", "buffer" => buffer).set(links as f64);
    }
    if let AnyRepository::Sqlite(sqlite) = state.shortener.repository().inner() {
        let wal = sqlite.wal_stats();
        #[allow(clippy::cast_precision_loss)] // a size for humans and alerts
        metrics::gauge!("shortener_sqlite_wal_bytes").set(wal.wal_bytes as f64);
        for (mode, count) in [
            ("passive", wal.passive_checkpoints),
            ("truncate", wal.truncate_checkpoints),
        ] {
            metrics::counter!("shortener_sqlite_checkpoints_total", "mode" => mode).absolute(count);
        }
        metrics::counter!("shortener_sqlite_checkpoints_incomplete_total")
            .absolute(wal.incomplete_checkpoints);
    }
    render_limiter(&state.limiter)
}

/// The Prometheus text of every metric, with the limiter's counters read now (the rate
/// limit service's `/metrics`).
pub fn render_limiter(limiter: &AnyLimiter) -> String {
    metrics::gauge!(
        "shortener_build_info",
        "version" => crate::version::VERSION,
        "commit" => crate::version::COMMIT
    )
    .set(1.0);
    if let AnyLimiter::Redis(limiter) = limiter {
        let fallback = limiter.inner();
        metrics::counter!("shortener_ratelimit_backend_errors_total")
            .absolute(fallback.primary_errors());
        metrics::counter!("shortener_ratelimit_fallback_decisions_total")
            .absolute(fallback.fallback_decisions());
        metrics::counter!("shortener_ratelimit_local_refusals_total")
            .absolute(limiter.local_refusals());
        metrics::counter!("shortener_ratelimit_leased_admissions_total")
            .absolute(fallback.primary().leased_admissions());
        metrics::counter!("shortener_ratelimit_debt_settled_tokens_total")
            .absolute(fallback.settled_tokens());
        #[allow(clippy::cast_precision_loss)] // gauges are floats; these stay far below 2^53
        {
            metrics::gauge!("shortener_ratelimit_debt_unsettled_tokens")
                .set(fallback.unsettled_tokens() as f64);
            metrics::gauge!("shortener_ratelimit_nodes").set(fallback.nodes() as f64);
        }
        metrics::gauge!("shortener_ratelimit_circuit_open").set(if fallback.is_open() {
            1.0
        } else {
            0.0
        });
    }
    handle()
        .as_ref()
        .map(PrometheusHandle::render)
        .unwrap_or_default()
}
