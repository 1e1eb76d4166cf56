//! The `shortener` binary's composition root: the command line, the figment
//! configuration and its checks, building the application from them (backends from
//! `shortener-backends`, the HTTP adapter from `shortener-http`), the rate limit service's
//! process, and the subcommands that work on a database (`migrate`, `import`, `export`).
//!
//! Its public surface is what the binary (`main.rs`) and the test kit use: [`cli::Cli`],
//! [`config::Config`], [`app::build`] and [`app::serve`], the subcommands' modules, and
//! [`logging`]. This crate holds no domain rule, no storage or limiter logic and no HTTP
//! handler: those live in core, the adapter crates and `shortener-http`.

pub mod app;
pub mod cli;
pub mod config;
pub mod export;
pub mod import;
pub mod keys;
pub mod logging;
pub mod migrate;
pub mod ratelimit_server;

pub use shortener_http::version;
