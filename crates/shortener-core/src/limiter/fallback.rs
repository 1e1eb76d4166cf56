//! `Fallback`: a shared limiter (Redis) behind a circuit breaker, with the configured
//! answer while it is unavailable, and a local answer that keeps the shared bound.
//!
//! What is not here: timeouts (the primary bounds its own calls), logging (the server
//! reads [`Fallback::state`] and [`Fallback::last_error`]), and learning the number of
//! nodes (the heartbeat of `shortener-backends` feeds it to [`Fallback::set_nodes`]).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use self::debts::Debts;
use super::clock::MonotonicClock;
use super::{
    Clock, Decision, LimiterError, LocalRateLimiter, Policy, RateLimiter, SharedRateLimiter,
    token_bucket,
};

/// What a [`Fallback`] answers while its primary is unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OnError {
    /// Admit, with the decision a full bucket would give (see [`Fallback`]).
    FailOpen,
    /// Refuse with [`LimiterError::Unavailable`]; the server answers 503.
    FailClosed,
    /// Ask the local limiter for this node's share of the quota (see [`Fallback`]).
    #[default]
    Local,
}

/// How a [`Fallback`] behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FallbackConfig {
    pub on_error: OnError,
    /// How long the circuit stays open before one call probes the primary again.
    pub probe_interval: Duration,
    /// Consecutive failures that open the circuit (at least 1). An error that
    /// [`LimiterError::opens_circuit_at_once`] opens it by itself.
    pub breaker_failures: u32,
    /// Nodes sharing the quota, until [`Fallback::set_nodes`] says otherwise.
    pub nodes: u64,
}

impl Default for FallbackConfig {
    fn default() -> Self {
        Self {
            on_error: OnError::Local,
            probe_interval: Duration::from_millis(250),
            breaker_failures: 3,
            nodes: 1,
        }
    }
}

/// How the shared backend is doing, as `/readyz` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendState {
    /// Decisions come from the primary.
    Ok,
    /// The primary fails; decisions come from the fallback of `on_error`.
    Degraded,
    /// The primary fails and `on_error = fail_closed`: limited requests are refused.
    Down,
}

/// A [`RateLimiter`] that asks `primary` and answers every error of it with the
/// [`OnError`] fallback. After `breaker_failures` consecutive errors (or one that
/// [`LimiterError::opens_circuit_at_once`]) the circuit opens: calls skip the primary,
/// so a dead backend costs a few timeouts, not one per request. Once `probe_interval`
/// has passed, one call at a time probes the primary while the others keep the fallback
/// answer; a probe that gets an answer closes the circuit.
///
/// [`OnError::Local`] keeps the shared bound `capacity + rate * T` with N nodes:
/// - each node's local policy is its share, `capacity / N` and `rate / N` rounded down;
/// - local buckets start empty, and are reset at the start of every spell of failures,
///   so a node admits at most `rate / N * t` in a spell of length t;
/// - what a node admits on its own is its debt to the primary, taken from the shared
///   bucket by the next primary call on that key (a debt above the credit delays the
///   refill; it is never forgiven). The shared bucket refilled during the spell, while
///   the local buckets together refilled no faster, so once the debts are taken the
///   shared bucket holds no more than had the primary decided every request.
///
/// With [`OnError::FailOpen`] the decision is the model's for a full bucket: admitted
/// with `remaining = capacity - cost` (a cost above capacity is still refused as never),
/// since nothing better is known without the backend.
#[derive(Debug)]
pub struct Fallback<P, L, C = MonotonicClock> {
    primary: P,
    local: L,
    config: FallbackConfig,
    clock: C,
    open: AtomicBool,
    /// When the next probe may start, on `clock`.
    probe_at_us: AtomicU64,
    probing: AtomicBool,
    consecutive_failures: AtomicU32,
    /// Set by the first failure after an answer: the local buckets were reset then.
    failing: AtomicBool,
    nodes: AtomicU64,
    debts: Debts,
    last_error: Mutex<Option<LimiterError>>,
    primary_errors: AtomicU64,
    fallback_decisions: AtomicU64,
    settled_tokens: AtomicU64,
}

