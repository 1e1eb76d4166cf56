//! Bad input of every kind answered with a 4xx problem naming the field, never a 5xx.
//! (A bad configuration refused with one line is the binary's: `process/cli.rs`.)

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::{Answer, Api, TestConfig, client, spawn_in_process};

fn expect_problem(answer: Answer, status: StatusCode, field: &str) {
    assert_eq!(answer.status, status);
    assert_eq!(answer.header("content-type"), "application/problem+json");
    let problem = answer.body;
    assert_eq!(problem["status"], status.as_u16());
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(field),
        "detail {detail:?} should start with the field {field:?}"
    );
    assert!(problem["title"].is_string() && problem["type"].is_string());
}

#[tokio::test]
async fn bad_bodies_are_400_naming_the_field() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    let api = Api::of(&app);
    let long = format!("https://example.com/{}", "a".repeat(8200));
    let cases: Vec<(Value, &str)> = vec![
        (json!({"url": "javascript:alert(1)"}), "url"),
        (json!({"url": "data:text/html,hi"}), "url"),
        (json!({"url": "ftp://example.com/f"}), "url"),
        (json!({"url": "/relative/path"}), "url"),
        (json!({"url": "https://user:pw@example.com/"}), "url"),
        (json!({"url": "https://example.com/\u{7}bell"}), "url"),
        (json!({"url": "https://exa\tmple.com/"}), "url"),
        (json!({"url": long}), "url"),
        (json!({"url": 42}), "url"),
        (json!({}), "url"),
        (
            json!({"url": "https://example.com/", "alias": "ab"}),
            "alias",
        ),
        (
            json!({"url": "https://example.com/", "alias": "a".repeat(65)}),
            "alias",
        ),
        (
            json!({"url": "https://example.com/", "alias": "docs"}),
            "alias",
        ),
        (
            json!({"url": "https://example.com/", "alias": "has space"}),
            "alias",
        ),
        (
            json!({"url": "https://example.com/", "alias": "sl/ash"}),
            "alias",
        ),
        (json!({"url": "https://example.com/", "alias": 7}), "alias"),
        (
            json!({"url": "https://example.com/", "expires_at": "2001-01-01T00:00:00Z"}),
            "expires_at",
        ),
        (
            json!({"url": "https://example.com/", "expires_at": "tomorrow"}),
            "expires_at",
        ),
        (
            json!({"url": "https://example.com/", "expires_at": 5}),
            "expires_at",
        ),
        (
            json!({"url": "https://example.com/", "max_visits": 0}),
            "max_visits",
        ),
        (
            json!({"url": "https://example.com/", "max_visits": -3}),
            "max_visits",
        ),
        (
            json!({"url": "https://example.com/", "max_visits": "many"}),
            "max_visits",
        ),
        (
            json!({"url": "https://example.com/", "max_visits": 1.5}),
            "max_visits",
        ),
        (json!([1, 2]), "body"),
    ];
    for (body, field) in cases {
        expect_problem(api.create(&body).await, StatusCode::BAD_REQUEST, field);
    }
    let raw_create = |raw: String| {
        let request = api.request(Method::POST, "/links");
        api.send(request.header("content-type", "application/json").body(raw))
    };
    for raw in ["", "{not json", "null"] {
        let answer = raw_create(raw.to_owned()).await;
        expect_problem(answer, StatusCode::BAD_REQUEST, "body");
    }
    let too_big = format!(
        "{{\"url\": \"https://example.com/{}\"}}",
        "a".repeat(70_000)
    );
    let answer = raw_create(too_big).await;
    assert_eq!(
        answer.header("connection"),
        "close",
        "a connection with an unread body is not reused"
    );
    expect_problem(answer, StatusCode::PAYLOAD_TOO_LARGE, "body");
    // The server is unharmed.
    assert_eq!(
        http.get(app.url("/healthz")).send().await.unwrap().status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn odd_codes_are_404() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    for path in [
        "/nope123",
        // ("/%2e%2e" is "/" once the client normalises it: the web page.)
        "/..%2fetc%2fpasswd",
        "/a.b",
        "/%00",
        "/\u{e9}t\u{e9}",
        "/a/b/c",
        &format!("/{}", "x".repeat(300)),
    ] {
        let response = http.get(app.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{path}"
        );
    }
    let api = Api::of(&app);
    let answer = api
        .send(api.request(Method::GET, "/links/bad%20code"))
        .await;
    assert!(answer.status.is_client_error());
}

