//! `shortener ratelimit-server`: the rate limit service for Envoy as a process. The
//! limiter is wired as for the HTTP server (`[limiter]`: Redis behind the fallback of
//! `on_error` and the refusal cache, with the node heartbeat), the limits files are
//! loaded and watched, the gRPC service listens on `rls.grpc_bind`, and `/healthcheck`
//! and `/metrics` on `rls.http_bind`.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use poem::http::StatusCode;
use poem::listener::TcpListener as PoemListener;
use poem::{EndpointExt as _, Route, get, handler};
use shortener_rls::headers::HeaderNames;
use shortener_rls::proto::rate_limit_service_server::RateLimitServiceServer;
use shortener_rls::service::RequestBounds;
use shortener_rls::{
    Limits, LimitsHandle, RateLimitServer, RuntimeDirectory, ServiceSettings, WhenUnavailable,
    WindowSettings,
};

use crate::config::{OnErrorConfig, Settings};
use shortener_backends::{AnyLimiter, RefusedStart};

/// The directory of the limits files: `rls.runtime_root`, `runtime_subdirectory` and
/// `runtime_appdirectory`, as envoyproxy/ratelimit lays it out.
pub fn runtime_directory(settings: &Settings) -> RuntimeDirectory {
    let rls = &settings.config.rls;
    RuntimeDirectory {
        root: PathBuf::from(&rls.runtime_root),
        subdirectory: rls.runtime_subdirectory.clone(),
        appdirectory: rls.runtime_appdirectory.clone(),
        merge_domains: rls.merge_domain_config,
        algorithm: rls.algorithm.into(),
    }
}

/// Serves until `shutdown`, then stops taking requests and returns.
///
/// # Errors
/// When an address cannot be bound, the limiter refuses to start, or the limits files
/// directory cannot be read ([`RefusedStart`]; a file that is read but does not load
/// takes down its own domain only).
pub async fn serve(
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    shortener_http::metrics::install_with(&[shortener_rls::service::DECISION_SECONDS]);
    let rls = settings.config.rls.clone();
    let directory = runtime_directory(&settings);
    let files = directory
        .read()
        .map_err(|error| RefusedStart(format!("the limits files cannot be read: {error}")))?;
    // A file that does not load takes down its own domain only (answered as the limiter's
    // errors are), not every domain's limits: the other files' apply.
    let (limits, errors) = Limits::load_each(&files, rls.merge_domain_config, rls.algorithm.into());
    for error in &errors {
        tracing::error!(file = %error.file, error = %error.message, "a limits file did not load: its domain is answered per limiter.on_error until it does");
    }
    if files.is_empty() {
        tracing::warn!(path = %directory.path().display(), "no limits files: every descriptor is unlimited until some are added");
    }
    let when_unavailable = match settings.config.limiter.on_error {
        OnErrorConfig::Error => WhenUnavailable::Error,
        OnErrorConfig::FailClosed => WhenUnavailable::OverLimit,
        OnErrorConfig::FailOpen | OnErrorConfig::Local => WhenUnavailable::Allow,
    };
    let limiter =
        Arc::new(shortener_backends::limiter(settings.algorithm, settings.redis.as_ref()).await?);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    if matches!(&*limiter, AnyLimiter::Redis(_)) {
        let limiter = Arc::clone(&limiter);
        let stopped = stopped.clone();
        tokio::spawn(async move {
            if let AnyLimiter::Redis(redis) = &*limiter {
                shortener_backends::heartbeat_forever(redis, stopped).await;
            }
        });
    }
    let handle = Arc::new(LimitsHandle::new(limits));
    tokio::spawn(directory.watch_forever(Arc::clone(&handle), files, stopped.clone()));
    let service = RateLimitServer::new(
        Arc::clone(&limiter),
        handle,
        ServiceSettings {
            shadow_mode: rls.shadow_mode,
            quota_mode: rls.quota_mode,
            dynamic_metadata: rls.response_dynamic_metadata,
            response_headers: rls.response_headers.then(|| HeaderNames {
                limit: rls.limit_header.clone(),
                remaining: rls.remaining_header.clone(),
                reset: rls.reset_header.clone(),
            }),
            near_limit_ratio: rls.near_limit_ratio,
            when_unavailable,
            bounds: RequestBounds {
                descriptors: rls.max_descriptors,
                entries: rls.max_entries,
                entry_bytes: rls.max_entry_bytes,
            },
            windows: WindowSettings {
                key_prefix: rls.cache_key_prefix.clone(),
                spending: rls.spending.into(),
                expiration_jitter_max_secs: rls.expiration_jitter_max_secs,
            },
        },
    );

    let grpc_listener = tokio::net::TcpListener::bind(rls.grpc_bind)
        .await
        .with_context(|| format!("cannot listen on {} (rls.grpc_bind)", rls.grpc_bind))?;
    let grpc_address = grpc_listener.local_addr()?;
    let http_listener = std::net::TcpListener::bind(rls.http_bind)
        .with_context(|| format!("cannot listen on {} (rls.http_bind)", rls.http_bind))?;
    let http_address = http_listener.local_addr()?;
    drop(http_listener);

    let stopping = Arc::new(AtomicBool::new(false));
    let routes = Route::new()
        .at("/healthcheck", get(healthcheck))
        .at("/metrics", get(metrics))
        .data(Arc::clone(&limiter))
        .data(Arc::clone(&stopping));
    let (http_stop, http_stopped) = tokio::sync::oneshot::channel::<()>();
    let http = tokio::spawn(
        poem::Server::new(PoemListener::bind(http_address)).run_with_graceful_shutdown(
            routes,
            async move {
                let _ = http_stopped.await;
            },
            Some(std::time::Duration::from_secs(1)),
        ),
    );
    tracing::info!(
        target: shortener_http::app::LISTENING,
        "shortener ratelimit-server listening on http://{grpc_address} http://{http_address}"
    );
    tracing::info!(%grpc_address, %http_address, limiter = ?settings.config.limiter.kind, "rate limit service started");

    let (grpc_stop, grpc_stopped) = tokio::sync::oneshot::channel::<()>();
    let grpc = tokio::spawn(
        tonic::transport::Server::builder().serve_with_incoming_shutdown(
            RateLimitServiceServer::new(service),
            tonic::transport::server::TcpIncoming::from(grpc_listener).with_nodelay(Some(true)),
            async move {
                let _ = grpc_stopped.await;
            },
        ),
    );
    shutdown.await;
    tracing::info!("rate limit service stopping");
    stopping.store(true, Ordering::Release);
    let _ = grpc_stop.send(());
    let _ = stop.send(true);
    grpc.await
        .context("the gRPC server panicked")?
        .context("the gRPC server failed")?;
    let _ = http_stop.send(());
    let _ = http.await;
    Ok(())
}

/// 200 `OK` while serving; 503 once stopping, so that a load balancer drains it.
#[handler]
fn healthcheck(stopping: poem::web::Data<&Arc<AtomicBool>>) -> (StatusCode, &'static str) {
    if stopping.load(Ordering::Acquire) {
        (StatusCode::SERVICE_UNAVAILABLE, "stopping")
    } else {
        (StatusCode::OK, "OK")
    }
}

#[handler]
fn metrics(limiter: poem::web::Data<&Arc<AnyLimiter>>) -> String {
    shortener_http::metrics::render_limiter(limiter.0)
}
