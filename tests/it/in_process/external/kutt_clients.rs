//! Kutt's API v2 (`[compat] kutt = true`) spoken to by Kutt's Node client (the `kutt`
//! package, installed from npm at a pinned version and run by Node) against a node in
//! this process, and the request of ShareX's Kutt uploader, replayed as it sends it.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{TestConfig, client, npm, spawn_in_process, workspace};

use crate::support::{Keys as _, run_client, secret};

/// The client's version the test runs: its latest release when the test was written.
const CLIENT_VERSION: &str = "3.0.2";

fn kutt_node() -> shortener_tests::InProcessApp {
    spawn_in_process(
        &TestConfig::default()
            .with(|c| {
                c.compat.kutt = true;
                c.visits.flush_values_secs = 1;
            })
            .keys(&[
                ("alice", "create,read,update,delete"),
                ("bob", "create,read,delete"),
            ]),
    )
}

#[test]
fn kutt_s_node_client_manages_links_through_the_kutt_api() {
    let package = npm::package("kutt", CLIENT_VERSION).unwrap_or_else(|error| panic!("{error}"));
    let node = npm::node().unwrap_or_else(|error| panic!("{error}"));
    let app = kutt_node();
    run_client(
        &node,
        &[
            workspace().join("tests/clients/kutt.mjs").as_os_str(),
            package.as_os_str(),
            app.url("").as_ref(),
            secret("alice").as_ref(),
            secret("bob").as_ref(),
        ],
    );
}

#[tokio::test]
async fn sharex_s_kutt_uploader_gets_its_link() {
    let app = kutt_node();
    let http = client();
    // ShareX's built-in Kutt shortener: a JSON POST with the key in X-API-KEY, the short
    // URL read from `link`.
    let answer = http
        .post(app.url("/api/v2/links"))
        .header("X-API-KEY", secret("alice"))
        .json(&json!({"target": "https://example.com/sharex", "reuse": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::CREATED);
    let link: Value = answer.json().await.unwrap();
    let short = link["link"].as_str().unwrap();
    let code = short.rsplit('/').next().unwrap();
    let followed = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(followed.headers()["location"], "https://example.com/sharex");
    // Errors are Kutt's `{"error": ...}`.
    let refused = http
        .post(app.url("/api/v2/links"))
        .header("X-API-KEY", secret("alice"))
        .json(&json!({"target": "ftp://example.com/x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let error: Value = refused.json().await.unwrap();
    assert!(
        error["error"].as_str().unwrap().starts_with("target: "),
        "{error}"
    );
    assert_eq!(error.as_object().unwrap().len(), 1, "{error}");
}