/// Found by schemathesis: the lookup and delete operations refused codes with 400 that
/// their documented parameter schema allowed; the schema now carries the code pattern, and
/// a refusal names the `code` parameter (not the body).
#[tokio::test]
async fn odd_link_codes_are_400_naming_the_code() {
    // sha256("test-key-123")
    let config = TestConfig::default().api_key(
        "ops",
        "625faa3fbbc3d2bd9d6ee7678d04cc5339cb33dc68d9b58451853d60046e226a",
        None,
    );
    let app = spawn_in_process(&config);
    let api = Api::of(&app);
    let ops = api.with_key("test-key-123");
    let long = format!("/links/{}", "x".repeat(65));
    for path in [
        "/links/a.b",
        "/links/%3C%C3%91",
        "/links/bad%20code",
        "/links/%00",
        long.as_str(),
    ] {
        let answer = api.send(api.request(Method::GET, path)).await;
        expect_problem(answer, StatusCode::BAD_REQUEST, "code:");
        let answer = ops.send(ops.request(Method::DELETE, path)).await;
        expect_problem(answer, StatusCode::BAD_REQUEST, "code:");
    }
    expect_problem(api.get("ok_code-1").await, StatusCode::NOT_FOUND, "code");
}

/// Found by schemathesis: a create without `Content-Type` (or with another media type) is
/// 415, which the operation now declares; the problem names the content type.
#[tokio::test]
async fn create_without_json_content_type_is_415() {
    let app = spawn_in_process(&TestConfig::default());
    let api = Api::of(&app);
    let answer = api.send(api.request(Method::POST, "/links")).await;
    expect_problem(answer, StatusCode::UNSUPPORTED_MEDIA_TYPE, "content-type");
    let request = (api.request(Method::POST, "/links"))
        .header("content-type", "text/plain")
        .body(r#"{"url": "https://example.com/"}"#);
    let answer = api.send(request).await;
    expect_problem(answer, StatusCode::UNSUPPORTED_MEDIA_TYPE, "content-type");
}

/// Found by schemathesis: an `Idempotency-Key` that is not visible ASCII was taken as no
/// key at all, so a retry with it created twice; it is a 400 naming the header, on a
/// single create and on a bulk one.
#[tokio::test]
async fn an_idempotency_key_that_is_not_ascii_is_400() {
    let app = spawn_in_process(&TestConfig::default());
    let api = Api::of(&app);
    let key = reqwest::header::HeaderValue::from_bytes(b"retry-\xe9t\xe9").unwrap();
    for (path, body) in [
        ("/links", json!({"url": "https://example.com/once"})),
        (
            "/links/bulk",
            json!({"links": [{"url": "https://example.com/once"}]}),
        ),
    ] {
        let request = (api.request(Method::POST, path))
            .header("idempotency-key", key.clone())
            .json(&body);
        let answer = api.send(request).await;
        expect_problem(answer, StatusCode::BAD_REQUEST, "Idempotency-Key");
    }
}

/// Found by schemathesis: a 405 must list the supported methods in `Allow` (RFC 9110
/// §15.5.6); it came without one.
#[tokio::test]
async fn method_not_allowed_lists_the_allowed_methods() {
    let app = spawn_in_process(&TestConfig::default());
    let http = client();
    let api = Api::of(&app);
    let cases = [
        ("TRACE", api.url("/links/abc"), "GET, HEAD, PATCH, DELETE"),
        ("PUT", api.url("/links"), "POST, GET, HEAD"),
        ("TRACE", app.url("/healthz"), "GET, HEAD"),
        ("POST", app.url("/readyz"), "GET, HEAD"),
        ("DELETE", app.url("/metrics"), "GET, HEAD"),
        ("PATCH", app.url("/abc"), "GET, HEAD, POST"),
    ];
    for (method, path, allow) in cases {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let response = http.request(method.clone(), &path).send().await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
        assert_eq!(response.headers()["allow"], allow, "{method} {path}");
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{method} {path}"
        );
    }
}
