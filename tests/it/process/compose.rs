//! `deploy/compose.yaml` as a user runs it, with podman-compose: three nodes of the image
//! behind nginx, sharing one Redis and one PostgreSQL over the compose network. One client
//! creating through the gateway from many connections at once is admitted at most
//! `capacity + rate * elapsed` (a limiter per node would admit three times that), and a
//! link made through one node is followed through every node. Then the nodes are
//! restarted one at a time under load, as a rolling update replaces them: every request
//! is answered by a node (no 502 from the gateway, no reset connection), and every link
//! whose create was acknowledged is there afterwards.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::container::{Compose, Podman};
use shortener_tests::{Api, client, free_port, workspace};

/// (capacity, seconds to refill it) of `RateLimit-Policy: "create";q=100;w=60`.
fn policy(header: &str) -> Option<(f64, f64)> {
    let field = |name: &str| {
        header
            .split(';')
            .find_map(|part| part.trim().strip_prefix(name))?
            .parse::<f64>()
            .ok()
    };
    Some((field("q=")?, field("w=")?))
}

// Several threads: the load runs while this task waits on podman's restarts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "podman-compose up hung past its timeout in 2 of 4 clean-clone runs (2026-12-07); \
            run it with `cargo test -p shortener-tests --test it -- --ignored compose`"]
