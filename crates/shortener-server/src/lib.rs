//! The `shortener` binary's composition root: the command line, the figment
//! configuration and its checks, building the application from them (backends from
//! `shortener-backends`, the HTTP adapter from `shortener-http`), the rate limit service's
//! process, and the subcommands that work on a database (`migrate`, `import`, `export`).
//!
//! Its public surface is what the binary (`main.rs`) and the test kit use: [`cli::Cli`],
//! [`config::Config`], [`app::build`] and [`app::serve`], the subcommands' modules, and
//! [`logging`].
//!
//! A tour of the modules:
//! - [`cli`] is the command line (clap); `main.rs` runs the subcommand it names and turns the outcome into an exit code.
//! - [`config`] is the file's schema and its layers: defaults, the TOML file, `SHORTENER_*` variables.
//!   `config/settings.rs` checks every value once into the types the adapters take ([`config::Settings`]).
//!   `config/backends.rs` turns `[storage]` and `[limiter]` into `shortener-backends`' settings; a key of another kind is an error naming it.
//!   `config/rls.rs` reads envoyproxy/ratelimit's environment variables before ours; `config/theirs.rs` says what becomes of each.
//! - [`app`]: [`app::build`] connects the backends and the link invalidations into `shortener_http::state::Parts`.
//!   [`app::serve`] adds the listeners and connection rules of `[server]`, and serves with `shortener_http::app::serve`.
//!   Its tests build nodes from a configuration and call their routes with no socket: fuzzed bodies, the bulk cost, redirects before and through the router.
//! - [`migrate`], [`import`] and [`export`] open a database by its URL; the file formats are `shortener-transfer`'s.
//! - [`keys`] makes API keys (`shortener keys new`).
//! - [`health`] asks a running service of the configuration whether it is up (`shortener health`, the image's `HEALTHCHECK`).
//! - [`ratelimit_server`] is the rate limit service's process, with the limiter wired as for the HTTP server.
//! - [`logging`] writes the log on stderr, from `[log]`.
//! - The binary's allocator is jemalloc (`main.rs`), which `.cargo/config.toml` sets to give unused pages back after a second.
//!   On Linux it replaces `malloc` too, so SQLite's page caches live in its arenas.
//!
//! This crate holds no domain rule, no storage or limiter logic and no HTTP
//! handler: those live in core, the adapter crates and `shortener-http`.

pub mod app;
pub mod cli;
pub mod config;
pub mod export;
pub mod health;
pub mod import;
pub mod keys;
pub mod logging;
pub mod migrate;
pub mod ratelimit_server;

pub use shortener_http::version;
