//! `shortener ratelimit-server` processes on a real Redis: exactly the limit admitted
//! when 8 client processes send 25 requests each at once through two instances (on one
//! Redis and on a three-master cluster); a request refused by its second descriptor
//! leaves the first's bucket as it was in Redis; and with Redis stopped (SIGSTOP) under
//! `on_error = "error"` every call is answered UNAVAILABLE within the timeout.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shortener_rls::proto::RateLimitRequest;
use shortener_rls::proto::rate_limit_response::Code;
use shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient;
use shortener_tests::{InProcessRls, RedisCluster, RedisServer, TempDir, concurrently, metric};

mod envoy;
mod fallback;
mod migration;
mod reload;
mod scenarios;

const LIMITS: &str = "
domain: exact
descriptors:
  - key: client
    algorithm: token_bucket
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: wide
    algorithm: token_bucket
    rate_limit:
      unit: minute
      requests_per_unit: 100
  - key: window
    rate_limit:
      unit: minute
      requests_per_unit: 10
";

/// A service on `redis` (a `redis_url` or `redis_cluster` line) with `extra` limiter
/// settings, reading the limits of `dir`.
pub(super) fn start(dir: &Path, redis: &str, extra: &str) -> InProcessRls {
    InProcessRls::start(
        dir,
        &format!("[limiter]\nkind = \"redis\"\ntimeout_ms = 200\n{redis}\n{extra}\n"),
        "",
    )
}

pub(super) fn rand_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

pub(super) fn limits_dir() -> TempDir {
    let dir = TempDir::new();
    std::fs::create_dir(dir.path().join("config")).unwrap();
    std::fs::write(dir.path().join("config/exact.yaml"), LIMITS).unwrap();
    dir
}

/// A request in the domain of [`LIMITS`].
pub(super) fn request(descriptors: &[&[(&str, &str)]]) -> RateLimitRequest {
    shortener_rls::request("exact", descriptors)
}

pub(super) use crate::support::ask_rls as ask;

/// One client process: 25 requests at once for `RLS_TEST_KEY=RLS_TEST_VALUE`, spread over the
/// addresses of `RLS_TEST_ADDRESSES`; prints how many were admitted. Run only by
/// [`eight_processes_on`], which starts this test binary with `--ignored --exact`.
#[test]
#[ignore = "a client process of the exactness tests, started by them"]
fn client_process() {
    let addresses: Vec<String> = std::env::var("RLS_TEST_ADDRESSES")
        .expect("started by eight_processes_on")
        .split(',')
        .map(str::to_owned)
        .collect();
    let value = std::env::var("RLS_TEST_VALUE").unwrap();
    let key = std::env::var("RLS_TEST_KEY").unwrap_or_else(|_| "client".into());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let admitted = runtime.block_on(async {
        let mut clients = Vec::new();
        for address in &addresses {
            clients.push(
                RateLimitServiceClient::connect(address.clone())
                    .await
                    .unwrap(),
            );
        }
        let answers = concurrently(25, |index| {
            let mut client = clients[index % clients.len()].clone();
            let request = request(&[&[(key.as_str(), value.as_str())]]);
            async move {
                client
                    .should_rate_limit(request)
                    .await
                    .unwrap()
                    .into_inner()
            }
        })
        .await;
        answers
            .iter()
            .filter(|answer| answer.overall_code() == Code::Ok)
            .count()
    });
    println!("admitted={admitted}");
}

/// The name libtest knows [`client_process`] by: its module path without the crate's.
fn client_process_name() -> String {
    let (_crate, module) = module_path!()
        .split_once("::")
        .expect("a module of the crate");
    format!("{module}::client_process")
}

/// 8 client processes x 25 concurrent requests on the descriptor `key=value`: the
/// admitted total.
pub(super) fn eight_processes_on(addresses: &[String], key: &str, value: &str) -> usize {
    let children: Vec<_> = (0..8)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--ignored",
                    "--exact",
                    &client_process_name(),
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("RLS_TEST_ADDRESSES", addresses.join(","))
                .env("RLS_TEST_VALUE", value)
                .env("RLS_TEST_KEY", key)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "a client process failed");
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.lines()
                .find_map(|line| {
                    let (_, count) = line.split_once("admitted=")?;
                    count.split_whitespace().next()?.parse::<usize>().ok()
                })
                .unwrap_or_else(|| panic!("no count in {text}"))
        })
        .sum()
}

#[test]
fn one_or_two_instances_on_one_redis_admit_exactly_the_limit() {
    let redis = RedisServer::start_private();
    let redis = format!("redis_url = \"{}\"", redis.url());
    let admitted = trials(&redis, "client", 3, 2);
    assert_eq!(
        admitted,
        [10, 10, 10],
        "of 200 requests each trial, a token bucket of 10 per minute"
    );
    assert_eq!(trials(&redis, "client", 1, 1), [10], "through one instance");
    // A fixed window (the default) counts as exactly, within one minute: each trial keeps
    // clear of the minute's end, where a second window would rightly admit 10 more.
    for instances in [1, 2] {
        clear_of_the_minute_end();
        assert_eq!(
            trials(&redis, "window", 1, instances),
            [10],
            "a fixed window of 10 a minute, through {instances} instance(s)"
        );
    }
}

