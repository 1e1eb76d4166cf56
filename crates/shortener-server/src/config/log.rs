//! `[log]`: what the process logs (a tracing filter) and how (text or JSON lines).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// A tracing filter (`info`, `info,sqlx=warn`, `shortener_server=debug`); `RUST_LOG`,
    /// when set, replaces it.
    pub level: String,
    pub format: LogFormat,
    /// One `info` line per request (target `shortener::request`: method, path, operation,
    /// status, microseconds). Off, a request logs nothing and pays one branch.
    pub requests: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info,sqlx=warn".into(),
            format: LogFormat::Text,
            requests: false,
        }
    }
}

/// How each event is written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// One line per event for people: coloured only when stderr is a terminal.
    #[default]
    Text,
    /// One JSON object per line, for a log collector: `timestamp`, `level`, `target`,
    /// `fields` (the message is `fields.message`) and the spans.
    Json,
}
