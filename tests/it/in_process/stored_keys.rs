//! API keys made and revoked through the API while the service runs: the secret shown
//! once works at once, its links are its owner's, names are taken once (configured
//! ones included), and a revoked key is refused within a second.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, secret, until_status};

#[tokio::test]
async fn a_key_made_through_the_api_works_at_once_and_a_revoked_one_is_refused() {
    let app = spawn_in_process(
        &TestConfig::default().keys(&[("root", "admin"), ("alice", "create,read")]),
    );
    let http = client();
    let api = Api::of(&app);
    let admin = api.with_key(&secret("root"));

    let made = admin
        .create_key(&json!({"name": "colleague", "scopes": ["create", "read"], "owner": "team"}))
        .await
        .expect(StatusCode::CREATED);
    let key = made["secret"].as_str().unwrap().to_owned();
    assert!(key.starts_with("shk_") && key.len() == 52, "{made}");
    assert_eq!(made["key"]["owner"], "team");
    let colleague = api.with_key(&key);

    // A second key of the same owner reaches the same links.
    let other = admin
        .create_key(&json!({"name": "colleague-2", "scopes": ["read"], "owner": "team"}))
        .await
        .body;
    let other = other["secret"].as_str().unwrap().to_owned();
    let link = colleague
        .create(&json!({"url": "https://example.com/team", "alias": "team-link"}))
        .await;
    assert_eq!(link.status, StatusCode::CREATED);
    let seen = api.with_key(&other).get("team-link").await;
    assert_eq!(seen.status, StatusCode::OK, "the owner's other key sees it");
    let stranger = api.with_key(&secret("alice")).get("team-link").await;
    assert_eq!(stranger.status, StatusCode::NOT_FOUND);

    // Names are taken once, configured ones included; bad fields are named.
    for (body, status, field) in [
        (json!({"name": "colleague"}), StatusCode::CONFLICT, "name"),
        (json!({"name": "alice"}), StatusCode::CONFLICT, "name"),
        (
            json!({"name": "x", "scopes": ["everything"]}),
            StatusCode::BAD_REQUEST,
            "scopes",
        ),
        (
            json!({"name": "x", "tier": "gold"}),
            StatusCode::BAD_REQUEST,
            "tier",
        ),
        (
            json!({"name": "x", "expires_at": "2001-01-01T00:00:00Z"}),
            StatusCode::BAD_REQUEST,
            "expires_at",
        ),
        (
            json!({"name": "bad name!"}),
            StatusCode::BAD_REQUEST,
            "name",
        ),
        (json!({"scopes": []}), StatusCode::BAD_REQUEST, "name"),
    ] {
        let answer = admin.create_key(&body).await;
        assert_eq!(answer.status, status, "{body}");
        let problem = answer.body;
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(
            detail.starts_with(&format!("{field}: ")),
            "{body}: {detail}"
        );
    }
    // Only an admin key makes keys.
    let refused = colleague.create_key(&json!({"name": "mine"})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    // Listed with the configured ones, which cannot be revoked here.
    let listed = admin.keys().await.body;
    let names: Vec<(&str, &str)> = (listed["keys"].as_array().unwrap().iter())
        .map(|key| {
            (
                key["name"].as_str().unwrap(),
                key["source"].as_str().unwrap(),
            )
        })
        .collect();
    for expected in [
        ("colleague", "storage"),
        ("colleague-2", "storage"),
        ("root", "config"),
        ("alice", "config"),
    ] {
        assert!(names.contains(&expected), "{expected:?} in {names:?}");
    }
    assert!(!listed.to_string().contains(&key), "no secret is listed");
    let configured = admin.revoke_key("alice").await;
    assert_eq!(configured.status, StatusCode::CONFLICT);

    // Revoked: refused at once on this node (it reads the keys again after a revocation).
    let links = api.url("/links");
    until_status(&http, &links, &key, StatusCode::OK).await;
    let revoked = admin.revoke_key("colleague").await;
    assert_eq!(revoked.status, StatusCode::NO_CONTENT);
    let waited = until_status(&http, &links, &key, StatusCode::UNAUTHORIZED).await;
    assert!(waited < Duration::from_secs(1), "refused after {waited:?}");
    let again = admin.revoke_key("colleague").await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    let listed = admin.keys().await.body;
    let colleague = (listed["keys"].as_array().unwrap().iter())
        .find(|key| key["name"] == "colleague")
        .unwrap();
    assert!(colleague["revoked_at"].is_string(), "{colleague}");
    assert!(
        colleague["last_used_at"].is_string(),
        "its use was written: {colleague}"
    );
    // Its name stays taken.
    let reused = admin.create_key(&json!({"name": "colleague"})).await;
    assert_eq!(reused.status, StatusCode::CONFLICT);
}