/// Returns when at least 10 s are left in the current minute. Wall-clock, because the
/// service's windows are on Redis's `TIME`, which a process test cannot move; the same
/// counting at times the test chooses is `shortener-redis`'s calendar proptest.
pub(super) fn clear_of_the_minute_end() {
    let into_minute = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 60;
    if into_minute >= 50 {
        std::thread::sleep(std::time::Duration::from_secs(61 - into_minute));
    }
}

#[test]
fn two_instances_on_a_redis_cluster_admit_exactly_the_limit() {
    let cluster = RedisCluster::start();
    let nodes: Vec<String> = cluster
        .urls()
        .iter()
        .map(|url| format!("\"{url}\""))
        .collect();
    let admitted = trials(
        &format!("redis_cluster = [{}]", nodes.join(", ")),
        "client",
        2,
        2,
    );
    assert_eq!(admitted, [10, 10]);
}

/// `instances` services on `redis`, and what [`eight_processes_on`] admits through them
/// on a fresh descriptor of `key`, `count` times.
fn trials(redis: &str, key: &str, count: usize, instances: usize) -> Vec<usize> {
    let dir = limits_dir();
    let services: Vec<InProcessRls> = (0..instances)
        .map(|_| start(dir.path(), redis, ""))
        .collect();
    let addresses: Vec<String> = services.iter().map(|rls| rls.grpc.clone()).collect();
    (0..count)
        .map(|trial| {
            eight_processes_on(&addresses, key, &format!("trial-{trial}-{}", rand_suffix()))
        })
        .collect()
}

/// The first descriptor's bucket, read back in Redis, is the same before and after a
/// request that its second descriptor refuses; the service counts their metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_leaves_its_other_buckets_untouched_in_redis() {
    let redis = RedisServer::start_private();
    let dir = limits_dir();
    let rls = start(dir.path(), &format!("redis_url = \"{}\"", redis.url()), "");
    let client = redis::Client::open(redis.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let both: &[&[(&str, &str)]] = &[&[("wide", "w")], &[("client", "c")]];
    for _ in 0..10 {
        assert_eq!(
            ask(&rls.grpc, request(both)).await.unwrap().overall_code(),
            Code::Ok
        );
    }
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*wide*")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(
        keys.len(),
        1,
        "one bucket for the wide descriptor: {keys:?}"
    );
    let before: String = redis::cmd("GET")
        .arg(&keys[0])
        .query_async(&mut connection)
        .await
        .unwrap();
    for _ in 0..5 {
        let refused = ask(&rls.grpc, request(both)).await.unwrap();
        assert_eq!(refused.overall_code(), Code::OverLimit);
        assert_eq!(refused.statuses[0].code(), Code::Ok);
        assert_eq!(refused.statuses[0].limit_remaining, 90);
        assert_eq!(refused.statuses[1].code(), Code::OverLimit);
    }
    let after: String = redis::cmd("GET")
        .arg(&keys[0])
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(
        before, after,
        "the wide bucket was not written by the refused requests"
    );
    let over = metric(&rls.http, "ratelimit_service_rate_limit_over_limit").await;
    let hits = metric(&rls.http, "ratelimit_service_rate_limit_total_hits").await;
    assert_eq!(
        (over, hits),
        (5.0, 30.0),
        "5 refusals of the narrow descriptor; 15 requests x 2"
    );
    let health = reqwest::get(format!("{}/healthcheck", rls.http))
        .await
        .unwrap();
    assert_eq!(health.status(), reqwest::StatusCode::OK);
}

/// Redis stopped with SIGSTOP: every call answered UNAVAILABLE within the timeout
/// (200 ms) plus 50 ms, under `on_error = "error"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_redis_is_answered_unavailable_within_the_timeout() {
    let redis = RedisServer::start_private();
    let dir = limits_dir();
    let rls = start(
        dir.path(),
        &format!("redis_url = \"{}\"", redis.url()),
        "on_error = \"error\"",
    );
    assert_eq!(
        ask(&rls.grpc, request(&[&[("client", "hung")]]))
            .await
            .unwrap()
            .overall_code(),
        Code::Ok
    );
    let mut client = RateLimitServiceClient::connect(rls.grpc.clone())
        .await
        .unwrap();
    redis.pause();
    let mut slowest = Duration::ZERO;
    for _ in 0..10 {
        let started = Instant::now();
        let answer = client
            .should_rate_limit(request(&[&[("client", "hung")]]))
            .await;
        slowest = slowest.max(started.elapsed());
        assert_eq!(answer.unwrap_err().code(), tonic::Code::Unavailable);
    }
    redis.resume();
    assert!(
        slowest <= Duration::from_millis(250),
        "slowest answer {slowest:?}"
    );
}
