//! The image of the repository's `Dockerfile`, built and run with podman as a user runs it:
//! it serves on its embedded default with a key from a mounted secret, keeps its links in
//! its volume across a restart, runs as a non-root user, turns healthy by its own
//! `HEALTHCHECK`, and stops on SIGTERM with exit 0 and no WAL left; `ratelimit-server` from
//! the same image answers gRPC with envoyproxy/ratelimit's variables.
//! The image's size and the container's start times are printed.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_rls::proto::rate_limit_response::Code;
use shortener_tests::container::{Container, Podman, Volume};
use shortener_tests::{Api, TempDir, answers_ok, client, free_port};

use crate::support::{secret, sha256_hex};

fn podman() -> Podman {
    Podman::new().unwrap_or_else(|error| panic!("{error}"))
}

fn image(podman: &Podman) -> &'static str {
    podman.image().unwrap_or_else(|error| panic!("{error}"))
}

/// A name no other run of this test uses.
fn unique(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("shortener-test-{what}-{}-{nanos}", std::process::id())
}

/// A file the container's user (not root) can read.
fn readable(path: &Path, content: &str) {
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    if let Some(parent) = path.parent() {
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Waits until `GET url` answers 200, and says how long that took.
async fn healthy_within(http: &reqwest::Client, url: &str, container: &Container) -> Duration {
    let started = Instant::now();
    if answers_ok(http, url, Duration::from_secs(30)).await {
        return started.elapsed();
    }
    panic!(
        "{url} never answered 200; the container said:\n{}",
        container.logs()
    );
}

#[tokio::test]
async fn the_image_serves_keeps_its_links_and_stops_cleanly() {
    let podman = podman();
    let image = image(&podman);
    let size: u64 = podman
        .run(&["image", "inspect", "--format", "{{.Size}}", image])
        .unwrap()
        .parse()
        .unwrap();
    eprintln!("container: {image} is {:.1} MB", size as f64 / 1e6);
    let version = podman.run(&["run", "--rm", image, "--version"]).unwrap();
    let revision = podman
        .run(&[
            "image",
            "inspect",
            "--format",
            "{{index .Labels \"org.opencontainers.image.revision\"}}",
            image,
        ])
        .unwrap();
    let commit = version.rsplit(['(', ')']).nth(1).unwrap_or_default();
    assert!(
        commit.len() == 12 && revision.starts_with(commit),
        "the binary ({version}) and the label ({revision}) name the commit built"
    );

    let secrets = TempDir::new();
    let keys = secrets.path().join("api-keys");
    readable(
        &keys,
        &format!(
            "[{{name = \"ops\", sha256 = \"{}\", scopes = [\"create\", \"read\"]}}]",
            sha256_hex(&secret("ops"))
        ),
    );
    let port = free_port().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let volume = Volume::create(&podman, &unique("data")).unwrap();
    let started = Instant::now();
    let container = Container::run(
        &podman,
        &unique("node"),
        &[
            "--publish",
            &format!("127.0.0.1:{port}:8080"),
            "--volume",
            &format!("{}:/data", volume.name),
            "--volume",
            &format!("{}:/run/secrets/api-keys:ro", keys.display()),
            "--env",
            "SHORTENER_API_KEYS_FILE=/run/secrets/api-keys",
            "--env",
            &format!("SHORTENER_SERVER__PUBLIC_URL={base}"),
            image,
        ],
    )
    .unwrap();
    let http = client();
    let healthz = format!("{base}/healthz");
    healthy_within(&http, &healthz, &container).await;
    eprintln!(
        "container: cold start (podman run to /healthz 200) {:.0?}",
        started.elapsed()
    );

    let ops = Api::at(&base).with_key(&secret("ops"));
    let created = ops
        .create(&json!({"url": "https://example.com/kept"}))
        .await;
    let link = created.expect(StatusCode::CREATED);
    let code = link["code"].as_str().unwrap().to_owned();
    assert_eq!(link["short_url"], format!("{base}/{code}"));
    let listed = ops.list("").await.body;
    assert_eq!(
        listed["items"][0]["code"], code,
        "the key of the secret file: {listed}"
    );

    // Not root, inside or out (no user namespace: the ids are the host's).
    let pid = container.inspect("{{.State.Pid}}").unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status
        .lines()
        .find(|line| line.starts_with("Uid:"))
        .unwrap();
    assert_eq!(uid.split_whitespace().nth(1), Some("10001"), "{uid}");

    // The image's own HEALTHCHECK, run as the engine runs it.
    container.podman(&["healthcheck", "run"]).unwrap();
    assert_eq!(
        container.inspect("{{.State.Health.Status}}").unwrap(),
        "healthy"
    );

    let restarted = Instant::now();
    container.podman(&["restart", "--time", "15"]).unwrap();
    healthy_within(&http, &healthz, &container).await;
    eprintln!(
        "container: warm start (podman restart to /healthz 200) {:.0?}",
        restarted.elapsed()
    );
    let redirect = http.get(format!("{base}/{code}")).send().await.unwrap();
    assert_eq!(
        redirect.status(),
        StatusCode::FOUND,
        "kept across the restart"
    );
    assert_eq!(redirect.headers()["location"], "https://example.com/kept");

    // SIGTERM, with the engine's kill 2 s past the 10 s shutdown deadline: exit 0 is a
    // graceful stop, 137 the engine's SIGKILL.
    let stopping = Instant::now();
    container.podman(&["stop", "--time", "12"]).unwrap();
    eprintln!("container: stopped in {:.0?}", stopping.elapsed());
    assert_eq!(
        container.inspect("{{.State.ExitCode}}").unwrap(),
        "0",
        "{}",
        container.logs()
    );
    let data = volume.mountpoint().unwrap();
    assert!(data.join("shortener.db").is_file());
    let wal = std::fs::metadata(data.join("shortener.db-wal")).map_or(0, |wal| wal.len());
    assert_eq!(wal, 0, "the WAL was checkpointed into the database");
}

#[tokio::test]
async fn ratelimit_server_runs_from_the_same_image_with_their_variables() {
    let podman = podman();
    let image = image(&podman);
    let runtime = TempDir::new();
    let config = runtime.path().join("ratelimit/config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::set_permissions(runtime.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        config.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let domain = unique("domain");
    readable(
        &config.join("limits.yaml"),
        &format!(
            "domain: {domain}\ndescriptors:\n  - key: tenant\n    rate_limit:\n      unit: hour\n      requests_per_unit: 2\n"
        ),
    );
    let (grpc, http_port) = (free_port().unwrap(), free_port().unwrap());
    // Their variables only; the host's network, to reach the machine's Redis.
    let container = Container::run(
        &podman,
        &unique("rls"),
        &[
            "--network",
            "host",
            "--volume",
            &format!("{}:/srv/runtime:ro", runtime.path().display()),
            "--env",
            "RUNTIME_ROOT=/srv/runtime",
            "--env",
            "RUNTIME_SUBDIRECTORY=ratelimit",
            "--env",
            "REDIS_SOCKET_TYPE=tcp",
            "--env",
            "REDIS_URL=127.0.0.1:6379",
            "--env",
            "USE_STATSD=false",
            "--env",
            "HOST=127.0.0.1",
            "--env",
            &format!("PORT={http_port}"),
            "--env",
            "GRPC_HOST=127.0.0.1",
            "--env",
            &format!("GRPC_PORT={grpc}"),
            image,
            "ratelimit-server",
        ],
    )
    .unwrap();
    let http = client();
    healthy_within(
        &http,
        &format!("http://127.0.0.1:{http_port}/healthcheck"),
        &container,
    )
    .await;
    let health = podman.run(&[
        "exec",
        &container.name,
        "/usr/local/bin/shortener",
        "health",
        "--ratelimit-server",
    ]);
    assert!(health.is_ok(), "{health:?}");
    let address = format!("http://127.0.0.1:{grpc}");
    let mut codes = Vec::new();
    for _ in 0..3 {
        let answer = crate::support::ask_rls(
            &address,
            shortener_rls::request(&domain, &[&[("tenant", "acme")]]),
        )
        .await
        .unwrap();
        codes.push(answer.overall_code());
    }
    assert_eq!(
        codes,
        [Code::Ok, Code::Ok, Code::OverLimit],
        "{}",
        container.logs()
    );
}
