//! envoyproxy/ratelimit's eight integration scenarios (their `integration-test/scripts/*.sh`),
//! replayed through a real Envoy in front of `shortener ratelimit-server`: the service set
//! up by their compose file's environment variables (`RUNTIME_ROOT`,
//! `RUNTIME_SUBDIRECTORY`, `REDIS_URL`, `RESPONSE_DYNAMIC_METADATA`...) on a private Redis,
//! reading limits and behind a gateway written to the same effect as their examples
//! (`their-example/`, see its NOTICE), with an upstream of the test's own in place of
//! their mock (200 and "Hello World from Service 1", or 2). Each test asserts what its
//! script expects of each request (status, body, headers, the over-limit counter of
//! `detailed_metric`, here on our `/metrics` in place of their statsd exporter), on its
//! own service and Redis. Their limits are fixed windows of a calendar minute: a sequence
//! starts where the minute has room for it, and the scripts that `sleep 60` for their
//! buckets to refill wait the full minute too.
//!
//! | test | their script |
//! |---|---|
//! | `simple_get` | `simple-get.sh` |
//! | `trigger_ratelimit` | `trigger-ratelimit.sh` |
//! | `trigger_shadow_mode_key` | `trigger-shadow-mode-key.sh` |
//! | `value_included_in_stats_key_when_unspecified` | `value-included-in-stats-key-when-unspecified.sh` |
//! | `replaces` | `replaces.sh` |
//! | `quotas::quota` | `quota.sh` |
//! | `quotas::token_quota` | `token-quota.sh` |
//! | `quotas::multiservice_tokenquota` | `multiservice-tokenquota.sh` |

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use shortener_testkit::Envoy;
use shortener_tests::{InProcessRls, RedisServer, TempDir, client, scrape, workspace};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

mod quotas;

/// One scenario's world: their compose file's services, on loopback ports of its own.
struct Stack {
    envoy: Envoy,
    rls: InProcessRls,
    _redis: RedisServer,
    _runtime: TempDir,
}

impl Stack {
    async fn start() -> Self {
        let redis = RedisServer::start_private();
        // Their volume: examples/ratelimit/config mounted at /data/ratelimit/config.
        let runtime = TempDir::new();
        let config = runtime.path().join("ratelimit/config");
        std::fs::create_dir_all(&config).unwrap();
        let ours = workspace().join("tests/it/in_process/external/rls/their-example");
        for file in ["config.yaml", "example.yaml"] {
            std::fs::copy(ours.join("config").join(file), config.join(file)).unwrap();
        }
        let redis_url = redis.url().trim_start_matches("redis://").to_owned();
        let root = runtime.path().display().to_string();
        // Their compose file's variables, with our Redis and runtime root; no statsd here
        // (the counters are on /metrics).
        let rls = InProcessRls::start_with_env(
            runtime.path(),
            &[
                ("USE_STATSD", "false"),
                ("LOG_LEVEL", "debug"),
                ("REDIS_SOCKET_TYPE", "tcp"),
                ("REDIS_URL", &redis_url),
                ("RUNTIME_ROOT", &root),
                ("RUNTIME_SUBDIRECTORY", "ratelimit"),
                ("RUNTIME_WATCH_ROOT", "false"),
                ("RESPONSE_DYNAMIC_METADATA", "true"),
            ],
        );
        let service_1 = upstream("Hello World from Service 1").await;
        let service_2 = upstream("Hello World from Service 2").await;
        let envoy = Envoy::start(&gateway(
            &ours.join("envoy.yaml"),
            rls.grpc_address(),
            service_1,
            service_2,
        ))
        .unwrap_or_else(|error| panic!("{error}"));
        Self {
            envoy,
            rls,
            _redis: redis,
            _runtime: runtime,
        }
    }

