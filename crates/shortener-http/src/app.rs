//! The routes of the service, and serving them until a signal: the listeners, the
//! background tasks, and the drain, flush and close of a graceful stop.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use poem::listener::Acceptor;
use poem::{Endpoint, EndpointExt, Response, Route, Server};

use crate::api;
use crate::connections::{ConnectionRules, LimitedAcceptor};
use crate::http::{BodyLimit, Measured, NoSniff, OneHost, Problems, RequestTimeout, SingleParams};
use crate::listening::Closer;
use crate::ops_listener::{Side, Split};
use crate::redirects::Redirects;
use crate::state::AppState;
use crate::tasks::Tasks;
use crate::web;

/// The tracing target of the lines that say where the process listens
/// (`shortener listening on http://ADDRESS`): the binary's subscriber writes them to
/// stdout whatever the log's level, as plain lines or as JSON ones with the log.
pub const LISTENING: &str = "shortener::listening";

/// Every route of the service.
pub fn routes(state: Arc<AppState>) -> impl Endpoint<Output = Response> {
    let side = if state.serving.ops_listener {
        Side::Public
    } else {
        Side::All
    };
    let timeout = state.serving.request_timeout;
    let measure = (state.serving.request_metrics).then(|| state.requests.clone());
    let log_requests = state.serving.log_requests;
    NoSniff {
        draining: Some(Arc::clone(&state.draining)),
        inner: OneHost {
            inner: RequestTimeout {
                // Redirects, most of the traffic, skip the router for the same answer.
                inner: Redirects::new(
                    Measured {
                        inner: Split {
                            inner: routed(state.clone()),
                            side,
                        },
                        measure,
                        log_requests,
                    },
                    state,
                ),
                timeout,
            },
        },
    }
}

/// Every route through the router only, with `X-Content-Type-Options`: what [`routes`]
/// answers but for the redirects it answers before the router, which are checked
/// against this.
pub fn routed_only(state: Arc<AppState>) -> impl Endpoint<Output = Response> {
    NoSniff {
        inner: routed(state),
        draining: None,
    }
}

/// What `server.ops_bind` answers: `/metrics`, `/readyz` and `/healthz`.
fn ops_routes(state: Arc<AppState>) -> impl Endpoint<Output = Response> {
    let measure = (state.serving.request_metrics).then(|| state.requests.clone());
    let log_requests = state.serving.log_requests;
    NoSniff {
        inner: Measured {
            inner: Problems {
                inner: Split {
                    inner: routed(state),
                    side: Side::Ops,
                },
                allowed: api::allowed_methods(),
            },
            measure,
            log_requests,
        },
        draining: None,
    }
}

/// Every route of the service through the router, with the middleware around it: what
/// [`routes`] answers, the redirects included, without the request timeout.
pub(crate) fn routed(state: Arc<AppState>) -> impl Endpoint<Output = Response> {
    let service = api::service(&state.serving.public_url);
    let document = api::document_for(&state.serving.public_url);
    let spec = poem::endpoint::make_sync(move |_| {
        poem::IntoResponse::with_content_type(document.clone(), "application/json; charset=utf-8")
    });
    let docs = crate::docs::Docs::new(service.swagger_ui_html());
    let max_body_bytes = state.serving.max_body_bytes;
    let domains = state.serving.domains.clone();
    let mut app = Route::new()
        .at("/openapi.json", spec)
        .at("/docs", docs)
        .at("/robots.txt", poem::get(crate::robots::robots));
    if state.serving.shlink {
        app = app.nest("/rest", crate::compat::shlink::routes(&state));
    }
    if state.serving.yourls {
        app = app.at("/yourls-api.php", crate::compat::yourls::endpoint());
    }
    if state.serving.kutt {
        app = app.nest("/api/v2", crate::compat::kutt::routes());
    }
    let app = app.nest("/", service).data(state);
    Problems {
        inner: BodyLimit {
            inner: SingleParams {
                // The page is picked before the routes: the API nested at "/" answers "/" too.
                inner: web::WithPage {
                    inner: app,
                    domains,
                },
            },
            max_body_bytes,
        },
        allowed: api::allowed_methods(),
    }
}

/// Where and how the service listens: `server.bind`, `server.ops_bind`, and the rules of
/// its connections (`[server]`'s limits and timeouts).
#[derive(Debug, Clone)]
pub struct Listen {
    pub bind: std::net::SocketAddr,
    pub ops_bind: Option<std::net::SocketAddr>,
    pub connections: ConnectionRules,
}