impl<P: SharedRateLimiter, L: LocalRateLimiter> Fallback<P, L> {
    pub fn new(primary: P, local: L, config: FallbackConfig) -> Self {
        Self::with_clock(primary, local, config, MonotonicClock::default())
    }

    /// A fallback that starts with its circuit open, as after a failed connection: for a
    /// node that starts while its backend is out of reach.
    pub fn new_open(primary: P, local: L, config: FallbackConfig, error: LimiterError) -> Self {
        let fallback = Self::new(primary, local, config);
        fallback.failed(error);
        fallback.trip();
        fallback
    }
}

impl<P: SharedRateLimiter, L: LocalRateLimiter, C: Clock> Fallback<P, L, C> {
    /// As [`Fallback::new`], timing the probes on `clock`.
    pub fn with_clock(primary: P, local: L, config: FallbackConfig, clock: C) -> Self {
        Self {
            primary,
            local,
            config,
            clock,
            open: AtomicBool::new(false),
            probe_at_us: AtomicU64::new(0),
            probing: AtomicBool::new(false),
            consecutive_failures: AtomicU32::new(0),
            failing: AtomicBool::new(false),
            nodes: AtomicU64::new(config.nodes.max(1)),
            debts: Debts::default(),
            last_error: Mutex::new(None),
            primary_errors: AtomicU64::new(0),
            fallback_decisions: AtomicU64::new(0),
            settled_tokens: AtomicU64::new(0),
        }
    }

    pub fn primary(&self) -> &P {
        &self.primary
    }

    pub fn local(&self) -> &L {
        &self.local
    }

    pub fn on_error(&self) -> OnError {
        self.config.on_error
    }

    /// Errors of the primary so far.
    pub fn primary_errors(&self) -> u64 {
        self.primary_errors.load(Ordering::Relaxed)
    }

    /// Calls answered without the primary so far (admissions, refusals and
    /// [`OnError::FailClosed`] errors alike).
    pub fn fallback_decisions(&self) -> u64 {
        self.fallback_decisions.load(Ordering::Relaxed)
    }

    /// Tokens admitted locally and since taken from the shared bucket.
    pub fn settled_tokens(&self) -> u64 {
        self.settled_tokens.load(Ordering::Relaxed)
    }

    /// Tokens admitted locally and not yet taken from the shared bucket.
    pub fn unsettled_tokens(&self) -> u64 {
        self.debts.total()
    }

    /// Whether calls skip the primary now.
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// The number of nodes whose shares make up the quota.
    pub fn nodes(&self) -> u64 {
        self.nodes.load(Ordering::Relaxed)
    }

    /// Sets the number of live nodes (at least 1 is kept).
    pub fn set_nodes(&self, nodes: u64) {
        self.nodes.store(nodes.max(1), Ordering::Relaxed);
    }

    pub fn state(&self) -> BackendState {
        if self.is_open() && self.config.on_error == OnError::FailClosed {
            BackendState::Down
        } else if self.is_open() || self.failing.load(Ordering::Relaxed) {
            BackendState::Degraded
        } else {
            BackendState::Ok
        }
    }

    /// The primary's last error, kept until it answers again.
    pub fn last_error(&self) -> Option<LimiterError> {
        if self.failing.load(Ordering::Relaxed) || self.is_open() {
            lock(&self.last_error).clone()
        } else {
            None
        }
    }

    /// Another call to the primary (the node heartbeat) got an answer: as a probe
    /// would, this closes the circuit.
    pub fn primary_answered(&self) {
        self.answered(true);
    }

    /// Another call to the primary (the node heartbeat) failed: counts as a failure
    /// of a decision would.
    pub fn primary_failed(&self, error: LimiterError) {
        self.failed(error);
    }

    /// This node's local policy for `policy`: `None` when its share of the capacity
    /// rounds down to nothing.
    pub fn share(&self, policy: &Policy) -> Option<Policy> {
        let nodes = self.nodes();
        let interval_us = policy.interval_us().checked_mul(nodes)?;
        Policy::from_interval(policy.name(), policy.capacity() / nodes, interval_us).ok()
    }

    fn now_us(&self) -> u64 {
        self.clock.now_us()
    }

