//! The log of a real `shortener` whose stderr is a file, as under systemd or a container
//! runtime: plain text without one escape byte, or, with `log.format = "json"`, one JSON
//! object per line. A `log.level` that is not a filter is refused at start, naming the key.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use shortener_testkit::spawn_listening;
use shortener_tests::{BASE_CONFIG, TempDir, binary, check_config, client};

/// Starts a node with `[log]` set to `log_toml`, stderr to a file; makes one request and
/// a stop (SIGTERM, so that the shutdown logs too); returns the file's text.
async fn log_of(log_toml: &str) -> String {
    let dir = TempDir::new();
    std::fs::write(
        dir.path().join("shortener.toml"),
        format!("{BASE_CONFIG}\n[log]\n{log_toml}\n"),
    )
    .unwrap();
    let stderr = std::fs::File::create(dir.path().join("stderr.log")).unwrap();
    let (mut guard, base) = spawn_listening(
        "shortener",
        Command::new(binary())
            .args(["serve", "--config", "shortener.toml"])
            .current_dir(dir.path())
            .env_remove("RUST_LOG")
            .stderr(Stdio::from(stderr)),
        "shortener listening on ",
        Duration::from_secs(30),
    )
    .unwrap();
    let health = client()
        .get(format!("{base}/healthz"))
        .send()
        .await
        .unwrap();
    assert!(health.status().is_success());
    guard.signal("TERM");
    let status = guard.wait_timeout(Duration::from_secs(10)).unwrap();
    assert!(status.is_some_and(|status| status.success()), "{status:?}");
    std::fs::read_to_string(dir.path().join("stderr.log")).unwrap()
}

#[tokio::test]
async fn a_log_written_to_a_file_has_no_escape_codes() {
    let text = log_of("level = \"info\"").await;
    assert!(
        text.lines().count() >= 2,
        "start and stop are logged: {text}"
    );
    assert!(text.contains("INFO"), "{text}");
    assert!(!text.contains('\u{1b}'), "an escape byte in {text:?}");
}

#[tokio::test]
async fn every_line_of_the_json_log_is_an_object() {
    let text = log_of("level = \"info\"\nformat = \"json\"").await;
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "start and stop are logged: {text}");
    for line in lines {
        let event: Value =
            serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"));
        assert_eq!(event["level"], "INFO", "{line}");
        assert!(event["timestamp"].is_string(), "{line}");
        assert!(event["fields"]["message"].is_string(), "{line}");
    }
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
