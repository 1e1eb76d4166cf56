//! The `RateLimiter` port, its policy and decision types, and the reference model.
//!
//! Units: time is integer microseconds; a policy's refill rate is held as the
//! *emission interval* `interval_us`, the time one token takes to refill, rounded up
//! so that the effective rate never exceeds the configured one. A bucket's credit is
//! measured in microseconds of refill (`capacity * interval_us` when full), which makes
//! the token bucket and GCRA the same arithmetic over different stored state, and keeps
//! every value an integer below 2^53, exact in Lua's doubles as in Rust.

pub mod all;
pub mod calendar;
pub mod clock;
pub mod fallback;
pub mod fixed_window;
pub mod gcra;
pub mod lease;
pub mod per_bucket;
pub mod refusals;
pub mod token_bucket;

pub use all::{AllDecision, Demand, MultiRateLimiter};
pub use calendar::{Spending, WindowCount, WindowCounter, WindowHit};
pub use fallback::{Fallback, OnError};
pub use lease::{Lease, LeaseError};
pub use refusals::RefusalCache;

use crate::cause::Cause;

use std::future::Future;
use std::sync::Arc;

/// Largest `capacity * interval_us`: keeps `now + burst` below 2^53 microseconds for
/// centuries, so the Lua scripts (doubles) stay exact.
pub const MAX_BURST_US: u64 = 1 << 50;

/// Which model a limiter runs. The token bucket and GCRA admit exactly the same
/// requests; they differ in what they store per key (a bucket of credit and a time, or
/// one timestamp). The fixed window admits differently ([`fixed_window`]): it is offered
/// per demand of an all-or-nothing decision (the rate limit service's calendar windows);
/// the memory limiter also takes it as its own algorithm, the Redis one does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    #[default]
    TokenBucket,
    Gcra,
    FixedWindow,
}

/// A named quota: `capacity` tokens of burst, refilled one per `interval_us`; and, when
/// a shared limiter may lease its tokens ([`lease`]), the terms and the smaller policy
/// of the shared bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    name: String,
    capacity: u64,
    interval_us: u64,
    lease: Option<Arc<(Lease, Policy)>>,
}

/// Why a policy was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    #[error("capacity must be at least 1")]
    Capacity,
    #[error("refill_per_sec must be a number above 0 and at most 50000")]
    Rate,
    #[error("capacity / refill_per_sec is too large (a burst over 35 years)")]
    Burst,
}

impl Policy {
    /// # Errors
    /// [`PolicyError`] when the capacity is 0, the rate is not in `(0, 50000]`, or the
    /// burst would not fit the integer range the scripts compute in. The rate cap keeps
    /// the rounding of the emission interval below 2% of the rate.
    pub fn new(
        name: impl Into<String>,
        capacity: u64,
        refill_per_sec: f64,
    ) -> Result<Self, PolicyError> {
        if capacity == 0 {
            return Err(PolicyError::Capacity);
        }
        if !(refill_per_sec.is_finite() && refill_per_sec > 0.0 && refill_per_sec <= 50_000.0) {
            return Err(PolicyError::Rate);
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // range checked above
        let interval_us = (1_000_000.0 / refill_per_sec).ceil() as u64;
        Self::from_interval(name, capacity, interval_us)
    }

    /// A policy from its emission interval directly (used by tests and the scripts' callers).
    ///
    /// # Errors
    /// As [`Policy::new`].
    pub fn from_interval(
        name: impl Into<String>,
        capacity: u64,
        interval_us: u64,
    ) -> Result<Self, PolicyError> {
        if capacity == 0 {
            return Err(PolicyError::Capacity);
        }
        if interval_us < 20 {
            return Err(PolicyError::Rate);
        }
        match capacity.checked_mul(interval_us) {
            Some(burst) if burst <= MAX_BURST_US => Ok(Self {
                name: name.into(),
                capacity,
                interval_us,
                lease: None,
            }),
            _ => Err(PolicyError::Burst),
        }
    }

    /// This policy, letting a shared limiter lease up to `tokens` at a time, each lease
    /// valid for `lifetime_us` ([`lease`]). A node-local limiter ignores the lease.
    ///
    /// # Errors
    /// [`LeaseError`] as [`Lease::new`] says.
    pub fn with_lease(self, tokens: u64, lifetime_us: u64) -> Result<Self, LeaseError> {
        let terms = Lease::new(self.capacity, self.interval_us, tokens, lifetime_us)?;
        let shared = Self {
            name: self.name.clone(),
            capacity: self.capacity - terms.reserve(),
            interval_us: self.interval_us,
            lease: None,
        };
        Ok(Self {
            lease: Some(Arc::new((terms, shared))),
            ..self
        })
    }

    /// The lease terms, when a shared limiter may lease this policy's tokens.
    pub fn lease(&self) -> Option<&Lease> {
        self.lease.as_deref().map(|(terms, _)| terms)
    }

    /// The policy of the shared bucket: this one, or with a lease, one smaller by the
    /// lease's reserve. A shared limiter decides every request of a leased policy (leased
    /// or not) on this bucket.
    pub fn shared(&self) -> &Policy {
        self.lease.as_deref().map_or(self, |(_, shared)| shared)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Microseconds for one token to refill.
    pub fn interval_us(&self) -> u64 {
        self.interval_us
    }

    /// Microseconds of credit in a full bucket.
    pub fn burst_us(&self) -> u64 {
        self.capacity * self.interval_us
    }

    /// The effective refill rate, tokens per second (at most the configured one).
    pub fn refill_per_sec(&self) -> f64 {
        1_000_000.0 / self.interval_us as f64
    }

    /// Seconds for an empty bucket to fill, rounded up: the `w` of `RateLimit-Policy`.
    pub fn window_secs(&self) -> u64 {
        self.burst_us().div_ceil(1_000_000)
    }
}

/// The outcome of one limiter call, with everything the response headers need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// The policy's capacity.
    pub limit: u64,
    /// Whole tokens left after this decision.
    pub remaining: u64,
    /// `Some(0)` when allowed; when refused, the wait until the same cost would be
    /// admitted; `None` when it never can be (cost above capacity).
    pub retry_after_us: Option<u64>,
    /// Wait until the bucket is full again.
    pub reset_after_us: u64,
}

impl Decision {
    /// `Retry-After` in whole seconds, at least 1 (only meaningful when refused).
    pub fn retry_after_secs(&self) -> u64 {
        match self.retry_after_us {
            Some(us) => us.div_ceil(1_000_000).max(1),
            // Never admissible: tell the client to wait a long time rather than hammer.
            None => 86_400,
        }
    }
}

/// Why the limiter could not decide. Its text says its cause; it has no `source()`
/// (see [`Cause`]).
///
/// Every variant is answered by the fallback of `on_error` when the limiter sits behind a
/// [`Fallback`]; they differ in how fast the circuit opens and how loudly they are logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimiterError {
    /// The backend did not answer in time, dropped the connection, or answered with an
    /// error that passes (out of memory, busy with a script, loading, failing over).
    #[error("limiter backend unavailable: {0}")]
    Unavailable(Cause),
    /// The backend refused the connection: nothing listens there, so there is no point
    /// in waiting for more failures before opening the circuit.
    #[error("limiter backend unreachable: {0}")]
    Unreachable(Cause),
    /// The backend turned the request down in a way only a configuration change mends
    /// (a wrong password, a missing permission).
    #[error("limiter backend misconfigured: {0}")]
    Misconfigured(Cause),
    /// The backend answered something that makes no sense (a script bug, a wrong server).
    #[error("unexpected limiter error: {0}")]
    Unexpected(Cause),
}

