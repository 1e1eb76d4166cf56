//! Building the application from a checked configuration, and serving it until a signal:
//! the composition root of `shortener serve`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use shortener_core::Shortener;
use shortener_http::ConnectionRules;
use shortener_http::app::Listen;
use shortener_http::state::{AppState, Parts};
use shortener_redis::LinkInvalidations;

use crate::config::Settings;

pub use shortener_http::app::routes;

/// Connects the backends of `settings` and builds the shared state.
///
/// # Errors
/// When a backend cannot be reached or fails its start-up checks.
pub async fn build(settings: Settings) -> anyhow::Result<Arc<AppState>> {
    let cache = shortener_cache::CacheConfig {
        capacity: settings.config.cache.capacity,
        ttl: Duration::from_secs(settings.config.cache.ttl_secs),
        negative_ttl: Duration::from_secs(settings.config.cache.negative_ttl_secs),
    };
    let repository = shortener_backends::repository(&settings.storage, cache).await?;
    let limiter = shortener_backends::limiter(settings.algorithm, settings.redis.as_ref()).await?;
    let invalidations = invalidations(&settings)?;
    let top_values = settings.config.visits.top_values;
    let passwords =
        shortener_http::passwords::Passwords::new(settings.config.links.password_memory_mb);
    let Settings {
        serving,
        policies,
        api_keys,
        generator,
        targets,
        countries,
        ..
    } = settings;
    Ok(AppState::new(Parts {
        serving,
        shortener: Shortener::new(repository, generator).with_top_values(top_values),
        limiter,
        policies,
        api_keys,
        targets,
        passwords,
        countries,
        invalidations,
    }))
}

/// Builds the application of `config` and serves it until `shutdown` completes (see
/// `shortener_http::app::serve`).
///
/// # Errors
/// When the backends or the listening sockets cannot be set up.
pub async fn serve(
    config: Settings,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let server = config.config.server.clone();
    tracing::info!(
        storage = ?config.storage,
        limiter = ?config.config.limiter.kind,
        "starting"
    );
    let (ipv4_prefix, ipv6_prefix) = (
        config.config.limiter.ipv4_prefix,
        config.config.limiter.ipv6_prefix,
    );
    let state = build(config).await?;
    let listen = Listen {
        bind: server.bind,
        ops_bind: server.ops_bind,
        connections: ConnectionRules {
            max_connections: server.max_connections,
            max_per_client: server.max_connections_per_client,
            header_timeout: Duration::from_millis(server.header_read_timeout_ms),
            keep_alive: Duration::from_millis(server.keep_alive_timeout_ms),
            max_age: Duration::from_millis(server.max_connection_age_ms),
            idle: Duration::from_millis(server.idle_timeout_ms),
            http2: server.http2,
            exempt: server.trusted_proxies.clone(),
            ipv4_prefix,
            ipv6_prefix,
        },
    };
    shortener_http::app::serve(state, listen, shutdown).await
}

/// The channel on which nodes tell each other that a link changed: the limiter's Redis,
/// when the limiter is on Redis; none otherwise (a single node, or nodes whose caches
/// expire after `cache.ttl_secs`).
///
/// # Errors
/// When the Redis URLs or CA file cannot be used (the limiter reports the same).
fn invalidations(settings: &Settings) -> anyhow::Result<Option<LinkInvalidations>> {
    let Some(limiter) = &settings.redis else {
        return Ok(None);
    };
    if settings.config.cache.capacity == 0 {
        return Ok(None);
    }
    Ok(Some(LinkInvalidations::new(&limiter.redis).context(
        "cannot set up link invalidations on the limiter's Redis",
    )?))
}

/// Completes on SIGINT or SIGTERM.
///
/// The handlers are installed when this is called, not when the future is first polled:
/// the server polls it only once it serves, and a SIGTERM that came between the listener's
/// bind and then would otherwise kill the process outright, with no drain and no checkpoint.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send {
    #[cfg(unix)]
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    // Registered now too: tokio's ctrl_c installs its handler at the call.
    let interrupt = tokio::signal::ctrl_c();
    async move {
        #[cfg(unix)]
        let terminate = async {
            match terminate {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        tokio::select! {
            _ = interrupt => {},
            () = terminate => {},
        }
        tracing::info!("shutdown signal received, draining");
    }
}

#[cfg(test)]
mod tests;
