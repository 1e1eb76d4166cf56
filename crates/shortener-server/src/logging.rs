//! The process's log on stderr, from `[log]`: the filter of `log.level` (or `RUST_LOG`),
//! as text (ANSI colours only when stderr is a terminal, so a file or a pipe gets plain
//! text) or as JSON lines (`log.format = "json"`).
//!
//! What it is not: a request log. Events are the ones the code emits (start, errors,
//! reloads, state changes); no line is written per request.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Installs the global subscriber. `log.level` was checked with the config; a `RUST_LOG`
/// that is not a filter falls back to it.
pub fn init(config: &LogConfig) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match config.format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().init(),
    }
}