impl LimiterError {
    /// What the backend said.
    pub fn cause(&self) -> &Cause {
        match self {
            Self::Unavailable(cause)
            | Self::Unreachable(cause)
            | Self::Misconfigured(cause)
            | Self::Unexpected(cause) => cause,
        }
    }

    /// Whether trying again later may succeed without anyone changing anything.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::Unreachable(_))
    }

    /// Whether one such error is enough to stop asking the backend for a while.
    pub fn opens_circuit_at_once(&self) -> bool {
        matches!(self, Self::Unreachable(_) | Self::Misconfigured(_))
    }
}

/// Admission control: takes `cost` tokens from the bucket of (`policy`, `identity`), or
/// refuses and changes nothing.
pub trait RateLimiter: Send + Sync + 'static {
    /// # Errors
    /// [`LimiterError::Unavailable`] when the backend cannot be reached within the
    /// adapter's deadline; [`LimiterError::Unexpected`] for anything else.
    fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> impl Future<Output = Result<Decision, LimiterError>> + Send;

    /// Whether the backend answers now (for `/readyz`).
    ///
    /// # Errors
    /// As [`RateLimiter::acquire`].
    fn health(&self) -> impl Future<Output = Result<(), LimiterError>> + Send;
}

/// A limiter that several nodes share (Redis), which can also take tokens that a node
/// admitted on its own while the backend was out of reach.
pub trait SharedRateLimiter: RateLimiter {
    /// As [`RateLimiter::acquire`], after first taking `debt` tokens from the bucket
    /// whatever it holds (`token_bucket::debit`, `gcra::debit`: a debt above the credit
    /// delays the refill, it is never forgiven). The debt is taken even when the request
    /// is refused, in the same atomic step.
    ///
    /// # Errors
    /// As [`RateLimiter::acquire`]; the debt may or may not have been taken then.
    fn acquire_after_debt(
        &self,
        identity: &str,
        policy: &Policy,
        debt: u64,
        cost: u64,
    ) -> impl Future<Output = Result<Decision, LimiterError>> + Send;
}

/// A node-local limiter that a [`Fallback`] can reset, so that its buckets hold only
/// what refilled while the node was on its own.
pub trait LocalRateLimiter: RateLimiter {
    /// Forgets every bucket.
    fn reset(&self);
}

/// A source of time in integer microseconds. Only differences matter to the model, so
/// a monotonic clock is the right choice for in-process limiters.
pub trait Clock: Send + Sync + 'static {
    fn now_us(&self) -> u64;
}

impl Decision {
    /// The decision for `cost` tokens given the bucket's credit (microseconds of refill)
    /// after it: what both models return, and how a backend that reports only
    /// `(allowed, credit)` (the Lua scripts) is turned into a full decision.
    pub fn from_credit(policy: &Policy, cost: u64, allowed: bool, credit_us: u64) -> Self {
        let retry_after_us = if allowed {
            Some(0)
        } else if cost > policy.capacity {
            None
        } else {
            Some((cost * policy.interval_us).saturating_sub(credit_us))
        };
        Decision {
            allowed,
            limit: policy.capacity,
            remaining: credit_us / policy.interval_us,
            retry_after_us,
            reset_after_us: policy.burst_us().saturating_sub(credit_us),
        }
    }
}

#[cfg(test)]
mod tests;
