//! Tags through the API: given on create, bulk and edit (lower case, each once), a
//! listing filtered by every tag asked with its cursor, the caller's tags with their
//! counts, a tag renamed, merged and deleted over every link of a key, and the refusals
//! that name the field.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{BASE_CONFIG, client, spawn_in_process};

use crate::support::{keys_config, secret};

fn config() -> String {
    let keys = keys_config(&[("alice", "create,read,update"), ("bob", "create,read")]);
    format!("{BASE_CONFIG}\n{keys}")
}

fn as_key(request: reqwest::RequestBuilder, name: &str) -> reqwest::RequestBuilder {
    request.header("x-api-key", secret(name))
}

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
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
    let http = client();
    let links = app.url("/api/v1/links");
    let mut made = Vec::new();
    for tags in [
        json!(["Launch", "q4", "launch"]),
        json!(["q4"]),
        json!(["launch", "Q4", "ads"]),
    ] {
        let body = json!({"url": "https://example.com/", "tags": tags});
        let (status, link) = send(as_key(http.post(&links), "alice").json(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{link}");
        made.push(link);
    }
    assert_eq!(
        made[0]["tags"],
        json!(["launch", "q4"]),
        "lower case, each once"
    );
    let body = json!({"links": [{"url": "https://example.com/b", "tags": ["launch", "q4"]}]});
    let (status, _) = send(as_key(http.post(format!("{links}/bulk")), "bob").json(&body)).await;
    assert_eq!(status, StatusCode::OK);

    // Every tag must match, whatever its case; a walk by cursor sees each match once.
    let mut seen = Vec::new();
    let mut url = format!("{links}?tag=LAUNCH&tag=q4&limit=1");
    loop {
        let (status, page) = send(as_key(http.get(&url), "alice")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        seen.extend(codes(&page));
        let Some(cursor) = page["next_cursor"].as_str() else {
            break;
        };
        url = format!("{links}?tag=LAUNCH&tag=q4&limit=1&cursor={cursor}");
    }
    let expected: Vec<String> = [&made[2], &made[0]]
        .map(|link| link["code"].as_str().unwrap().to_owned())
        .to_vec();
    assert_eq!(seen, expected, "newest first, bob's link out of reach");

    let (status, tags) = send(as_key(http.get(app.url("/api/v1/tags")), "alice")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        tags,
        json!({"tags": [
            {"tag": "ads", "links": 1, "visits": 0, "bots": 0},
            {"tag": "launch", "links": 2, "visits": 0, "bots": 0},
            {"tag": "q4", "links": 3, "visits": 0, "bots": 0},
        ]})
    );
    let (_, theirs) = send(as_key(http.get(app.url("/api/v1/tags")), "bob")).await;
    assert_eq!(theirs["tags"].as_array().unwrap().len(), 2, "{theirs}");
    let (status, _) = send(http.get(app.url("/api/v1/tags"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // A PATCH replaces the tags whole; `null` removes them.
    let one = format!("{links}/{}", made[1]["code"].as_str().unwrap());
    let (status, edited) =
        send(as_key(http.patch(&one), "alice").json(&json!({"tags": ["Renamed"]}))).await;
    assert_eq!(
        (status, &edited["tags"]),
        (StatusCode::OK, &json!(["renamed"]))
    );
    let (_, edited) = send(as_key(http.patch(&one), "alice").json(&json!({"tags": null}))).await;
    assert_eq!(edited["tags"], json!([]));
}

#[tokio::test]
async fn bad_tags_are_refused_naming_the_field() {
    let app = spawn_in_process(&config());
    let http = client();
    let links = app.url("/api/v1/links");
    let eleven: Vec<String> = (0..11).map(|n| format!("t{n}")).collect();
    for tags in [
        json!(eleven),
        json!(["a,b"]),
        json!([""]),
        json!("launch"),
        json!([7]),
    ] {
        let body = json!({"url": "https://example.com/", "tags": tags});
        let (status, problem) = send(as_key(http.post(&links), "alice").json(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{tags}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.starts_with("tags: "), "{detail}");
    }
    let (status, problem) = send(as_key(http.get(format!("{links}?tag=a%2Cb")), "alice")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"].as_str().unwrap().starts_with("tag: "),
        "{problem}"
    );
}

#[tokio::test]
async fn a_tag_is_renamed_merged_and_deleted_over_the_caller_s_links() {
    let app = spawn_in_process(&config());
    let http = client();
    let links = app.url("/api/v1/links");
    let mut codes = Vec::new();
    for (key, tags) in [
        ("alice", json!(["draft", "q4"])),
        ("alice", json!(["draft", "final"])),
        ("alice", json!(["q4"])),
        ("bob", json!(["draft"])),
    ] {
        let body = json!({"url": "https://example.com/t", "tags": tags});
        let (status, link) = send(as_key(http.post(&links), key).json(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{link}");
        codes.push(link["code"].as_str().unwrap().to_owned());
    }
    let tags_of = |key: &'static str, code: String| {
        let request = as_key(http.get(app.url(&format!("/api/v1/links/{code}"))), key);
        async move { send(request).await.1["tags"].clone() }
    };
    let tag_url = |tag: &str| app.url(&format!("/api/v1/tags/{tag}"));
    // A rename: alice's two links with `draft`, not bob's.
    let rename = json!({"name": "Review"});
    let (status, changed) = send(as_key(http.patch(tag_url("draft")), "alice").json(&rename)).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed, json!({"tag": "review", "links": 2}));
    assert_eq!(
        tags_of("alice", codes[0].clone()).await,
        json!(["q4", "review"])
    );
    assert_eq!(tags_of("bob", codes[3].clone()).await, json!(["draft"]));
    // A merge: renamed to a name a link has already, it keeps one.
    let merge = json!({"name": "final"});
    let (status, changed) = send(as_key(http.patch(tag_url("review")), "alice").json(&merge)).await;
    assert_eq!(
        (status, changed["links"].clone()),
        (StatusCode::OK, json!(2))
    );
    assert_eq!(tags_of("alice", codes[1].clone()).await, json!(["final"]));
    // A delete, then a tag no link has: 404 naming it.
    let (status, changed) = send(as_key(http.delete(tag_url("q4")), "alice")).await;
    assert_eq!(
        (status, changed),
        (StatusCode::OK, json!({"tag": "q4", "links": 2}))
    );
    assert_eq!(tags_of("alice", codes[2].clone()).await, json!([]));
    let (status, problem) = send(as_key(http.delete(tag_url("q4")), "alice")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        problem["detail"].as_str().unwrap().starts_with("tag: "),
        "{problem}"
    );
    // Bad names are refused by field; bob's key lacks `update`.
    let (status, problem) =
        send(as_key(http.patch(tag_url("final")), "alice").json(&json!({"name": "a,b"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"].as_str().unwrap().starts_with("name: "),
        "{problem}"
    );
    let (status, _) = send(as_key(http.delete(tag_url("draft")), "bob")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
