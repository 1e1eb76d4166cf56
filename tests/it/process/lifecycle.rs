//! A node restarted keeps its links and visit counts; expired and used-up links are gone.

use reqwest::StatusCode;
use serde_json::json;
use shortener_testkit::api::API;
use shortener_tests::{Api, TempDir, TestApp, TestConfig, client, spawn_app};

#[tokio::test]
async fn restart_keeps_links_and_visit_counts() {
    let dir = TempDir::new();
    let app = TestApp::start(dir.path(), &TestConfig::default());
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
    let app = TestApp::start(dir.path(), &TestConfig::default());
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.headers()["location"], "https://example.com/kept");
    let fetched = Api::of(&app).get(&code).await.body;
    // Three visits flushed at shutdown, plus the one just made (pending in memory).
    assert_eq!(fetched["visits"], 4);
}

#[tokio::test]
async fn max_visits_and_expiry_give_410() {
    let app = spawn_app(&TestConfig::default());
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
    let app = spawn_app(&TestConfig::default().with(|c| c.server.shutdown_delay_ms = 1500));
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

/// A connection the kernel completed while the node was stopping is served, not reset.
/// The node holds one connection at a time, so the second one waits in the listen queue
/// while the first sends its request body slowly; the first is finished only once new
/// connections no longer complete (after the delay). Closing the listener then would
/// reset the queued one, whose request was already sent: a balancer's 502.
/// Only as root: recent kernels refuse the socket filter to other users (the listener
/// then closes at once, which `listening.rs`'s unit test checks is the only difference).
#[tokio::test]
async fn a_stopping_node_serves_the_connections_its_kernel_already_made() {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !status.lines().any(|line| line.starts_with("Uid:\t0\t")) {
        eprintln!("skipped: not root, so the kernel may refuse the listener's socket filter");
        return;
    }

    let app = spawn_app(&TestConfig::default().with(|c| {
        c.server.shutdown_delay_ms = 1000;
        c.server.max_connections = 1;
        c.server.max_connections_per_client = 1;
    }));
    let address = app.url("").trim_start_matches("http://").to_owned();
    let body = br#"{"url": "https://example.com/slow"}"#;
    let mut slow = TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST {API}/links HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&body[..10]).await.unwrap();
    // Made by the kernel, not accepted: the one slot is the slow request's.
    let mut queued = TcpStream::connect(&address).await.unwrap();
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n");
    queued.write_all(request.as_bytes()).await.unwrap();
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &app.pid().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    // Until the delay ends, a new connection still completes (into the queue, behind the
    // others); after it, none does.
    let mut probes = 0;
    loop {
        probes += 1;
        assert!(
            probes < 200,
            "new connections still complete 10 s after the signal"
        );
        let probe = tokio::time::timeout(Duration::from_millis(50), TcpStream::connect(&address));
        match probe.await {
            Ok(Ok(_made)) => tokio::time::sleep(Duration::from_millis(10)).await,
            Ok(Err(error)) => panic!(
                "the listener closed before it stopped its handshakes: {error} ({address}, probe {probes})"
            ),
            Err(_timed_out) => break,
        }
    }
    slow.write_all(&body[10..]).await.unwrap();
    let mut answer = Vec::new();
    slow.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let mut answer = Vec::new();
    let read = queued.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(read.is_ok(), "{read:?} after {answer:?}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(app.stop(), "graceful exit");
}
