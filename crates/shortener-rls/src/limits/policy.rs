//! A limit's policy from its `requests_per_unit`, `unit` and algorithm, and our
//! `algorithm:` key.

use shortener_core::limiter::fixed_window;
use shortener_core::{Algorithm, Policy};

use super::Unit;

/// The policy of `requests` per `unit`: for a token bucket (or GCRA), a burst of
/// `requests` refilled at that rate, the refill rounded so that it is never faster; for a
/// fixed window, `requests` per window of exactly one `unit` (on Redis's clock, aligned on
/// the calendar as theirs). `Ok(None)` for 0, which refuses everything.
///
/// # Errors
/// A rate above what the limiter decides exactly (50 000 per second), or a fixed window
/// that could not be exactly one unit long (more than a million requests per unit that do
/// not divide it).
pub fn policy_for(
    bucket: &str,
    requests: u32,
    unit: Unit,
    algorithm: Algorithm,
) -> Result<Option<Policy>, String> {
    if requests == 0 {
        return Ok(None);
    }
    let unit_us = unit.seconds() * 1_000_000;
    let too_fast = || {
        format!(
            "requests_per_unit {requests} per {} is above 50000 per second, more than \
             this limiter decides exactly",
            unit.name()
        )
    };
    if algorithm != Algorithm::FixedWindow {
        let interval_us = unit_us.div_ceil(u64::from(requests));
        return Policy::from_interval(bucket, u64::from(requests), interval_us)
            .map(Some)
            .map_err(|_| too_fast());
    }
    // Rounded down, so that the window (whole seconds, rounded up) is the unit itself.
    let interval_us = unit_us / u64::from(requests);
    let policy =
        Policy::from_interval(bucket, u64::from(requests), interval_us).map_err(|_| too_fast())?;
    if fixed_window::window_us(&policy) != unit_us {
        return Err(format!(
            "requests_per_unit {requests} per {} cannot be counted in a fixed window of \
             exactly one {}",
            unit.name(),
            unit.name()
        ));
    }
    Ok(Some(policy))
}

/// Our `algorithm:` key: `token_bucket`, `gcra` or `fixed_window`.
///
/// # Errors
/// Any other name, with the names it can be.
pub fn parse_algorithm(name: &str) -> Result<Algorithm, String> {
    match name {
        "token_bucket" => Ok(Algorithm::TokenBucket),
        "gcra" => Ok(Algorithm::Gcra),
        "fixed_window" => Ok(Algorithm::FixedWindow),
        other => Err(format!(
            "unknown algorithm '{other}' (token_bucket, gcra or fixed_window)"
        )),
    }
}
