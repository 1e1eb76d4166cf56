//! Two `shortener ratelimit-server` instances on `on_error = "local"`, with Redis killed
//! once both count each other in the heartbeat and the shared bucket is spent: each then
//! decides alone on its share (half the limit, refilled at half the rate), and its local
//! buckets hold only what refilled since the failure (the shared bucket may have been
//! spent, as here), from when they are first asked for. So 8 client processes x 25 requests through both admit no more than
//! the limit's rate times the time since the kill; and a request refused by its second
//! descriptor takes nothing of its first's local share.

use std::time::{Duration, Instant};

use shortener_rls::proto::rate_limit_response::Code;
use shortener_tests::{InProcessRls, RedisServer, metric};

use super::{ask, eight_processes_on, limits_dir, rand_suffix, request, start};

/// The `wide` descriptor's limit: 100 a minute.
const WIDE_PER_SEC: f64 = 100.0 / 60.0;

async fn wait_for_nodes(services: &[&InProcessRls], expected: f64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    for rls in services {
        while metric(&rls.http, "shortener_ratelimit_nodes").await != expected {
            assert!(
                Instant::now() < deadline,
                "{} never counted {expected} nodes",
                rls.http
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_redis_keeps_the_bound_across_instances_on_local_shares() {
    let mut redis = RedisServer::start_private();
    let dir = limits_dir();
    let setting = format!("redis_url = \"{}\"", redis.url());
    let first = start(dir.path(), &setting, "on_error = \"local\"");
    let second = start(dir.path(), &setting, "on_error = \"local\"");
    wait_for_nodes(&[&first, &second], 2.0).await;
    let value = format!("local-{}", rand_suffix());
    let services = [first.grpc.clone(), second.grpc.clone()];
    let spent = tokio::task::spawn_blocking({
        let (services, value) = (services.clone(), value.clone());
        move || eight_processes_on(&services, "wide", &value)
    })
    .await
    .unwrap();
    assert_eq!(spent, 100, "Redis up: the shared bucket of 100 is spent");

    let killed = Instant::now();
    redis.kill();
    // A local bucket starts empty when first asked for: one call on each instance now,
    // refused, then long enough for each share (one token every 1.2 s) to refill twice.
    let both: &[&[(&str, &str)]] = &[&[("wide", "both")], &[("client", "both")]];
    for rls in [&first, &second] {
        let answer = ask(&rls.grpc, request(&[&[("wide", value.as_str())]])).await;
        assert_eq!(answer.unwrap().overall_code(), Code::OverLimit);
    }
    let answer = ask(&first.grpc, request(both)).await.unwrap();
    assert_eq!(answer.overall_code(), Code::OverLimit);
    tokio::time::sleep(Duration::from_millis(2600)).await;
    let admitted = tokio::task::spawn_blocking({
        let value = value.clone();
        move || eight_processes_on(&services, "wide", &value)
    })
    .await
    .unwrap();
    let elapsed = killed.elapsed().as_secs_f64();
    let bound = WIDE_PER_SEC * elapsed;
    assert!(
        admitted as f64 <= bound,
        "Redis gone {elapsed:.1} s: admitted {admitted}, bound {bound:.1}"
    );
    assert!(admitted >= 2, "the local shares admitted {admitted}");
    assert!(metric(&first.http, "shortener_ratelimit_fallback_decisions_total").await > 0.0);

    // The narrow descriptor's share (one token every 12 s) has nothing yet: every request
    // is refused, and the wide share it would have taken from (two tokens or more by now)
    // never goes down.
    let mut wide_remaining = Vec::new();
    for _ in 0..8 {
        let answer = ask(&first.grpc, request(both)).await.unwrap();
        assert_eq!(answer.overall_code(), Code::OverLimit);
        assert_eq!(answer.statuses[1].code(), Code::OverLimit);
        wide_remaining.push(answer.statuses[0].limit_remaining);
    }
    assert!(
        wide_remaining.is_sorted() && wide_remaining[0] > 0,
        "a refused request spent the wide share: {wide_remaining:?}"
    );
}
