//! The API's main paths in-process: create and redirect, aliases under contention, keyed
//! deletes, the operational endpoints, the OpenAPI document and the page's headers.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{Api, TestConfig, client, concurrently, metric, spawn_in_process};

#[tokio::test]
async fn create_then_redirect() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    let api = Api::of(&app);
    let response = api
        .create(&json!({"url": "https://example.com/a?b=c"}))
        .await;
    let location = response.header("location").to_owned();
    let link = response.expect(StatusCode::CREATED);
    let code = link["code"].as_str().unwrap();
    assert_eq!(code.len(), 7);
    assert_eq!(link["short_url"], format!("http://127.0.0.1:8080/{code}"));
    assert_eq!(location, link["short_url"].as_str().unwrap());
    assert_eq!(link["url"], "https://example.com/a?b=c");
    assert_eq!(link["visits"], 0);
    assert!(link["created_at"].as_str().unwrap().ends_with('Z'));

    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    assert_eq!(redirect.headers()["location"], "https://example.com/a?b=c");

    let fetched = api.get(code).await.body;
    assert_eq!(fetched["visits"], 1);
}

#[tokio::test]
async fn aliases_and_concurrent_conflicts() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    let api = Api::of(&app);
    let responses = concurrently(20, |i| {
        let api = api.clone();
        async move {
            api.create(&json!({"url": format!("https://example.com/{i}"), "alias": "launch-day"}))
                .await
        }
    })
    .await;
    let created = responses
        .iter()
        .filter(|r| r.status == StatusCode::CREATED)
        .count();
    let conflicts = responses
        .iter()
        .filter(|r| r.status == StatusCode::CONFLICT)
        .count();
    assert_eq!((created, conflicts), (1, 19));
    let conflict = api
        .create(&json!({"url": "https://x.org/", "alias": "launch-day"}))
        .await;
    assert_eq!(conflict.header("content-type"), "application/problem+json");
    let problem = conflict.body;
    assert_eq!(problem["status"], 409);
    assert!(problem["detail"].as_str().unwrap().contains("alias"));
    let redirect = http.get(app.url("/launch-day")).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
}

#[tokio::test]
async fn delete_needs_a_valid_api_key() {
    // sha256("test-key-123")
    let config = TestConfig::default().api_key(
        "ops",
        "625faa3fbbc3d2bd9d6ee7678d04cc5339cb33dc68d9b58451853d60046e226a",
        None,
    );
    let app = spawn_in_process(&config);
    let http = client();
    // A key deletes the links it made, and no other.
    let nobodys = app
        .create(&http, json!({"url": "https://example.com/"}))
        .await;
    let api = Api::of(&app);
    let ops = api.with_key("test-key-123");
    let link = ops
        .create(&json!({"url": "https://example.com/"}))
        .await
        .body;
    let code = link["code"].as_str().unwrap();
    let not_its_own = ops.delete(nobodys["code"].as_str().unwrap()).await;
    assert_eq!(not_its_own.status, StatusCode::NOT_FOUND);
    let anonymous = api.delete(code).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.header("content-type"), "application/problem+json");
    let wrong = api.with_key("nope").delete(code).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let deleted = ops.delete(code).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let again = ops.delete(code).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn operational_endpoints() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    assert_eq!(
        http.get(app.url("/healthz")).send().await.unwrap().status(),
        StatusCode::OK
    );
    let ready = http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let readiness: Value = ready.json().await.unwrap();
    assert_eq!(readiness["storage"], "ok");
    assert_eq!(readiness["limiter"], "ok");
    let spec: Value = http
        .get(app.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(spec["openapi"].as_str().unwrap().starts_with("3."));
    assert!(spec["paths"]["/api/v1/links"]["post"].is_object());
    assert_eq!(
        http.get(app.url("/docs")).send().await.unwrap().status(),
        StatusCode::OK
    );
    Api::of(&app)
        .create(&json!({"url": "https://example.com/"}))
        .await;
    let metrics = shortener_tests::scrape(&app.base).await;
    assert!(
        metrics.contains("shortener_ratelimit_decisions_total"),
        "{metrics}"
    );
    assert!(
        metrics.contains("shortener_links_created_total"),
        "{metrics}"
    );
}

