//! In-process adapters: a [`LinkRepository`](shortener_core::LinkRepository) and a
//! [`RateLimiter`](shortener_core::RateLimiter) that keep everything in memory.
//!
//! - [`MemoryRepository`]: links in sharded `RwLock` maps; `record_visit` checks and counts
//!   under one write lock, so it is atomic.
//! - [`MemoryRateLimiter`]: per-(policy, identity) state in 64 mutex-guarded shards,
//!   decided by the core model ([`shortener_core::limiter::token_bucket::step`] or
//!   [`shortener_core::limiter::gcra::step`]); it never does the arithmetic itself. The
//!   clock is read inside the shard lock, so time seen by one key never goes back, and
//!   keys whose bucket is full again are dropped, since they carry no information.
//! - Clocks: [`MonotonicClock`] (the default) and [`ManualClock`] for tests.
//!
//! Nothing here is shared between processes or survives a restart: the memory limiter
//! limits one node, and the memory repository suits tests and single-node trials.

mod clock;
mod limiter;
mod repository;

pub use clock::{ManualClock, MonotonicClock};
pub use limiter::MemoryRateLimiter;
pub use repository::MemoryRepository;
