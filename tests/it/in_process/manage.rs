//! Link management through the API: keys with scopes and owners, listings, edits,
//! look-ups that respect the link, HEAD, and visits per day.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, secret};

fn config() -> TestConfig {
    TestConfig::default().keys(&[
        ("alice", "create,read,update,delete"),
        ("bob", "create,read,update,delete"),
        ("reader", "read"),
        ("root", "admin"),
    ])
}

/// The API of `app` with the key of `name`.
fn as_key(api: &Api, name: &str) -> Api {
    api.with_key(&secret(name))
}

#[tokio::test]
async fn keys_reach_their_own_links_and_scopes_are_enforced() {
    let app = spawn_in_process(&config());
    let http = client();
    let api = Api::of(&app);
    let (alice, bob, reader, root) = (
        as_key(&api, "alice"),
        as_key(&api, "bob"),
        as_key(&api, "reader"),
        as_key(&api, "root"),
    );
    let link = alice
        .create(&json!({"url": "https://a.example/"}))
        .await
        .expect(StatusCode::CREATED);
    let code = link["code"].as_str().unwrap().to_owned();

    // 401: no key where one is needed, or an unknown key anywhere.
    let nobody = api.with_key("nobody");
    for answer in [
        api.delete(&code).await,
        api.patch(&code, &json!({"url": "https://x.example/"}))
            .await,
        api.list("").await,
        api.visits(&code, "").await,
        nobody.create(&json!({"url": "https://b.example/"})).await,
        nobody.get(&code).await,
    ] {
        let problem = answer.expect(StatusCode::UNAUTHORIZED);
        assert!(problem["detail"].as_str().unwrap().contains("X-API-Key"));
    }
    // 403: a key without the scope.
    let problem = reader
        .create(&json!({"url": "https://r.example/"}))
        .await
        .expect(StatusCode::FORBIDDEN);
    assert!(
        problem["detail"].as_str().unwrap().contains("`create`"),
        "{problem}"
    );
    assert_eq!(reader.delete(&code).await.status, StatusCode::FORBIDDEN);
    // 404: another owner's link looks like no link at all, to every operation.
    for answer in [
        bob.get(&code).await,
        bob.delete(&code).await,
        bob.patch(&code, &json!({"url": "https://bob.example/"}))
            .await,
        bob.visits(&code, "").await,
        api.get(&code).await,
    ] {
        answer.expect(StatusCode::NOT_FOUND);
    }
    let page = bob.list("").await;
    assert_eq!(
        (page.status, page.body["items"].as_array().unwrap().len()),
        (StatusCode::OK, 0)
    );
    // The owner and an admin reach it.
    let fetched = alice.get(&code).await;
    assert_eq!(
        (fetched.status, fetched.body["code"].as_str()),
        (StatusCode::OK, Some(code.as_str()))
    );
    let page = root.list("").await;
    assert_eq!(
        (page.status, page.body["items"].as_array().unwrap().len()),
        (StatusCode::OK, 1)
    );
    assert_eq!(root.delete(&code).await.status, StatusCode::NO_CONTENT);
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_listing_walk_neither_repeats_nor_skips_while_links_are_created() {
    let app = spawn_in_process(&config());
    let api = Api::of(&app);
    let alice = as_key(&api, "alice");
    let mut before = HashSet::new();
    for i in 0..25 {
        let link = alice
            .create(&json!({"url": format!("https://walk.example/{i}")}))
            .await
            .expect(StatusCode::CREATED);
        before.insert(link["code"].as_str().unwrap().to_owned());
    }
    // Someone else's link never shows.
    (as_key(&api, "bob"))
        .create(&json!({"url": "https://bob.example/"}))
        .await;

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    let mut created_during = 0;
    loop {
        let query = match &cursor {
            // Cursors are made of digits, a dot and a code: nothing to escape.
            Some(cursor) => format!("limit=10&cursor={cursor}"),
            None => "limit=10".to_owned(),
        };
        let page = alice.list(&query).await.expect(StatusCode::OK);
        pages += 1;
        for item in page["items"].as_array().unwrap() {
            seen.push(item["code"].as_str().unwrap().to_owned());
            assert!(item["visits"].is_u64());
        }
        // Five new links after each of the first two pages.
        if created_during < 10 {
            for i in 0..5 {
                alice
                    .create(&json!({"url": format!("https://during.example/{pages}/{i}")}))
                    .await;
                created_during += 1;
            }
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let unique: HashSet<_> = seen.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        seen.len(),
        "a link was listed twice: {seen:?}"
    );
    assert!(before.is_subset(&unique), "a link that existed was skipped");
    assert_eq!(pages, 3);

    // q filters by code or URL; a forged cursor is a 400 naming it.
    let page = alice.list("q=DURING.example/1/").await;
    assert_eq!(
        (page.status, page.body["items"].as_array().unwrap().len()),
        (StatusCode::OK, 5)
    );
    let answer = alice.list("cursor=nope").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let problem = answer.body;
    assert!(
        problem["detail"].as_str().unwrap().starts_with("cursor:"),
        "{problem}"
    );
    let answer = alice.list("limit=101").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let problem = answer.body;
    assert!(
        problem["detail"].as_str().unwrap().starts_with("limit:"),
        "{problem}"
    );
}

#[tokio::test]
async fn patch_is_a_merge_patch_under_the_create_rules() {
    let app = spawn_in_process(&config());
    let http = client();
    let alice = as_key(&Api::of(&app), "alice");
    let body = json!({"url": "https://typo.exmaple/", "max_visits": 5, "expires_at": "2099-01-01T00:00:00Z"});
    let link = alice.create(&body).await.body;
    let code = link["code"].as_str().unwrap();
    let merge_patch = (alice.request(Method::PATCH, &format!("/links/{code}")))
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"url": "https://typo.example/", "max_visits": null}"#);
    let edited = alice.send(merge_patch).await.expect(StatusCode::OK);
    assert_eq!(edited["url"], "https://typo.example/");
    assert!(edited.get("max_visits").is_none(), "{edited}");
    assert_eq!(edited["expires_at"], "2099-01-01T00:00:00Z");
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.headers()["location"], "https://typo.example/");

    for (body, field) in [
        (json!({"url": null}), "url:"),
        (json!({"url": "ftp://x/"}), "url:"),
        (json!({"expires_at": "2001-01-01T00:00:00Z"}), "expires_at:"),
        (json!({"max_visits": 0}), "max_visits:"),
        (json!({"nickname": "x"}), "nickname:"),
    ] {
        let answer = alice.patch(code, &body).await;
        let problem = answer.body;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}: {problem}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.starts_with(field), "{body}: {detail}");
    }
    (alice.patch(code, &json!({"alias": "new"})).await).expect(StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn visits_are_kept_per_day_with_bots_apart() {
    let app = spawn_in_process(&config());
    let http = client();
    let alice = as_key(&Api::of(&app), "alice");
    let link = alice
        .create(&json!({"url": "https://stats.example/", "max_visits": 3}))
        .await
        .body;
    let code = link["code"].as_str().unwrap();
    let follow = |user_agent: &'static str| {
        http.get(app.url(&format!("/{code}")))
            .header("user-agent", user_agent)
            .send()
    };
    let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    let googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    for user_agent in [firefox, googlebot, firefox, googlebot, googlebot] {
        assert_eq!(
            follow(user_agent).await.unwrap().status(),
            StatusCode::FOUND
        );
    }
    // Bots never use up max_visits: one visit by a person is left.
    assert_eq!(follow(firefox).await.unwrap().status(), StatusCode::FOUND);
    assert_eq!(follow(firefox).await.unwrap().status(), StatusCode::GONE);

    let today = time::OffsetDateTime::now_utc().date().to_string();
    // The visit flush runs every second.
    let mut last = Value::Null;
    for _ in 0..100 {
        let body = alice.visits(code, "").await.expect(StatusCode::OK);
        let day = body["days"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(day["date"], today.as_str());
        if day["visits"] == 3 && day["bots"] == 3 {
            assert_eq!(body["days"].as_array().unwrap().len(), 30);
            let answer = alice.visits(code, "from=2026-13-01").await;
            assert_eq!(answer.status, StatusCode::BAD_REQUEST);
            let problem = answer.body;
            assert!(problem["detail"].as_str().unwrap().starts_with("from:"));
            return;
        }
        last = day;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the visits were not flushed within 10 s: {last}");
}
