//! Requests that cost much or hold much do not starve the others: large QR codes beside
//! redirects, connections that hold every slot, and the operations endpoints apart from
//! the public address.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::json;
use shortener_tests::{Api, InProcessApp, TestConfig, client, spawn_in_process};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn config() -> TestConfig {
    TestConfig::default().in_memory()
}

/// Redirects per second from `clients` loops over `for_how_long`.
async fn redirect_rate(app: &InProcessApp, clients: usize, for_how_long: Duration) -> f64 {
    let served = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let loops: Vec<_> = (0..clients)
        .map(|_| {
            let (served, url, http) = (served.clone(), app.url("/hot"), client());
            tokio::spawn(async move {
                while started.elapsed() < for_how_long {
                    let response = http.get(&url).send().await.unwrap();
                    assert_eq!(response.status(), StatusCode::FOUND);
                    served.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for task in loops {
        task.await.unwrap();
    }
    #[allow(clippy::cast_precision_loss)] // a count of requests
    let rate = served.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    rate
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_qr_codes_do_not_starve_redirects() {
    // The shipped `lookup` policy, as a user has it: PNGs cost by their size.
    let app = spawn_in_process(&config());
    let created = Api::of(&app)
        .create(&json!({"url": "https://example.com/hot", "alias": "hot"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);

    let stop = Arc::new(AtomicBool::new(false));
    let pngs = Arc::new(AtomicU64::new(0));
    let busy = Arc::new(AtomicU64::new(0));
    let fetchers: Vec<_> = (0..8u32)
        .map(|fetcher| {
            let (stop, pngs, busy) = (stop.clone(), pngs.clone(), busy.clone());
            // A client of its own, as a separate user would have.
            let api = Api::of(&app);
            tokio::spawn(async move {
                let mut size = 2048 - fetcher;
                while !stop.load(Ordering::Relaxed) {
                    // A size not asked before (by 8 apart, from 2048 down to 1024): a
                    // render, not the cache.
                    size = if size < 1032 {
                        2047 - fetcher
                    } else {
                        size - 8
                    };
                    let qr = format!("/links/hot/qr?format=png&size={size}");
                    let response = api.request(Method::GET, &qr).send().await.unwrap();
                    match response.status() {
                        StatusCode::OK => {
                            response.bytes().await.unwrap();
                            pngs.fetch_add(1, Ordering::Relaxed);
                        }
                        status @ (StatusCode::TOO_MANY_REQUESTS
                        | StatusCode::SERVICE_UNAVAILABLE) => {
                            assert!(response.headers().contains_key("retry-after"));
                            if status == StatusCode::SERVICE_UNAVAILABLE {
                                busy.fetch_add(1, Ordering::Relaxed);
                            }
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                        other => panic!("a QR code answered {other}"),
                    }
                }
            })
        })
        .collect();
    let beside = redirect_rate(&app, 4, Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    for fetcher in fetchers {
        fetcher.await.unwrap();
    }
    let (pngs, busy) = (pngs.load(Ordering::Relaxed), busy.load(Ordering::Relaxed));
    eprintln!(
        "redirects/s beside 8 PNG fetchers {beside:.0}; {pngs} PNGs served, {busy} refused as busy"
    );
    assert!(beside > 0.0, "redirects went on beside the renders");
    assert!(pngs > 0, "no PNG was served at all");
    // What keeps redirects going: renders take at most half the cores, and a render asked
    // for while every slot is busy is refused at once (503), not queued. How fast the
    // redirects go beside them is the machine's, and not a test's to judge.
    assert!(busy > 0, "8 fetchers never found the render slots busy");
}

#[tokio::test]
async fn held_connections_do_not_keep_a_normal_client_waiting() {
    const KEEP_ALIVE: Duration = Duration::from_secs(2);
    let app = spawn_in_process(&config().with(|c| {
        c.server.max_connections = 20;
        c.server.keep_alive_timeout_ms = KEEP_ALIVE.as_millis().try_into().unwrap();
    }));
    let address = app.base.trim_start_matches("http://").to_owned();
    // 20 HTTP/2 cleartext connections (prior knowledge), each pinging: with `http2` off
    // (the default) each is closed.
    let mut h2c = Vec::new();
    for _ in 0..20 {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .await
            .unwrap();
        stream
            .write_all(b"\0\0\x08\x06\0\0\0\0\0\x01\x02\x03\x04\x05\x06\x07\x08")
            .await
            .unwrap();
        h2c.push(stream);
    }
    for stream in &mut h2c {
        let mut buffer = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buffer))
            .await
            .expect("an h2c connection is closed, not held");
        assert!(matches!(read, Ok(0) | Err(_)), "h2c was answered: {read:?}");
    }
    // 20 keep-alive connections that asked once and then sit idle: every slot.
    let mut idle = Vec::new();
    for _ in 0..20 {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
            .await
            .unwrap();
        let mut buffer = [0u8; 512];
        assert!(stream.read(&mut buffer).await.unwrap() > 0);
        idle.push(stream);
    }
    let asked = Instant::now();
    let response = client().get(app.url("/healthz")).send().await.unwrap();
    let waited = asked.elapsed();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        waited < KEEP_ALIVE + Duration::from_secs(1),
        "a normal request waited {waited:?} behind idle connections"
    );
}

#[tokio::test]
async fn ops_bind_serves_metrics_and_readiness_apart_from_the_public_address() {
    let port = shortener_tests::free_port().unwrap();
    let app = spawn_in_process(
        &config().with(|c| c.server.ops_bind = Some(([127, 0, 0, 1], port).into())),
    );
    let http = client();
    let ops = format!("http://127.0.0.1:{port}");
    for (url, status) in [
        (app.url("/metrics"), StatusCode::NOT_FOUND),
        (app.url("/readyz"), StatusCode::NOT_FOUND),
        (app.url("/healthz"), StatusCode::OK),
        (format!("{ops}/metrics"), StatusCode::OK),
        (format!("{ops}/readyz"), StatusCode::OK),
        (format!("{ops}/healthz"), StatusCode::OK),
        (Api::at(&ops).url("/links/abc"), StatusCode::NOT_FOUND),
        (format!("{ops}/docs"), StatusCode::NOT_FOUND),
    ] {
        let response = http.get(&url).send().await.unwrap();
        assert_eq!(response.status(), status, "{url}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    }
}
