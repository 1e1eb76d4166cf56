//! [`Deadline`]: the instant by which a call must have answered, and the configured
//! timeout it came from (for the error that says so).
//!
//! A decision's deadline is fixed when it starts, before it joins a queue, and travels
//! with it: a batch call is bounded by the earliest deadline of its decisions, so that no
//! decision waits longer than the timeout, queued or not, while each call runs under one
//! timer. Setting and clearing a `tokio` timer costs more than a queued decision's own
//! work. See `cargo xtask bench --only client` in docs/BENCHMARKS.md.

use std::time::Duration;

use shortener_core::LimiterError;
use tokio::time::Instant;

use crate::error::timed_out;

/// Ordered by instant first, so `Ord::min` is the earlier deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Deadline {
    at: Instant,
    timeout: Duration,
}

impl Deadline {
    /// `timeout` from now.
    pub(crate) fn after(timeout: Duration) -> Self {
        Self {
            at: Instant::now() + timeout,
            timeout,
        }
    }

    /// The time left, or the error of a deadline that has passed.
    pub(crate) fn remaining(self) -> Result<Duration, LimiterError> {
        match self.at.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(self.expired()),
        }
    }

    /// The error of a call that did not answer by this deadline.
    pub(crate) fn expired(self) -> LimiterError {
        timed_out(self.timeout)
    }

    /// Runs `operation`, or gives up with [`Deadline::expired`] at the deadline.
    pub(crate) async fn bound<T>(
        self,
        operation: impl Future<Output = Result<T, LimiterError>>,
    ) -> Result<T, LimiterError> {
        tokio::time::timeout_at(self.at, operation)
            .await
            .unwrap_or_else(|_| Err(self.expired()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_deadline_bounds_and_then_refuses() {
        let deadline = Deadline::after(Duration::from_millis(20));
        let left = deadline.remaining().expect("20 ms left");
        assert!(left <= Duration::from_millis(20), "{left:?}");
        let hung = deadline.bound(std::future::pending::<Result<(), LimiterError>>());
        assert!(matches!(hung.await, Err(LimiterError::Unavailable(_))));
        assert!(Instant::now() >= deadline.at);
        assert!(deadline.remaining().is_err());
        let later = Deadline::after(Duration::from_millis(1));
        assert_eq!(deadline.min(later), deadline);
        assert_eq!(later.min(deadline), deadline);
    }
}