/// Serves `state` until `shutdown` completes, then drains requests, flushes visit counts
/// and closes storage, all within `server.shutdown_timeout_ms` of the signal.
///
/// # Errors
/// When the listening sockets cannot be set up, or the server fails.
pub async fn serve(
    state: Arc<AppState>,
    listen: Listen,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    crate::metrics::install();
    if state.serving.request_metrics {
        state.requests.register();
    }
    // The stored API keys, before the first request; a name both there and in the
    // configuration file would stand for two keys.
    state
        .reload_keys()
        .await
        .context("reading the stored API keys")?;
    if let Some(name) = state.key_name_clash() {
        anyhow::bail!(
            "API key `{name}` is both in the configuration file ([[api_keys]]) and in storage \
             (`shortener keys list`): rename or revoke one of them"
        );
    }
    let bind = listen.bind;
    // One line that scripts and tests wait for.
    let (acceptor, closer) = listen_on(bind, "shortener listening on", "server.bind").await?;

    let mut tasks = Tasks::start(&state);
    if let Some(bind) = listen.ops_bind {
        let (acceptor, _) =
            listen_on(bind, "shortener ops listening on", "server.ops_bind").await?;
        let routes = ops_routes(state.clone());
        tasks.spawn(move |mut stop| async move {
            let stopped = async move {
                let _ = stop.changed().await;
            };
            let served = Server::new_with_acceptor(acceptor)
                .idle_timeout(Duration::from_secs(60))
                .run_with_graceful_shutdown(routes, stopped, Some(Duration::from_secs(1)))
                .await;
            if let Err(error) = served {
                tracing::error!(%error, "the operations listener failed");
            }
        });
    }
    let acceptor = LimitedAcceptor::new(acceptor, listen.connections);
    let timeout = state.serving.shutdown_timeout;
    let (signalled, signal_time) = tokio::sync::oneshot::channel();
    let delay = state.serving.shutdown_delay;
    let draining = Arc::clone(&state.draining);
    let shutdown = async move {
        shutdown.await;
        let _ = signalled.send(tokio::time::Instant::now());
        if !delay.is_zero() {
            // Still served, each answer closing its connection: a balancer's idle
            // connections end on its side, and new ones are refused only after this.
            draining.store(true, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(
                ?delay,
                "draining: every answer closes its connection until the listener closes"
            );
            tokio::time::sleep(delay).await;
            // A balancer sends here until its connections fail: the listener closes
            // without resetting one it already has (see `listening`).
            let _stopped = closer.refuse_new_connections().await;
        }
    };
    // Draining may take three quarters of what the delay leaves of the deadline, so that
    // the visit flush and the storage close always get some of it.
    // No `idle_timeout`: the acceptor's streams keep it (see `connections`).
    Server::new_with_acceptor(acceptor)
        .run_with_graceful_shutdown(
            routes(state.clone()),
            shutdown,
            Some(timeout.saturating_sub(delay + crate::listening::MOST) * 3 / 4),
        )
        .await
        .context("server failed")?;
    let deadline = signal_time
        .await
        .unwrap_or_else(|_| tokio::time::Instant::now())
        + timeout;
    let finish = async {
        // Each task stops between two steps, never in one: an aborted flush would lose
        // the counts it had taken out of memory.
        tasks.stop().await;
        match state.shortener.flush_visits().await {
            Ok(links) => tracing::info!(links, "visit counts flushed"),
            Err(error) => tracing::error!(%error, "visit counts could not be flushed at shutdown"),
        }
        match state.shortener.flush_values().await {
            Ok(rows) => tracing::info!(rows, "visit values flushed"),
            Err(error) => tracing::error!(%error, "visit values could not be flushed at shutdown"),
        }
        // After the flush, which writes; closing checkpoints the SQLite WAL.
        match state.shortener.repository().inner().close().await {
            Ok(()) => tracing::info!("storage closed, stopped"),
            Err(error) => tracing::error!(%error, "storage closed without a final checkpoint"),
        }
    };
    if tokio::time::timeout_at(deadline, finish).await.is_err() {
        // Every acknowledged create is committed already; what may be missing is the last
        // visit counts or the final checkpoint, whose WAL the next start replays.
        tracing::error!(
            timeout_ms = timeout.as_millis(),
            "shutdown deadline (server.shutdown_timeout_ms) passed before storage was closed"
        );
    }
    Ok(())
}

/// Listens on `bind` (the value of `key`) and says where, after `said`, as an event of
/// the [`LISTENING`] target.
async fn listen_on(
    bind: std::net::SocketAddr,
    said: &str,
    key: &str,
) -> anyhow::Result<(impl Acceptor, Closer)> {
    let (acceptor, closer) = crate::listening::bind(bind)
        .await
        .with_context(|| format!("cannot listen on {bind} ({key})"))?;
    let local = acceptor
        .local_addr()
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    let address = local.trim_start_matches("socket://");
    tracing::info!(target: LISTENING, "{said} http://{address}");
    Ok((acceptor, closer))
}
