//! The `shortener` server: figment configuration, the wiring of configured backends to the
//! ports of `shortener-core`, the poem-openapi HTTP API, and its middleware (rate limits,
//! body limit, problem+json errors, metrics).
//!
//! Key items: [`cli::Cli`] (the command line), [`config::Config`] (the config file), [`api::Api`]
//! (the HTTP API), [`app::serve`]; the backends it wires come from `shortener-backends`.
//! This crate holds no domain rule and no storage or limiter logic: those live in core and
//! the adapter crates.

pub mod api;
pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
mod connections;
mod docs;
pub mod domains;
pub mod export;
pub mod geoip;
mod http;
pub mod identity;
pub mod import;
pub mod invalidate;
pub mod keys;
pub mod limit;
pub mod logging;
mod metrics;
pub mod migrate;
mod ops_listener;
pub mod passwords;
pub mod problem;
pub mod qr;
mod ratelimit_headers;
pub mod ratelimit_server;
mod redirects;
mod robots;
pub mod serving;
pub mod state;
pub mod targets;
pub mod tasks;
pub mod version;
pub mod visit_values;
pub mod visitors;
pub mod watched;
pub mod web;
