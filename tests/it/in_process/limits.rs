//! The rate-limit middleware over HTTP: the IETF headers, the 429, and redirects limited
//! only when a policy says so.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shortener_tests::config::{ApiKeyConfig, PolicyConfig};
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

/// Creates limited to 3, and to 5 for the key `acme` of the tier `pro`.
fn limited() -> TestConfig {
    TestConfig::default()
        .in_memory()
        .policy("create", 3, 0.01)
        .with(|c| {
            c.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            let pro = [("create".to_owned(), PolicyConfig::new(5, 0.01))];
            c.limiter.tiers.insert("pro".into(), pro.into());
            c.api_keys.push(ApiKeyConfig {
                name: "acme".into(),
                sha256: "625faa3fbbc3d2bd9d6ee7678d04cc5339cb33dc68d9b58451853d60046e226a".into(),
                tier: Some("pro".into()),
                scopes: None,
            });
        })
}

#[tokio::test]
async fn create_is_limited_with_ietf_headers_and_429() {
    let app = spawn_in_process(&limited());
    let api = Api::of(&app);
    let create = |client_ip: &'static str| {
        let request = (api.request(Method::POST, "/links"))
            .header("x-forwarded-for", client_ip)
            .json(&json!({"url": "https://example.com/"}));
        api.send(request)
    };
    for remaining in [2, 1, 0] {
        let answer = create("203.0.113.9").await;
        assert_eq!(answer.status, StatusCode::CREATED);
        assert_eq!(answer.header("ratelimit-policy"), "\"create\";q=3;w=300");
        let header = answer.header("ratelimit");
        assert!(
            header.starts_with(&format!("\"create\";r={remaining};t=")),
            "{header}"
        );
    }
    let refused = create("203.0.113.9").await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.header("content-type"), "application/problem+json");
    let retry_after: u64 = refused.header("retry-after").parse().unwrap();
    assert!((1..=100).contains(&retry_after), "{retry_after}");
    assert!(refused.header("ratelimit").starts_with("\"create\";r=0;t="));
    // Another client has its own bucket; the refused one was not charged more.
    assert_eq!(create("198.51.100.1").await.status, StatusCode::CREATED);
    // An API key is limited per key, with its tier's policy.
    let acme = api.with_key("test-key-123");
    for _ in 0..5 {
        let answer = acme.create(&json!({"url": "https://example.com/"})).await;
        assert_eq!(answer.status, StatusCode::CREATED);
        assert_eq!(answer.header("ratelimit-policy"), "\"create\";q=5;w=500");
    }
    let answer = acme.create(&json!({"url": "https://example.com/"})).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
    let metrics = shortener_tests::scrape(&app.base).await;
    assert!(
        metrics.contains("shortener_ratelimit_rejected_total{policy=\"create\"} 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn redirects_are_limited_only_when_configured() {
    let config = limited().policy("redirect", 2, 0.01);
    let app = spawn_in_process(&config);
    let http = client();
    let link = app
        .create(&http, json!({"url": "https://example.com/"}))
        .await;
    let path = format!("/{}", link["code"].as_str().unwrap());
    for _ in 0..2 {
        let response = http.get(app.url(&path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
        assert!(
            response.headers()["ratelimit"]
                .to_str()
                .unwrap()
                .starts_with("\"redirect\"")
        );
    }
    assert_eq!(
        http.get(app.url(&path)).send().await.unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}
