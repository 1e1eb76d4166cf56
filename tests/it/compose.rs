//! `deploy/compose.yaml` as a user runs it, with podman-compose: three nodes of the image
//! behind nginx, sharing one Redis and one PostgreSQL over the compose network. One client
//! creating through the gateway from many connections at once is admitted at most
//! `capacity + rate * elapsed` (a limiter per node would admit three times that), and a
//! link made through one node is followed through every node.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::container::{Compose, Podman};
use shortener_tests::{client, free_port, workspace};

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

#[tokio::test]
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

    let link: Value = http
        .post(format!("{base}/api/v1/links"))
        .json(&json!({"url": "https://example.com/shared"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let code = link["code"].as_str().unwrap_or_else(|| panic!("{link}"));
    for _ in 0..6 {
        let redirect = http.get(format!("{base}/{code}")).send().await.unwrap();
        assert_eq!(redirect.status(), StatusCode::FOUND, "every node finds it");
    }

    // One client, 16 connections at once, for three seconds.
    let deadline = Instant::now() + Duration::from_secs(3);
    let since = Instant::now();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let http = client();
            let url = format!("{base}/api/v1/links");
            tokio::spawn(async move {
                let mut answers = Vec::new();
                while Instant::now() < deadline {
                    let answer = http
                        .post(&url)
                        .json(&json!({"url": "https://example.com/quota"}))
                        .send()
                        .await
                        .unwrap();
                    let policy = answer
                        .headers()
                        .get("ratelimit-policy")
                        .and_then(|value| value.to_str().ok())
                        .and_then(policy);
                    answers.push((answer.status(), policy));
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
    assert_eq!(admitted + refused, answers.len(), "only 201 and 429");
    let (capacity, window) = answers
        .iter()
        .find_map(|(_, policy)| *policy)
        .expect("a RateLimit-Policy header");
    // The link made above took a token too.
    let bound = capacity + capacity / window * elapsed;
    eprintln!(
        "compose: {} creates in {elapsed:.2} s: {admitted} admitted + 1 before, bound {bound:.1}",
        answers.len()
    );
    assert!(refused > 0, "the quota was reached");
    assert!(
        (admitted + 1) as f64 <= bound,
        "{admitted} + 1 admitted over the bound {bound:.1}"
    );
}
