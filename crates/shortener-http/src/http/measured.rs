//! Request metrics: `shortener_http_requests_total{operation, status}` and the histogram
//! `shortener_http_request_duration_seconds{operation, status}`.
//!
//! `operation` is the OpenAPI operation id of the route that answered (poem-openapi puts
//! it on the response), `redirect` / `redirectHead` for the redirects answered before the
//! router, and `other` for what no operation answers (the page, `/docs`, an unknown
//! path); `status` is the class (`2xx` ... `5xx`). Both label sets are fixed, so the
//! series are bounded whatever the traffic: a node makes the handles once, and a request
//! costs two clock reads, an atomic add and a histogram sample.
//!
//! Every counter exists from the start, at 0, so that a rate or an alert over any
//! (operation, class) has its zero before the first such request. A histogram is made at
//! its first sample: one that never recorded would still be rendered, every bucket at 0,
//! and those of all the label sets were most of every scrape.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use metrics::{Counter, Histogram};
use poem::http::{Method, StatusCode, Uri};
use poem::{Endpoint, IntoResponse, Request, Response};
use poem_openapi::OperationId;

/// The counter's name.
pub const REQUESTS: &str = "shortener_http_requests_total";
/// The histogram's name; its buckets are set where the recorder is installed.
pub const DURATION: &str = "shortener_http_request_duration_seconds";

/// Every operation id of the API, then `other`: the values of the `operation` label.
pub const OPERATIONS: [&str; 26] = [
    "createLink",
    "createLinks",
    "listLinks",
    "exportLinks",
    "getLink",
    "updateLink",
    "deleteLink",
    "resolveLink",
    "resolveLinkFor",
    "linkVisits",
    "allVisits",
    "listTags",
    "renameTag",
    "deleteTag",
    "listDomains",
    "linkQrCode",
    "unlockLink",
    "createKey",
    "listKeys",
    "revokeKey",
    "healthz",
    "readyz",
    "metrics",
    "redirect",
    "redirectHead",
    "other",
];

/// The index of `redirect` in [`OPERATIONS`].
pub const REDIRECT: usize = 23;
/// The index of `redirectHead` in [`OPERATIONS`].
pub const REDIRECT_HEAD: usize = 24;
const OTHER: usize = OPERATIONS.len() - 1;

const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The handles of one (operation, class): the counter, and the histogram once it has a
/// sample.
type Handles = (Counter, OnceLock<Histogram>);

/// The handles of every (operation, class) of one node, made at [`RequestMetrics::register`]:
/// a handle taken before the node's recorder is entered records nothing. Cloned, it is
/// the same table.
#[derive(Clone, Default)]
pub struct RequestMetrics(Arc<OnceLock<Vec<[Handles; 5]>>>);

impl std::fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestMetrics")
    }
}

impl RequestMetrics {
    fn handles(&self) -> &[[Handles; 5]] {
        self.0.get_or_init(|| {
            OPERATIONS
                .iter()
                .map(|&operation| {
                    CLASSES.map(|status| {
                        let counter = metrics::counter!(REQUESTS, "operation" => operation, "status" => status);
                        (counter, OnceLock::new())
                    })
                })
                .collect()
        })
    }

    /// Registers every request counter, at 0 (`server.request_metrics`): called once
    /// the recorder is installed, before the first request.
    pub fn register(&self) {
        self.handles();
    }
}

/// What a request's log line keeps of it, taken before the request is handled.
pub type RequestLine = (Method, Uri);

/// The request's line when `log.requests` is on; nothing (and no clone) when off.
pub fn request_line(request: &Request, log_requests: bool) -> Option<RequestLine> {
    log_requests.then(|| (request.method().clone(), request.uri().clone()))
}

/// Counts one request of `OPERATIONS[operation]` answered with `status`, begun at
/// `started`, into `measure` (with `server.request_metrics`); with `logged`
/// (`log.requests`), also logs it.
pub fn record(
    operation: usize,
    status: StatusCode,
    started: Instant,
    measure: Option<&RequestMetrics>,
    logged: Option<&RequestLine>,
) {
    let operation = operation.min(OTHER);
    let elapsed = started.elapsed();
    if let Some(measure) = measure {
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        let (count, duration) = &measure.handles()[operation][class];
        count.increment(1);
        duration
            .get_or_init(|| {
                let (operation, status) = (OPERATIONS[operation], CLASSES[class]);
                metrics::histogram!(DURATION, "operation" => operation, "status" => status)
            })
            .record(elapsed);
    }
    if let Some((method, uri)) = logged {
        tracing::info!(
            target: "shortener::request",
            %method,
            path = uri.path(),
            operation = OPERATIONS[operation],
            status = status.as_u16(),
            micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            "request"
        );
    }
}

/// The index of an operation id in [`OPERATIONS`]; `other` for one not there.
pub fn operation_index(id: &str) -> usize {
    OPERATIONS[..OTHER]
        .iter()
        .position(|&known| known == id)
        .unwrap_or(OTHER)
}

/// Measures every request that `inner` answers, by the operation id on its response, when
/// `measure`, and logs each one when `log_requests`; with neither, it only passes requests
/// on.
#[derive(Debug)]
pub struct Measured<E> {
    pub inner: E,
    /// The node's request metrics, with `server.request_metrics`.
    pub measure: Option<RequestMetrics>,
    pub log_requests: bool,
}

impl<E: Endpoint> Endpoint for Measured<E> {
    type Output = Response;

    async fn call(&self, request: Request) -> poem::Result<Response> {
        if self.measure.is_none() && !self.log_requests {
            return self
                .inner
                .call(request)
                .await
                .map(IntoResponse::into_response);
        }
        let started = Instant::now();
        let logged = request_line(&request, self.log_requests);
        let result = self
            .inner
            .call(request)
            .await
            .map(IntoResponse::into_response);
        let (status, operation) = match &result {
            Ok(response) => (response.status(), response.data::<OperationId>()),
            Err(error) => (error.status(), error.data::<OperationId>()),
        };
        record(
            operation.map_or(OTHER, |id| operation_index(id.0)),
            status,
            started,
            self.measure.as_ref(),
            logged.as_ref(),
        );
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_labels_are_every_operation_of_the_document() {
        let document: serde_json::Value =
            serde_json::from_str(&crate::api::service("http://localhost").spec()).unwrap();
        let mut ids: Vec<&str> = document["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .filter_map(|operation| operation["operationId"].as_str())
            .collect();
        ids.sort_unstable();
        let mut labels = OPERATIONS[..OTHER].to_vec();
        labels.sort_unstable();
        assert_eq!(ids, labels, "OPERATIONS lists each operation id once");
        assert_eq!(OPERATIONS[REDIRECT], "redirect");
        assert_eq!(OPERATIONS[REDIRECT_HEAD], "redirectHead");
        assert_eq!(operation_index("getLink"), 4);
        assert_eq!(operation_index("nope"), OTHER);
    }
}
