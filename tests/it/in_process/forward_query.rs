//! `links.forward_query`: a redirect passes the request's query string on, merged into
//! the target's with the request's parameters winning; off (the default), it is dropped.

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{TestConfig, client, spawn_in_process};

#[tokio::test]
async fn the_request_s_query_reaches_the_target_only_when_asked() {
    let http = client();
    for (forward, expected) in [
        (false, "https://example.com/p?a=1&keep=k#part"),
        (
            true,
            "https://example.com/p?keep=k&utm_source=mail&a=2#part",
        ),
    ] {
        let app =
            spawn_in_process(&TestConfig::default().with(|c| c.links.forward_query = forward));
        let link = app
            .create(
                &http,
                json!({"url": "https://example.com/p?a=1&keep=k#part"}),
            )
            .await;
        let path = format!("/{}?utm_source=mail&a=2", link["code"].as_str().unwrap());
        for request in [http.get(app.url(&path)), http.head(app.url(&path))] {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), StatusCode::FOUND);
            assert_eq!(
                response.headers()["location"],
                expected,
                "forward {forward}"
            );
        }
    }
}
