//! `cargo xtask up --gateway envoy` as a user runs it: two nodes behind a real Envoy
//! whose rate-limit filter calls two `shortener ratelimit-server` processes on one Redis,
//! with the repository's limits (20 creates a minute per client address). 60 creates
//! through Envoy, 12 at a time and spread over both services: exactly what the bucket
//! holds is admitted, the rest is Envoy's 429, the nodes saw only what was admitted, and
//! Ctrl-C leaves no process and no port behind. A test binary of its own: `up` owns
//! `target/up/`, so two `up` tests never run at once.

mod support;

use std::time::Instant;

use shortener_testkit::{concurrently, metric};
use support::{create, http, port_with_free_neighbours, start_up, stop};

const NODES: u16 = 2;
const SERVICES: u16 = 2;
/// deploy/ratelimit/config/shortener.yaml: 20 a minute, one more every 3 s.
const LIMIT: f64 = 20.0;
const PER_SEC: f64 = 20.0 / 60.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_runs_envoy_and_the_rate_limit_service_and_stops_clean() {
    let last = NODES + 2 * SERVICES;
    let port = port_with_free_neighbours(last);
    let up = start_up(&[
        "--gateway".into(),
        "envoy".into(),
        "--nodes".into(),
        NODES.to_string(),
        "--rls".into(),
        SERVICES.to_string(),
        "--port".into(),
        port.to_string(),
    ]);
    let http = http();
    let gateway = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let (mut admitted, mut refused) = (0_u32, 0_u32);
    for _ in 0..5 {
        for response in concurrently(12, |_| create(&http, &gateway)).await {
            match response.status().as_u16() {
                201 => admitted += 1,
                429 => {
                    assert_eq!(response.headers()["x-envoy-ratelimited"], "true");
                    refused += 1;
                }
                other => panic!("status {other} through Envoy"),
            }
        }
    }
    let bound = LIMIT + PER_SEC * started.elapsed().as_secs_f64();
    println!("through Envoy: admitted {admitted}, refused {refused}, bound {bound:.1}");
    assert!(
        f64::from(admitted) >= LIMIT && f64::from(admitted) <= bound,
        "admitted {admitted}, bound {bound:.1}"
    );
    let mut created = 0.0;
    for node in 1..=NODES {
        let base = format!("http://127.0.0.1:{}", port + node);
        created += metric(&base, "shortener_links_created_total").await;
    }
    assert_eq!(
        created,
        f64::from(admitted),
        "the nodes saw only the admitted"
    );
    let mut hits = 0.0;
    for service in 0..SERVICES {
        let base = format!("http://127.0.0.1:{}", port + NODES + 2 + 2 * service);
        let answered = metric(&base, "ratelimit_service_rate_limit_total_hits").await;
        assert!(answered > 0.0, "the service at {base} was never asked");
        hits += answered;
    }
    assert_eq!(hits, 60.0, "one hit per create");
    stop(up, port..=port + last, "target/up/envoy");
}
