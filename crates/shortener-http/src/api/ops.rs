//! The operations a deployment watches: health, readiness and metrics.

use std::sync::Arc;

use poem::web::Data;
use poem_openapi::payload::{Json, PlainText};
use poem_openapi::{ApiResponse, Object, OpenApi};
use shortener_core::limiter::fallback::BackendState;

use super::ApiTags;
use super::auth::Caller;
use crate::auth::Scope;
use crate::state::AppState;

#[derive(ApiResponse, Debug)]
enum ReadyResponse {
    /// This node can serve: storage answers, and the limiter decides (from Redis, or
    /// from its fallback under `on_error = "local"` or `"fail_open"`).
    #[oai(status = 200)]
    Ready(Json<Readiness>),
    /// This node cannot serve: storage is down, or Redis is down under
    /// `on_error = "fail_closed"`.
    #[oai(status = 503)]
    NotReady(Json<Readiness>),
}

/// The state of each backend.
#[derive(Object, Debug)]
#[oai(read_only_all)]
struct Readiness {
    /// `ok` or `down`.
    storage: String,
    /// `ok`; `degraded` when Redis fails and decisions follow `limiter.on_error`
    /// (`local` or `fail_open`); `down` when Redis fails under `fail_closed`.
    limiter: String,
    /// Why the limiter is not `ok`, when known, for an `admin` key only (passwords are
    /// never included).
    #[oai(skip_serializing_if_is_none)]
    limiter_error: Option<String>,
}

/// Health, readiness and metrics.
#[derive(Debug, Default)]
pub struct Ops;

#[OpenApi]
impl Ops {
    /// Liveness: the process is up.
    #[oai(
        path = "/healthz",
        method = "get",
        tag = "ApiTags::Operations",
        operation_id = "healthz"
    )]
    async fn healthz(&self) -> PlainText<&'static str> {
        PlainText("ok")
    }

    /// Readiness: every configured backend answers. Anonymous callers get the states only;
    /// an `admin` key also gets why the limiter is not `ok`. Storage is probed at most once
    /// a second, whoever asks.
    #[oai(
        path = "/readyz",
        method = "get",
        tag = "ApiTags::Operations",
        operation_id = "readyz"
    )]
    async fn readyz(&self, state: Data<&Arc<AppState>>, caller: Caller) -> ReadyResponse {
        let storage = state.storage_ready().await;
        let (limiter, error) = state.limiter.state();
        let admin = matches!(&caller, Caller::Key(key) if key.0.scopes.contains(Scope::Admin));
        let readiness = Readiness {
            storage: if storage { "ok" } else { "down" }.to_owned(),
            limiter: match limiter {
                BackendState::Ok => "ok",
                BackendState::Degraded => "degraded",
                BackendState::Down => "down",
            }
            .to_owned(),
            limiter_error: error.filter(|_| admin).map(|error| error.to_string()),
        };
        if storage && limiter != BackendState::Down {
            ReadyResponse::Ready(Json(readiness))
        } else {
            ReadyResponse::NotReady(Json(readiness))
        }
    }

    /// Metrics in the Prometheus text format.
    #[oai(
        path = "/metrics",
        method = "get",
        tag = "ApiTags::Operations",
        operation_id = "metrics"
    )]
    async fn metrics(&self, state: Data<&Arc<AppState>>) -> PlainText<String> {
        PlainText(crate::metrics::render(&state))
    }
}
