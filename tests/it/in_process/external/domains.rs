//! Domains: one node serving two hosts, codes unique per domain, each domain's `/`,
//! unknown codes and `/robots.txt`; and an edit on one domain reaching the other nodes'
//! caches for that domain only.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::HOST;
use serde_json::{Value, json};
use shortener_tests::config::DomainConfig;
use shortener_tests::{Api, RedisServer, TestConfig, TestDatabase, client, spawn_in_process};

use crate::support::{Keys as _, secret, shared_node};

fn config() -> TestConfig {
    TestConfig::default()
        .with(|c| {
            c.server.public_url = "https://s.example.com".into();
            c.domains.push(DomainConfig {
                host: "go.example.org".into(),
                root_redirect: Some("https://www.example.org/".into()),
                not_found_url: Some("https://www.example.org/missing".into()),
            });
        })
        .keys(&[("alice", "create,read,update,delete")])
}

/// The answer to `GET path` on `host`: its status and `Location`.
async fn visit(http: &reqwest::Client, base: &str, host: &str, path: &str) -> (u16, String) {
    let response = (http.get(format!("{base}{path}")).header(HOST, host))
        .send()
        .await
        .unwrap();
    let location = (response.headers().get("location"))
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (response.status().as_u16(), location)
}

#[tokio::test]
async fn one_code_on_two_domains_leads_to_two_targets() {
    let app = spawn_in_process(&config());
    let (http, base) = (client(), app.base.as_str());
    let alice = Api::of(&app).with_key(&secret("alice"));
    let plain = json!({"url": "https://a.example/", "alias": "launch"});
    let plain = alice.create(&plain).await.expect(StatusCode::CREATED);
    assert_eq!(plain["domain"], "s.example.com");
    assert_eq!(plain["short_url"], "https://s.example.com/launch");
    let on_go = json!({"url": "https://b.example/", "alias": "launch", "domain": "GO.example.org"});
    let go = alice.create(&on_go).await.expect(StatusCode::CREATED);
    assert_eq!(go["domain"], "go.example.org");
    assert_eq!(go["short_url"], "https://go.example.org/launch");
    assert_eq!(
        alice.create(&on_go).await.status,
        StatusCode::CONFLICT,
        "taken on its domain"
    );
    let elsewhere = json!({"url": "https://c.example/", "domain": "elsewhere.example"});
    let problem = alice
        .create(&elsewhere)
        .await
        .expect(StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"].as_str().unwrap().starts_with("domain"),
        "{problem}"
    );
    let own = json!({"url": "https://go.example.org/loop"});
    assert_eq!(
        alice.create(&own).await.status,
        StatusCode::BAD_REQUEST,
        "a served domain is the service's own"
    );

    let listed = alice.domains().await.body;
    assert_eq!(
        listed,
        json!({"domains": [
            {"host": "s.example.com", "default": true, "root_redirect": null, "not_found_url": null},
            {"host": "go.example.org", "default": false,
             "root_redirect": "https://www.example.org/",
             "not_found_url": "https://www.example.org/missing"}]})
    );

    // The request's host picks the domain; a host this node does not serve is 404.
    let redirect = |host: &'static str, path: &'static str| visit(&http, base, host, path);
    assert_eq!(
        redirect("s.example.com", "/launch").await,
        (302, "https://a.example/".into())
    );
    assert_eq!(
        redirect("go.example.org", "/launch").await,
        (302, "https://b.example/".into())
    );
    assert_eq!(
        redirect("Go.Example.org:443", "/launch").await.1,
        "https://b.example/"
    );
    assert_eq!(redirect("unknown.example", "/launch").await.0, 404);

    // Each domain's unknown codes and `/`: its own setting, or the service's default.
    let missing = (302, "https://www.example.org/missing".to_owned());
    assert_eq!(redirect("go.example.org", "/nope").await, missing);
    assert_eq!(redirect("s.example.com", "/nope").await.0, 404);
    assert_eq!(
        redirect("go.example.org", "/").await,
        (302, "https://www.example.org/".into())
    );
    assert_eq!(redirect("s.example.com", "/").await.0, 200, "the page");

    // The API names the domain by `domain`; without it, the default domain.
    // (`get` takes the code and its query: `launch?domain=...`.)
    assert_eq!(alice.get("launch").await.body["url"], "https://a.example/");
    assert_eq!(
        alice.get("launch?domain=go.example.org").await.body["url"],
        "https://b.example/"
    );
    assert_eq!(
        alice.get("launch?domain=s.example.com").await.body["url"],
        "https://a.example/"
    );
    assert_eq!(
        alice.get("launch?domain=not%20a%20host").await.status,
        StatusCode::BAD_REQUEST
    );
    let page = alice.list("domain=go.example.org").await.body;
    let listed: Vec<&Value> = page["items"].as_array().unwrap().iter().collect();
    assert_eq!(listed.len(), 1, "{page}");
    assert_eq!(listed[0]["domain"], "go.example.org");
    let all = alice.list("limit=1").await.body;
    let cursor = all["next_cursor"].as_str().unwrap();
    let rest = alice.list(&format!("limit=1&cursor={cursor}")).await;
    let rest = rest.expect(StatusCode::OK);
    assert_ne!(
        rest["items"][0]["domain"], all["items"][0]["domain"],
        "the walk goes on"
    );

    // An edit and a delete stay on their domain.
    let edit = json!({"url": "https://edited.example/"});
    let answer = alice.patch("launch?domain=go.example.org", &edit).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        redirect("go.example.org", "/launch").await.1,
        "https://edited.example/"
    );
    assert_eq!(
        redirect("s.example.com", "/launch").await.1,
        "https://a.example/"
    );

    // `/robots.txt` lets crawlers follow each domain's own crawlable links.
    let open = json!({"url": "https://d.example/", "alias": "open", "domain": "go.example.org",
                      "crawlable": true});
    assert_eq!(alice.create(&open).await.status, StatusCode::CREATED);
    let robots = |host: &'static str| {
        let request = http.get(app.url("/robots.txt")).header(HOST, host);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    assert!(robots("go.example.org").await.contains("Allow: /open$"));
    assert!(!robots("s.example.com").await.contains("/open"));

    let answer = alice.delete("launch?domain=go.example.org").await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT);
    assert_eq!(redirect("go.example.org", "/launch").await, missing);
    assert_eq!(
        redirect("s.example.com", "/launch").await.1,
        "https://a.example/"
    );
}