async fn three_nodes_of_the_compose_file_share_one_quota_and_their_links() {
    let podman = Podman::new().unwrap_or_else(|error| panic!("{error}"));
    let image = podman.image().unwrap_or_else(|error| panic!("{error}"));
    let port = free_port().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let compose = Compose::up(
        &podman,
        workspace().join("deploy/compose.yaml"),
        "shortener-test",
        &[
            ("SHORTENER_IMAGE", image),
            ("SHORTENER_PORT", &format!("127.0.0.1:{port}")),
            ("SHORTENER_PUBLIC_URL", &base),
        ],
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let http = client();
    // Ready when every node answers: six answers in a row, round-robin over three.
    let mut in_a_row = 0;
    while in_a_row < 6 {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the nodes never all answered /readyz:\n{}",
            compose.logs()
        );
        let ready = http.get(format!("{base}/readyz")).send().await;
        if ready.is_ok_and(|answer| answer.status() == StatusCode::OK) {
            in_a_row += 1;
        } else {
            in_a_row = 0;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    eprintln!("compose: up and ready in {:.0?}", started.elapsed());

    let link = json!({"url": "https://example.com/shared"});
    let link = Api::at(&base).create(&link).await.body;
    let code = link["code"].as_str().unwrap_or_else(|| panic!("{link}"));
    for _ in 0..6 {
        let redirect = http.get(format!("{base}/{code}")).send().await.unwrap();
        assert_eq!(redirect.status(), StatusCode::FOUND, "every node finds it");
    }

    // One client, 16 connections at once (an HTTP client each), for three seconds; the
    // answers' bodies are not read.
    let deadline = Instant::now() + Duration::from_secs(3);
    let since = Instant::now();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let api = Api::at(&base);
            tokio::spawn(async move {
                let mut answers = Vec::new();
                while Instant::now() < deadline {
                    let answer = api
                        .request(Method::POST, "/links")
                        .json(&json!({"url": "https://example.com/quota"}))
                        .send()
                        .await
                        .unwrap();
                    let policy = answer
                        .headers()
                        .get("ratelimit-policy")
                        .and_then(|value| value.to_str().ok())
                        .and_then(policy);
                    // A node's 503 (storage overloaded on a loaded machine) must say when
                    // to come back; a gateway's 502 or 504 never does.
                    let status = if answer.status() == StatusCode::SERVICE_UNAVAILABLE
                        && answer.headers().get("retry-after").is_none()
                    {
                        StatusCode::BAD_GATEWAY
                    } else {
                        answer.status()
                    };
                    answers.push((status, policy));
                }
                answers
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.extend(task.await.unwrap());
    }
    let elapsed = since.elapsed().as_secs_f64();
    let admitted = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::CREATED)
        .count();
    let refused = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    let shed = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::SERVICE_UNAVAILABLE)
        .count();
    let others: Vec<_> = (answers.iter())
        .map(|(status, _)| *status)
        .filter(|status| {
            ![
                StatusCode::CREATED,
                StatusCode::TOO_MANY_REQUESTS,
                StatusCode::SERVICE_UNAVAILABLE,
            ]
            .contains(status)
        })
        .map(|status| status.as_u16())
        .collect();
    assert!(
        others.is_empty(),
        "only 201, 429 and a node's 503 with Retry-After, not {others:?}"
    );
    let (capacity, window) = answers
        .iter()
        .find_map(|(_, policy)| *policy)
        .expect("a RateLimit-Policy header");
    // The link made above took a token too.
    let bound = capacity + capacity / window * elapsed;
    eprintln!(
        "compose: {} creates in {elapsed:.2} s: {admitted} admitted + 1 before, bound {bound:.1}; {shed} shed (503)",
        answers.len()
    );
    assert!(refused > 0, "the quota was reached");
    assert!(
        (admitted + 1) as f64 <= bound,
        "{admitted} + 1 admitted over the bound {bound:.1}"
    );

    rolling_restart(&compose, &base, code).await;
}

/// What the load saw while the nodes were restarted: redirects answered, creates
/// acknowledged (their codes), and anything else (a gateway error, a reset connection).
#[derive(Debug, Default)]
struct Seen {
    redirects: usize,
    refused: usize,
    created: Vec<String>,
    failures: Vec<String>,
}

/// Follows `code` and creates links through the gateway until `stop`.
async fn load(base: String, code: String, stop: tokio::sync::watch::Receiver<bool>) -> Seen {
    let (http, links) = (client(), Api::at(&base).url("/links"));
    let mut seen = Seen::default();
    let mut round = 0_u64;
    while !*stop.borrow() {
        round += 1;
        let follow = http.get(format!("{base}/{code}")).send().await;
        match follow {
            Ok(answer) if answer.status() == StatusCode::FOUND => seen.redirects += 1,
            Ok(answer) => seen.failures.push(format!("GET: {}", answer.status())),
            Err(error) => seen.failures.push(format!("GET: {error}")),
        }
        if !round.is_multiple_of(4) {
            continue;
        }
        let create = http
            .post(&links)
            .json(&json!({"url": format!("https://example.com/rolling/{round}")}))
            .send()
            .await;
        match create {
            Ok(answer) if answer.status() == StatusCode::CREATED => {
                // A body cut short is a failure to report, not a panic of this task that
                // would hide what the others saw.
                match answer.json::<Value>().await {
                    Ok(link) => match link["code"].as_str() {
                        Some(code) => seen.created.push(code.to_owned()),
                        None => seen
                            .failures
                            .push(format!("POST: 201 without a code: {link}")),
                    },
                    Err(error) => seen.failures.push(format!("POST: 201, its body: {error}")),
                }
            }
            Ok(answer) if answer.status() == StatusCode::TOO_MANY_REQUESTS => seen.refused += 1,
            // A node's own overload answer, with when to come back: not a lost request.
            Ok(answer)
                if answer.status() == StatusCode::SERVICE_UNAVAILABLE
                    && answer.headers().contains_key("retry-after") =>
            {
                seen.refused += 1;
            }
            Ok(answer) => seen.failures.push(format!("POST: {}", answer.status())),
            Err(error) => seen.failures.push(format!("POST: {error}")),
        }
    }
    seen
}

/// Restarts the three nodes one at a time, each once it is back and ready, under load.
async fn rolling_restart(compose: &Compose, base: &str, code: &str) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let loads: Vec<_> = (0..4)
        .map(|_| tokio::spawn(load(base.to_owned(), code.to_owned(), stopped.clone())))
        .collect();
    let started = Instant::now();
    for node in ["node1", "node2", "node3"] {
        let container = compose.container(node);
        if let Err(error) = compose.podman(&["restart", "--time", "15", &container]) {
            panic!("podman restart {node}: {error}\n{}", compose.logs());
        }
        let back = Instant::now();
        while compose
            .podman(&["exec", &container, "/usr/local/bin/shortener", "health"])
            .is_err()
        {
            assert!(
                back.elapsed() < Duration::from_secs(60),
                "{node} never came back:\n{}",
                compose.service_logs(node)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let _ = stop.send(true);
    let mut seen = Seen::default();
    for load in loads {
        let one = load.await.unwrap();
        seen.redirects += one.redirects;
        seen.refused += one.refused;
        seen.created.extend(one.created);
        seen.failures.extend(one.failures);
    }
    eprintln!(
        "compose: rolling restart of 3 nodes in {:.1?}: {} redirects, {} creates acknowledged, {} refused (429, or 503 with Retry-After), {} failed",
        started.elapsed(),
        seen.redirects,
        seen.created.len(),
        seen.refused,
        seen.failures.len()
    );
    assert!(
        seen.failures.is_empty(),
        "{} failed, the first: {:?}; the gateway said:\n{}",
        seen.failures.len(),
        &seen.failures[..seen.failures.len().min(10)],
        (compose.service_logs("gateway").lines().rev().take(20))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(seen.redirects > 0 && !seen.created.is_empty(), "load ran");
    let http = client();
    for code in &seen.created {
        let redirect = http.get(format!("{base}/{code}")).send().await.unwrap();
        assert_eq!(
            redirect.status(),
            StatusCode::FOUND,
            "{code} was acknowledged"
        );
    }
}
