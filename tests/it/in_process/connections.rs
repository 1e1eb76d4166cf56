//! Connection limits and timeouts, over raw TCP so that the client side can misbehave:
//! slowloris heads, idle keep-alive connections, more connections than allowed, and a
//! request whose body never finishes.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use shortener_testkit::api::API;
use shortener_tests::{InProcessApp, TempDir, TestConfig, client, spawn_in_process};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Long enough that nothing here depends on the machine being fast.
const GENEROUS: Duration = Duration::from_secs(30);

fn config() -> TestConfig {
    TestConfig::default().in_memory()
}

async fn connect(app: &InProcessApp) -> TcpStream {
    TcpStream::connect(app.base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Reads one response (head and `content-length` body); `None` on EOF.
async fn read_response(stream: &mut TcpStream) -> Option<String> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                return Some(text);
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
        }
    }
}

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n";

#[tokio::test]
async fn slowloris_connections_are_closed_while_others_are_served() {
    // All 200 from one client: the per-client cap is not what this is about.
    let app = spawn_in_process(&config().with(|c| {
        c.server.header_read_timeout_ms = 1000;
        c.server.max_connections_per_client = 1000;
    }));
    let (started, mut all_started) = tokio::sync::mpsc::channel(200);
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut stream = connect(&app).await;
        let started = started.clone();
        slow.push(tokio::spawn(async move {
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Slow: ")
                .await
                .unwrap();
            let _ = started.send(()).await;
            // One byte a second; 60 would complete the head. Returns how many were sent
            // before the server closed the connection, `None` if it never did.
            let mut buffer = [0u8; 64];
            for sent in 0..60 {
                tokio::select! {
                    read = stream.read(&mut buffer) => {
                        // Closed (EOF or reset); a response would be a served slow head.
                        return matches!(read, Ok(0) | Err(_)).then_some(sent);
                    }
                    () = tokio::time::sleep(Duration::from_secs(1)) => {
                        if stream.write_all(b"a").await.is_err() {
                            return Some(sent);
                        }
                    }
                }
            }
            None
        }));
    }
    drop(started);
    for _ in 0..200 {
        all_started.recv().await.expect("every slow client started");
    }
    // All 200 hold half a head now; a normal client is served meanwhile.
    let http = client();
    for _ in 0..3 {
        let health = http.get(app.url("/healthz")).send().await.unwrap();
        assert_eq!(health.status(), StatusCode::OK);
        app.create(&http, json!({"url": "https://example.com/"}))
            .await;
    }
    for task in slow {
        let sent = task.await.unwrap();
        assert!(
            sent.is_some(),
            "a slow client finished its head or got an answer"
        );
    }
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let app = spawn_in_process(&config().with(|c| c.server.idle_timeout_ms = 1000));
    let mut stream = connect(&app).await;
    // Two requests on one connection: it is kept alive between requests.
    for _ in 0..2 {
        stream.write_all(HEALTHZ).await.unwrap();
        let response = read_response(&mut stream).await.expect("a response");
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }
    let mut buffer = [0u8; 64];
    let read = tokio::time::timeout(GENEROUS, stream.read(&mut buffer))
        .await
        .expect("the idle connection is closed by the server");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
}

#[tokio::test]
async fn connections_beyond_max_connections_wait_for_a_free_one() {
    let dir = TempDir::new();
    let app = InProcessApp::start(
        dir.path(),
        &config().with(|c| {
            c.server.max_connections = 5;
            c.server.header_read_timeout_ms = 600_000;
            c.server.idle_timeout_ms = 600_000;
        }),
    );
    let mut held = Vec::new();
    for _ in 0..5 {
        let mut stream = connect(&app).await;
        stream.write_all(HEALTHZ).await.unwrap();
        let response = read_response(&mut stream).await.expect("served");
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        held.push(stream);
    }
    let waiting = connect(&app).await;
    let sixth = tokio::spawn(async move {
        let mut waiting = waiting;
        waiting.write_all(HEALTHZ).await.unwrap();
        read_response(&mut waiting).await
    });
    // Not answered while five connections are open (if the limit were ignored, the answer
    // would come at once; a slow machine can only make this pass, never fail).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!sixth.is_finished(), "a sixth connection was served");
    drop(held.pop());
    let response = tokio::time::timeout(GENEROUS, sixth)
        .await
        .expect("served once a connection closed")
        .unwrap()
        .expect("a response");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // Still serving: the four held connections work too.
    for stream in &mut held {
        stream.write_all(HEALTHZ).await.unwrap();
        assert!(read_response(stream).await.is_some());
    }
}

#[tokio::test]
async fn a_request_slower_than_request_timeout_is_503_problem() {
    let app = spawn_in_process(&config().with(|c| c.server.request_timeout_ms = 1000));
    let mut stream = connect(&app).await;
    // A body that never finishes: the request cannot complete on its own.
    let request = format!(
        "POST {API}/links HTTP/1.1\r\nHost: test\r\ncontent-type: application/json\r\n\
         transfer-encoding: chunked\r\n\r\n7\r\n{{\"url\":\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let response = tokio::time::timeout(GENEROUS, read_response(&mut stream))
        .await
        .expect("answered within the generous wait")
        .expect("a response, not a closed connection");
    assert!(response.starts_with("HTTP/1.1 503"), "{response}");
    let lower = response.to_ascii_lowercase();
    assert!(
        lower.contains("content-type: application/problem+json"),
        "{response}"
    );
    assert!(lower.contains("retry-after: 1"), "{response}");
    assert!(response.contains("server.request_timeout_ms"), "{response}");
    // Other requests are not affected.
    let http = client();
    app.create(&http, json!({"url": "https://example.com/"}))
        .await;
}
