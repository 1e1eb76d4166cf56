//! One quota whatever the API: a client that creates through this service's API,
//! Shlink's (JSON and the one-step `shorten`), Kutt's and YOURLS' at once, from many
//! connections,
//! is admitted at most `capacity + rate * elapsed` of its one `create` policy.

use std::time::Instant;

use reqwest::{Method, StatusCode};
use serde_json::json;
use shortener_tests::{Api, TestConfig, client, concurrently, spawn_in_process};

use crate::support::{Keys as _, secret};

// Interleaved on one thread: every request is in flight at once.
#[tokio::test]
async fn creates_through_every_api_share_one_quota() {
    let (capacity, rate) = (20.0, 2.0);
    let app = spawn_in_process(
        &TestConfig::default()
            .in_memory()
            .policy("create", capacity as u64, rate)
            .with(|c| (c.compat.shlink, c.compat.kutt, c.compat.yourls) = (true, true, true))
            .keys(&[("alice", "create,read")]),
    );
    let http = client();
    let key = secret("alice");
    let ours = Api::of(&app).with_key(&key);
    let started = Instant::now();
    // Fewer connections than server.max_connections_per_client (64), which resets more.
    let answers = concurrently(60, |index| {
        let target = format!("https://example.com/quota/{index}");
        let request = match index % 5 {
            0 => (ours.request(Method::POST, "/links")).json(&json!({"url": target})),
            1 => http
                .post(app.url("/rest/v3/short-urls"))
                .header("X-Api-Key", &key)
                .json(&json!({"longUrl": target})),
            2 => http.get(app.url(&format!(
                "/rest/v3/short-urls/shorten?apiKey={key}&longUrl=https%3A%2F%2Fexample.com%2Fq{index}"
            ))),
            3 => http.get(app.url(&format!(
                "/yourls-api.php?signature={key}&action=shorturl&url=https%3A%2F%2Fexample.com%2Fy{index}"
            ))),
            _ => http
                .post(app.url("/api/v2/links"))
                .header("X-API-KEY", &key)
                .json(&json!({"target": target})),
        };
        async move { (index % 5, request.send().await.unwrap().status()) }
    })
    .await;
    let elapsed = started.elapsed().as_secs_f64();
    let mut admitted = [0_u32; 5];
    for (api, status) in &answers {
        match *status {
            StatusCode::OK | StatusCode::CREATED => admitted[*api] += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("API {api} answered {other}"),
        }
    }
    let total: u32 = admitted.iter().sum();
    let bound = capacity + rate * elapsed;
    eprintln!("compat quota: {admitted:?} admitted ({total}) in {elapsed:.2} s, bound {bound:.1}");
    // A bucket per API would admit up to five times the capacity.
    assert!(
        f64::from(total) <= bound,
        "{total} admitted over {bound:.1}"
    );
    assert!(f64::from(total) >= capacity, "the bucket was full: {total}");
}
