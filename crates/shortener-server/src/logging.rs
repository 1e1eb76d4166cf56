//! The process's log, from `[log]`: events on stderr, filtered by `log.level` (or
//! `RUST_LOG`), as text (ANSI colours only when stderr is a terminal, so a file or a pipe
//! gets plain text) or as JSON lines (`log.format = "json"`); and on stdout the lines
//! that say where the process listens (target [`LISTENING`]), whatever the filter, since
//! scripts and tests wait for them.
//!
//! Under JSON every line the process writes is a JSON object, because a log collector
//! drops or mis-parses any other: the listening lines are events of the same format, the
//! warnings and errors `main` says go through [`warn`] and [`error`], and a panic is
//! logged as an error event.
//!
//! What it is not: a request log. Events are the ones the code emits (start, errors,
//! reloads, state changes); a line per request only with `log.requests`.

use std::fmt;
use std::io::IsTerminal as _;

use shortener_http::app::LISTENING;
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::{FilterExt as _, filter_fn};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

use crate::config::{LogConfig, LogFormat};

/// Installs the global subscriber. `log.level` was checked with the config; a `RUST_LOG`
/// that is not a filter falls back to it.
pub fn init(config: &LogConfig) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let logged = filter.and(filter_fn(|meta| meta.target() != LISTENING));
    let listening = filter_fn(|meta| meta.target() == LISTENING);
    let registry = tracing_subscriber::registry();
    match config.format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_filter(logged),
            )
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stdout)
                    .with_ansi(false)
                    .event_format(MessageOnly)
                    .with_filter(listening),
            )
            .init(),
        LogFormat::Json => {
            registry
                .with(
                    tracing_subscriber::fmt::layer()
                        .json()
                        .with_writer(std::io::stderr)
                        .with_filter(logged),
                )
                .with(
                    tracing_subscriber::fmt::layer()
                        .json()
                        .with_writer(std::io::stdout)
                        .with_filter(listening),
                )
                .init();
            std::panic::set_hook(Box::new(log_panic));
        }
    }
}

/// Says a warning of `main`'s on stderr: an event of the log under JSON, else the plain
/// line it has always been (`shortener: warning: TEXT`).
pub fn warn(format: LogFormat, text: &str) {
    match format {
        LogFormat::Text => eprintln!("shortener: warning: {text}"),
        LogFormat::Json => tracing::warn!("{text}"),
    }
}

/// Says an error of `main`'s on stderr: an event of the log under JSON, else the plain
/// line it has always been (`shortener: TEXT`).
pub fn error(format: LogFormat, text: &str) {
    match format {
        LogFormat::Text => eprintln!("shortener: {text}"),
        LogFormat::Json => tracing::error!("{text}"),
    }
}

/// The panic as an error event, in place of the default hook's plain lines.
fn log_panic(info: &std::panic::PanicHookInfo<'_>) {
    let thread = std::thread::current();
    let thread = thread.name().unwrap_or("unnamed");
    let backtrace = std::backtrace::Backtrace::capture();
    if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
        tracing::error!(thread, %backtrace, "{info}");
    } else {
        tracing::error!(thread, "{info}");
    }
}

/// The listening lines as plain text: the message alone, as they were printed before
/// they were events, so that what waits for `shortener listening on ` still finds it.
struct MessageOnly;

impl<S, N> FormatEvent<S, N> for MessageOnly
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        context.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
