//! Links behind a password: the page that hides the target from every visit that has not
//! given it (GET, HEAD, bots), the form and `X-Link-Password` that open it and count
//! the visit, and the `unlock` policy that bounds guesses per client and link and per
//! link over every client, on one node and across nodes sharing Redis.

use std::time::Instant;

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{RedisServer, TestDatabase, client, spawn_in_process};

use crate::manage::{keys_config, secret};

const TARGET: &str = "https://secret.example/plans?q=1";

/// The test process (127.0.0.1) is a trusted proxy, so `X-Forwarded-For` names clients.
fn config(storage: &str, limiter: &str) -> String {
    format!(
        "[server]\nbind = \"127.0.0.1:0\"\ntrusted_proxies = [\"127.0.0.0/8\"]\n\
         {storage}\n{limiter}\n{}",
        keys_config(&[("alice", "create,read,update,delete")])
    )
}

async fn create(http: &reqwest::Client, url: String, body: Value) -> (StatusCode, Value) {
    let response = (http
        .post(url)
        .header("x-api-key", secret("alice"))
        .json(&body))
    .send()
    .await
    .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

/// The form's post from `client` (an address in `X-Forwarded-For`).
async fn post_form(
    http: &reqwest::Client,
    url: String,
    client: &str,
    password: &str,
) -> reqwest::Response {
    // The few characters of these passwords, as a browser encodes a form.
    let encoded = password
        .replace('%', "%25")
        .replace('+', "%2B")
        .replace(' ', "+");
    (http.post(url))
        .header("x-forwarded-for", client)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("password={encoded}"))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_locked_link_opens_only_with_its_password_and_bounds_guesses() {
    let app = spawn_in_process(&config(
        "[storage]\nkind = \"sqlite\"\nurl = \"sqlite://shortener.db\"",
        "",
    ));
    let http = client();
    let body = json!({"url": TARGET, "alias": "plans", "password": "correct horse"});
    // A password needs an owner, and eight characters.
    let anonymous = (http.post(app.url("/api/v1/links")).json(&body))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::BAD_REQUEST);
    let problem: Value = anonymous.json().await.unwrap();
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("password: ")
    );
    let (status, problem) = create(
        &http,
        app.url("/api/v1/links"),
        json!({"url": TARGET, "password": "short"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("password: ")
    );
    let (status, created) = create(&http, app.url("/api/v1/links"), body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["password_protected"], true);
    assert!(created.get("password").is_none(), "{created}");

    // Without the password: the page, never the target, never cached.
    for (method, agent) in [
        (
            reqwest::Method::GET,
            "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
        ),
        (
            reqwest::Method::GET,
            "Googlebot/2.1 (+http://www.google.com/bot.html)",
        ),
        (reqwest::Method::HEAD, "curl/8.5.0"),
    ] {
        let response = (http.request(method.clone(), app.url("/plans?utm=x")))
            .header("user-agent", agent)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{method} by {agent}");
        let headers = response.headers().clone();
        assert!(headers.get("location").is_none(), "{method} by {agent}");
        assert_eq!(headers["cache-control"], "no-store");
        assert!(
            headers["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("default-src 'none'")
        );
        let page = response.text().await.unwrap();
        assert!(!page.contains("secret.example"), "{page}");
        if method == reqwest::Method::GET {
            assert!(page.contains(r#"action="/plans?q=utm%3Dx""#), "{page}");
        }
    }

    // A wrong password through the form: the page again, saying so.
    let wrong = post_form(&http, app.url("/plans"), "198.51.100.7", "wrong horse").await;
    assert_eq!(wrong.status(), StatusCode::FORBIDDEN);
    assert!(wrong.headers().get("location").is_none());
    assert!(wrong.text().await.unwrap().contains("Wrong password."));
    // The right one: on to the target, with the visit's query, and counted.
    let right = post_form(
        &http,
        app.url("/plans?q=utm%3Dx"),
        "198.51.100.7",
        "correct horse",
    )
    .await;
    assert_eq!(right.status(), StatusCode::SEE_OTHER);
    assert_eq!(right.headers()["location"], TARGET);
    assert_eq!(right.headers()["cache-control"], "no-store");
    // An API client: `X-Link-Password`.
    let header = |password: &'static str| {
        (http.get(app.url("/plans")))
            .header("x-forwarded-for", "198.51.100.7")
            .header("x-link-password", password)
            .send()
    };
    let opened = header("correct horse").await.unwrap();
    assert_eq!(opened.status(), StatusCode::FOUND);
    assert_eq!(opened.headers()["location"], TARGET);
    assert_eq!(opened.headers()["cache-control"], "no-store");
    let refused = header("wrong horse!").await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let problem: Value = refused.json().await.unwrap();
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("X-Link-Password: ")
    );
    let looked_up = (http.get(app.url("/api/v1/links/plans")))
        .header("x-api-key", secret("alice"))
        .send()
        .await
        .unwrap();
    let looked_up: Value = looked_up.json().await.unwrap();
    assert_eq!(looked_up["visits"], 2, "the two opened visits: {looked_up}");
    assert_eq!(looked_up["url"], TARGET, "the owner sees the target");

    // Four attempts taken of five: one more, then this client waits.
    assert_eq!(
        header("wrong horse!").await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    let limited = header("correct horse").await.unwrap();
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("retry-after"));
    let limited = post_form(&http, app.url("/plans"), "198.51.100.7", "correct horse").await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.text().await.unwrap().contains("Too many attempts"));
    // So does every other client: the link's own bucket over all clients is empty too.
    let other = post_form(&http, app.url("/plans"), "203.0.113.9", "correct horse").await;
    assert_eq!(other.status(), StatusCode::TOO_MANY_REQUESTS);

    // A link of the same client with its own buckets still opens.
    let body = json!({"url": TARGET, "alias": "other", "password": "battery staple"});
    assert_eq!(
        create(&http, app.url("/api/v1/links"), body).await.0,
        StatusCode::CREATED
    );
    let other = post_form(&http, app.url("/other"), "198.51.100.7", "battery staple").await;
    assert_eq!(other.status(), StatusCode::SEE_OTHER);

    // Without its password (`null`), the link redirects like any other.
    let opened = (http.patch(app.url("/api/v1/links/plans")))
        .header("x-api-key", secret("alice"))
        .json(&json!({"password": null}))
        .send()
        .await
        .unwrap();
    let opened: Value = opened.json().await.unwrap();
    assert_eq!(opened["password_protected"], false, "{opened}");
    let redirect = http.get(app.url("/plans")).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    assert_eq!(redirect.headers()["location"], TARGET);
}

/// Three nodes on one Redis, forty clients guessing at once through all of them: the
/// wrong guesses that were checked (403) stay within the policy's
/// `capacity + rate * elapsed`, the rest are refused unchecked (429).
#[tokio::test]
async fn guesses_are_bounded_across_nodes() {
    let database = TestDatabase::create();
    let redis = RedisServer::start_private();
    let config = config(
        &format!(
            "[storage]\nkind = \"postgres\"\nurl = \"{}\"",
            database.url()
        ),
        &format!(
            "[limiter]\nkind = \"redis\"\nredis_url = \"{}\"\ntimeout_ms = 500",
            redis.url()
        ),
    );
    let nodes: Vec<_> = (0..3).map(|_| spawn_in_process(&config)).collect();
    let http = client();
    let body = json!({"url": TARGET, "alias": "vault", "password": "correct horse"});
    assert_eq!(
        create(&http, nodes[0].url("/api/v1/links"), body).await.0,
        StatusCode::CREATED
    );
    let started = Instant::now();
    let mut guesses = tokio::task::JoinSet::new();
    for attempt in 0..120 {
        let (http, url) = (http.clone(), nodes[attempt % nodes.len()].url("/vault"));
        let client = format!("192.0.2.{}", attempt % 40);
        guesses.spawn(async move {
            let guess = format!("guess {attempt:04}");
            post_form(&http, url, &client, &guess).await.status()
        });
    }
    let statuses = guesses.join_all().await;
    let elapsed = started.elapsed().as_secs_f64();
    let checked = statuses
        .iter()
        .filter(|s| **s == StatusCode::FORBIDDEN)
        .count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(checked + refused, statuses.len(), "{statuses:?}");
    // Capacity 5, one more every 12 s.
    let bound = 5 + (elapsed / 12.0).floor() as usize;
    assert!(
        checked >= 1 && checked <= bound,
        "{checked} checked, bound {bound}"
    );
}
