//! `/metrics` of a real `shortener` process (the metrics recorder is global, so not one
//! in this process): every request counter is there from the start at 0, for the alerts
//! over them, and a duration histogram appears only for the (operation, class) that
//! recorded a request, so that an idle node's scrape stays small.

use shortener_tests::{TestConfig, client, scrape, spawn_in_process};

/// Every operation id of the API, and `other`.
const OPERATIONS: usize = 26;
/// `1xx` to `5xx`.
const CLASSES: usize = 5;

/// The lines of `scrape` that start with `series`.
fn lines_of<'a>(scrape: &'a str, series: &str) -> Vec<&'a str> {
    scrape
        .lines()
        .filter(|line| line.starts_with(series))
        .collect()
}

#[tokio::test]
async fn request_counters_start_at_zero_and_histograms_at_their_first_sample() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    let fresh = scrape(&app.base).await;
    let counters = lines_of(&fresh, "shortener_http_requests_total{");
    assert_eq!(counters.len(), OPERATIONS * CLASSES, "{fresh}");
    assert!(counters.iter().all(|line| line.ends_with(" 0")), "{fresh}");
    for zero in [
        "shortener_http_requests_total{operation=\"createLink\",status=\"5xx\"} 0",
        "shortener_http_requests_total{operation=\"redirect\",status=\"4xx\"} 0",
        "shortener_http_requests_total{operation=\"other\",status=\"5xx\"} 0",
    ] {
        assert!(fresh.contains(zero), "{zero} in {fresh}");
    }
    assert!(
        !fresh.contains("shortener_http_request_duration_seconds"),
        "{fresh}"
    );

    // An idle node that a health check probes: its scrape stays small.
    let probe = http.get(app.url("/healthz")).send().await.unwrap();
    assert!(probe.status().is_success());
    let idle = scrape(&app.base).await;
    assert!(idle.len() < 16 * 1024, "{} bytes: {idle}", idle.len());

    app.create(&http, serde_json::json!({"url": "https://example.com/a"}))
        .await;
    let unknown = http.get(app.url("/nosuch1")).send().await.unwrap();
    assert_eq!(unknown.status(), 404);
    let after = scrape(&app.base).await;
    let mut recorded = lines_of(&after, "shortener_http_request_duration_seconds_count{");
    recorded.sort_unstable();
    assert_eq!(
        recorded,
        [
            "shortener_http_request_duration_seconds_count{operation=\"createLink\",status=\"2xx\"} 1",
            "shortener_http_request_duration_seconds_count{operation=\"healthz\",status=\"2xx\"} 1",
            "shortener_http_request_duration_seconds_count{operation=\"metrics\",status=\"2xx\"} 2",
            "shortener_http_request_duration_seconds_count{operation=\"redirect\",status=\"4xx\"} 1",
        ],
        "{after}"
    );
    assert!(
        after.contains("shortener_http_requests_total{operation=\"createLink\",status=\"2xx\"} 1"),
        "{after}"
    );
    assert!(after.len() < 32 * 1024, "{} bytes: {after}", after.len());
}
