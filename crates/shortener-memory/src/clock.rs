//! The clocks of the in-process limiter, which live in core beside the [`Clock`] trait
//! (the fallback and the refusal cache there use them too).
//!
//! [`Clock`]: shortener_core::Clock

pub use shortener_core::limiter::clock::{ManualClock, MonotonicClock};
