//! Each link's own redirect options through the API: its status and query forwarding
//! over the service's defaults, the `expired_url` a link sends to once used up or
//! expired, titles in listings and searches, `crawlable` links in `/robots.txt`, and the
//! refusals that name the field.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::{Api, Served, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, secret};

fn config() -> TestConfig {
    TestConfig::default()
        .with(|c| c.links.forward_query = true)
        .keys(&[("root", "admin")])
}

/// The API of `app` with the admin key.
fn admin(app: &impl Served) -> Api {
    Api::of(app).with_key(&secret("root"))
}

/// `(status, Location, Cache-Control)` of a GET of `url`.
async fn follow(http: &reqwest::Client, url: String) -> (u16, String, String) {
    let response = http.get(url).send().await.unwrap();
    let header = |name: &str| {
        let value = response.headers().get(name);
        value.map_or(String::new(), |value| value.to_str().unwrap().to_owned())
    };
    let (location, cache) = (header("location"), header("cache-control"));
    (response.status().as_u16(), location, cache)
}

#[tokio::test]
async fn a_link_s_own_status_and_query_forwarding_win_over_the_service_s() {
    let app = spawn_in_process(&config());
    let http = client();
    let body = json!({
        "url": "https://example.com/p?a=1",
        "redirect_status": 308,
        "forward_query": false,
        "title": "Spring launch",
    });
    let link = app.create(&http, body).await;
    assert_eq!(link["redirect_status"], 308);
    assert_eq!(link["forward_query"], false);
    assert_eq!(link["title"], "Spring launch");
    assert_eq!(link["crawlable"], false);
    let code = link["code"].as_str().unwrap();
    let visit = app.url(&format!("/{code}?a=2"));
    let (status, location, _) = follow(&http, visit.clone()).await;
    assert_eq!(status, 308, "the link's status");
    assert_eq!(
        location, "https://example.com/p?a=1",
        "the query is not forwarded"
    );

    // Cleared, both follow the service again: 302 and the query forwarded.
    let clear = json!({"redirect_status": null, "forward_query": null});
    let edited = admin(&app).patch(code, &clear).await.expect(StatusCode::OK);
    assert!(edited.get("redirect_status").is_none(), "{edited}");
    assert_eq!(edited["title"], "Spring launch", "an absent field stays");
    let (status, location, _) = follow(&http, visit).await;
    assert_eq!(
        (status, location.as_str()),
        (302, "https://example.com/p?a=2")
    );
}

#[tokio::test]
async fn an_ended_link_sends_to_its_expired_url_and_others_answer_410() {
    let app = spawn_in_process(&config());
    let http = client();
    let body = json!({"url": "https://example.com/offer", "max_visits": 1,
                      "expired_url": "https://example.com/offer-ended"});
    let link = app.create(&http, body).await;
    let visit = app.url(&format!("/{}", link["code"].as_str().unwrap()));
    let (status, location, _) = follow(&http, visit.clone()).await;
    assert_eq!(
        (status, location.as_str()),
        (302, "https://example.com/offer")
    );
    for _ in 0..2 {
        let (status, location, cache) = follow(&http, visit.clone()).await;
        assert_eq!(status, 302);
        assert_eq!(location, "https://example.com/offer-ended");
        assert_eq!(cache, "no-store", "an edit can bring the link back");
    }
    let head = http.head(&visit).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::FOUND);

    let body = json!({"url": "https://example.com/offer", "max_visits": 1});
    let plain = app.create(&http, body).await;
    let visit = app.url(&format!("/{}", plain["code"].as_str().unwrap()));
    assert_eq!(follow(&http, visit.clone()).await.0, 302);
    assert_eq!(follow(&http, visit).await.0, 410);
}

#[tokio::test]
async fn titles_list_and_match_searches_and_crawlable_links_reach_robots_txt() {
    let app = spawn_in_process(&config());
    let http = client();
    let admin = admin(&app);
    let body =
        json!({"url": "https://example.com/r", "title": "Quarterly Report", "crawlable": true});
    let titled = admin.create(&body).await;
    assert_eq!(titled.status, StatusCode::CREATED);
    let titled = titled.body;
    let other = admin
        .create(&json!({"url": "https://example.com/x"}))
        .await
        .body;
    let page = admin.list("q=RTERLY").await;
    assert_eq!(page.status, StatusCode::OK);
    let page = page.body;
    let found: Vec<&Value> = page["items"].as_array().unwrap().iter().collect();
    assert_eq!(found.len(), 1, "{page}");
    assert_eq!(found[0]["title"], "Quarterly Report");

    let robots = http.get(app.url("/robots.txt")).send().await.unwrap();
    let robots = robots.text().await.unwrap();
    let code = titled["code"].as_str().unwrap();
    assert_eq!(
        robots,
        format!("User-agent: *\nAllow: /{code}$\nDisallow: /\n")
    );
    let other = other["code"].as_str().unwrap();
    assert!(!robots.contains(other));

    // No longer crawlable (`null` is the default, false): off the list.
    let edited = admin.patch(code, &json!({"crawlable": null})).await;
    assert_eq!(edited.status, StatusCode::OK);
    let robots = http.get(app.url("/robots.txt")).send().await.unwrap();
    assert_eq!(robots.text().await.unwrap(), "User-agent: *\nDisallow: /\n");
}

#[tokio::test]
async fn bad_options_are_refused_naming_the_field() {
    let app = spawn_in_process(&config());
    let http = client();
    let api = Api::of(&app);
    let long_title = "x".repeat(513);
    for (field, value) in [
        ("redirect_status", json!(303)),
        ("redirect_status", json!("301")),
        ("forward_query", json!("yes")),
        ("expired_url", json!("ftp://example.com/")),
        ("expired_url", json!(7)),
        ("title", json!(long_title)),
        ("title", json!("two\nlines")),
        ("crawlable", json!(1)),
    ] {
        let body = json!({"url": "https://example.com/", field: value});
        let answer = api.create(&body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{field} = {value}");
        let detail = answer.body["detail"].as_str().unwrap();
        assert!(detail.starts_with(&format!("{field}: ")), "{detail}");
    }
    let link = app
        .create(&http, json!({"url": "https://example.com/"}))
        .await;
    let code = link["code"].as_str().unwrap();
    let answer = (admin(&app))
        .patch(code, &json!({"redirect_status": 200}))
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let problem = answer.body;
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("redirect_status: ")
    );
}
