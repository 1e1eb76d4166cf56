//! A weighted split (an A/B test) through two nodes on one PostgreSQL and one Redis:
//! 100 000 distinct visitors (distinct addresses, forwarded by a trusted proxy), each
//! visiting both nodes. Each variant gets its weight's share within a percentage point,
//! both nodes send every visitor to the same variant with no state shared between
//! them, and the visits by variant read back from the API are the visits sent. An edit
//! of the rules on one node is then followed by the other.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::config::OnErrorConfig;
use shortener_tests::{Api, RedisServer, TestConfig, TestDatabase, client, spawn_in_process};

use crate::support::{Keys as _, secret, values};

const VISITORS: u32 = 100_000;
const A: &str = "https://a.example/";
const B: &str = "https://b.example/";
const C: &str = "https://c.example/";

/// The visitor `index`'s address: one of 10.0.0.0/8.
fn address(index: u32) -> String {
    let [_, x, y, z] = index.to_be_bytes();
    format!("10.{x}.{y}.{z}")
}

#[tokio::test]
async fn a_split_keeps_each_visitor_on_one_variant_and_follows_its_weights() {
    let _load = crate::support::LOAD.lock().await;
    let database = TestDatabase::create();
    let redis = RedisServer::start_private();
    let config = TestConfig::default()
        .postgres(database.url())
        .redis_limiter(redis.url(), OnErrorConfig::Local)
        .with(|c| {
            c.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            c.limiter.timeout_ms = 500;
            c.visits.flush_values_secs = 1;
        })
        .keys(&[("alice", "create,read,update")]);
    let nodes = [spawn_in_process(&config), spawn_in_process(&config)];
    let http = client();
    let alice = |node: usize| Api::of(&nodes[node]).with_key(&secret("alice"));
    let split = json!([{"name": "launch", "conditions": [],
                        "split": [{"url": A, "weight": 70}, {"url": B, "weight": 30}]}]);
    let made = json!({"url": "https://example.com/", "alias": "abtest", "rules": split});
    alice(0).create(&made).await.expect(StatusCode::CREATED);

    // 32 workers, each a share of the visitors, each visitor on both nodes.
    let urls: Vec<String> = nodes.iter().map(|node| node.url("/abtest")).collect();
    let mut workers = tokio::task::JoinSet::new();
    const WORKERS: u32 = 32;
    for worker in 0..WORKERS {
        let (http, urls) = (http.clone(), urls.clone());
        workers.spawn(async move {
            let mut sent = HashMap::<String, u32>::new();
            let mut split_visitors = Vec::new();
            for index in (worker..VISITORS).step_by(WORKERS as usize) {
                let mut locations = Vec::with_capacity(2);
                for url in &urls {
                    let answer = (http.get(url))
                        .header("x-forwarded-for", address(index))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(answer.status(), StatusCode::FOUND);
                    let location = answer.headers()["location"].to_str().unwrap().to_owned();
                    locations.push(location);
                }
                if locations[0] != locations[1] {
                    split_visitors.push(index);
                }
                *sent.entry(locations.swap_remove(0)).or_default() += 1;
            }
            (sent, split_visitors)
        });
    }
    let mut sent = HashMap::<String, u32>::new();
    while let Some(result) = workers.join_next().await {
        let (counts, split_visitors) = result.unwrap();
        assert!(
            split_visitors.is_empty(),
            "the two nodes sent {} visitors to different variants, first {}",
            split_visitors.len(),
            address(split_visitors[0])
        );
        for (location, visits) in counts {
            *sent.entry(location).or_default() += visits;
        }
    }
    let share = |url: &str| f64::from(sent.get(url).copied().unwrap_or(0)) / f64::from(VISITORS);
    let (a, b) = (share(A), share(B));
    println!("split 70/30 over {VISITORS} visitors: a {a:.4}, b {b:.4}");
    assert!(
        (a - 0.70).abs() <= 0.01,
        "variant a got {a:.4} of the visitors"
    );
    assert!(
        (b - 0.30).abs() <= 0.01,
        "variant b got {b:.4} of the visitors"
    );

    // Counted by variant as sent: each visitor twice (once per node).
    let expected = |url: &str| u64::from(sent.get(url).copied().unwrap_or(0)) * 2;
    let wanted = [
        ("launch.split[0]".to_owned(), expected(A)),
        ("launch.split[1]".to_owned(), expected(B)),
    ];
    let reader = alice(1);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let body = reader.visits("abtest", "by=variant").await.body;
        let mut counted = values(&body);
        counted.sort();
        if counted == wanted {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "by variant: {counted:?}, sent {wanted:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // An edit on one node is followed by the other: everyone to a third target.
    let edit = json!({"rules": [{"conditions": [], "url": C}]});
    assert_eq!(alice(0).patch("abtest", &edit).await.status, StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let answer = (http.get(&urls[1])).header("x-forwarded-for", address(0));
        let answer = answer.send().await.unwrap();
        if answer.headers()["location"] == C {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the second node kept the old rules"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
