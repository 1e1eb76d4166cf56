//! The node's background tasks, in one place and under one shutdown signal: the visit
//! flush (with the idempotency purge and the metrics upkeep), the stored API keys' reload,
//! the Redis heartbeat, the cross-node link invalidations, the deny-list watcher, and the
//! operations listener.
//!
//! Each task is a loop that returns when the signal comes, between two steps, never in
//! the middle of one: a flush that was cut off would lose the counts it had taken out of
//! memory. [`Tasks::stop`] sends the signal and waits for every task; what runs after it
//! (the final flush, closing storage) is `app::serve`'s.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use shortener_core::{IDEMPOTENCY_TTL, LinkRepository as _};
use time::OffsetDateTime;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::invalidate;
use crate::state::AppState;
use shortener_backends::AnyLimiter;

/// How often visit counts kept in memory are written to storage.
const VISIT_FLUSH_INTERVAL: Duration = Duration::from_secs(1);

/// Expired idempotency keys are removed every this many visit flushes (a minute).
const IDEMPOTENCY_PURGE_EVERY: u64 = 60;
/// Visit values are also written once this many links have some pending, whatever
/// `visits.flush_values_secs` says. Traffic spread over many links would otherwise hold
/// every link's values in memory until the next flush. The allocator keeps such a peak
/// as RSS after the flush. Not lower: each of these flushes writes a row per link and
/// value, and at 5 000 links, random traffic over 10 000 links flushed every second.
/// See `cargo xtask bench --only http` (a random link out of 10 000) in
/// docs/BENCHMARKS.md. Counted once a second.
const VALUES_FLUSH_LINKS: usize = 20_000;

/// The shutdown signal as a task sees it: `changed()` completes once it is sent (or once
/// the sender is gone, which means the same).
pub type Stop = watch::Receiver<bool>;

/// The running background tasks of a node.
#[derive(Debug)]
pub struct Tasks {
    stop: watch::Sender<bool>,
    running: Vec<JoinHandle<()>>,
}

impl Tasks {
    /// Starts the tasks every node runs on `state`: the visit flush, and those its
    /// configuration asks for (the heartbeat and the invalidations with the Redis limiter,
    /// the watcher with a deny-list file).
    pub fn start(state: &Arc<AppState>) -> Self {
        let (stop, _) = watch::channel(false);
        let mut tasks = Self {
            stop,
            running: Vec::new(),
        };
        let flushed = state.clone();
        tasks.spawn(move |stop| flush_visits_forever(flushed, stop));
        let keys = state.clone();
        tasks.spawn(move |stop| reload_keys_forever(keys, stop));
        if matches!(state.limiter, AnyLimiter::Redis(_)) {
            let state = state.clone();
            tasks.spawn(move |stop| async move {
                if let AnyLimiter::Redis(limiter) = &state.limiter {
                    shortener_backends::heartbeat_forever(limiter, stop).await;
                }
            });
        }
        if state.invalidations.is_some() {
            let state = state.clone();
            tasks.spawn(move |stop| async move {
                if let Some(invalidations) = &state.invalidations {
                    let repository = state.shortener.repository();
                    invalidate::invalidate_forever(repository, invalidations, stop).await;
                }
            });
        }
        // Returns at once without a country database.
        let watched = state.clone();
        tasks.spawn(move |stop| async move {
            crate::geoip::watch_forever(&watched.countries, stop).await;
        });
        // Returns at once without a deny-list file.
        let watched = state.clone();
        tasks.spawn(move |stop| async move {
            crate::targets::watch_forever(&watched.targets, stop).await;
        });
        tasks
    }

    /// Starts one more task, which must return soon after its [`Stop`] changes.
    pub fn spawn<F>(&mut self, task: impl FnOnce(Stop) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = self.stop.subscribe();
        self.running.push(tokio::spawn(task(stop)));
    }

    /// Sends the shutdown signal and waits until every task has returned.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.running {
            let _ = task.await;
        }
    }
}

/// Writes the visit counts every [`VISIT_FLUSH_INTERVAL`], and their values every
/// `visits.flush_values_secs` (sooner past [`VALUES_FLUSH_LINKS`]); every minute, also removes expired idempotency keys.
async fn flush_visits_forever(state: Arc<AppState>, mut stop: Stop) {
    let values_every = state.serving.flush_values_every.max(1);
    let mut ticks = tokio::time::interval(VISIT_FLUSH_INTERVAL);
    let mut flushes: u64 = 0;
    let flushed = metrics::counter!("shortener_visit_flushes_total");
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.changed() => return,
        }
        match state.shortener.flush_visits().await {
            Ok(_) => flushed.increment(1),
            Err(error) => tracing::warn!(%error, "visit counts kept for the next flush"),
        }
        crate::metrics::upkeep();
        flushes += 1;
        let values_due = flushes.is_multiple_of(values_every)
            || state.shortener.pending_value_links() >= VALUES_FLUSH_LINKS;
        if values_due && let Err(error) = state.shortener.flush_values().await {
            tracing::warn!(%error, "visit values kept for the next flush");
        }
        if flushes.is_multiple_of(IDEMPOTENCY_PURGE_EVERY) {
            let before = OffsetDateTime::now_utc() - IDEMPOTENCY_TTL;
            match state.shortener.repository().purge_idempotency(before).await {
                Ok(0) => {}
                Ok(purged) => tracing::debug!(purged, "expired idempotency keys removed"),
                Err(error) => tracing::warn!(%error, "expired idempotency keys kept for now"),
            }
        }
    }
}

/// Reads the stored keys every [`crate::service::keys::RELOAD_EVERY`] until `stop`.
async fn reload_keys_forever(state: Arc<AppState>, mut stop: Stop) {
    let mut ticks = tokio::time::interval(crate::service::keys::RELOAD_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.changed() => return,
        }
        match state.reload_keys().await {
            Ok(()) => failing = false,
            Err(error) if !failing => {
                failing = true;
                tracing::warn!(%error, "stored API keys not read again; the last read stays");
            }
            Err(_) => {}
        }
    }
}
