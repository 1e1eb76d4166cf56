//! API keys in storage across nodes: two nodes on one PostgreSQL and no Redis, a key
//! made on one is taken by the other, and once revoked refused by it, each within a
//! second (every node reads the stored keys again every half second).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{Api, TestConfig, TestDatabase, client, spawn_in_process};

use crate::support::{Keys as _, secret, until_status};

#[tokio::test]
async fn a_key_made_or_revoked_on_one_node_is_followed_by_the_other_within_a_second() {
    let database = TestDatabase::create();
    let config = TestConfig::default()
        .postgres(database.url())
        .keys(&[("root", "admin")]);
    let nodes = [spawn_in_process(&config), spawn_in_process(&config)];
    let (http, root) = (client(), Api::of(&nodes[0]).with_key(&secret("root")));
    let made = json!({"name": "travelling", "scopes": ["read"]});
    let made = root.create_key(&made).await.expect(StatusCode::CREATED);
    let key = made["secret"].as_str().unwrap().to_owned();

    let elsewhere = Api::of(&nodes[1]).url("/links");
    let taken = until_status(&http, &elsewhere, &key, StatusCode::OK).await;
    let revoked = root.revoke_key("travelling").await;
    assert_eq!(revoked.status, StatusCode::NO_CONTENT);
    let refused = until_status(&http, &elsewhere, &key, StatusCode::UNAUTHORIZED).await;
    println!("the other node took the new key after {taken:?} and refused it after {refused:?}");
    assert!(taken < Duration::from_secs(1), "taken after {taken:?}");
    assert!(
        refused < Duration::from_secs(1),
        "refused after {refused:?}"
    );
}
