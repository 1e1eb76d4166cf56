//! The `shortener` server: figment configuration, the wiring of configured backends to the
//! ports of `shortener-core`, the poem-openapi HTTP API, and its middleware (rate limits,
//! body limit, problem+json errors, metrics).
//!
//! Its public surface is what the binary (`main.rs`) and the test kit use: [`cli::Cli`]
//! (the command line), [`config::Config`] (the config file), [`app::serve`] and
//! [`app::routes`], the subcommands' modules ([`migrate`], [`import`], [`export`],
//! [`keys`], [`ratelimit_server`]), [`logging`] and [`version`]; every other module is
//! private, so that the compiler finds what nothing uses. The backends it wires come from
//! `shortener-backends`, the file formats from `shortener-transfer`.
//! This crate holds no domain rule and no storage or limiter logic: those live in core and
//! the adapter crates.

mod api;
pub mod app;
mod auth;
pub mod cli;
pub mod config;
mod connections;
mod docs;
mod domains;
pub mod export;
mod geoip;
mod http;
mod identity;
pub mod import;
mod invalidate;
pub mod keys;
mod limit;
pub mod logging;
mod metrics;
pub mod migrate;
mod ops_listener;
mod passwords;
mod problem;
mod qr;
mod ratelimit_headers;
pub mod ratelimit_server;
mod redirects;
mod robots;
mod serving;
mod state;
mod targets;
mod tasks;
pub mod version;
mod visit_values;
mod visitors;
mod watched;
mod web;
