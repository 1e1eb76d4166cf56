//! The domain of the shortener, its three ports, and the reference rate-limiter model.
//!
//! - Domain newtypes that can only hold valid values: [`ShortCode`], [`Alias`],
//!   [`TargetUrl`], [`Domain`], built with `parse()`, and the [`Link`] they make up, with
//!   its own redirect options ([`LinkOptions`]). A link is found by its [`LinkKey`]: its
//!   domain and its code, which is unique per domain. A redirect reads a [`Redirect`]:
//!   the whole link, or for most links only what a redirect needs (a cache holds many).
//! - Ports, as native async traits that adapters implement: [`LinkRepository`] (storage),
//!   [`CodeGenerator`] (new codes) and [`RateLimiter`] (admission), plus a [`Clock`].
//!   Each operation has its own error enum; adapters map native errors onto its variants.
//! - The [`Shortener`] service: create (collision retry, taken aliases) and resolve
//!   (expiry, visit limits) over any repository and generator.
//! - The target rules ([`TargetRules`], [`DenyList`]): which hosts a link may point at.
//! - The limiter model: pure functions [`limiter::token_bucket::step`] and
//!   [`limiter::gcra::step`] in integer microseconds. Every limiter adapter (memory, Redis
//!   Lua) is checked against them.
//!
//! - [`Migrations`]: the one migration runner (status, pending, modified, apply) over
//!   what each database adapter says it knows and has applied.
//! - [`forward_link_repository!`]: the pass-through methods of a repository that wraps
//!   another, so that a wrapper writes only the methods it changes.
//! - [`Sharded`]: the one shard map (a value split over locks by a key's hash) that the
//!   in-process state of core and of the memory adapters is built on.
//!
//! This crate does no IO beyond reading the OS random source for codes: no runtime, no
//! database, no network, no HTTP. Adapters live in their own crates.

pub mod cause;
mod codes;
pub mod dimensions;
mod domain;
mod forward;
mod idempotency;
mod key;
pub mod limiter;
mod link;
mod manage;
mod migrations;
mod options;
mod redact;
mod redirect;
mod repository;
mod service;
mod sharded;
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
pub use limiter::{
    Algorithm, AllDecision, Clock, Decision, Demand, Lease, LeaseError, LimiterError,
    LocalRateLimiter, MultiRateLimiter, Policy, PolicyError, RateLimiter, SharedRateLimiter,
};
pub use link::{Link, NewLink};
pub use manage::{Access, DayVisits, LinkPatch, ListCursor, ListQuery, VisitTally};
pub use migrations::{Migration, MigrationStatus, Migrations};
pub use options::{
    LinkOptions, MAX_TITLE_CHARS, OptionColumns, PASSWORD_MEMORY_KIB, PASSWORD_PASSES,
    PasswordHash, RedirectStatus, Title,
};
pub use redact::RedactedUrl;
pub use redirect::{Plain, Redirect};
pub use repository::{
    InsertError, LinkRepository, RepositoryError, VisitOutcome, add_stored, in_order_of,
    inserted_in_order,
};
pub use service::{CreateError, CreateLink, ResolveError, Shortener, UpdateError};
pub use sharded::{FastMap, FastState, Sharded};
pub use tags::{MAX_TAG_CHARS, MAX_TAGS, Tag, TagCount, Tags};
pub use targets::{
    DenyEntryError, DenyFileError, DenyList, TargetRefusal, TargetRules, unicode_form,
};
pub use visits::{DEFAULT_TOP_VALUES, VisitBuffer, Visitor};