    /// `GET path` through Envoy with `headers`: (status, the `x-ratelimit-remaining`
    /// header if any, body).
    async fn get(
        &self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Option<String>, String) {
        let mut request = client().get(format!("{}{path}", self.envoy.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let remaining = (response.headers().get("x-ratelimit-remaining"))
            .map(|value| value.to_str().unwrap().to_owned());
        (status, remaining, response.text().await.unwrap())
    }

    /// The status of `GET path` with `headers`.
    async fn status(&self, path: &str, headers: &[(&str, &str)]) -> StatusCode {
        self.get(path, headers).await.0
    }

    /// The status line of `GET path` with `headers`, as it came over the wire (what
    /// `curl -i` shows): HTTP/1.1 on a connection of its own.
    async fn status_line(&self, path: &str, headers: &[(&str, &str)]) -> String {
        let address = self.envoy.base.trim_start_matches("http://");
        let mut stream = TcpStream::connect(address).await.unwrap();
        let mut head = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8_lossy(&answer);
        answer.lines().next().unwrap_or_default().to_owned()
    }

    /// Returns once Envoy has had `calls` answers from the rate limit service in all: a
    /// route's `apply_on_stream_done` call goes after the response, and the next request
    /// of a script comes after it (a new `curl` process), as here.
    async fn answered(&self, calls: u64) {
        for _ in 0..100 {
            if self
                .envoy
                .stat("cluster.ratelimit.upstream_rq_completed")
                .unwrap()
                >= calls
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("Envoy did not get {calls} answers from the rate limit service");
    }
}

/// Their gateway (`their-example/envoy.yaml`) with this run's ports.
fn gateway(template: &Path, rls: &str, service_1: u16, service_2: u16) -> String {
    let (_, rls_port) = rls.rsplit_once(':').unwrap();
    let yaml = std::fs::read_to_string(template).unwrap();
    let yaml = yaml
        .replace("@RLS_PORT@", rls_port)
        .replace("@SERVICE_1_PORT@", &service_1.to_string())
        .replace("@SERVICE_2_PORT@", &service_2.to_string());
    assert!(!yaml.contains("_PORT@"), "a port left out: {yaml}");
    yaml
}

/// One listener of their mock: 200 and `body` to every request, on connections kept
/// alive. Its port; it serves until the test's runtime ends.
async fn upstream(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0_u8; 4096];
                while let Ok(read) = stream.read(&mut chunk).await {
                    if read == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..read]);
                    // Requests without a body (GET): one answer per head.
                    while let Some(end) = buffer.windows(4).position(|four| four == b"\r\n\r\n") {
                        buffer.drain(..end + 4);
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if stream.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    port
}

/// Returns when at least `room` is left of the current calendar minute (their windows):
/// at once, or just after the next :00.
async fn room_in_the_minute(room: Duration) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let into = Duration::from_millis(u64::try_from(now.as_millis() % 60_000).unwrap());
    let left = Duration::from_secs(60) - into;
    if left < room {
        tokio::time::sleep(left + Duration::from_millis(100)).await;
    }
}

/// Admitted, through to the upstream.
const OK: StatusCode = StatusCode::OK;
/// Refused by Envoy on the service's OVER_LIMIT.
const LIMITED: StatusCode = StatusCode::TOO_MANY_REQUESTS;

/// simple-get.sh: (foo: test), (baz: shady) is admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_get() {
    let stack = Stack::start().await;
    let headers = [("foo", "test"), ("baz", "shady")];
    let (status, _, body) = stack.get("/twoheader", &headers).await;
    assert_eq!(status, OK);
    assert_eq!(body, "Hello World from Service 1");
}

/// trigger-ratelimit.sh: (foo: pelle, baz: not-so-shady), 3 a minute: 3 admitted, the
/// 4th refused, and the 5th's status line says "Too Many Requests".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trigger_ratelimit() {
    let stack = Stack::start().await;
    let headers = [("foo", "pelle"), ("baz", "not-so-shady")];
    room_in_the_minute(Duration::from_secs(10)).await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(stack.status("/twoheader", &headers).await);
    }
    assert_eq!(statuses, [OK, OK, OK, LIMITED]);
    let line = stack.status_line("/twoheader", &headers).await;
    assert_eq!(line, "HTTP/1.1 429 Too Many Requests");
}

/// trigger-shadow-mode-key.sh: (foo: pelle, baz: shady), 3 a minute in shadow mode:
/// none of 6 requests is refused, and the 6th says 0 remaining. (Their script fails only
/// when the header it cuts out is "0", under a message that it should be zero; with the
/// header's `\r` left in, that comparison never holds. Theirs answers 0, as the message
/// says, and so does ours.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trigger_shadow_mode_key() {
    let stack = Stack::start().await;
    let headers = [("foo", "pelle"), ("baz", "shady")];
    room_in_the_minute(Duration::from_secs(10)).await;
    let mut answers = Vec::new();
    for _ in 0..6 {
        let (status, remaining, _) = stack.get("/twoheader", &headers).await;
        answers.push((status, remaining));
    }
    let statuses: Vec<StatusCode> = answers.iter().map(|(status, _)| *status).collect();
    assert_eq!(statuses, [OK; 6], "shadow mode refuses nothing");
    assert_eq!(answers[5].1.as_deref(), Some("0"), "x-ratelimit-remaining");
}

