//! Three real `shortener` nodes on one PostgreSQL database (each test has its own,
//! dropped after): links, aliases, visit limits, deletes and restarts stay right across
//! nodes. Sessions killed under load are in `postgres_outages`.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::{
    Api, InProcessApp, TempDir, TestConfig, TestDatabase, client, concurrently, in_parallel,
};

use crate::support::{
    POSTGRES_NODE_CACHE_TTL as CACHE_TTL, POSTGRES_NODE_KEY as API_KEY, postgres_node,
};

pub(crate) const NODES: usize = 3;
/// Added to bounds that timing decides, for a loaded two-core machine; a cache that
/// never expires or a pool that never reconnects is far outside it.
pub(crate) const SLACK: Duration = Duration::from_secs(3);

/// Starts one node per directory, all at once (they migrate the same database
/// concurrently, which the migrator's lock makes safe).
pub(crate) fn start_nodes(dirs: &[TempDir], config: &TestConfig) -> Vec<InProcessApp> {
    in_parallel(dirs.len(), |i| InProcessApp::start(dirs[i].path(), config))
}

pub(crate) fn node_dirs() -> Vec<TempDir> {
    (0..NODES).map(|_| TempDir::new()).collect()
}

pub(crate) fn code_of(link: &Value) -> String {
    link["code"].as_str().expect("a code").to_owned()
}

/// Sends `count` requests built by `request(i)` at once; returns the statuses in order.
async fn send_at_once(
    count: usize,
    request: impl Fn(usize) -> reqwest::RequestBuilder + Sync,
) -> Vec<StatusCode> {
    concurrently(count, |i| {
        let request = request(i);
        async move { request.send().await.unwrap().status() }
    })
    .await
}

fn count(statuses: &[StatusCode], status: StatusCode) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_agree_on_links_aliases_and_visit_limits() {
    let database = TestDatabase::create();
    let dirs = node_dirs();
    let nodes = start_nodes(&dirs, &postgres_node(database.url()));
    let http = client();

    let link = nodes[0]
        .create(&http, json!({"url": "https://example.com/shared"}))
        .await;
    let path = format!("/{}", code_of(&link));
    for node in &nodes[1..] {
        let response = http.get(node.url(&path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::FOUND, "{}", node.base);
        assert_eq!(response.headers()["location"], "https://example.com/shared");
    }

    // One alias, 20 creates at once spread over the nodes, each with its own target.
    let apis: Vec<Api> = nodes.iter().map(Api::of).collect();
    let statuses = send_at_once(20, |i| {
        let body = json!({"url": format!("https://example.com/{i}"), "alias": "one-alias"});
        apis[i % NODES].request(Method::POST, "/links").json(&body)
    })
    .await;
    let winners: Vec<usize> = (0..20)
        .filter(|&i| statuses[i] == StatusCode::CREATED)
        .collect();
    assert_eq!(winners.len(), 1, "one create wins: {statuses:?}");
    assert_eq!(count(&statuses, StatusCode::CONFLICT), 19, "{statuses:?}");
    for node in &nodes {
        let response = http.get(node.url("/one-alias")).send().await.unwrap();
        let winner = format!("https://example.com/{}", winners[0]);
        assert_eq!(
            response.headers()["location"],
            winner.as_str(),
            "{}",
            node.base
        );
    }

    // 200 redirects at once of a link with max_visits = 50, spread over the nodes.
    let limited = nodes[1]
        .create(
            &http,
            json!({"url": "https://example.com/limited", "max_visits": 50}),
        )
        .await;
    let code = code_of(&limited);
    let statuses = send_at_once(200, |i| http.get(nodes[i % NODES].url(&format!("/{code}")))).await;
    assert_eq!(count(&statuses, StatusCode::FOUND), 50, "{statuses:?}");
    assert_eq!(count(&statuses, StatusCode::GONE), 150, "{statuses:?}");
    let stored = database.query(&format!("SELECT visits FROM links WHERE code = '{code}'"));
    assert_eq!(stored.trim(), "50");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_shows_at_once_on_its_node_and_within_the_cache_ttl_on_the_others() {
    let database = TestDatabase::create();
    let dirs = node_dirs();
    let nodes = start_nodes(&dirs, &postgres_node(database.url()));
    let (http, api) = (client(), Api::of(&nodes[0]));
    let ops = api.with_key(API_KEY);
    // Made with the key that deletes it: a key deletes only its own links.
    let link = ops
        .create(&json!({"url": "https://example.com/doomed"}))
        .await;
    let code = code_of(&link.body);
    // Every node has read the link, so every node caches it.
    for node in &nodes {
        let response = http
            .get(node.url(&format!("/{code}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FOUND);
    }

    assert_eq!(ops.delete(&code).await.status, StatusCode::NO_CONTENT);
    let deleted_at = Instant::now();
    let redirect = http
        .get(nodes[0].url(&format!("/{code}")))
        .send()
        .await
        .unwrap();
    assert_eq!(
        redirect.status(),
        StatusCode::NOT_FOUND,
        "at once on the node that deleted"
    );
    assert_eq!(api.get(&code).await.status, StatusCode::NOT_FOUND);

    for node in &nodes[1..] {
        loop {
            let status = http
                .get(node.url(&format!("/{code}")))
                .send()
                .await
                .unwrap()
                .status();
            if status == StatusCode::NOT_FOUND {
                break;
            }
            // Until its cache entry expires, the node may still redirect; nothing else.
            assert_eq!(status, StatusCode::FOUND);
            assert!(
                deleted_at.elapsed() < CACHE_TTL + SLACK,
                "{} still redirects {:?} after the delete",
                node.base,
                deleted_at.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    eprintln!("delete seen by every node after {:?}", deleted_at.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_of_every_node_loses_no_link_and_no_counted_visit() {
    let database = TestDatabase::create();
    let dirs = node_dirs();
    let config = postgres_node(database.url());
    let nodes = start_nodes(&dirs, &config);
    let http = client();

    let mut links = Vec::new();
    for i in 0..30 {
        let url = format!("https://example.com/kept/{i}");
        let link = nodes[i % NODES].create(&http, json!({"url": url})).await;
        links.push((code_of(&link), url));
    }
    let counted = code_of(
        &nodes[0]
            .create(&http, json!({"url": "https://example.com/counted"}))
            .await,
    );
    // Visits right before the stop: most are still in the nodes' memory then.
    let statuses = send_at_once(30, |i| {
        http.get(nodes[i % NODES].url(&format!("/{counted}")))
    })
    .await;
    assert_eq!(count(&statuses, StatusCode::FOUND), 30, "{statuses:?}");
    for node in nodes {
        let base = node.base.clone();
        assert!(node.stop(), "{base} exits gracefully on SIGTERM");
    }

    let nodes = start_nodes(&dirs, &config);
    for (i, (code, url)) in links.iter().enumerate() {
        // Read on another node than the one that created it, through the database.
        let node = Api::of(&nodes[(i + 1) % NODES]);
        let answer = node.get(code).await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "link {code} after the restart"
        );
        assert_eq!(answer.body["url"], url.as_str());
    }
    let link = Api::of(&nodes[1]).get(&counted).await.body;
    assert_eq!(
        link["visits"], 30,
        "every counted visit survives the restart"
    );
}
