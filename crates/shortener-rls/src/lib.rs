//! The rate limit service for Envoy: `envoy.service.ratelimit.v3.RateLimitService`, a
//! second driving adapter beside the HTTP server, deciding through the same
//! `MultiRateLimiter` port (the Redis Lua scripts, the `Fallback`, the refusal cache).
//!
//! - [`limits`]: envoyproxy/ratelimit's YAML files as a descriptor tree (a pure function of
//!   the files' texts), and the matcher of a request's descriptors against it.
//!   `yaml.rs` reads one file: every key theirs accepts, our `algorithm:`, and no other.
//!   `limits/matcher.rs` finds a descriptor's limit as their `GetLimit` does; `limits/policy.rs` turns a limit into a policy.
//! - [`reload`]: the files' directory in their layout, and its hot reload.
//!   A watcher reads the directory every 250 ms and swaps in a new tree whole; a file that does not load keeps the last good tree.
//! - [`service`]: the gRPC service ([`RateLimitServer`]): a request's enforced descriptors are decided in one
//!   all-or-nothing call; every answer fills one status per descriptor.
//! - `metadata`: the answer's dynamic metadata (their `RESPONSE_DYNAMIC_METADATA`), and descriptors' `metadata:` as protobuf.
//! - [`client`]: requests built from `(key, value)` entries, for callers of the service.
//! - `metrics`: their metric names, through the `metrics` facade.
//!
//! Not here: the process (listeners, configuration, the limiter's wiring, `/metrics`),
//! which is `shortener ratelimit-server` in the server crate.

mod bounds;
pub mod client;
pub mod headers;
pub mod limits;
mod metadata;
mod metrics;
pub mod reload;
pub mod service;
mod settings;
mod windows;
mod yaml;

pub use client::{descriptor, request};
pub use envoy_types::pb::envoy::extensions::common::ratelimit::v3 as descriptor_proto;
pub use envoy_types::pb::envoy::service::ratelimit::v3 as proto;
/// `google.protobuf`: the `Struct` of an answer's `dynamic_metadata`.
pub use envoy_types::pb::google::protobuf;
pub use limits::{Limits, LoadError};
pub use reload::{LimitsHandle, RuntimeDirectory};
pub use service::{RateLimitServer, ServiceSettings, WhenUnavailable};
pub use settings::WindowSettings;