/// Two nodes (in this process) on one PostgreSQL and Redis, caching for an hour: an edit of a code on one
/// domain reaches the other node's cache for that domain, and the same code on the other
/// domain keeps its target there.
#[tokio::test]
async fn an_edit_on_one_domain_reaches_other_nodes_for_that_domain_only() {
    let database = TestDatabase::create();
    let redis = RedisServer::start_private();
    let config = shared_node(database.url(), redis.url()).with(|c| {
        c.domains.push(DomainConfig {
            host: "go.example.org".into(),
            ..DomainConfig::default()
        });
    });
    let nodes = [spawn_in_process(&config), spawn_in_process(&config)];
    let http = client();
    let alice = Api::of(&nodes[0]).with_key(&secret("alice"));
    for (domain, url) in [
        (None, "https://a.example/"),
        (Some("go.example.org"), "https://b.example/"),
    ] {
        let body = json!({"url": url, "alias": "same", "domain": domain});
        assert_eq!(alice.create(&body).await.status, StatusCode::CREATED);
    }
    // The default host is the default public_url's: 127.0.0.1:8080.
    let at = |node: usize, host: &'static str| visit(&http, &nodes[node].base, host, "/same");
    for node in 0..2 {
        assert_eq!(
            at(node, "127.0.0.1:8080").await.1,
            "https://a.example/",
            "cached"
        );
        assert_eq!(
            at(node, "go.example.org").await.1,
            "https://b.example/",
            "cached"
        );
    }
    let edit = json!({"url": "https://edited.example/"});
    let answer = alice.patch("same?domain=go.example.org", &edit).await;
    assert_eq!(answer.status, StatusCode::OK);
    let edited = Instant::now();
    while at(1, "go.example.org").await.1 != "https://edited.example/" {
        assert!(
            edited.elapsed() < Duration::from_secs(2),
            "node 1 serves the old target"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(at(1, "127.0.0.1:8080").await.1, "https://a.example/");
}
