//! The log of a real `shortener` whose stderr is a file, as under systemd or a container
//! runtime: plain text without one escape byte, or, with `log.format = "json"`, one JSON
//! object per line; with `log.requests`, one line per request, and none without. A
//! `log.level` that is not a filter is refused at start, naming the key. The requests
//! also show in `/metrics`, by operation and status class.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use shortener_testkit::Launch;
use shortener_tests::{BASE_CONFIG, TempDir, binary, check_config, client};

/// Starts a node with `[log]` set to `log_toml`, stderr to a file; makes a health check, a
/// redirect of an unknown code and a scrape, then a stop (SIGTERM, so that the shutdown
/// logs too); returns the file's text and the scrape.
async fn log_of(log_toml: &str) -> (String, String) {
    let dir = TempDir::new();
    std::fs::write(
        dir.path().join("shortener.toml"),
        format!("{BASE_CONFIG}\n[log]\n{log_toml}\n"),
    )
    .unwrap();
    let stderr = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
    let (mut guard, base) = Launch::new(binary(), "serve", dir.path(), Path::new("shortener.toml"))
        .env_remove("RUST_LOG")
        .stderr(stderr)
        .listening(Duration::from_secs(30))
        .unwrap();
    let health = client()
        .get(format!("{base}/healthz"))
        .send()
        .await
        .unwrap();
    assert!(health.status().is_success());
    let unknown = client()
        .get(format!("{base}/nosuch1"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let metrics = shortener_tests::scrape(&base).await;
    guard.signal("TERM");
    let status = guard.wait_timeout(Duration::from_secs(10)).unwrap();
    assert!(status.is_some_and(|status| status.success()), "{status:?}");
    let log = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap();
    (log, metrics)
}

#[tokio::test]
async fn a_log_written_to_a_file_has_no_escape_codes() {
    let (text, metrics) = log_of("level = \"info\"").await;
    assert!(
        !text.contains("shortener::request"),
        "requests unlogged: {text}"
    );
    for series in [
        "shortener_http_requests_total{operation=\"healthz\",status=\"2xx\"} 1",
        "shortener_http_requests_total{operation=\"redirect\",status=\"4xx\"} 1",
        "shortener_http_request_duration_seconds_bucket{operation=\"healthz\",status=\"2xx\",le=\"5\"} 1",
    ] {
        assert!(metrics.contains(series), "{series} in {metrics}");
    }
    assert!(
        text.lines().count() >= 2,
        "start and stop are logged: {text}"
    );
    assert!(text.contains("INFO"), "{text}");
    assert!(!text.contains('\u{1b}'), "an escape byte in {text:?}");
}

#[tokio::test]
async fn every_line_of_the_json_log_is_an_object() {
    let (text, _) = log_of("level = \"info\"\nformat = \"json\"\nrequests = true").await;
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "start and stop are logged: {text}");
    let mut requests = Vec::new();
    for line in lines {
        let event: Value =
            serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"));
        assert_eq!(event["level"], "INFO", "{line}");
        assert!(event["timestamp"].is_string(), "{line}");
        assert!(event["fields"]["message"].is_string(), "{line}");
        if event["target"] == "shortener::request" {
            let fields = &event["fields"];
            requests.push((
                fields["operation"].as_str().unwrap().to_owned(),
                fields["status"].as_u64().unwrap(),
                fields["path"].as_str().unwrap().to_owned(),
            ));
            assert!(fields["micros"].is_u64(), "{line}");
        }
    }
    let expected = [
        ("healthz".to_owned(), 200, "/healthz".to_owned()),
        ("redirect".to_owned(), 404, "/nosuch1".to_owned()),
        ("metrics".to_owned(), 200, "/metrics".to_owned()),
    ];
    assert_eq!(requests, expected, "one line per request: {text}");
}

#[test]
fn a_bad_log_level_is_refused_naming_the_key() {
    let dir = TempDir::new();
    let (code, stderr) = check_config(
        dir.path(),
        &format!("{BASE_CONFIG}\n[log]\nlevel = \"shortener=shouting\"\n"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("log.level"), "{stderr}");
    let (code, stderr) = check_config(
        dir.path(),
        &format!("{BASE_CONFIG}\n[log]\nformat = \"xml\"\n"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("log.format"), "{stderr}");
}
