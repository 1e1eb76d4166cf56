//! The limit holds against every body and every target: a bulk body that names `links`
//! twice, targets that loop, reach inside or are blocked, visits of a deleted link, aliases
//! that differ in case, and what `/readyz` tells anonymous callers. (Requests that cost or
//! hold much are in `starvation.rs`.)

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::config::OnErrorConfig;
use shortener_tests::{Answer, Api, Served, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, secret};

fn config() -> TestConfig {
    TestConfig::default().in_memory()
}

/// `r` of the `RateLimit` header.
fn remaining(answer: &Answer) -> u64 {
    answer
        .header("ratelimit")
        .split(';')
        .find_map(|part| part.strip_prefix("r="))
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_bulk_body_naming_links_twice_is_refused_and_costs_nothing() {
    let app = spawn_in_process(&config().policy("create", 2000, 0.001));
    let api = Api::of(&app);
    let thousand: Vec<Value> = (0..1000)
        .map(|n| json!({"url": format!("https://example.com/{n}"), "alias": format!("dup-{n}")}))
        .collect();
    let body = format!(
        r#"{{"links":[{{"url":"https://example.com/one"}}],"links":{}}}"#,
        serde_json::to_string(&thousand).unwrap()
    );
    let request = (api.request(Method::POST, "/links/bulk"))
        .header("content-type", "application/json")
        .body(body);
    let answer = api.send(request).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let problem = answer.body;
    assert!(
        problem["detail"].as_str().unwrap().starts_with("links: "),
        "{problem}"
    );
    let lookup = api.get("dup-0").await;
    assert_eq!(lookup.status, StatusCode::NOT_FOUND, "nothing was created");

    // The same thousand, said once: a thousand tokens of the 2000, none taken before.
    let fresh: Vec<Value> = (0..1000)
        .map(|n| json!({"url": format!("https://example.com/{n}")}))
        .collect();
    let answer = api.create_bulk(&json!({ "links": fresh })).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(remaining(&answer), 1000);
    let results = answer.body;
    let created = results["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|result| result["status"] == 201)
        .count();
    assert_eq!(created, 1000);
}

async fn create(app: &impl Served, url: &str) -> (StatusCode, Value) {
    let answer = Api::of(app).create(&json!({ "url": url })).await;
    (answer.status, answer.body)
}

#[tokio::test]
async fn targets_that_loop_reach_inside_or_are_blocked_are_refused() {
    let dir = shortener_tests::TempDir::new();
    let deny_file = dir.path().join("deny.txt");
    std::fs::write(&deny_file, "# phishing seen this week\n").unwrap();
    let app = spawn_in_process(&config().with(|c| {
        c.server.public_url = "https://s.example.test".into();
        c.links.deny_hosts = vec!["example.org".into(), "*.bad.example".into()];
        c.links.deny_hosts_file = deny_file.display().to_string();
    }));
    for (url, says) in [
        ("https://s.example.test/abc", "own"),
        ("http://169.254.169.254/latest/meta-data/", "private"),
        ("http://10.0.0.5/", "private"),
        ("http://localhost:9000/", "private"),
        ("http://[::1]/", "private"),
        ("https://example.org/login", "blocked"),
        ("https://www.bad.example/", "blocked"),
        ("https://\u{0430}pple.com/", "mixes"),
    ] {
        let (status, problem) = create(&app, url).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{url}: {problem}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("url: ") && detail.contains(says),
            "{url}: {detail}"
        );
    }
    // An internationalized host: shown in Unicode, redirected to in ASCII.
    let (status, link) = create(&app, "https://bücher.example/").await;
    assert_eq!(status, StatusCode::CREATED, "{link}");
    assert_eq!(link["url"], "https://bücher.example/");
    let redirect = client()
        .get(app.url(&format!("/{}", link["code"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    assert_eq!(
        redirect.headers()["location"],
        "https://xn--bcher-kva.example/"
    );

    let (status, link) = create(&app, "https://phish.example/login").await;
    assert_eq!(status, StatusCode::CREATED, "{link}");
    let code = link["code"].as_str().unwrap().to_owned();
    let http = client();
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);

    // Listed while the node runs: the existing link stops redirecting.
    std::fs::write(&deny_file, "# phishing seen this week\nphish.example\n").unwrap();
    let listed = Instant::now();
    loop {
        let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
        if redirect.status() == StatusCode::GONE {
            break;
        }
        assert_eq!(redirect.status(), StatusCode::FOUND);
        assert!(
            listed.elapsed() < Duration::from_secs(2),
            "the denied link still redirects"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _) = create(&app, "https://phish.example/again").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// A create by the key of `owner`, to a target named after it.
async fn create_as(app: &impl Served, owner: &str, alias: &str) -> Answer {
    (Api::of(app).with_key(&secret(owner)))
        .create(&json!({"url": format!("https://example.com/{owner}"), "alias": alias}))
        .await
}

/// The JSON answer to a `GET` of `path` (off the API) with the key of `owner`.
async fn get_as(app: &impl Served, owner: &str, path: &str) -> Value {
    client()
        .get(app.url(path))
        .header("x-api-key", secret(owner))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_deleted_alias_made_again_by_another_owner_starts_at_zero_visits() {
    let app = spawn_in_process(
        &config().keys(&[("alice", "create,read,delete"), ("bob", "create,read")]),
    );
    let http = client();
    let make = |owner| create_as(&app, owner, "launch");
    assert_eq!(make("alice").await.status, StatusCode::CREATED);
    for _ in 0..25 {
        let redirect = http.get(app.url("/launch")).send().await.unwrap();
        assert_eq!(redirect.status(), StatusCode::FOUND);
    }
    let api = Api::of(&app);
    let deleted = api.with_key(&secret("alice")).delete("launch").await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(make("bob").await.status, StatusCode::CREATED);
    // Past a visit flush too: nothing counted for the old link lands on the new one.
    let bob = api.with_key(&secret("bob"));
    for wait in [Duration::ZERO, Duration::from_millis(1500)] {
        tokio::time::sleep(wait).await;
        let link = bob.get("launch").await.body;
        assert_eq!(link["visits"], 0, "{link}");
    }
}

#[tokio::test]
async fn readyz_tells_anonymous_callers_states_only() {
    // A Redis that does not answer: the limiter is degraded, with an error naming it.
    let app = spawn_in_process(
        &config()
            .redis_limiter("redis://127.0.0.1:1", OnErrorConfig::Local)
            .keys(&[("ops", "admin")]),
    );
    let http = client();
    let anonymous = http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::OK);
    let text = anonymous.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["limiter"], "degraded", "{body}");
    assert!(body.get("limiter_error").is_none(), "{body}");
    assert!(!text.contains("127.0.0.1"), "{text}");
    let admin = get_as(&app, "ops", "/readyz").await;
    assert!(admin["limiter_error"].is_string(), "{admin}");
}

#[tokio::test]
async fn case_insensitive_aliases_make_launch_and_launch_one_alias() {
    let app = spawn_in_process(
        &config()
            .with(|c| c.links.case_insensitive_aliases = true)
            .keys(&[("alice", "create,read"), ("bob", "create,read")]),
    );
    let http = client();
    let make = |owner, alias| create_as(&app, owner, alias);
    let created = make("alice", "Launch").await;
    assert_eq!(created.status, StatusCode::CREATED);
    let link = created.body;
    assert_eq!(link["code"], "launch", "{link}");
    assert_eq!(make("bob", "launch").await.status, StatusCode::CONFLICT);
    assert_eq!(make("bob", "LAUNCH").await.status, StatusCode::CONFLICT);
    for path in ["/launch", "/Launch", "/LAUNCH"] {
        let redirect = http.get(app.url(path)).send().await.unwrap();
        assert_eq!(redirect.status(), StatusCode::FOUND, "{path}");
        assert_eq!(redirect.headers()["location"], "https://example.com/alice");
    }
}