/// value-included-in-stats-key-when-unspecified.sh: (unspec: unspecified_value), 2 a
/// minute with `detailed_metric`: 2 admitted, the 3rd refused, and the over-limit
/// counter keyed by the value itself is 1. Their script reads their statsd exporter after
/// 5 s; ours counts on `/metrics` at once, under the same name and labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn value_included_in_stats_key_when_unspecified() {
    let stack = Stack::start().await;
    let headers = [("unspec", "unspecified_value")];
    room_in_the_minute(Duration::from_secs(10)).await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(stack.status("/unspec", &headers).await);
    }
    assert_eq!(statuses, [OK, OK, LIMITED]);
    // As their grep | cut: the value after the labels, of the line that names it.
    let text = scrape(&stack.rls.http).await;
    let stats: Vec<&str> = (text.lines())
        .filter(|line| line.contains("ratelimit_service_rate_limit_over_limit"))
        .filter(|line| line.contains("unspec_unspecified_value"))
        .filter_map(|line| Some(line.split_once('}')?.1.trim()))
        .collect();
    assert_eq!(stats, ["1"], "{text}");
}

/// One request of a script: its path, its headers and the status it should get.
type Step<'a> = (&'a str, Vec<(&'a str, &'a str)>, StatusCode);

/// replaces.sh: a limit that `replaces` others stands in for them in the same request
/// (and raises a limit of 0), leaves them in force elsewhere, and can replace several.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaces() {
    let stack = Stack::start().await;
    let two = |foo, bar| vec![("foo", foo), ("bar", bar)];
    let four = |foo, bar, destination| {
        vec![
            ("foo", foo),
            ("bar", bar),
            ("source_cluster", "proxy"),
            ("destination_cluster", destination),
        ]
    };
    let mut five = four("my_foo", "bkthomps", "fake");
    five.push(("category", "account"));
    let script: Vec<Step> = vec![
        // banned_limit (0 a minute), raised to 2 by (proxy, override).
        ("/twoheader", two("bkthomps", "banned"), LIMITED),
        ("/fourheader", four("bkthomps", "banned", "mock"), LIMITED),
        ("/fourheader", four("bkthomps", "banned", "override"), OK),
        ("/fourheader", four("bkthomps", "banned", "override"), OK),
        (
            "/fourheader",
            four("bkthomps", "banned", "override"),
            LIMITED,
        ),
        // bkthomps (1 a minute) replaced by (proxy, bkthomps) (2), but only beside it.
        ("/fourheader", four("my_foo", "bkthomps", "bkthomps"), OK),
        ("/fourheader", four("my_foo", "bkthomps", "bkthomps"), OK),
        (
            "/fourheader",
            four("my_foo", "bkthomps", "bkthomps"),
            LIMITED,
        ),
        (
            "/fourheader",
            four("my_foo", "bkthomps", "not_bkthomps"),
            OK,
        ),
        (
            "/fourheader",
            four("my_foo", "bkthomps", "not_bkthomps"),
            LIMITED,
        ),
        (
            "/fourheader",
            four("my_foo", "bkthomps", "bkthomps"),
            LIMITED,
        ),
        // bkthomps and fake_name both replaced by (category: account) (4).
        ("/fiveheader", five.clone(), OK),
        ("/fiveheader", five.clone(), OK),
        ("/fiveheader", five.clone(), OK),
        ("/fiveheader", five.clone(), OK),
        ("/fiveheader", five.clone(), LIMITED),
        ("/twoheader", two("foo_2", "bkthomps"), OK),
        ("/twoheader", two("foo_2", "bkthomps"), LIMITED),
        ("/fourheader", four("foo_3", "bar_3", "fake"), OK),
        ("/fourheader", four("foo_3", "bar_3", "fake"), OK),
        ("/fourheader", four("foo_3", "bar_3", "fake"), LIMITED),
        ("/fiveheader", five, LIMITED),
    ];
    room_in_the_minute(Duration::from_secs(15)).await;
    let mut wrong = Vec::new();
    for (index, (path, headers, expected)) in script.iter().enumerate() {
        let got = stack.status(path, headers).await;
        if got != *expected {
            wrong.push(format!(
                "request {}: {path} {headers:?}: expected {expected}, got {got}",
                index + 1
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
