//! The log of a real `shortener` whose stdout and stderr are files, as under systemd or
//! a container runtime: plain text without one escape byte, or, with `log.format =
//! "json"`, one JSON object per line on both (the line that says where it listens, the
//! warnings, a configuration error too); with `log.requests`, one line per request, and
//! none without. A `log.level` that is not a filter is refused at start, naming the key.
//! The requests also show in `/metrics`, by operation and status class.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use shortener_testkit::{Guard, Launch, listening_address};
use shortener_tests::config::LogFormat;
use shortener_tests::{TempDir, TestConfig, binary, check_config, client};

use crate::process::cli::{shortener, text};

/// What a node wrote while it ran, and a scrape of its `/metrics`.
struct Written {
    base: String,
    stdout: String,
    stderr: String,
    metrics: String,
}

/// Starts `launch` with its stdout and stderr written to files in `dir`, and returns it
/// once its stdout says where it listens, with that address, read as the test kit reads
/// it.
fn spawn_to_files(launch: Launch, dir: &Path) -> (Guard, String) {
    let prefix = launch.listening_prefix();
    let (stdout, stderr) = (dir.join("stdout.log"), dir.join("stderr.log"));
    let mut guard = launch
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let written = std::fs::read_to_string(&stdout).unwrap_or_default();
        // Whole lines only: the last one may be half written.
        let address = (written.split_inclusive('\n'))
            .filter(|line| line.ends_with('\n'))
            .find_map(|line| listening_address(line.trim_end(), &prefix));
        if let Some(address) = address {
            return (guard, address);
        }
        let exited = guard.child().try_wait().unwrap();
        let said = || std::fs::read_to_string(&stderr).unwrap_or_default();
        assert!(exited.is_none(), "exited ({exited:?}): {}", said());
        assert!(Instant::now() < deadline, "no address in 30 s: {}", said());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops `guard` with SIGTERM (so that the shutdown logs too), asserts a clean exit, and
/// returns what it wrote to stdout and stderr in `dir`.
fn stop(mut guard: Guard, dir: &Path) -> (String, String) {
    guard.signal("TERM");
    let status = guard.wait_timeout(Duration::from_secs(10)).unwrap();
    assert!(status.is_some_and(|status| status.success()), "{status:?}");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    (read("stdout.log"), read("stderr.log"))
}

/// Starts a node logging at `info` in `format`, each request too if `requests`; makes a
/// health check, a redirect of an unknown code and a scrape, then a stop.
async fn log_of(format: LogFormat, requests: bool) -> Written {
    let dir = TempDir::new();
    let config = TestConfig::default().with(|c| {
        c.log.level = "info".into();
        c.log.format = format;
        c.log.requests = requests;
    });
    std::fs::write(
        dir.path().join("shortener.toml"),
        config.file_text(dir.path()),
    )
    .unwrap();
    let launch = Launch::new(binary(), "serve", dir.path(), Path::new("shortener.toml"))
        .env_remove("RUST_LOG");
    let (guard, base) = spawn_to_files(launch, dir.path());
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
    let (stdout, stderr) = stop(guard, dir.path());
    Written {
        base,
        stdout,
        stderr,
        metrics,
    }
}

/// Each non-empty line of `text` (`name`, for the message) as a JSON object.
fn json_lines(name: &str, text: &str) -> Vec<Value> {
    (text.lines().filter(|line| !line.trim().is_empty()))
        .map(|line| {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("{name}: not JSON ({error}): {line}"));
            assert!(event.is_object(), "{name}: not an object: {line}");
            assert!(event["timestamp"].is_string(), "{name}: {line}");
            assert!(event["fields"]["message"].is_string(), "{name}: {line}");
            event
        })
        .collect()
}

#[tokio::test]
async fn a_log_written_to_a_file_has_no_escape_codes() {
    let written = log_of(LogFormat::Text, false).await;
    let (text, metrics) = (&written.stderr, &written.metrics);
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
    // The line that scripts wait for, as it has always been, and nothing else.
    assert_eq!(
        written.stdout,
        format!("shortener listening on {}\n", written.base)
    );
}

