//! Behavioural stories for the ports of `shortener-core`, one per port, generic over the
//! implementation, so that every adapter is held to the same contract.
//!
//! - [`repository`]: scenarios for any [`LinkRepository`](shortener_core::LinkRepository),
//!   stamped out as tests by [`link_repository_tests!`].
//!   [`manage`] (ownership, edits, listings, visit statistics), [`options`] (each link's
//!   redirect options, the crawlable list), [`tags`] (filters and counts),
//!   [`idempotency`] and [`dimensions`] (visit values under their cap) add the scenarios of link management.
//!   [`domains`] adds those of codes unique per domain, and [`keys`] those of the
//!   [`KeyStore`](shortener_core::KeyStore) every repository is too, stamped out by the
//!   same macro.
//! - [`limiter`]: scenarios for any real-time [`RateLimiter`](shortener_core::RateLimiter),
//!   stamped out for both algorithms by [`rate_limiter_tests!`].
//! - [`migrations`]: the shape the database adapters' migration stories read.
//! - [`strategies`]: proptest strategies (policies, request histories) for the
//!   differential tests that compare an adapter with the core model.
//!
//! Every scenario draws random codes and identities, so scenarios may share one database
//! or one Redis and run in parallel. Concurrent scenarios run their calls on separate OS
//! threads when called on a multi-thread tokio runtime (the macros use one), and as
//! interleaved futures otherwise.
//!
//! This crate does not build adapters, start servers or pick a backend: the caller's
//! `make` function does that. It checks behaviour, not timing.

pub mod dimensions;
pub mod domains;
pub mod idempotency;
pub mod keys;
pub mod limiter;
mod macros;
pub mod manage;
pub mod migrations;
pub mod options;
pub mod repository;
pub mod strategies;
pub mod tags;

/// What the exported macros expand to; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use shortener_core::{Algorithm, KeyStore, LinkRepository, RateLimiter};
    pub use tokio;
}
