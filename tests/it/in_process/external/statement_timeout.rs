//! `storage.statement_timeout_ms`: a statement stuck behind a lock is cancelled by
//! PostgreSQL and answered 503, instead of holding the request and its connection; the
//! reads and migrations of a node's start are not requests, and wait.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{Api, TestConfig, TestDatabase, client, spawn_in_process};

#[tokio::test]
async fn a_statement_stuck_on_a_lock_is_cancelled_and_answered_503() {
    let database = TestDatabase::create();
    // No cache, so every read reaches PostgreSQL; a request timeout far beyond the
    // client's 30 s, so only the statement timeout can end a stuck request in time. A
    // second, not less: the create before the lock must not be cut short on a loaded
    // machine.
    let config = config(&database, 1000).with(|c| c.cache.capacity = 0);
    let app = spawn_in_process(&config);
    let http = client();
    let link = app
        .create(&http, json!({"url": "https://example.com/"}))
        .await;
    let (api, code) = (Api::of(&app), link["code"].as_str().unwrap());

    let lock = database.lock_table("links");
    for _ in 0..3 {
        // Answered before the client's 30 s timeout, or `get` panics.
        let answer = api.get(code).await;
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(answer.header("content-type"), "application/problem+json");
        assert_eq!(answer.body["detail"], "storage is unavailable, retry later");
    }
    drop(lock);
    assert_eq!(api.get(code).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_node_starts_while_its_migrations_table_is_locked_past_the_statement_timeout() {
    let database = TestDatabase::create();
    let config = config(&database, 100);
    // The first node applies the migrations; the second reads what is applied, held up
    // by the lock (standing in for a slow read on a loaded server: a real migrator's
    // locks do not block that read). The lock goes once PostgreSQL's own clock says the
    // read has waited three times the statement timeout: it was not cancelled.
    drop(spawn_in_process(&config));
    let lock = database.lock_table("_sqlx_migrations");
    let waited_past_the_timeout = "SELECT count(*) FROM pg_stat_activity \
        WHERE datname = current_database() AND wait_event_type = 'Lock' \
          AND query LIKE '%_sqlx_migrations%' AND now() - query_start > interval '300 ms'";
    let database = &database;
    let (app, waited) = std::thread::scope(|scope| {
        let release = scope.spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let waited = loop {
                if database.query(waited_past_the_timeout).trim() != "0" {
                    break true;
                }
                if Instant::now() > deadline {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            drop(lock);
            waited
        });
        let app = spawn_in_process(&config);
        (app, release.join().unwrap())
    });
    assert!(
        waited,
        "the start's read never waited on the lock past 300 ms"
    );
    assert_eq!(
        client()
            .get(app.url("/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
}

/// A node on `database` with `storage.statement_timeout_ms`; its requests have ten
/// minutes, so that only the statement timeout ends a stuck one.
fn config(database: &TestDatabase, statement_timeout_ms: u64) -> TestConfig {
    TestConfig::default().postgres(database.url()).with(|c| {
        c.server.request_timeout_ms = 600_000;
        c.storage.statement_timeout_ms = statement_timeout_ms;
    })
}
