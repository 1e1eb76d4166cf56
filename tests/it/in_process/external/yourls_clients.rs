//! YOURLS' API (`[compat] yourls = true`) spoken to by the `yourls` client from PyPI,
//! installed into a virtualenv under the target directory at a pinned version and run
//! against a node in this process, and the requests of ShareX's YOURLS shortener
//! (`format=simple`, the key as `signature`), replayed as it sends them.

use reqwest::StatusCode;
use shortener_tests::{TestConfig, client, spawn_in_process, workspace};

use crate::support::{Keys as _, run_client, secret};

/// The client's version the test runs: its latest release when the test was written.
const CLIENT_VERSION: &str = "1.2.3";

fn yourls_node() -> shortener_tests::InProcessApp {
    spawn_in_process(
        &TestConfig::default()
            .with(|c| c.compat.yourls = true)
            .keys(&[("alice", "create,read"), ("bob", "create,read")]),
    )
}

#[test]
fn the_yourls_client_shortens_expands_and_reads_stats() {
    let venv =
        shortener_testkit::pip::venv_with("yourls-client", "yourls", CLIENT_VERSION, |venv| {
            venv.join("bin/python").exists()
                && std::fs::read_dir(venv.join("lib")).is_ok_and(|mut dirs| dirs.next().is_some())
        })
        .unwrap_or_else(|error| panic!("{error}"));
    let app = yourls_node();
    run_client(
        &venv.join("bin/python"),
        &[
            workspace()
                .join("tests/clients/yourls_client.py")
                .as_os_str(),
            app.url("").as_ref(),
            "alice".as_ref(),
            secret("alice").as_ref(),
            secret("bob").as_ref(),
        ],
    );
}

#[tokio::test]
async fn sharex_s_yourls_shortener_gets_its_short_url_as_text() {
    let app = yourls_node();
    let http = client();
    let key = secret("alice");
    // ShareX's YOURLS shortener: a GET with the key as signature, the answer as text.
    let answer = http
        .get(app.url(&format!(
            "/yourls-api.php?signature={key}&action=shorturl&format=simple\
             &url=https%3A%2F%2Fexample.com%2Fsharex"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let short = answer.text().await.unwrap();
    let code = short.rsplit('/').next().unwrap();
    let followed = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(followed.headers()["location"], "https://example.com/sharex");
    // The same as a form POST, answered in XML.
    let xml = http
        .post(app.url("/yourls-api.php"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "signature={key}&action=expand&format=xml&shorturl={code}"
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        xml.contains("<longurl>https://example.com/sharex</longurl>"),
        "{xml}"
    );
    // A timed signature cannot be checked against a SHA-256: refused, saying why.
    let timed = http
        .get(app.url("/yourls-api.php?timestamp=1700000000&signature=0123&action=db-stats"))
        .send()
        .await
        .unwrap();
    assert_eq!(timed.status(), StatusCode::FORBIDDEN);
    let body = timed.text().await.unwrap();
    assert!(body.contains("timestamp: "), "{body}");
}
