//! What caches and crawlers are told: a redirect's `Cache-Control` follows
//! `links.redirect_max_age_secs`, never lets a link with `max_visits` be stored and never
//! outlives a link's expiry; `/robots.txt` keeps crawlers off every link.

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{TestConfig, client, spawn_in_process};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

#[tokio::test]
async fn redirects_are_not_cached_by_default() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    let link = app
        .create(&http, json!({"url": "https://example.com/a"}))
        .await;
    let code = link["code"].as_str().unwrap();
    for request in [
        http.get(app.url(&format!("/{code}"))),
        http.head(app.url(&format!("/{code}"))),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
        assert_eq!(response.headers()["cache-control"], "private, max-age=0");
    }
}

#[tokio::test]
async fn a_cacheable_redirect_is_kept_no_longer_than_its_link() {
    let app =
        spawn_in_process(&TestConfig::default().with(|c| c.links.redirect_max_age_secs = 600));
    let http = client();
    let cache_control = async |body: serde_json::Value| {
        let link = app.create(&http, body).await;
        let code = link["code"].as_str().unwrap().to_owned();
        let response = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
        response.headers()["cache-control"]
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        cache_control(json!({"url": "https://example.com/plain"})).await,
        "public, max-age=600"
    );
    // Every visit of a limited link must reach the service to be counted.
    assert_eq!(
        cache_control(json!({"url": "https://example.com/few", "max_visits": 5})).await,
        "no-store"
    );
    let soon = (OffsetDateTime::now_utc() + time::Duration::seconds(60))
        .format(&Rfc3339)
        .unwrap();
    let expiring =
        cache_control(json!({"url": "https://example.com/soon", "expires_at": soon})).await;
    let age: u64 = expiring
        .strip_prefix("public, max-age=")
        .and_then(|age| age.parse().ok())
        .unwrap_or_else(|| panic!("not a max-age: {expiring}"));
    assert!((30..=60).contains(&age), "{expiring}");
}

#[tokio::test]
async fn robots_txt_keeps_crawlers_off_every_link() {
    let app = spawn_in_process(&TestConfig::default());
    let response = client().get(app.url("/robots.txt")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(
        response.text().await.unwrap(),
        "User-agent: *\nDisallow: /\n"
    );
}
