//! A node that missed edits while Redis was down (its subscription to the invalidation
//! channel with it) drops its whole cache when it subscribes again: it does not serve an
//! edited link's old target for the rest of the cache TTL (an hour here).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::config::OnErrorConfig;
use shortener_tests::{Api, RedisServer, TestDatabase, client, spawn_in_process};

use crate::in_process::external::manage_nodes::location;
use crate::support::{secret, shared_node};

#[tokio::test]
async fn a_node_that_missed_an_edit_while_redis_was_down_forgets_its_cache_on_return() {
    let database = TestDatabase::create();
    let mut redis = RedisServer::start_private();
    let config = shared_node(database.url(), redis.url())
        .with(|c| c.limiter.on_error = OnErrorConfig::FailOpen);
    let (editor, reader) = (spawn_in_process(&config), spawn_in_process(&config));
    let (http, alice) = (client(), Api::of(&editor).with_key(&secret("alice")));
    let link = alice.create(&json!({"url": "https://old.example/"})).await;
    let link = link.expect(StatusCode::CREATED);
    let code = link["code"].as_str().unwrap();
    // Cached on the reader, for an hour.
    assert_eq!(location(&http, &reader, code).await, "https://old.example/");

    redis.kill();
    let edit = alice
        .patch(code, &json!({"url": "https://new.example/"}))
        .await;
    assert_eq!(
        edit.status,
        StatusCode::OK,
        "the edit is stored without Redis"
    );
    // Nobody could tell the reader: it still serves its cached target.
    assert_eq!(location(&http, &reader, code).await, "https://old.example/");

    redis.restart();
    // The reader resubscribes within its heartbeat interval (1 s) of Redis answering; the
    // deadline only keeps a broken build from hanging.
    let deadline = Instant::now() + Duration::from_secs(30);
    while location(&http, &reader, code).await != "https://new.example/" {
        assert!(
            Instant::now() < deadline,
            "the reader still serves the old target"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