    /// Opens the circuit (or keeps it open) until one probe interval from now.
    fn trip(&self) {
        let interval = u64::try_from(self.config.probe_interval.as_micros()).unwrap_or(u64::MAX);
        self.probe_at_us
            .store(self.now_us().saturating_add(interval), Ordering::Release);
        self.open.store(true, Ordering::Release);
    }

    fn failed(&self, error: LimiterError) {
        self.primary_errors.fetch_add(1, Ordering::Relaxed);
        let at_once = error.opens_circuit_at_once();
        *lock(&self.last_error) = Some(error);
        if !self.failing.swap(true, Ordering::AcqRel) {
            // A new spell of failures: local buckets hold only what refills from now.
            self.local.reset();
        }
        let failures = self.consecutive_failures.fetch_add(1, Ordering::AcqRel) + 1;
        if at_once || failures >= self.config.breaker_failures {
            self.trip();
        }
    }

    fn answered(&self, probe: bool) {
        // Loads first: on the hot path these are read-only, and stay in every core's cache.
        if self.consecutive_failures.load(Ordering::Relaxed) != 0 {
            self.consecutive_failures.store(0, Ordering::Relaxed);
        }
        if self.failing.load(Ordering::Relaxed) {
            self.failing.store(false, Ordering::Release);
        }
        // Only a probe closes the circuit: a call that started before it opened says
        // nothing about the primary now.
        if probe {
            self.open.store(false, Ordering::Release);
        }
    }

    /// Claims the one probe, if its time has come and no other call holds it.
    fn try_probe(&self) -> Option<ProbeGuard<'_>> {
        let due = self.now_us() >= self.probe_at_us.load(Ordering::Acquire);
        let claimed = due
            && self
                .probing
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        claimed.then_some(ProbeGuard(&self.probing))
    }

    async fn fallback(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        self.fallback_decisions.fetch_add(1, Ordering::Relaxed);
        match self.config.on_error {
            OnError::FailOpen => Ok(token_bucket::step(None, policy, 0, cost).0),
            OnError::FailClosed => Err(LimiterError::Unavailable(
                "rate limiter backend unavailable (on_error = fail_closed)".into(),
            )),
            OnError::Local => {
                let Some(share) = self.share(policy) else {
                    return Ok(Decision::from_credit(policy, cost, false, 0));
                };
                let decision = self.local.acquire(identity, &share, cost).await?;
                if decision.allowed && cost > 0 {
                    self.debts.add(identity, policy, cost);
                }
                Ok(decision)
            }
        }
    }
}

impl<P: SharedRateLimiter, L: LocalRateLimiter, C: Clock> RateLimiter for Fallback<P, L, C> {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        // `probe` is held across the primary call, and released when this call ends or
        // is dropped, so a cancelled probe does not block the next one.
        let probe = if self.is_open() {
            match self.try_probe() {
                Some(probe) => Some(probe),
                None => return self.fallback(identity, policy, cost).await,
            }
        } else {
            None
        };
        let debt = self.debts.take(identity, policy);
        let result = match &debt {
            None => self.primary.acquire(identity, policy, cost).await,
            Some(debt) => {
                self.primary
                    .acquire_after_debt(identity, policy, debt.tokens, cost)
                    .await
            }
        };
        match result {
            Ok(decision) => {
                if let Some(debt) = debt {
                    self.settled_tokens
                        .fetch_add(debt.settle(), Ordering::Relaxed);
                }
                self.answered(probe.is_some());
                Ok(decision)
            }
            Err(error) => {
                // `debt` is dropped here, unsettled: it goes back to be taken next time.
                // The failed call may have taken it already (a timeout after the script
                // ran); taking it twice only ever refuses more.
                drop(debt);
                self.failed(error);
                self.fallback(identity, policy, cost).await
            }
        }
    }

    /// The primary's health, whatever the fallback would answer meanwhile.
    async fn health(&self) -> Result<(), LimiterError> {
        self.primary.health().await
    }
}

/// Holds the half-open probe; releasing it on drop covers cancelled calls too.
#[derive(Debug)]
struct ProbeGuard<'a>(&'a AtomicBool);

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every value guarded here is replaced whole, so it is sound after a panic elsewhere.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

mod all;
mod debts;
#[cfg(test)]
pub(super) mod tests;
