//! Tags through the API: given on create, bulk and edit (lower case, each once), a
//! listing filtered by every tag asked with its cursor, the caller's tags with their
//! counts, a tag renamed, merged and deleted over every link of a key, and the refusals
//! that name the field.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::{Answer, Api, Served, TestConfig, spawn_in_process};

use crate::support::{Keys as _, secret};

fn config() -> TestConfig {
    TestConfig::default().keys(&[("alice", "create,read,update"), ("bob", "create,read")])
}

/// The API of `app` with the key of `name`.
fn as_key(app: &impl Served, name: &str) -> Api {
    Api::of(app).with_key(&secret(name))
}

/// `PATCH /tags/{tag}` with `body`: a rename, or a merge.
async fn patch_tag(api: &Api, tag: &str, body: &Value) -> Answer {
    let request = api.request(Method::PATCH, &format!("/tags/{tag}"));
    api.send(request.json(body)).await
}

/// `DELETE /tags/{tag}`.
async fn delete_tag(api: &Api, tag: &str) -> Answer {
    api.send(api.request(Method::DELETE, &format!("/tags/{tag}")))
        .await
}

/// The tags of the link `code` as `api`'s key sees it.
async fn tags_of(api: &Api, code: &str) -> Value {
    api.get(code).await.body["tags"].clone()
}

fn codes(page: &Value) -> Vec<String> {
    let items = page["items"].as_array().unwrap();
    items
        .iter()
        .map(|link| link["code"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn links_are_found_by_their_tags_and_tags_are_counted_per_owner() {
    let app = spawn_in_process(&config());
    let (alice, bob) = (as_key(&app, "alice"), as_key(&app, "bob"));
    let mut made = Vec::new();
    for tags in [
        json!(["Launch", "q4", "launch"]),
        json!(["q4"]),
        json!(["launch", "Q4", "ads"]),
    ] {
        let body = json!({"url": "https://example.com/", "tags": tags});
        made.push(alice.create(&body).await.expect(StatusCode::CREATED));
    }
    assert_eq!(
        made[0]["tags"],
        json!(["launch", "q4"]),
        "lower case, each once"
    );
    let body = json!({"links": [{"url": "https://example.com/b", "tags": ["launch", "q4"]}]});
    assert_eq!(bob.create_bulk(&body).await.status, StatusCode::OK);

    // Every tag must match, whatever its case; a walk by cursor sees each match once.
    let mut seen = Vec::new();
    let mut query = "tag=LAUNCH&tag=q4&limit=1".to_owned();
    loop {
        let page = alice.list(&query).await.expect(StatusCode::OK);
        seen.extend(codes(&page));
        let Some(cursor) = page["next_cursor"].as_str() else {
            break;
        };
        query = format!("tag=LAUNCH&tag=q4&limit=1&cursor={cursor}");
    }
    let expected: Vec<String> = [&made[2], &made[0]]
        .map(|link| link["code"].as_str().unwrap().to_owned())
        .to_vec();
    assert_eq!(seen, expected, "newest first, bob's link out of reach");

    let tags = alice.tags().await;
    assert_eq!(tags.status, StatusCode::OK);
    assert_eq!(
        tags.body,
        json!({"tags": [
            {"tag": "ads", "links": 1, "visits": 0, "bots": 0},
            {"tag": "launch", "links": 2, "visits": 0, "bots": 0},
            {"tag": "q4", "links": 3, "visits": 0, "bots": 0},
        ]})
    );
    let theirs = bob.tags().await.body;
    assert_eq!(theirs["tags"].as_array().unwrap().len(), 2, "{theirs}");
    let anonymous = Api::of(&app).tags().await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);

    // A PATCH replaces the tags whole; `null` removes them.
    let one = made[1]["code"].as_str().unwrap();
    let edited = alice.patch(one, &json!({"tags": ["Renamed"]})).await;
    assert_eq!(
        (edited.status, &edited.body["tags"]),
        (StatusCode::OK, &json!(["renamed"]))
    );
    let edited = alice.patch(one, &json!({"tags": null})).await.body;
    assert_eq!(edited["tags"], json!([]));
}

#[tokio::test]
async fn bad_tags_are_refused_naming_the_field() {
    let app = spawn_in_process(&config());
    let alice = as_key(&app, "alice");
    let eleven: Vec<String> = (0..11).map(|n| format!("t{n}")).collect();
    for tags in [
        json!(eleven),
        json!(["a,b"]),
        json!([""]),
        json!("launch"),
        json!([7]),
    ] {
        let body = json!({"url": "https://example.com/", "tags": tags});
        let answer = alice.create(&body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{tags}");
        let detail = answer.body["detail"].as_str().unwrap();
        assert!(detail.starts_with("tags: "), "{detail}");
    }
    let answer = alice.list("tag=a%2Cb").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let problem = answer.body;
    assert!(
        problem["detail"].as_str().unwrap().starts_with("tag: "),
        "{problem}"
    );
}

#[tokio::test]
async fn a_tag_is_renamed_merged_and_deleted_over_the_caller_s_links() {
    let app = spawn_in_process(&config());
    let (alice, bob) = (as_key(&app, "alice"), as_key(&app, "bob"));
    let mut codes = Vec::new();
    for (key, tags) in [
        ("alice", json!(["draft", "q4"])),
        ("alice", json!(["draft", "final"])),
        ("alice", json!(["q4"])),
        ("bob", json!(["draft"])),
    ] {
        let body = json!({"url": "https://example.com/t", "tags": tags});
        let made = as_key(&app, key).create(&body).await;
        let link = made.expect(StatusCode::CREATED);
        codes.push(link["code"].as_str().unwrap().to_owned());
    }
    // A rename: alice's two links with `draft`, not bob's.
    let rename = json!({"name": "Review"});
    let changed = (patch_tag(&alice, "draft", &rename).await).expect(StatusCode::OK);
    assert_eq!(changed, json!({"tag": "review", "links": 2}));
    assert_eq!(tags_of(&alice, &codes[0]).await, json!(["q4", "review"]));
    assert_eq!(tags_of(&bob, &codes[3]).await, json!(["draft"]));
    // A merge: renamed to a name a link has already, it keeps one.
    let merge = json!({"name": "final"});
    let changed = patch_tag(&alice, "review", &merge).await;
    assert_eq!(
        (changed.status, changed.body["links"].clone()),
        (StatusCode::OK, json!(2))
    );
    assert_eq!(tags_of(&alice, &codes[1]).await, json!(["final"]));
    // A delete, then a tag no link has: 404 naming it.
    let changed = delete_tag(&alice, "q4").await;
    assert_eq!(
        (changed.status, changed.body),
        (StatusCode::OK, json!({"tag": "q4", "links": 2}))
    );
    assert_eq!(tags_of(&alice, &codes[2]).await, json!([]));
    let answer = delete_tag(&alice, "q4").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    let problem = answer.body;
    assert!(
        problem["detail"].as_str().unwrap().starts_with("tag: "),
        "{problem}"
    );
    // Bad names are refused by field; bob's key lacks `update`.
    let answer = patch_tag(&alice, "final", &json!({"name": "a,b"})).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let problem = answer.body;
    assert!(
        problem["detail"].as_str().unwrap().starts_with("name: "),
        "{problem}"
    );
    assert_eq!(
        delete_tag(&bob, "draft").await.status,
        StatusCode::FORBIDDEN
    );
}
