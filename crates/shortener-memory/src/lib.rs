//! In-process adapters: a [`LinkRepository`](shortener_core::LinkRepository) and a
//! [`RateLimiter`](shortener_core::RateLimiter) that keep everything in memory.
//!
//! - [`MemoryRepository`]: links in 16 `RwLock`-guarded shards (core's `Sharded`), and an ordered index for listings.
//!   Every operation on a link holds its shard's lock throughout, so `record_visit` checks and counts atomically.
//! - [`MemoryRateLimiter`]: per-(policy, identity) state in 64 shards, each behind its own lock.
//!   The core model decides ([`shortener_core::limiter::token_bucket::step`], `gcra::step` or `fixed_window::step`); it never does the arithmetic itself.
//!   The clock is read inside the shard lock, so time seen by one key never goes back.
//!   Keys whose bucket is full again are dropped, since they carry no information.
//! - Clocks: [`MonotonicClock`] (the default) and [`ManualClock`] for tests, which live in core.
//!
//! Nothing here is shared between processes or survives a restart: the memory limiter
//! limits one node, and the memory repository suits tests and single-node trials.

mod clock;
mod keys;
mod limiter;
mod repository;
mod walks;

pub use clock::{ManualClock, MonotonicClock};
pub use limiter::MemoryRateLimiter;
pub use repository::MemoryRepository;
