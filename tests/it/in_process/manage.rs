//! Link management through the API: keys with scopes and owners, listings, edits,
//! look-ups that respect the link, HEAD, and visits per day.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{client, spawn_in_process};

use crate::support::{keys_config, secret};

fn config(extra: &str) -> String {
    format!(
        r#"
[server]
bind = "127.0.0.1:0"
[storage]
kind = "sqlite"
url = "sqlite://shortener.db"
{extra}
{}
"#,
        keys_config(&[
            ("alice", "create,read,update,delete"),
            ("bob", "create,read,update,delete"),
            ("reader", "read"),
            ("root", "admin"),
        ])
    )
}

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

fn with_key(request: reqwest::RequestBuilder, name: &str) -> reqwest::RequestBuilder {
    request.header("x-api-key", secret(name))
}

#[tokio::test]
async fn keys_reach_their_own_links_and_scopes_are_enforced() {
    let app = spawn_in_process(&config(""));
    let http = client();
    let links = app.url("/api/v1/links");
    let (status, link) =
        send(with_key(http.post(&links), "alice").json(&json!({"url": "https://a.example/"})))
            .await;
    assert_eq!(status, StatusCode::CREATED);
    let code = link["code"].as_str().unwrap().to_owned();
    let one = app.url(&format!("/api/v1/links/{code}"));

    // 401: no key where one is needed, or an unknown key anywhere.
    for request in [
        http.delete(&one),
        http.patch(&one).json(&json!({"url": "https://x.example/"})),
        http.get(&links),
        http.get(app.url(&format!("/api/v1/links/{code}/visits"))),
        http.post(&links)
            .header("x-api-key", "nobody")
            .json(&json!({"url": "https://b.example/"})),
        http.get(&one).header("x-api-key", "nobody"),
    ] {
        let (status, problem) = send(request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{problem}");
        assert!(problem["detail"].as_str().unwrap().contains("X-API-Key"));
    }
    // 403: a key without the scope.
    let (status, problem) =
        send(with_key(http.post(&links), "reader").json(&json!({"url": "https://r.example/"})))
            .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(
        problem["detail"].as_str().unwrap().contains("`create`"),
        "{problem}"
    );
    let (status, _) = send(with_key(http.delete(&one), "reader")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // 404: another owner's link looks like no link at all, to every operation.
    for request in [
        with_key(http.get(&one), "bob"),
        with_key(http.delete(&one), "bob"),
        with_key(http.patch(&one), "bob").json(&json!({"url": "https://bob.example/"})),
        with_key(
            http.get(app.url(&format!("/api/v1/links/{code}/visits"))),
            "bob",
        ),
        http.get(&one),
    ] {
        let (status, problem) = send(request).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{problem}");
    }
    let (status, page) = send(with_key(http.get(&links), "bob")).await;
    assert_eq!(
        (status, page["items"].as_array().unwrap().len()),
        (StatusCode::OK, 0)
    );
    // The owner and an admin reach it.
    let (status, fetched) = send(with_key(http.get(&one), "alice")).await;
    assert_eq!(
        (status, fetched["code"].as_str()),
        (StatusCode::OK, Some(code.as_str()))
    );
    let (status, page) = send(with_key(http.get(&links), "root")).await;
    assert_eq!(
        (status, page["items"].as_array().unwrap().len()),
        (StatusCode::OK, 1)
    );
    let (status, _) = send(with_key(http.delete(&one), "root")).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_listing_walk_neither_repeats_nor_skips_while_links_are_created() {
    let app = spawn_in_process(&config(""));
    let http = client();
    let links = app.url("/api/v1/links");
    let mut before = HashSet::new();
    for i in 0..25 {
        let (status, link) = send(
            with_key(http.post(&links), "alice")
                .json(&json!({"url": format!("https://walk.example/{i}")})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED);
        before.insert(link["code"].as_str().unwrap().to_owned());
    }
    // Someone else's link never shows.
    send(with_key(http.post(&links), "bob").json(&json!({"url": "https://bob.example/"}))).await;

    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    let mut created_during = 0;
    loop {
        let url = match &cursor {
            // Cursors are made of digits, a dot and a code: nothing to escape.
            Some(cursor) => format!("{links}?limit=10&cursor={cursor}"),
            None => format!("{links}?limit=10"),
        };
        let request = with_key(http.get(url), "alice");
        let (status, page) = send(request).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        pages += 1;
        for item in page["items"].as_array().unwrap() {
            seen.push(item["code"].as_str().unwrap().to_owned());
            assert!(item["visits"].is_u64());
        }
        // Five new links after each of the first two pages.
        if created_during < 10 {
            for i in 0..5 {
                send(
                    with_key(http.post(&links), "alice")
                        .json(&json!({"url": format!("https://during.example/{pages}/{i}")})),
                )
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
    let (status, page) = send(with_key(
        http.get(format!("{links}?q=DURING.example/1/")),
        "alice",
    ))
    .await;
    assert_eq!(
        (status, page["items"].as_array().unwrap().len()),
        (StatusCode::OK, 5)
    );
    let (status, problem) = send(with_key(http.get(format!("{links}?cursor=nope")), "alice")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"].as_str().unwrap().starts_with("cursor:"),
        "{problem}"
    );
    let (status, problem) = send(with_key(http.get(format!("{links}?limit=101")), "alice")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"].as_str().unwrap().starts_with("limit:"),
        "{problem}"
    );
}

#[tokio::test]
async fn patch_is_a_merge_patch_under_the_create_rules() {
    let app = spawn_in_process(&config(""));
    let http = client();
    let (_, link) = send(with_key(http.post(app.url("/api/v1/links")), "alice").json(
        &json!({"url": "https://typo.exmaple/", "max_visits": 5, "expires_at": "2099-01-01T00:00:00Z"}),
    ))
    .await;
    let code = link["code"].as_str().unwrap();
    let one = app.url(&format!("/api/v1/links/{code}"));
    let (status, edited) = send(
        with_key(http.patch(&one), "alice")
            .header("content-type", "application/merge-patch+json")
            .body(r#"{"url": "https://typo.example/", "max_visits": null}"#),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
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
        let (status, problem) = send(with_key(http.patch(&one), "alice").json(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {problem}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(detail.starts_with(field), "{body}: {detail}");
    }
    let (status, problem) =
        send(with_key(http.patch(&one), "alice").json(&json!({"alias": "new"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
}

#[tokio::test]
async fn visits_are_kept_per_day_with_bots_apart() {
    let app = spawn_in_process(&config(""));
    let http = client();
    let (_, link) = send(
        with_key(http.post(app.url("/api/v1/links")), "alice")
            .json(&json!({"url": "https://stats.example/", "max_visits": 3})),
    )
    .await;
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
    let visits = app.url(&format!("/api/v1/links/{code}/visits"));
    // The visit flush runs every second.
    let mut last = Value::Null;
    for _ in 0..100 {
        let (status, body) = send(with_key(http.get(&visits), "alice")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let day = body["days"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(day["date"], today.as_str());
        if day["visits"] == 3 && day["bots"] == 3 {
            assert_eq!(body["days"].as_array().unwrap().len(), 30);
            let (status, problem) = send(with_key(
                http.get(format!("{visits}?from=2026-13-01")),
                "alice",
            ))
            .await;
            assert_eq!(status, StatusCode::BAD_REQUEST);
            assert!(problem["detail"].as_str().unwrap().starts_with("from:"));
            return;
        }
        last = day;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the visits were not flushed within 10 s: {last}");
}
