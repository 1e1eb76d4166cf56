//! The HTTP driving adapter: the poem-openapi API (`api`), the redirects answered before
//! the router (`redirects`), the page and Swagger UI, and the middleware around them
//! (rate limits and their headers, body limit, one host, single parameters, problem+json,
//! request metrics, connection limits), over the ports of `shortener-core`.
//!
//! Its public surface is what the composition root (`shortener-server`) builds and
//! serves: [`state::AppState`] from [`state::Parts`], [`app::routes`] and [`app::serve`];
//! and the types the configuration parses into: [`serving::Serving`], [`auth`]'s keys
//! and policies, [`domains::Domains`], [`identity::IdentityConfig`], [`targets::Targets`],
//! [`geoip::Countries`], [`visit::values::Tracking`], [`passwords::Passwords`],
//! [`watched`] files, [`ConnectionRules`]; and [`metrics`] and [`version`], which the rate
//! limit service's process shares. Every other module is private.
//!
//! A tour of the modules:
//! - `app.rs`: the routes, outermost first `NoSniff`, `OneHost`, `RequestTimeout`, the early redirects, `Measured`, the router.
//!   [`app::serve`] runs them on the listeners, then drains, flushes visits and closes storage at a signal.
//! - `state.rs` is what handlers share; `serving.rs` holds the configuration values requests read, parsed once by the server.
//! - `service/` is the application service: every operation the APIs ask of the node (create, edit, redirect, unlock, count a visit), as methods of `AppState`.
//!   A handler parses, calls one, and answers; no other file holds an `impl AppState` but `state.rs`'s constructor.
//! - `tasks.rs` runs the background tasks under one shutdown signal: visit and value flushes, heartbeat, invalidations, file watchers.
//! - `service/keys.rs` reads the API keys in storage again every half second, into `auth.rs`'s snapshot; `api/keys.rs` makes and revokes them.
//! - `auth.rs` (keys, scopes, tier policies) and `api_error.rs` (`ApiError`, every error of the API as its problem+json body) are used by the rest.
//! - `api/` holds the operations, one file per group (`links`, `bulk`, `listing`, `tags`, `visits`, `qr`, `redirect`, `ops`, `unlock`, `resolve`, `keys`, `pages`).
//!   `api/rules.rs` is redirect rules in bodies and in the document; `src/visit_rules.rs` evaluates them on a request (`RequestFacts`) and says where a visit goes (`destination`).
//!   `fields.rs`, `body.rs` and `json.rs` read bodies and name each bad field; `service/create.rs` turns them into `CreateLink` and `LinkPatch`.
//! - `limit.rs` is the rate-limit middleware; it never calls into `api`, which hands it the cost functions.
//!   `ratelimit_headers.rs` writes `RateLimit-Policy` once per policy (kept in [`auth::Policies`]) and `RateLimit` per decision.
//!   `identity.rs` says who an anonymous client is, from the peer and the one configured forwarding header.
//! - `http/` holds the other middleware, one job per file, and `header_text`, which reads headers by constant names.
//! - `redirects.rs` answers `GET` and `HEAD` of a code before the router, with the `redirect` operation's middleware and handler.
//!   It takes only a valid code that is not one of the server's own paths (`RESERVED`).
//! - `connections.rs` bounds connections in number and per client.
//!   `connections/guarded.rs` bounds each stream's head, keep-alive, age and idle time on one timer.
//!   `listening.rs` binds the listener and, at a stop, closes it without resetting a connection the kernel already made.
//! - `domains.rs` is the domains a node serves; `robots.rs` answers `/robots.txt` from a domain's crawlable links.
//! - `visit/` reads a visit: `values.rs` reduces it to what is counted (the referring host, the browser, OS and device of its `User-Agent`), `bots.rs` tells bots apart.
//!   `src/geoip.rs` gives a visit's country from the operator's MaxMind DB file.
//!   `service/visits.rs` counts an admitted visit's values; `api/visits.rs` answers the statistics.
//! - `passwords.rs` hashes and checks link passwords (argon2id) on the blocking pool, a bounded number at a time.
//!   `api/unlock.rs` is the unlock page and its form; `service/unlock.rs` takes the `unlock` and `unlock_link` tokens in one `acquire_all` before any check.
//! - `targets.rs` is the deny list as it stands; `watched.rs` polls it and the country database for changes.
//! - `qr.rs` draws QR codes off the async workers and caches them.
//! - `invalidate.rs` drops cached links that other nodes changed; `ops_listener.rs` serves `server.ops_bind`; `metrics.rs` is `/metrics`.
//! - `compat/` speaks other shorteners' APIs over the same service as `api/` (`compat/shlink/`: Shlink's REST API under `/rest/`, when `compat.shlink` is on).
//! - `web.rs` serves the page from `web/` under a strict Content-Security-Policy; the page talks to the public API only.
//! - `version.rs`, with `build.rs`, is the version and commit that `--version`, the OpenAPI document and `shortener_build_info` report.
//!
//! How the invariants are kept:
//! - Visit values per link, day and dimension stay within `visits.top_values`: the buffer caps them, and each adapter places a flush with core's `dimensions::placed`.
//! - A body is read once; `api/json.rs` refuses a key named twice, and a bulk create's limit counts the parsed items (`bulk_cost`).
//! - Each password hash or check takes a place of [`passwords::Passwords`], which moves into the blocking task.
//!   A stored hash outside core's `PasswordHash::check_cost` band is never run.
//!
//! Not here: reading the configuration, choosing backends (`shortener-backends`), the
//! file formats (`shortener-transfer`), the rate limit service (`shortener-rls`), any
//! domain rule (core).

mod api;
mod api_error;
pub mod app;
pub mod auth;
mod compat;
mod connections;
mod docs;
pub mod domains;
pub mod geoip;
mod http;
pub mod identity;
mod invalidate;
mod limit;
mod listening;
pub mod metrics;
mod ops_listener;
pub mod passwords;
mod qr;
mod ratelimit_headers;
mod redirects;
mod robots;
mod service;
pub mod serving;
pub mod state;
pub mod targets;
mod tasks;
pub mod version;
pub mod visit;
mod visit_rules;
pub mod watched;
mod web;

pub use api_error::PROBLEM_JSON;
pub use connections::ConnectionRules;
