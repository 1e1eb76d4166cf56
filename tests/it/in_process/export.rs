//! The API's `GET /links/export`: every link a key reaches, across pages of the keyset walk,
//! as NDJSON or CSV; another owner's links never; bad input named.

use std::collections::HashSet;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::{Api, TestConfig, spawn_in_process};

use crate::support::{Keys as _, secret};

#[tokio::test]
async fn an_export_walks_every_page_of_the_key_s_links_only() {
    let config = TestConfig::default()
        .policy("create", 100_000, 1000.0)
        .keys(&[
            ("alice", "create,read"),
            ("bob", "create,read"),
            ("root", "admin"),
        ]);
    let app = spawn_in_process(&config);
    let as_key = |name: &str| Api::of(&app).with_key(&secret(name));
    let mut created = HashSet::new();
    // 1203 links: more than two pages of the walk (500 each).
    for batch in [1000, 203] {
        let links: Vec<Value> = (0..batch)
            .map(|n| json!({"url": format!("https://example.com/{batch}/{n}?a=1,2")}))
            .collect();
        let answer = as_key("alice")
            .create_bulk(&json!({ "links": links }))
            .await
            .body;
        for result in answer["results"].as_array().unwrap() {
            created.insert(result["link"]["code"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(created.len(), 1203);
    let bobs = (as_key("bob"))
        .create(&json!({"url": "https://bob.example/"}))
        .await;
    assert_eq!(bobs.status, StatusCode::CREATED);

    let export = async |key: &str, format: &str| {
        let path = format!("/links/export?format={format}");
        let response = (as_key(key).request(Method::GET, &path))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        (content_type, response.text().await.unwrap())
    };
    let (content_type, text) = export("alice", "ndjson").await;
    assert_eq!(content_type, "application/x-ndjson");
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let codes: HashSet<String> = (lines.iter())
        .map(|line| line["code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(lines.len(), 1203, "each link once");
    assert_eq!(codes, created);
    assert!(lines.iter().all(|line| line["owner"] == "alice"));

    let (content_type, text) = export("root", "csv").await;
    assert!(content_type.starts_with("text/csv"), "{content_type}");
    let mut rows = text.split("\r\n").filter(|row| !row.is_empty());
    assert_eq!(
        rows.next(),
        Some(
            "domain,code,url,created_at,expires_at,max_visits,visits,owner,\
             redirect_status,forward_query,expired_url,title,crawlable,tags,password_hash,rules"
        )
    );
    let rows: Vec<&str> = rows.collect();
    assert_eq!(rows.len(), 1204, "an admin exports every owner's links");
    assert!(rows.iter().any(|row| row.contains("https://bob.example/")));
    // A URL with a comma is quoted.
    assert!(
        rows.iter()
            .any(|row| row.contains(",\"https://example.com/203/0?a=1,2\","))
    );
}

#[tokio::test]
async fn an_export_needs_a_key_and_a_known_format() {
    let config = TestConfig::default().keys(&[("alice", "create,read")]);
    let app = spawn_in_process(&config);
    let api = Api::of(&app);
    let alice = api.with_key(&secret("alice"));
    let anonymous = api.send(api.request(Method::GET, "/links/export")).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let bad = alice.request(Method::GET, "/links/export?format=xml");
    let bad = alice.send(bad).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let problem = bad.body;
    assert!(problem.to_string().contains("format"), "{problem}");
    // The default format, and an empty export.
    let empty = (alice.request(Method::GET, "/links/export"))
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status(), StatusCode::OK);
    assert_eq!(empty.headers()["content-type"], "application/x-ndjson");
    assert_eq!(empty.text().await.unwrap(), "");
}
