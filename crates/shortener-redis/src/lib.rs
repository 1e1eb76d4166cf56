//! The Redis rate limiter: [`RedisRateLimiter`] implements the core's `RateLimiter` port
//! with Lua scripts (`lua/token_bucket.lua` or `lua/gcra.lua`), one call per decision or
//! per batch of concurrent decisions on one bucket, so that any number of app nodes
//! sharing a Redis, or a Redis Cluster, admit exactly what the core model
//! (`shortener_core::limiter`) admits for one bucket.
//!
//! - The scripts read Redis's own clock (`TIME`, integer microseconds): app nodes' clocks do
//!   not matter. They keep one key per bucket, `{prefix}{{identity}}:{policy}`, holding one
//!   integer (72 bytes per key, for keys up to 28 bytes), which expires when the bucket is
//!   full again. A refused request writes nothing.
//!   The identity is the key's hash tag; the scripts' explicit-time argument exists for tests only.
//! - A script replies with the bucket's credit after the decision, and `Decision::from_credit` (core) makes the whole decision.
//! - Scripts are called by EVALSHA (`scripts/`); on NOSCRIPT the call is repeated as EVAL of the source.
//!   Nothing ran, so no decision is doubled.
//! - [`RedisConfig`] picks standalone (a deadpool of multiplexed connections) or cluster (the
//!   redis crate's cluster client); every call is bounded by its `timeout`, after which it
//!   fails with `LimiterError::Unavailable`, as do connection and IO errors (`backend.rs`, `error.rs`).
//! - `rediss://` URLs connect over TLS with rustls (ring), checking the server against
//!   [`RedisConfig::tls_ca_file`] or the system's CA store (which `SSL_CERT_FILE` replaces);
//!   a failed handshake is `LimiterError::Misconfigured`, never a hang.
//! - Concurrent decisions on one bucket are coalesced (`coalesce.rs`): while a call for
//!   it is in flight, the next ones queue and leave together in one batch call, which the
//!   script decides one after another at one instant, as if they had arrived at once.
//! - Each decision carries a `Deadline` (`deadline.rs`), fixed before it queues.
//!   A call is bounded by the earliest deadline of its decisions, under one timer, so a queued decision needs no timer of its own.
//! - [`RedisRateLimiter::acquire_audited`] returns an [`AuditRecord`] (Redis's time and a
//!   per-key version, counted in a second key) so that tests can replay a key's history
//!   through the model.
//! - [`LinkInvalidations`] carries "this link changed" between nodes over pub/sub, so that
//!   every node drops its cached copy of an edited or deleted link at once.
//! - [`RedisRateLimiter::heartbeat`] runs `lua/heartbeat.lua`, which counts live nodes on Redis's clock.
//! - A policy with lease terms (`shortener_core::limiter::lease`) is decided on a bucket
//!   smaller by the lease's reserve, from which a busy client's tokens are leased ahead of
//!   demand and admitted in memory: a call per lease, not per request, and still never more than the policy's bound across nodes.
//!   `lease_store.rs` keeps what this node leased of each bucket and says which request fetches the next lease.
//!   `leased_policy.rs` makes that call, a batch of requests of cost 1, so the scripts need no lease of their own.
//! - All-or-nothing decisions over several buckets of one group (`all.rs`,
//!   `lua/all_or_nothing.lua`): one script call takes every cost or none. The group is
//!   the hash tag, so a group's buckets share a cluster slot.
//! - Calendar-window counts in envoyproxy/ratelimit's keys and increments (`calendar.rs`,
//!   `lua/calendar_window.lua`), for the rate limit service's fixed windows: one call per
//!   request, its keys named for the window that holds now on Redis's clock.
//!
//! This crate does not decide what to do when Redis is down (fail open, fail closed or a
//! local bucket): it reports `Unavailable` promptly, and the core's `Fallback` decides.
//! It does not retry a failed call either, since a retry could double a decision.

mod all;
mod backend;
mod calendar;
mod coalesce;
mod config;
mod connected;
mod deadline;
mod error;
mod invalidation;
mod key;
mod lease_store;
mod leased_policy;
mod limiter;
mod scripts;
mod tls;

pub use config::RedisConfig;
pub use invalidation::LinkInvalidations;
pub use limiter::RedisRateLimiter;
pub use scripts::AuditRecord;
