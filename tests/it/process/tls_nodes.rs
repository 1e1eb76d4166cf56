//! Real nodes whose limiter is a TLS-only Redis (`rediss://`), trusting its CA through
//! `SSL_CERT_FILE`, the standard way: under `fail_closed`, so that a node that could not
//! use Redis would refuse to start or answer 503 rather than limit on its own.

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::config::OnErrorConfig;
use shortener_tests::{Api, Launch, TempDir, TestApp, TestConfig, binary, client};
use shortener_tests::{TestPki, TlsRedisServer};

fn config(redis_url: &str) -> TestConfig {
    TestConfig::default()
        .in_memory()
        .redis_limiter(redis_url, OnErrorConfig::FailClosed)
        .with(|c| c.limiter.timeout_ms = 2000)
        .policy("create", 2, 0.01)
}

#[tokio::test]
async fn a_node_limits_on_a_tls_redis() {
    let pki = TestPki::generate();
    let redis = TlsRedisServer::start(&pki);
    let dir = TempDir::new();
    let ca = pki.ca_file();
    let app = TestApp::start_with_env(
        dir.path(),
        &config(&redis.url()),
        &[("SSL_CERT_FILE", ca.to_str().unwrap())],
    );
    let (http, api) = (client(), Api::of(&app));
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let answer = api.create(&json!({"url": "https://example.com/tls"})).await;
        statuses.push(answer.status);
    }
    assert_eq!(
        statuses,
        [
            StatusCode::CREATED,
            StatusCode::CREATED,
            StatusCode::TOO_MANY_REQUESTS
        ]
    );
    let ready: serde_json::Value = http
        .get(app.url("/readyz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["limiter"], "ok", "{ready}");
}

#[test]
fn a_node_refuses_to_start_when_the_certificate_is_not_trusted() {
    let pki = TestPki::generate();
    let redis = TlsRedisServer::start(&pki);
    let dir = TempDir::new();
    let text = config(&redis.url()).file_text(dir.path());
    std::fs::write(dir.path().join("shortener.toml"), text).unwrap();
    let output = Launch::one_shot(binary(), dir.path())
        .args(["--config", "shortener.toml"])
        .env("SSL_CERT_FILE", pki.other_ca_file())
        .env("RUST_LOG", "warn")
        .output()
        .expect("run shortener");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("certificate"), "names the cause: {stderr}");
}
