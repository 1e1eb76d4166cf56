//! A node restarted keeps its links and visit counts; expired and used-up links are gone.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{BASE_CONFIG, TempDir, TestApp, client, spawn_app};

#[tokio::test]
async fn restart_keeps_links_and_visit_counts() {
    let dir = TempDir::new();
    let app = TestApp::start(dir.path(), BASE_CONFIG);
    let http = client();
    let link = app
        .create(&http, json!({"url": "https://example.com/kept"}))
        .await;
    let code = link["code"].as_str().unwrap().to_owned();
    for _ in 0..3 {
        assert_eq!(
            http.get(app.url(&format!("/{code}")))
                .send()
                .await
                .unwrap()
                .status(),
            StatusCode::FOUND
        );
    }
    assert!(app.stop(), "graceful exit");
    let app = TestApp::start(dir.path(), BASE_CONFIG);
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.headers()["location"], "https://example.com/kept");
    let fetched: Value = http
        .get(app.url(&format!("/api/v1/links/{code}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Three visits flushed at shutdown, plus the one just made (pending in memory).
    assert_eq!(fetched["visits"], 4);
}

#[tokio::test]
async fn max_visits_and_expiry_give_410() {
    let app = spawn_app(BASE_CONFIG);
    let http = client();
    let link = app
        .create(
            &http,
            json!({"url": "https://example.com/", "max_visits": 2}),
        )
        .await;
    let path = format!("/{}", link["code"].as_str().unwrap());
    assert_eq!(
        http.get(app.url(&path)).send().await.unwrap().status(),
        StatusCode::FOUND
    );
    assert_eq!(
        http.get(app.url(&path)).send().await.unwrap().status(),
        StatusCode::FOUND
    );
    let gone = http.get(app.url(&path)).send().await.unwrap();
    assert_eq!(gone.status(), StatusCode::GONE);
    assert_eq!(gone.headers()["content-type"], "application/problem+json");

    let soon = (time::OffsetDateTime::now_utc() + time::Duration::seconds(2))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let link = app
        .create(
            &http,
            json!({"url": "https://example.com/", "expires_at": soon}),
        )
        .await;
    let path = format!("/{}", link["code"].as_str().unwrap());
    assert_eq!(
        http.get(app.url(&path)).send().await.unwrap().status(),
        StatusCode::FOUND
    );
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    assert_eq!(
        http.get(app.url(&path)).send().await.unwrap().status(),
        StatusCode::GONE
    );
}

/// `server.shutdown_delay_ms`: after SIGTERM the node still answers, each answer closing
/// its connection, until the delay ends; then it stops with exit 0.
#[tokio::test]
async fn a_stopping_node_answers_with_connection_close_during_its_delay() {
    let app = spawn_app(&BASE_CONFIG.replace("[server]\n", "[server]\nshutdown_delay_ms = 1500\n"));
    let http = client();
    let before = http.get(app.url("/healthz")).send().await.unwrap();
    assert!(before.headers().get("connection").is_none());
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &app.pid().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    // Within the delay: answered, and told to close.
    let mut closing = None;
    for _ in 0..20 {
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        let during = http.get(app.url("/healthz")).send().await.unwrap();
        assert_eq!(during.status(), StatusCode::OK);
        if let Some(connection) = during.headers().get("connection") {
            closing = Some(connection.to_str().unwrap().to_owned());
            break;
        }
    }
    assert_eq!(closing.as_deref(), Some("close"));
    assert!(app.stop(), "graceful exit after the delay");
}
