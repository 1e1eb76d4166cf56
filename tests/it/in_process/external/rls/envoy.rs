//! A real Envoy (1.40, from PATH or the PyPI wheel) on the repository's
//! `deploy/envoy.yaml` and `deploy/ratelimit/config/shortener.yaml`, unchanged but for
//! their ports, in front of a real `shortener`, its rate-limit filter calling
//! `shortener ratelimit-server`: the 21st create of a client limited to 20 a minute is
//! Envoy's 429, and the `x-ratelimit-*` headers that Envoy builds from our statuses count
//! down on the way; other requests are not limited. With Redis stopped under
//! `on_error = "error"`, and with the service killed, `failure_mode_deny: false` lets
//! traffic through and `true` answers Envoy's own 500.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_rls::service::REDIS_ERRORS;
use shortener_testkit::{Envoy, Gateway, render_gateway};
use shortener_tests::{
    Answer, Api, InProcessApp, InProcessRls, RedisServer, TempDir, TestConfig, client, metric,
    spawn_in_process, workspace,
};

/// The deployed limits file, in a runtime root of the test's own.
fn limits() -> TempDir {
    let dir = TempDir::new();
    std::fs::create_dir(dir.path().join("config")).unwrap();
    let deployed = workspace().join("deploy/ratelimit/config/shortener.yaml");
    std::fs::copy(deployed, dir.path().join("config/shortener.yaml")).unwrap();
    dir
}

fn service(redis: &RedisServer, dir: &TempDir, on_error: &str) -> InProcessRls {
    InProcessRls::start(
        dir.path(),
        &format!(
            "[limiter]\nkind = \"redis\"\nredis_url = \"{}\"\ntimeout_ms = 200\non_error = \"{on_error}\"\n",
            redis.url()
        ),
        "",
    )
}

fn envoy(app: &InProcessApp, rls: &InProcessRls, failure_mode_deny: bool) -> Envoy {
    let config = render_gateway(&Gateway {
        listen_port: 0,
        services: &[app.base.trim_start_matches("http://").to_owned()],
        rls: &[rls.grpc_address().to_owned()],
        failure_mode_deny,
    })
    .unwrap();
    Envoy::start(&config).unwrap_or_else(|error| panic!("{error}"))
}

/// A create through `envoy`, to the service behind it.
async fn create(envoy: &Envoy) -> Answer {
    let api = Api::at(&envoy.base);
    api.create(&json!({"url": "https://example.com/through-envoy"}))
        .await
}

fn header<'a>(answer: &'a Answer, name: &str) -> &'a str {
    (answer.headers.get(name))
        .and_then(|value| value.to_str().ok())
        .unwrap_or_else(|| panic!("no {name} in {:?}", answer.headers))
}

#[tokio::test]
async fn envoy_answers_429_with_the_headers_of_our_statuses() {
    let redis = RedisServer::start_private();
    let dir = limits();
    let rls = service(&redis, &dir, "local");
    let app = spawn_in_process(&TestConfig::default());
    let envoy = envoy(&app, &rls, false);
    let mut remaining = Vec::new();
    for _ in 0..20 {
        let response = create(&envoy).await;
        assert_eq!(
            response.status,
            StatusCode::CREATED,
            "passed to the service"
        );
        assert_eq!(header(&response, "x-ratelimit-limit"), "20, 20;w=60");
        remaining.push(
            header(&response, "x-ratelimit-remaining")
                .parse::<u32>()
                .unwrap(),
        );
    }
    assert_eq!(remaining, (0..20).rev().collect::<Vec<_>>());
    let refused = create(&envoy).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(header(&refused, "x-envoy-ratelimited"), "true");
    assert_eq!(header(&refused, "x-ratelimit-limit"), "20, 20;w=60");
    assert_eq!(header(&refused, "x-ratelimit-remaining"), "0");
    // One token back every 3 s: the reset is when the next one is.
    let reset: u64 = header(&refused, "x-ratelimit-reset").parse().unwrap();
    assert!((1..=3).contains(&reset), "reset {reset}");
    // A request that is not a create carries no descriptor.
    let other = client()
        .get(format!("{}/healthz", envoy.base))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    assert!(other.headers().get("x-ratelimit-limit").is_none());
    assert_eq!(
        envoy
            .stat("cluster.shortener.ratelimit.over_limit")
            .unwrap(),
        1
    );
    assert_eq!(envoy.stat("cluster.shortener.ratelimit.ok").unwrap(), 20);
}

/// One create through each gateway: (status with deny false, status with deny true,
/// the slower of the two answers).
async fn through_both(lenient: &Envoy, strict: &Envoy) -> (u16, u16, Duration) {
    let mut statuses = Vec::new();
    let mut slowest = Duration::ZERO;
    for envoy in [lenient, strict] {
        let started = Instant::now();
        let response = create(envoy).await;
        slowest = slowest.max(started.elapsed());
        statuses.push(response.status.as_u16());
    }
    (statuses[0], statuses[1], slowest)
}

#[tokio::test]
async fn failure_mode_deny_decides_when_redis_hangs_or_the_service_is_gone() {
    let redis = RedisServer::start_private();
    let dir = limits();
    let rls = service(&redis, &dir, "error");
    let app = spawn_in_process(&TestConfig::default());
    let lenient = envoy(&app, &rls, false);
    let strict = envoy(&app, &rls, true);
    let (open, closed, _) = through_both(&lenient, &strict).await;
    assert_eq!((open, closed), (201, 201), "Redis up: both admit");

    redis.pause();
    let (open, closed, slowest) = through_both(&lenient, &strict).await;
    // Both calls were answered by the service (its limiter timed out and it said
    // UNAVAILABLE) before Envoy gave up on it: counted as they were answered.
    let answered = metric(&rls.http, REDIS_ERRORS).await;
    redis.resume();
    assert_eq!(
        (open, closed),
        (201, 500),
        "UNAVAILABLE: deny false lets it through, deny true is Envoy's 500"
    );
    assert_eq!(
        answered, 2.0,
        "UNAVAILABLE from the service, not Envoy's own timeout"
    );
    eprintln!("slowest answer with Redis paused: {slowest:?}");
    let allowed = lenient.stat("cluster.shortener.ratelimit.failure_mode_allowed");
    assert_eq!(allowed.unwrap(), 1);
    assert_eq!(strict.stat("cluster.shortener.ratelimit.error").unwrap(), 1);

    rls.kill();
    let (open, closed, _) = through_both(&lenient, &strict).await;
    assert_eq!(
        (open, closed),
        (201, 500),
        "service gone: deny false lets it through, deny true is Envoy's 500"
    );
}
