//! The limit holds against every body, every connection and every target: a bulk body
//! that names `links` twice, QR renders beside redirects, connections that hold slots,
//! targets that loop, reach inside or are blocked, visits of a deleted link, and what
//! `/readyz` tells anonymous callers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{TestApp, client, spawn_app};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::manage::{keys_config, secret};

fn config(extra: &str) -> String {
    format!("[server]\nbind = \"127.0.0.1:0\"\n[storage]\nkind = \"memory\"\n{extra}")
}

/// `r` of the `RateLimit` header.
fn remaining(response: &reqwest::Response) -> u64 {
    let header = response.headers()["ratelimit"].to_str().unwrap();
    header
        .split(';')
        .find_map(|part| part.strip_prefix("r="))
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_bulk_body_naming_links_twice_is_refused_and_costs_nothing() {
    let app = spawn_app(&config(
        "[limiter.policies.create]\ncapacity = 2000\nrefill_per_sec = 0.001\n",
    ));
    let http = client();
    let thousand: Vec<Value> = (0..1000)
        .map(|n| json!({"url": format!("https://example.com/{n}"), "alias": format!("dup-{n}")}))
        .collect();
    let body = format!(
        r#"{{"links":[{{"url":"https://example.com/one"}}],"links":{}}}"#,
        serde_json::to_string(&thousand).unwrap()
    );
    let response = http
        .post(app.url("/api/v1/links/bulk"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let problem: Value = response.json().await.unwrap();
    assert!(
        problem["detail"].as_str().unwrap().starts_with("links: "),
        "{problem}"
    );
    let lookup = http
        .get(app.url("/api/v1/links/dup-0"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        lookup.status(),
        StatusCode::NOT_FOUND,
        "nothing was created"
    );

    // The same thousand, said once: a thousand tokens of the 2000, none taken before.
    let fresh: Vec<Value> = (0..1000)
        .map(|n| json!({"url": format!("https://example.com/{n}")}))
        .collect();
    let response = http
        .post(app.url("/api/v1/links/bulk"))
        .json(&json!({ "links": fresh }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(remaining(&response), 1000);
    let results: Value = response.json().await.unwrap();
    let created = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|result| result["status"] == 201)
        .count();
    assert_eq!(created, 1000);
}

/// Redirects per second from `clients` loops over `for_how_long`.
async fn redirect_rate(app: &TestApp, clients: usize, for_how_long: Duration) -> f64 {
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
    let app = spawn_app(&config(""));
    let http = client();
    let created = http
        .post(app.url("/api/v1/links"))
        .json(&json!({"url": "https://example.com/hot", "alias": "hot"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let alone = redirect_rate(&app, 4, Duration::from_secs(2)).await;

    let stop = Arc::new(AtomicBool::new(false));
    let pngs = Arc::new(AtomicU64::new(0));
    let fetchers: Vec<_> = (0..8u32)
        .map(|fetcher| {
            let (stop, pngs, http, base) = (stop.clone(), pngs.clone(), client(), app.base.clone());
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
                    let url = format!("{base}/api/v1/links/hot/qr?format=png&size={size}");
                    let response = http.get(url).send().await.unwrap();
                    match response.status() {
                        StatusCode::OK => {
                            response.bytes().await.unwrap();
                            pngs.fetch_add(1, Ordering::Relaxed);
                        }
                        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
                            assert!(response.headers().contains_key("retry-after"));
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
    let ratio = beside / alone;
    eprintln!(
        "redirects/s alone {alone:.0}, beside 8 PNG fetchers {beside:.0} ({ratio:.2}x); {} PNGs served",
        pngs.load(Ordering::Relaxed)
    );
    assert!(pngs.load(Ordering::Relaxed) > 0, "no PNG was served at all");
    assert!(
        ratio >= 0.5,
        "redirects fell to {ratio:.2}x beside the PNG fetchers"
    );
}

#[tokio::test]
async fn held_connections_do_not_keep_a_normal_client_waiting() {
    const KEEP_ALIVE: Duration = Duration::from_secs(2);
    let app = spawn_app(&format!(
        "[server]\nbind = \"127.0.0.1:0\"\nmax_connections = 20\nkeep_alive_timeout_ms = {}\n\
         [storage]\nkind = \"memory\"\n",
        KEEP_ALIVE.as_millis()
    ));
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

async fn create(app: &TestApp, url: &str) -> (StatusCode, Value) {
    let response = client()
        .post(app.url("/api/v1/links"))
        .json(&json!({ "url": url }))
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

#[tokio::test]
async fn targets_that_loop_reach_inside_or_are_blocked_are_refused() {
    let dir = shortener_tests::TempDir::new();
    let deny_file = dir.path().join("deny.txt");
    std::fs::write(&deny_file, "# phishing seen this week\n").unwrap();
    let app = TestApp::start(
        dir.path(),
        &format!(
            "[server]\nbind = \"127.0.0.1:0\"\npublic_url = \"https://s.example.test\"\n\
             [storage]\nkind = \"memory\"\n\
             [links]\ndeny_hosts = [\"example.org\", \"*.bad.example\"]\ndeny_hosts_file = \"{}\"\n",
            deny_file.display()
        ),
    );
    for (url, says) in [
        ("https://s.example.test/abc", "own"),
        ("http://169.254.169.254/latest/meta-data/", "private"),
        ("http://10.0.0.5/", "private"),
        ("http://localhost:9000/", "private"),
        ("http://[::1]/", "private"),
        ("https://example.org/login", "blocked"),
        ("https://www.bad.example/", "blocked"),
        ("https://\u{0430}pple.com/", "mixes"),
    ] {
        let (status, problem) = create(&app, url).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{url}: {problem}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("url: ") && detail.contains(says),
            "{url}: {detail}"
        );
    }
    let (status, link) = create(&app, "https://phish.example/login").await;
    assert_eq!(status, StatusCode::CREATED, "{link}");
    let code = link["code"].as_str().unwrap().to_owned();
    let http = client();
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);

    // Listed while the node runs: the existing link stops redirecting.
    std::fs::write(&deny_file, "# phishing seen this week\nphish.example\n").unwrap();
    let listed = Instant::now();
    loop {
        let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
        if redirect.status() == StatusCode::GONE {
            break;
        }
        assert_eq!(redirect.status(), StatusCode::FOUND);
        assert!(
            listed.elapsed() < Duration::from_secs(2),
            "the denied link still redirects"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _) = create(&app, "https://phish.example/again").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_deleted_alias_made_again_by_another_owner_starts_at_zero_visits() {
    let app = spawn_app(&config(&keys_config(&[
        ("alice", "create,read,delete"),
        ("bob", "create,read"),
    ])));
    let http = client();
    let make = |owner: &'static str| {
        http.post(app.url("/api/v1/links"))
            .header("x-api-key", secret(owner))
            .json(&json!({"url": format!("https://example.com/{owner}"), "alias": "launch"}))
            .send()
    };
    assert_eq!(make("alice").await.unwrap().status(), StatusCode::CREATED);
    for _ in 0..25 {
        let redirect = http.get(app.url("/launch")).send().await.unwrap();
        assert_eq!(redirect.status(), StatusCode::FOUND);
    }
    let deleted = http
        .delete(app.url("/api/v1/links/launch"))
        .header("x-api-key", secret("alice"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(make("bob").await.unwrap().status(), StatusCode::CREATED);
    // Past a visit flush too: nothing counted for the old link lands on the new one.
    for wait in [Duration::ZERO, Duration::from_millis(1500)] {
        tokio::time::sleep(wait).await;
        let link: Value = http
            .get(app.url("/api/v1/links/launch"))
            .header("x-api-key", secret("bob"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(link["visits"], 0, "{link}");
    }
}

#[tokio::test]
async fn readyz_tells_anonymous_callers_states_only() {
    // A Redis that does not answer: the limiter is degraded, with an error naming it.
    let app = spawn_app(&config(&format!(
        "[limiter]\nkind = \"redis\"\nredis_url = \"redis://127.0.0.1:1\"\non_error = \"local\"\n{}",
        keys_config(&[("ops", "admin")])
    )));
    let http = client();
    let anonymous = http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::OK);
    let text = anonymous.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["limiter"], "degraded", "{body}");
    assert!(body.get("limiter_error").is_none(), "{body}");
    assert!(!text.contains("127.0.0.1"), "{text}");
    let admin: Value = http
        .get(app.url("/readyz"))
        .header("x-api-key", secret("ops"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(admin["limiter_error"].is_string(), "{admin}");
}

#[tokio::test]
async fn ops_bind_serves_metrics_and_readiness_apart_from_the_public_address() {
    let port = shortener_tests::free_port().unwrap();
    let app = spawn_app(&format!(
        "[server]\nbind = \"127.0.0.1:0\"\nops_bind = \"127.0.0.1:{port}\"\n[storage]\nkind = \"memory\"\n"
    ));
    let http = client();
    let ops = format!("http://127.0.0.1:{port}");
    for (base, path, status) in [
        (app.base.as_str(), "/metrics", StatusCode::NOT_FOUND),
        (app.base.as_str(), "/readyz", StatusCode::NOT_FOUND),
        (app.base.as_str(), "/healthz", StatusCode::OK),
        (ops.as_str(), "/metrics", StatusCode::OK),
        (ops.as_str(), "/readyz", StatusCode::OK),
        (ops.as_str(), "/healthz", StatusCode::OK),
        (ops.as_str(), "/api/v1/links/abc", StatusCode::NOT_FOUND),
        (ops.as_str(), "/docs", StatusCode::NOT_FOUND),
    ] {
        let response = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(response.status(), status, "{base}{path}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    }
}

#[tokio::test]
async fn case_insensitive_aliases_make_launch_and_launch_one_alias() {
    let app = spawn_app(&config(&format!(
        "[links]\ncase_insensitive_aliases = true\n{}",
        keys_config(&[("alice", "create,read"), ("bob", "create,read")])
    )));
    let http = client();
    let make = |owner: &'static str, alias: &'static str| {
        http.post(app.url("/api/v1/links"))
            .header("x-api-key", secret(owner))
            .json(&json!({"url": format!("https://example.com/{owner}"), "alias": alias}))
            .send()
    };
    let created = make("alice", "Launch").await.unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let link: Value = created.json().await.unwrap();
    assert_eq!(link["code"], "launch", "{link}");
    assert_eq!(
        make("bob", "launch").await.unwrap().status(),
        StatusCode::CONFLICT
    );
    assert_eq!(
        make("bob", "LAUNCH").await.unwrap().status(),
        StatusCode::CONFLICT
    );
    for path in ["/launch", "/Launch", "/LAUNCH"] {
        let redirect = http.get(app.url(path)).send().await.unwrap();
        assert_eq!(redirect.status(), StatusCode::FOUND, "{path}");
        assert_eq!(redirect.headers()["location"], "https://example.com/alice");
    }
}
