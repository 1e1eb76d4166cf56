//! Password work is bounded in memory: a flood of creates with passwords and of wrong
//! guesses at locked links, 200 at once, grows a node by less than its
//! `links.password_memory_mb`, as the kernel counts its memory (a process of its own, so
//! that nothing else's memory is counted). Past the bound, requests are refused with a
//! 503 and `Retry-After`, never queued without end.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shortener_tests::{Api, TestConfig, client, spawn_app};

use crate::support::{Keys as _, secret};

/// A field of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`: the peak of `VmRSS`).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    (status.lines())
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().strip_suffix("kB"))
        .map(|kib| kib.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

#[tokio::test]
async fn two_hundred_password_operations_at_once_hold_less_than_the_budget() {
    const BUDGET_MB: u64 = 256;
    let app = spawn_app(
        &TestConfig::default()
            .in_memory()
            .with(|c| {
                c.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
                c.links.password_memory_mb = BUDGET_MB;
            })
            .policy("create", 1000, 1.0)
            .keys(&[("alice", "create,read,update,delete")]),
    );
    let (http, alice) = (client(), Api::of(&app).with_key(&secret("alice")));
    // Sent as it is, its answer's head read and its body not: one of the flood.
    let create = |alias: String| {
        let body =
            json!({"url": "https://example.com/", "alias": alias, "password": "correct horse"});
        let request = alice.request(Method::POST, "/links").json(&body);
        async move { request.send().await.unwrap() }
    };
    for link in 0..20 {
        let created = create(format!("locked-{link}")).await;
        assert_eq!(created.status(), StatusCode::CREATED);
    }
    let before_kib = status_kib(app.pid(), "VmRSS");

    let mut flood = tokio::task::JoinSet::new();
    for operation in 0..200 {
        if operation % 2 == 0 {
            flood.spawn(create(format!("flood-{operation}")));
        } else {
            // Anonymous guesses, each from a client of its own, five at each link: within
            // both unlock policies, so that only the password work's bound refuses any.
            let request = (http.get(app.url(&format!("/locked-{}", operation % 20))))
                .header("x-forwarded-for", format!("198.51.100.{operation}"))
                .header("x-link-password", "wrong horse");
            flood.spawn(async move { request.send().await.unwrap() });
        }
    }
    let answers = flood.join_all().await;
    let peak_kib = status_kib(app.pid(), "VmHWM");
    let grown_mb = peak_kib.saturating_sub(before_kib) / 1024;

    let mut done = 0;
    for answer in &answers {
        match answer.status() {
            StatusCode::CREATED | StatusCode::FORBIDDEN => done += 1,
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(answer.headers()["retry-after"], "1");
            }
            other => panic!("{other}: {:?}", answer.headers()),
        }
    }
    assert!(
        done >= 2,
        "at least the running places did their work: {done}"
    );
    eprintln!(
        "password flood: {done} of 200 done, RSS {} MB before, peak {} MB (+{grown_mb} MB)",
        before_kib / 1024,
        peak_kib / 1024
    );
    assert!(
        grown_mb < BUDGET_MB,
        "the node grew by {grown_mb} MB under the flood, past its {BUDGET_MB} MB budget"
    );
}