#[tokio::test]
async fn every_line_of_the_json_log_is_an_object() {
    let written = log_of(LogFormat::Json, true).await;
    let text = &written.stderr;
    let events = json_lines("stderr", text);
    assert!(events.len() >= 2, "start and stop are logged: {text}");
    let mut requests = Vec::new();
    for event in events {
        assert_eq!(event["level"], "INFO", "{event}");
        if event["target"] == "shortener::request" {
            let fields = &event["fields"];
            requests.push((
                fields["operation"].as_str().unwrap().to_owned(),
                fields["status"].as_u64().unwrap(),
                fields["path"].as_str().unwrap().to_owned(),
            ));
            assert!(fields["micros"].is_u64(), "{event}");
        }
    }
    let expected = [
        ("healthz".to_owned(), 200, "/healthz".to_owned()),
        ("redirect".to_owned(), 404, "/nosuch1".to_owned()),
        ("metrics".to_owned(), 200, "/metrics".to_owned()),
    ];
    assert_eq!(requests, expected, "one line per request: {text}");
    // Where it listens is a line of the log too, which still names the address.
    let said = json_lines("stdout", &written.stdout);
    assert_eq!(said.len(), 1, "{}", written.stdout);
    assert_eq!(
        said[0]["fields"]["message"],
        format!("shortener listening on {}", written.base)
    );
}

/// The rate limit service under their `LOG_FORMAT=json`: where it listens, the warning
/// for a variable of theirs that changes nothing, start and stop are all JSON lines.
#[tokio::test]
async fn every_line_of_the_rate_limit_service_s_json_log_is_an_object() {
    let dir = TempDir::new();
    std::fs::create_dir(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/edge.yaml"),
        "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: minute\n      requests_per_unit: 5\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("rls.toml"),
        "[limiter]\nkind = \"memory\"\n[log]\nlevel = \"info\"\n[rls]\n\
         grpc_bind = \"127.0.0.1:0\"\nhttp_bind = \"127.0.0.1:0\"\nruntime_root = \".\"\n",
    )
    .unwrap();
    let launch = Launch::new(
        binary(),
        "ratelimit-server",
        dir.path(),
        Path::new("rls.toml"),
    )
    .env_remove("RUST_LOG")
    .env("LOG_FORMAT", "json")
    .env("USE_STATSD", "true");
    let (guard, addresses) = spawn_to_files(launch, dir.path());
    let (_, http) = addresses.split_once(' ').expect("two addresses");
    let health = client()
        .get(format!("{http}/healthcheck"))
        .send()
        .await
        .unwrap();
    assert!(health.status().is_success());
    let (stdout, stderr) = stop(guard, dir.path());
    let said = json_lines("stdout", &stdout);
    assert_eq!(said.len(), 1, "{stdout}");
    let events = json_lines("stderr", &stderr);
    assert!(
        events.iter().any(|event| event["level"] == "WARN"
            && event["fields"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("USE_STATSD"))),
        "{stderr}"
    );
    assert!(events.len() >= 3, "warning, start and stop: {stderr}");
}

/// A configuration that does not load is said in the `log.format` it asked for: one
/// JSON line naming the key, exit 2.
#[test]
fn a_configuration_error_is_said_in_the_json_it_asked_for() {
    let dir = TempDir::new();
    std::fs::write(
        dir.path().join("shortener.toml"),
        // An unknown key: the file's own text.
        format!(
            "{}\n[log]\nformat = \"json\"\n[cache]\ncapacityy = 5\n",
            TestConfig::default().file_text(dir.path())
        ),
    )
    .unwrap();
    let output = shortener(dir.path(), &["serve", "--config", "shortener.toml"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "");
    let events = json_lines("stderr", &text(&output.stderr));
    assert_eq!(events.len(), 1, "{}", text(&output.stderr));
    assert_eq!(events[0]["level"], "ERROR");
    let message = events[0]["fields"]["message"].as_str().unwrap();
    assert!(
        message.contains("configuration error") && message.contains("capacityy"),
        "{message}"
    );
}

#[test]
fn a_bad_log_level_is_refused_naming_the_key() {
    let dir = TempDir::new();
    let shouting = TestConfig::default().with(|c| c.log.level = "shortener=shouting".into());
    let (code, stderr) = check_config(dir.path(), &shouting.file_text(dir.path()));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("log.level"), "{stderr}");
    // A format that is none: the file's own text.
    let (code, stderr) = check_config(
        dir.path(),
        &format!(
            "{}\n[log]\nformat = \"xml\"\n",
            TestConfig::default().file_text(dir.path())
        ),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("log.format"), "{stderr}");
}
