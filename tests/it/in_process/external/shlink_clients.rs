//! Shlink's REST API (`[compat] shlink = true`) spoken to by Shlink's own clients: its JS
//! SDK (`@shlinkio/shlink-js-sdk`, under Shlink's web client and the Raycast extension),
//! installed from npm at a pinned version and run by Node against a node in this process,
//! and the requests that tools such as ShareX, browser extensions and shell scripts send
//! (a JSON or form create on `/rest/v2`, the one-step `shorten` with its key in the
//! query), replayed as they send them.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{Api, TestConfig, client, npm, spawn_in_process, workspace};

use crate::support::{Keys as _, run_client, secret};

/// The SDK's version the test runs: its latest release when the test was written.
const SDK_VERSION: &str = "3.2.1";

fn shlink_node() -> shortener_tests::InProcessApp {
    spawn_in_process(
        &TestConfig::default()
            .with(|c| {
                c.server.cors_origins = vec!["https://app.shlink.io".into()];
                c.compat.shlink = true;
            })
            .keys(&[
                ("alice", "create,read,update,delete"),
                ("bob", "create,read"),
            ]),
    )
}

#[test]
fn shlink_s_js_sdk_manages_links_through_the_shlink_api() {
    let sdk = npm::package("@shlinkio/shlink-js-sdk", SDK_VERSION)
        .unwrap_or_else(|error| panic!("{error}"));
    let node = npm::node().unwrap_or_else(|error| panic!("{error}"));
    let app = shlink_node();
    run_client(
        &node,
        &[
            workspace().join("tests/clients/shlink-sdk.mjs").as_os_str(),
            sdk.as_os_str(),
            app.url("").as_ref(),
            secret("alice").as_ref(),
            secret("bob").as_ref(),
        ],
    );
}

#[tokio::test]
async fn tools_that_post_to_shlink_get_their_short_url() {
    let app = shlink_node();
    let http = client();
    let key = secret("alice");
    // A JSON create on v2 with findIfExists, as scripts and ShareX-style uploaders send it.
    let create = |body: Value| {
        http.post(app.url("/rest/v2/short-urls"))
            .header("X-Api-Key", &key)
            .json(&body)
            .send()
    };
    let answer = create(json!({"longUrl": "https://example.com/tool", "findIfExists": true}))
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let first: Value = answer.json().await.unwrap();
    let short_url = first["shortUrl"].as_str().unwrap().to_owned();
    let again: Value = create(json!({"longUrl": "https://example.com/tool", "findIfExists": true}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        again["shortUrl"],
        short_url.as_str(),
        "found, not made again"
    );
    // A form create, as some browser tools send it.
    let form: Value = http
        .post(app.url("/rest/v2/short-urls"))
        .header("X-Api-Key", &key)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            "longUrl=https%3A%2F%2Fexample.com%2Fform&findIfExists=false&validateUrl=false\
             &tags%5B%5D=a&tags%5B%5D=b",
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(form["longUrl"], "https://example.com/form", "{form}");
    assert_eq!(form["tags"], json!(["a", "b"]));
    // The one-step shorten, its key in the query, its answer the short URL as text.
    let text = http
        .get(app.url(&format!(
            "/rest/v3/short-urls/shorten?apiKey={key}\
             &longUrl=https%3A%2F%2Fexample.com%2Fshorten&format=txt"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), StatusCode::OK);
    assert!(
        text.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let short = text.text().await.unwrap();
    let code = short.rsplit('/').next().unwrap();
    let followed = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(
        followed.headers()["location"],
        "https://example.com/shorten"
    );
    // What Shlink has and this service has not is refused by name, in Shlink's shape.
    let refused = create(
        json!({"longUrl": "https://example.com/later", "validSince": "2030-01-01T00:00:00+00:00"}),
    )
    .await
    .unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let problem: Value = refused.json().await.unwrap();
    assert_eq!(problem["type"], "https://shlink.io/api/error/invalid-data");
    assert_eq!(problem["invalidElements"], json!(["validSince"]));
    // Shlink's web client calls from its own origin: listed, its preflight is answered;
    // another origin is not allowed.
    let preflight = |origin: &'static str| {
        http.request(reqwest::Method::OPTIONS, app.url("/rest/v3/short-urls"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "x-api-key,content-type")
            .send()
    };
    let allowed = preflight("https://app.shlink.io").await.unwrap();
    assert!(allowed.status().is_success(), "{}", allowed.status());
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "https://app.shlink.io"
    );
    let other = preflight("https://elsewhere.example").await.unwrap();
    assert!(!other.headers().contains_key("access-control-allow-origin"));
    // Without a key: Shlink's missing-authentication; an alias taking `rest`: refused.
    let anonymous = http.get(app.url("/rest/v3/tags")).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let problem: Value = anonymous.json().await.unwrap();
    assert_eq!(
        problem["type"],
        "https://shlink.io/api/error/missing-authentication"
    );
    let ours = json!({"url": "https://example.com/rest", "alias": "rest"});
    let ours = Api::of(&app).with_key(&key).create(&ours).await;
    assert_eq!(ours.status, StatusCode::BAD_REQUEST);
}
