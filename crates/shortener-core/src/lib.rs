//! The domain of the shortener, its ports, the [`Shortener`] service, and the reference rate-limiter model.
//!
//! The domain:
//! - Newtypes that hold only valid values, built with `parse()`: [`ShortCode`], [`Alias`], [`TargetUrl`], [`Owner`], [`Domain`].
//! - A [`Link`] (`link.rs`) is found by its [`LinkKey`] (`key.rs`): its domain and its code, which is unique per domain.
//!   The default domain is stored as the empty text.
//! - Each link's redirect options (`options.rs`): [`LinkOptions`], [`RedirectStatus`], [`Title`], [`PasswordHash`].
//!   An option left unset takes the service's default at each redirect.
//!   [`OptionColumns`] is their stored form, which both SQL adapters read and write.
//! - A redirect reads a [`Redirect`]: a [`Plain`] link's target, expiry and response options, or any other link whole.
//! - Link management (`manage.rs`): [`Access`], [`LinkPatch`], [`ListQuery`] with its keyset [`ListCursor`], [`VisitTally`].
//! - [`Tags`], and the claims of idempotent creates ([`IdempotencyKey`], [`Claim`]).
//! - Visit [`dimensions`]: [`Dimension`], [`DimensionTally`], [`TopQuery`].
//!   [`dimensions::placed`] is the one rule of the cap of top values, which every adapter applies.
//! - The target rules ([`TargetRules`], [`DenyList`]): which hosts a link may point at.
//! - [`RedactedUrl`]: the one type of a connection URL; its `Display` and `Debug` hide secrets.
//!
//! The ports, as native async traits that adapters implement:
//! - [`LinkRepository`] (storage), [`CodeGenerator`] (new codes), [`RateLimiter`] (admission) and [`Clock`].
//! - [`MultiRateLimiter`]: several buckets decided all or nothing.
//! - Each operation has its own error enum ([`InsertError`], [`CreateError`], [`ResolveError`], [`UpdateError`]).
//!   Adapters map native errors onto [`RepositoryError`] and [`LimiterError`].
//!
//! The [`Shortener`] service creates (collision retry, taken aliases), resolves (expiry, visit limits) and edits links.
//! A link behind a password resolves to [`ResolveError::Locked`], counting no visit, until the caller proves its hash.
//! Its [`VisitBuffer`] (`visits.rs`) keeps visits and their values in memory between flushes, in short lists per link.
//! `flush_visits` and `flush_values` write them in batches of links, so a flush holds one batch, not all.
//!
//! The limiter model ([`limiter`]), in integer microseconds:
//! - `token_bucket`, `gcra` and `fixed_window` are pure step functions; every limiter adapter is checked against them.
//! - `all` decides several buckets all or nothing (`step_all`).
//! - `fallback` is [`limiter::Fallback`]: a [`SharedRateLimiter`] (Redis) behind a circuit breaker, answering as `on_error` says while it fails.
//!   With `on_error = "local"`, a [`LocalRateLimiter`] (memory) admits this node's share, `capacity / N` and `rate / N`.
//!   Local buckets start empty at each spell of failures.
//!   What a node admits alone is a debt, taken by the next shared call on that key and never forgiven.
//!   The heartbeat of `shortener-backends` tells it N.
//! - `refusals` is [`limiter::RefusalCache`]: a refused client is refused locally until it may be admitted.
//! - `per_bucket` bounds what a limiter keeps per (policy, identity): refusals, and the Redis limiter's leases.
//! - `lease` holds a policy's lease terms (`Policy::with_lease`) and the reserve that keeps the bound.
//!
//! Machinery that adapters share, written once:
//! - [`Migrations`]: the one migration runner (status, pending, modified, apply).
//!   A database adapter only says which migrations it knows, which are applied, and how to apply them.
//! - [`forward_link_repository!`]: the pass-through methods of a repository that wraps another.
//!   A wrapper (the cache, the choice of backend, a test double) writes only the methods it changes.
//! - [`Sharded`]: the one shard map, under the visit buffer, the limiters' states and the memory adapters.
//!   Its hasher, [`FastState`] (foldhash, seeded at random), also hashes the maps a request touches ([`FastMap`]).
//!
//! Not here: IO beyond the OS random source for codes; no runtime, database, network or HTTP.
//! Adapters live in their own crates, and this one depends on none of ours.

pub mod cause;
mod codes;
pub mod dimensions;
mod domain;
mod existing;
mod forward;
mod idempotency;
mod key;
mod keys;
pub mod limiter;
mod link;
mod manage;
mod migrations;
mod options;
mod redact;
mod redirect;
mod repository;
pub mod rules;
mod service;
mod sharded;
mod stored;
mod tags;
mod targets;
mod visits;

pub use cause::Cause;
pub use codes::{AlphabetCodeGenerator, CodeGenerator, CodeGeneratorConfigError};
pub use dimensions::{DIRECT, Dimension, DimensionTally, OTHER, TopQuery, ValueCount, VisitScope};
pub use domain::{Alias, Owner, ParseError, RESERVED, ShortCode, TargetUrl};
#[doc(hidden)]
pub use forward::__private;
pub use idempotency::{Claim, ClaimRequest, IDEMPOTENCY_TTL, IdempotencyKey, StoredResponse};
pub use key::{Domain, LinkKey};
pub use keys::{KeyColumns, KeyInsertError, KeyStore, KeyTimes, StoredKey};
pub use limiter::{
    Algorithm, AllDecision, Clock, Decision, Demand, Lease, LeaseError, LimiterError,
    LocalRateLimiter, MultiRateLimiter, Policy, PolicyError, RateLimiter, SharedRateLimiter,
    Spending, WindowCount, WindowCounter, WindowHit,
};
pub use link::{Link, NewLink};
pub use manage::{
    Access, DayVisits, LinkPatch, ListCursor, ListOrder, ListQuery, ListTotals, ListWithin,
    VisitTally,
};
pub use migrations::{Migration, MigrationStatus, Migrations};
pub use options::{
    LinkOptions, MAX_TITLE_CHARS, OptionColumns, PASSWORD_MEMORY_KIB, PASSWORD_PASSES,
    PasswordHash, RedirectStatus, Title,
};
pub use redact::RedactedUrl;
pub use redirect::{Plain, Redirect};
pub use repository::{InsertError, LinkRepository, RepositoryError, VisitOutcome};
pub use service::{CreateError, CreateLink, ResolveError, Shortener, UpdateError};
pub use sharded::{FastMap, FastState, Sharded};
pub use stored::{add_stored, in_order_of, inserted_in_order};
pub use tags::{MAX_TAG_CHARS, MAX_TAGS, Tag, TagCount, Tags};
pub use targets::{
    DenyEntryError, DenyFileError, DenyList, TargetRefusal, TargetRules, unicode_form,
};
pub use visits::{DEFAULT_TOP_VALUES, VisitBuffer, Visitor};
