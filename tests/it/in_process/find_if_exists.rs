//! `find_if_exists` on create: the caller's live link that a body would make again is
//! answered (200) instead of a new one (201); any difference, another owner, an ended
//! link or a password makes a new one; in a bulk create, per item.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, secret};

#[tokio::test]
async fn the_link_a_create_would_make_again_is_found_not_made() {
    let app = spawn_in_process(
        &TestConfig::default().keys(&[("alice", "create,read"), ("bob", "create,read")]),
    );
    let http = client();
    let api = Api::of(&app);
    let create = async |key: Option<&str>, body: Value| {
        let answer = match key {
            Some(key) => api.with_key(&secret(key)).create(&body).await,
            None => api.create(&body).await,
        };
        let code = answer.body["code"].as_str().unwrap_or_default().to_owned();
        (answer.status, code, answer.body)
    };
    let url = "https://example.com/find";
    let (status, first, _) = create(Some("alice"), json!({"url": url, "tags": ["a"]})).await;
    assert_eq!(status, StatusCode::CREATED);
    let find = |extra: Value| {
        let mut body = json!({"url": url, "tags": ["a"], "find_if_exists": true});
        for (name, value) in extra.as_object().unwrap() {
            body[name] = value.clone();
        }
        body
    };
    let (status, code, body) = create(Some("alice"), find(json!({}))).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::OK, first.as_str()),
        "{body}"
    );
    // Without the flag, a new link.
    let (status, code, _) = create(Some("alice"), json!({"url": url, "tags": ["a"]})).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_ne!(code, first);
    // The newest of the two is found now.
    let (status, found, _) = create(Some("alice"), find(json!({}))).await;
    assert_eq!((status, found.as_str()), (StatusCode::OK, code.as_str()));
    // Any difference makes a new one.
    for extra in [
        json!({"tags": ["b"]}),
        json!({"title": "Another"}),
        json!({"max_visits": 5}),
        json!({"redirect_status": 307}),
        json!({"rules": [{"conditions": [{"type": "query", "key": "x"}], "url": "https://example.com/x"}]}),
        json!({"alias": "find-alias"}),
    ] {
        let (status, made, body) = create(Some("alice"), find(extra.clone())).await;
        assert_eq!(status, StatusCode::CREATED, "{extra}: {body}");
        assert!(made != first && made != code, "{extra}");
    }
    // The alias asked for is the link found.
    let (status, made, _) = create(Some("alice"), find(json!({"alias": "find-alias"}))).await;
    assert_eq!((status, made.as_str()), (StatusCode::OK, "find-alias"));
    // Another owner's and nobody's links are their own.
    let (status, theirs, _) = create(Some("bob"), find(json!({}))).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, again, _) = create(Some("bob"), find(json!({}))).await;
    assert_eq!((status, again.as_str()), (StatusCode::OK, theirs.as_str()));
    let (status, anonymous, _) = create(None, find(json!({}))).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, again, _) = create(None, find(json!({}))).await;
    assert_eq!(
        (status, again.as_str()),
        (StatusCode::OK, anonymous.as_str())
    );
    // An ended link is not found: one visit uses up `max_visits = 1`.
    let once = find(json!({"max_visits": 1, "tags": ["once"]}));
    let (status, used, _) = create(Some("alice"), once.clone()).await;
    assert_eq!(status, StatusCode::CREATED);
    let visit = http.get(app.url(&format!("/{used}"))).send().await.unwrap();
    assert_eq!(visit.status(), StatusCode::FOUND);
    let (status, fresh, _) = create(Some("alice"), once).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_ne!(fresh, used);
    // A password always makes a new link.
    let locked = find(json!({"password": "correct horse", "tags": ["locked"]}));
    let (status, first_locked, _) = create(Some("alice"), locked.clone()).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, second_locked, _) = create(Some("alice"), locked).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_ne!(first_locked, second_locked);

    // In a bulk create, per item.
    let bulk = (api.with_key(&secret("alice")))
        .create_bulk(&json!({"links": [find(json!({})), find(json!({"tags": ["bulk"]}))]}))
        .await
        .body;
    let results = bulk["results"].as_array().unwrap();
    assert_eq!(results[0]["status"], 200, "{bulk}");
    // Without an alias, any code will do: the newest such link, made with the alias.
    assert_eq!(results[0]["link"]["code"], "find-alias");
    assert_eq!(results[1]["status"], 201, "{bulk}");
}