/// The served document declares what schemathesis found the server answering: 415 on
/// create, and the pattern of a code on lookup and delete.
#[tokio::test]
async fn openapi_declares_415_and_the_code_pattern() {
    let app = spawn_in_process(&TestConfig::default());
    let spec: Value = client()
        .get(app.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let create = &spec["paths"]["/api/v1/links"]["post"]["responses"]["415"];
    assert!(
        create["content"]["application/problem+json"].is_object(),
        "{create}"
    );
    for method in ["get", "delete"] {
        let parameters = spec["paths"]["/api/v1/links/{code}"][method]["parameters"]
            .as_array()
            .unwrap();
        let code = parameters.iter().find(|p| p["name"] == "code").unwrap();
        assert_eq!(
            code["schema"]["pattern"], "^[A-Za-z0-9_-]{1,64}$",
            "{method}"
        );
    }
}

/// Visit flushes write counts, never targets, so they leave cached redirects in place:
/// under random traffic over cached links, across flushes, no redirect misses the cache.
#[tokio::test]
async fn visit_flushes_leave_cached_redirects_in_place() {
    let app = spawn_in_process(&TestConfig::default().with(|c| c.visits.flush_values_secs = 1));
    let http = client();
    let mut codes = Vec::new();
    for i in 0..100 {
        let link = app
            .create(&http, json!({"url": format!("https://example.com/{i}")}))
            .await;
        codes.push(link["code"].as_str().unwrap().to_owned());
    }
    let misses = || metric(&app.base, "shortener_cache_misses_total");
    let flushes = || metric(&app.base, "shortener_visit_flushes_total");
    // Links with visits or values counted in memory and not yet written (both buffers).
    let pending = || metric(&app.base, "shortener_visits_pending_links");
    let mut most_pending: f64 = 0.0;
    // Created links are cached by the create itself.
    let before = misses().await;
    // A small deterministic generator: the test needs spread, not secrecy.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut visits = vec![0u64; codes.len()];
    let first_flush = flushes().await;
    let mut rounds = 0;
    // Random visits until two flushes have run since the first visit, so that at least one
    // whole flush wrote counts of links that stayed in use.
    while flushes().await < first_flush + 2.0 {
        for _ in 0..50 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let index = (state % codes.len() as u64) as usize;
            let response = http
                .get(app.url(&format!("/{}", codes[index])))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::FOUND);
            visits[index] += 1;
        }
        most_pending = most_pending.max(pending().await);
        rounds += 1;
        assert!(rounds < 10_000, "no visit flush ran");
    }
    assert_eq!(misses().await, before, "a flush evicted cached redirects");
    assert!(most_pending > 0.0, "visits were never seen pending");
    // Two flushes after the last visit, nothing is pending any more.
    let last = flushes().await;
    for _ in 0..100 {
        if flushes().await >= last + 2.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        pending().await,
        0.0,
        "visits still pending after two flushes"
    );
    // The counts are the store's (plus this node's pending ones), read past the cache.
    let busiest = (0..codes.len()).max_by_key(|&i| visits[i]).unwrap();
    let link = Api::of(&app).get(&codes[busiest]).await.body;
    assert_eq!(link["visits"], visits[busiest]);
}

#[tokio::test]
async fn the_page_is_served_with_strict_security_headers() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    let page = http.get(app.url("/")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let policy = headers["content-security-policy"].to_str().unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(policy.contains(directive), "{policy}");
    }
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    let html = page.text().await.unwrap();
    assert!(html.contains("<input id=\"url\" name=\"url\""), "{html}");
    for asset in ["/assets/app.js", "/assets/app.css"] {
        assert!(html.contains(asset), "{asset}");
        let response = http.get(app.url(asset)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{asset}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    }
    let missing = http.get(app.url("/assets/none.js")).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let post = http.post(app.url("/")).send().await.unwrap();
    assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.headers()["allow"], "GET, HEAD");
    // The page's own paths can never be an alias.
    let taken = Api::of(&app)
        .create(&json!({"url": "https://example.com/", "alias": "assets"}))
        .await;
    assert_eq!(taken.status, StatusCode::BAD_REQUEST);
}
