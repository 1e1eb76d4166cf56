//! Hot reload under load: while 4 callers send requests without pause, the limits file
//! is replaced 20 times (each time with a higher limit, written beside it and renamed
//! over it, as a ConfigMap update does). No call fails, every answer carries a limit of
//! the files that were written, no caller ever sees a limit go back, and the last one is
//! in force at the end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shortener_rls::proto::rate_limit_response::Code;
use shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient;
use shortener_tests::{InProcessRls, RedisServer, TempDir, metric};

use super::{rand_suffix, request};

const FIRST: u32 = 1000;
const REWRITES: u32 = 20;

fn limits(per_hour: u32) -> String {
    format!(
        "domain: exact\ndescriptors:\n  - key: client\n    rate_limit:\n      unit: hour\n      \
         requests_per_unit: {per_hour}\n"
    )
}

fn replace(dir: &TempDir, per_hour: u32) {
    let staging = dir.path().join("config/.exact.yaml.new");
    std::fs::write(&staging, limits(per_hour)).unwrap();
    std::fs::rename(&staging, dir.path().join("config/exact.yaml")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_call_fails_while_the_limits_file_is_replaced_20_times() {
    let redis = RedisServer::start();
    let dir = TempDir::new();
    std::fs::create_dir(dir.path().join("config")).unwrap();
    replace(&dir, FIRST);
    // Redis's answers get two seconds, not the default 50 ms: this test is about the
    // reload, and on a loaded machine a late answer goes to the `local` fallback, whose
    // buckets start empty (exact across nodes), and a fresh key is then refused.
    let rls = InProcessRls::start(
        dir.path(),
        &format!(
            "[limiter]\nkind = \"redis\"\nredis_url = \"{}\"\ntimeout_ms = 2000\n",
            redis.url()
        ),
        "",
    );
    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..4)
        .map(|caller| {
            let stop = Arc::clone(&stop);
            let address = rls.grpc.clone();
            tokio::spawn(async move {
                let mut client = RateLimitServiceClient::connect(address).await.unwrap();
                let mut limits = Vec::new();
                let mut sent = 0_u32;
                while !stop.load(Ordering::Relaxed) {
                    // A fresh value each call: every one is within its limit.
                    let value = format!("reload-{caller}-{sent}-{}", rand_suffix());
                    let answer = client
                        .should_rate_limit(request(&[&[("client", value.as_str())]]))
                        .await
                        .unwrap_or_else(|status| panic!("call {sent} failed: {status}"))
                        .into_inner();
                    assert_eq!(answer.overall_code(), Code::Ok);
                    let limit = answer.statuses[0].current_limit.as_ref().unwrap();
                    limits.push(limit.requests_per_unit);
                    sent += 1;
                }
                limits
            })
        })
        .collect();
    for rewrite in 1..=REWRITES {
        tokio::time::sleep(Duration::from_millis(300)).await;
        replace(&dir, FIRST + rewrite);
    }
    // The last file is in force within a few polls (250 ms each).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut client = RateLimitServiceClient::connect(rls.grpc.clone())
            .await
            .unwrap();
        let answer = client
            .should_rate_limit(request(&[&[("client", "last")]]))
            .await
            .unwrap()
            .into_inner();
        let limit = answer.statuses[0].current_limit.as_ref().unwrap();
        if limit.requests_per_unit == FIRST + REWRITES {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the last file never took: {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut calls = 0;
    for caller in callers {
        let limits = caller.await.unwrap();
        calls += limits.len();
        assert!(
            limits
                .iter()
                .all(|limit| (FIRST..=FIRST + REWRITES).contains(limit)),
            "a limit no file had"
        );
        assert!(limits.is_sorted(), "a caller saw a limit go back");
    }
    assert!(calls > 100, "only {calls} calls during the rewrites");
    let loads = metric(&rls.http, "ratelimit_service_config_load_success").await;
    let errors = metric(&rls.http, "ratelimit_service_config_load_error").await;
    assert_eq!(errors, 0.0, "no rewrite was a bad file");
    assert!(
        loads >= f64::from(REWRITES),
        "{loads} reloads of {REWRITES} rewrites"
    );
}
