//! Fixed-window limits, counted as envoyproxy/ratelimit counts them: a count per calendar
//! window under their cache key (`WindowCounter`), so that their pods and ours, on one
//! Redis, count each limit once. A request's other limits (a token bucket or GCRA named
//! by `algorithm:`) are decided all or nothing in a second call; when the windows refuse
//! under `all_or_nothing` spending, that call only reads (cost 0).

use shortener_core::{
    Algorithm, Decision, Demand, LimiterError, MultiRateLimiter, Spending, WindowCount,
    WindowCounter, WindowHit,
};

use crate::limits::Matched;
use crate::settings::WindowSettings;

/// One limited descriptor of a request: its bucket demand, and for a fixed window the key
/// it counts under.
pub(crate) struct Wanted {
    pub demand: Demand,
    pub window: Option<WindowHit>,
}

impl Wanted {
    pub(crate) fn new(demand: Demand, matched: &Matched, settings: &WindowSettings) -> Self {
        let window = (demand.algorithm == Algorithm::FixedWindow).then(|| {
            let unit_secs = matched.limit.unit.seconds();
            WindowHit {
                key: format!("{}{}", settings.key_prefix, matched.cache_key),
                limit: u64::from(matched.limit.requests_per_unit),
                unit_secs,
                hits: demand.cost,
                expire_secs: unit_secs + jitter(settings.expiration_jitter_max_secs),
            }
        });
        Self { demand, window }
    }

    /// Counts nothing: the request is refused by another descriptor, and this one is only
    /// read.
    pub(crate) fn read_only(&mut self) {
        self.demand.cost = 0;
        if let Some(window) = &mut self.window {
            window.hits = 0;
        }
    }
}

/// Decides `wanted`, one decision each, in order.
///
/// # Errors
/// The limiter's, when either call fails.
pub(crate) async fn decide<L: MultiRateLimiter + WindowCounter>(
    limiter: &L,
    domain: &str,
    wanted: &[Wanted],
    spending: Spending,
) -> Result<Vec<Decision>, LimiterError> {
    let hits: Vec<WindowHit> = wanted.iter().filter_map(|w| w.window.clone()).collect();
    let counts = if hits.is_empty() {
        Vec::new()
    } else {
        limiter.count_windows(&hits, spending).await?
    };
    let refused = counts.iter().any(|count| count.over);
    let demands: Vec<Demand> = (wanted.iter())
        .filter(|w| w.window.is_none())
        .map(|w| Demand {
            cost: if refused && spending == Spending::AllOrNothing {
                0
            } else {
                w.demand.cost
            },
            ..w.demand.clone()
        })
        .collect();
    let mut buckets = if demands.is_empty() {
        Vec::new()
    } else {
        limiter.acquire_all(domain, &demands).await?.decisions
    }
    .into_iter();
    let mut counts = counts.into_iter().zip(hits);
    (wanted.iter())
        .map(|w| match w.window {
            Some(_) => counts
                .next()
                .map(|(count, hit)| decision(&count, hit.limit)),
            None => buckets.next(),
        })
        .map(|decision| {
            decision.ok_or_else(|| {
                LimiterError::Unexpected("the limiter returned fewer decisions than asked".into())
            })
        })
        .collect()
}

/// A window's count as the service's decision: `reset_after` is the window's end, and a
/// refused request waits for it.
fn decision(count: &WindowCount, limit: u64) -> Decision {
    let reset_us = count.reset_after_secs * 1_000_000;
    Decision {
        allowed: !count.over,
        limit,
        remaining: count.remaining(limit),
        retry_after_us: Some(if count.over { reset_us } else { 0 }),
        reset_after_us: reset_us,
    }
}

/// Up to `max` seconds, at random (0 for 0).
fn jitter(max: u64) -> u64 {
    if max == 0 {
        return 0;
    }
    getrandom::u64().map_or(0, |random| random % max)
}
