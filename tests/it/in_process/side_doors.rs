//! The side doors are held to the front door's rules, in process: a create or bulk body
//! with a field the API does not have, an `X-API-Key` that is not ASCII, a query
//! parameter given twice, an export that reads more than one page, and a CSV export's
//! cells that a spreadsheet would run.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::config::DomainConfig;
use shortener_tests::{Answer, Api, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, secret};

fn config() -> TestConfig {
    TestConfig::default()
        .in_memory()
        .keys(&[("alice", "create,read,update,delete")])
}

fn problem(answer: Answer) -> (StatusCode, String) {
    (
        answer.status,
        answer.body["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[tokio::test]
async fn create_and_bulk_refuse_a_field_they_do_not_have() {
    let app = spawn_in_process(&config());
    let api = Api::of(&app);
    // `pasword`: without the refusal, an open link that its owner believes locked.
    let body = json!({"url": "https://example.com/", "alias": "typo", "pasword": "correct horse"});
    let created = api.with_key(&secret("alice")).create(&body).await;
    let (status, detail) = problem(created);
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(detail.starts_with("pasword: "), "{detail}");
    let looked_up = api.get("typo").await;
    assert_eq!(looked_up.status, StatusCode::NOT_FOUND, "nothing was made");

    let bulk = json!({"links": [{"url": "https://example.com/a"}, {"url": "https://example.com/b", "tilte": "B"}]});
    let results = api.create_bulk(&bulk).await.body;
    let second = &results["results"][1];
    assert!(
        second.to_string().contains("links[1].tilte"),
        "the item names its field: {results}"
    );
    let extra = json!({"links": [{"url": "https://example.com/c"}], "dry_run": true});
    let (status, detail) = problem(api.create_bulk(&extra).await);
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(detail.starts_with("dry_run: "), "{detail}");
}

#[tokio::test]
async fn a_key_that_is_not_ascii_is_refused_not_taken_for_none() {
    let app = spawn_in_process(&config());
    let api = Api::of(&app);
    let value = reqwest::header::HeaderValue::from_bytes("clé-secrète".as_bytes()).unwrap();
    let request = (api.request(Method::POST, "/links"))
        .header("x-api-key", value)
        .json(&json!({"url": "https://example.com/"}));
    assert_eq!(api.send(request).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_query_parameter_given_twice_is_refused_naming_it() {
    let app = spawn_in_process(&config());
    let http = client();
    let api = Api::of(&app);
    let created = api
        .create(&json!({"url": "https://example.com/", "alias": "qr-me"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    for query in [
        "format=png&size=64&size=2035",
        "format=png&size=64&si%7Ae=2035",
    ] {
        let request = api.request(Method::GET, &format!("/links/qr-me/qr?{query}"));
        let (status, detail) = problem(api.send(request).await);
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
        assert!(detail.starts_with("size: "), "{detail}");
    }
    // A list parameter repeats by design; the redirect passes its query on as it is.
    let listed = api.with_key(&secret("alice")).list("tag=a&tag=b").await;
    assert_eq!(listed.status, StatusCode::OK);
    let redirect = http.get(app.url("/qr-me?x=1&x=2")).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
}

/// An export of three pages (1 400 links: 500, 500, 400) takes three tokens of `lookup`:
/// the request's and one per later page, so that the key's next look-up finds the bucket
/// empty.
#[tokio::test]
async fn an_export_pays_a_token_per_page() {
    let app = spawn_in_process(
        &config()
            .policy("create", 2000, 1.0)
            .policy("lookup", 3, 0.001),
    );
    let alice = Api::of(&app).with_key(&secret("alice"));
    for batch in 0..2 {
        let links: Vec<Value> = (0..700)
            .map(|n| json!({"url": format!("https://example.com/{batch}/{n}"), "title": "=1+1"}))
            .collect();
        let created = alice.create_bulk(&json!({ "links": links })).await;
        assert_eq!(created.status, StatusCode::OK);
    }
    let export = (alice.request(Method::GET, "/links/export?format=csv"))
        .send()
        .await
        .unwrap();
    assert_eq!(export.status(), StatusCode::OK);
    let csv = export.text().await.unwrap();
    assert_eq!(csv.lines().count(), 1 + 1400, "the header and every link");
    assert!(
        csv.lines().skip(1).all(|line| line.contains(",'=1+1,")),
        "titles as text"
    );
    let next = alice.tags().await;
    assert_eq!(
        next.status,
        StatusCode::TOO_MANY_REQUESTS,
        "the export took the bucket's three tokens"
    );
}

/// The raw answer to `request` written on a new connection to `app`'s port: its status
/// line and headers.
async fn raw(base: &str, request: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.unwrap();
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// RFC 9112: an HTTP/1.1 request without `Host` or with two is a 400, and the authority
/// of an absolute-form target is the request's host (as a front end that routes by it
/// saw it); a trailing dot is the same host.
#[tokio::test]
async fn the_host_is_one_and_an_absolute_target_names_it() {
    let app = spawn_in_process(&config().with(|c| {
        c.domains.push(DomainConfig {
            host: "go.example.org".into(),
            ..DomainConfig::default()
        });
    }));
    let created = Api::of(&app)
        .create(
            &json!({"url": "https://example.com/go", "alias": "abs", "domain": "go.example.org"}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let base = app.url("");
    let none = raw(&base, "GET /abs HTTP/1.1\r\nConnection: close\r\n\r\n").await;
    assert!(none.starts_with("HTTP/1.1 400"), "{none}");
    let two = raw(
        &base,
        "GET /abs HTTP/1.1\r\nHost: go.example.org\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(two.starts_with("HTTP/1.1 400"), "{two}");
    let absolute = raw(
        &base,
        "GET http://go.example.org/abs HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(absolute.starts_with("HTTP/1.1 302"), "{absolute}");
    assert!(
        absolute
            .to_lowercase()
            .contains("location: https://example.com/go"),
        "{absolute}"
    );
    let dotted = raw(
        &base,
        "GET /abs HTTP/1.1\r\nHost: go.example.org.:80\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(dotted.starts_with("HTTP/1.1 302"), "{dotted}");
    // HTTP/1.0 need not name a host: the default domain's.
    let old = raw(&base, "GET /healthz HTTP/1.0\r\n\r\n").await;
    assert!(
        old.starts_with("HTTP/1.0 200") || old.starts_with("HTTP/1.1 200"),
        "{old}"
    );
}
