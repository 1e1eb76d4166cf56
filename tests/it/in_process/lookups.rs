//! Look-ups and redirects that respect the link: a dead link looks up as 410 without its
//! URL, and HEAD redirects without counting a visit.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

#[tokio::test]
async fn dead_links_look_up_as_gone_and_head_counts_nothing() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    let api = Api::of(&app);
    // The look-up's status and its body as sent, to show what it does not say.
    let look_up = async |code: &str| {
        let request = api.request(Method::GET, &format!("/links/{code}"));
        let response = request.send().await.unwrap();
        (response.status(), response.text().await.unwrap())
    };
    let once = app
        .create(
            &http,
            json!({"url": "https://secret.example/x", "max_visits": 1}),
        )
        .await;
    let code = once["code"].as_str().unwrap();
    // HEAD redirects without using up the one visit.
    for _ in 0..3 {
        let head = http
            .head(app.url(&format!("/{code}")))
            .send()
            .await
            .unwrap();
        assert_eq!(head.status(), StatusCode::FOUND);
        assert_eq!(head.headers()["location"], "https://secret.example/x");
    }
    let lookup = api.get(code).await.body;
    assert_eq!(lookup["visits"], 0);
    assert_eq!(
        http.get(app.url(&format!("/{code}")))
            .send()
            .await
            .unwrap()
            .status(),
        302
    );
    assert_eq!(
        http.get(app.url(&format!("/{code}")))
            .send()
            .await
            .unwrap()
            .status(),
        410
    );
    let (status, text) = look_up(code).await;
    assert_eq!(status, StatusCode::GONE);
    assert!(!text.contains("secret.example"), "{text}");

    let expiry = (time::OffsetDateTime::now_utc() + Duration::from_secs(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let soon = app
        .create(
            &http,
            json!({"url": "https://secret.example/y", "expires_at": expiry}),
        )
        .await;
    let code = soon["code"].as_str().unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, text) = look_up(code).await;
    assert_eq!(status, StatusCode::GONE);
    assert!(!text.contains("secret.example"));
}

/// Scanning codes through the API is bounded by the `lookup` policy: shipped by default,
/// and as configured.
#[tokio::test]
async fn lookups_are_limited_by_the_lookup_policy() {
    let http = client();
    let shipped = spawn_in_process(&TestConfig::default());
    let answer = Api::of(&shipped).get("nope").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.header("ratelimit-policy"), "\"lookup\";q=300;w=60");

    let config = TestConfig::default().policy("lookup", 3, 0.001);
    let app = spawn_in_process(&config);
    let link = app
        .create(&http, json!({"url": "https://scan.example/"}))
        .await;
    let code = link["code"].as_str().unwrap();
    // A redirect draws on no look-up token.
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    let api = Api::of(&app);
    let mut statuses = Vec::new();
    for path in [
        format!("/links/{code}"),
        "/links/nope1".to_owned(),
        format!("/links/{code}/qr"),
        format!("/links/{code}"),
    ] {
        let answer = api.send(api.request(Method::GET, &path)).await;
        statuses.push(answer.status.as_u16());
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            let problem = answer.body;
            assert!(
                problem["detail"].as_str().unwrap().contains("`lookup`"),
                "{problem}"
            );
        }
    }
    assert_eq!(statuses, [200, 404, 200, 429]);
}
