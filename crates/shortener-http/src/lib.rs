//! The HTTP driving adapter: the poem-openapi API (`api`), the redirects answered before
//! the router (`redirects`), the page and Swagger UI, and the middleware around them
//! (rate limits and their headers, body limit, one host, single parameters, problem+json,
//! request metrics, connection limits), over the ports of `shortener-core`.
//!
//! Its public surface is what the composition root (`shortener-server`) builds and
//! serves: [`state::AppState`] from [`state::Parts`], [`app::routes`] and [`app::serve`];
//! and the types the configuration parses into: [`serving::Serving`], [`auth`]'s keys
//! and policies, [`domains::Domains`], [`identity::IdentityConfig`], [`targets::Targets`],
//! [`geoip::Countries`], [`visit_values::Tracking`], [`passwords::Passwords`]. Every other
//! module is private.
//!
//! Not here: reading the configuration, choosing backends (`shortener-backends`), the
//! file formats (`shortener-transfer`), the rate limit service (`shortener-rls`), any
//! domain rule (core).

mod api;
pub mod app;
pub mod auth;
mod connections;
mod docs;
pub mod domains;
pub mod geoip;
mod http;
pub mod identity;
pub mod invalidate;
mod limit;
pub mod metrics;
mod ops_listener;
pub mod passwords;
mod problem;
mod qr;
mod ratelimit_headers;
mod redirects;
mod robots;
pub mod serving;
pub mod state;
pub mod targets;
mod tasks;
pub mod version;
pub mod visit_values;
mod visitors;
pub mod watched;
mod web;

pub use connections::ConnectionRules;
pub use problem::PROBLEM_JSON;
