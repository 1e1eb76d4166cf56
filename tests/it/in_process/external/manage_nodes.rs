//! Link management that must hold across nodes and requests: edits seen by every node,
//! idempotent creates, bulk creates charged in one decision; plus QR codes.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::{
    Api, InProcessApp, RedisServer, TestConfig, TestDatabase, client, spawn_in_process,
};

use crate::support::{secret, shared_node};

fn start_nodes(count: usize, config: &TestConfig) -> Vec<InProcessApp> {
    (0..count).map(|_| spawn_in_process(config)).collect()
}

pub(crate) async fn location(http: &reqwest::Client, node: &InProcessApp, code: &str) -> String {
    let response = http
        .get(node.url(&format!("/{code}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FOUND);
    response.headers()["location"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_edit_on_one_node_is_served_by_every_node() {
    let database = TestDatabase::create();
    let redis = RedisServer::start_private();
    let nodes = start_nodes(3, &shared_node(database.url(), redis.url()));
    let http = client();
    let created = nodes[0]
        .create(&http, json!({"url": "https://old.example/"}))
        .await;
    let code = created["code"].as_str().unwrap();
    // A create without a key is nobody's: give the edit a link alice owns.
    let alice = |node: &InProcessApp| Api::of(node).with_key(&secret("alice"));
    let owned = json!({"url": "https://old.example/"});
    let owned = alice(&nodes[0]).create(&owned).await.body;
    let owned = owned["code"].as_str().unwrap();
    for node in &nodes {
        // Cached on every node now.
        assert_eq!(location(&http, node, owned).await, "https://old.example/");
        assert_eq!(location(&http, node, code).await, "https://old.example/");
    }
    for (round, target) in ["https://new.example/1", "https://new.example/2"]
        .into_iter()
        .enumerate()
    {
        let editor = alice(&nodes[round % nodes.len()]);
        let edit = editor.patch(owned, &json!({"url": target})).await;
        assert_eq!(edit.status, StatusCode::OK);
        let edited = Instant::now();
        for node in &nodes {
            // The cache would keep the old target for an hour; only the invalidation
            // message makes the new one appear. The bound leaves room for a loaded
            // machine; the figure is printed.
            loop {
                if location(&http, node, owned).await == target {
                    break;
                }
                assert!(
                    edited.elapsed() < Duration::from_secs(1),
                    "node {} still serves the old target",
                    node.base
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        eprintln!("edit seen by every node after {:?}", edited.elapsed());
    }
    // A delete goes the same way.
    let answer = alice(&nodes[1]).delete(owned).await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT);
    let deleted = Instant::now();
    for node in &nodes {
        loop {
            let status = http
                .get(node.url(&format!("/{owned}")))
                .send()
                .await
                .unwrap()
                .status();
            if status == StatusCode::NOT_FOUND {
                break;
            }
            assert!(deleted.elapsed() < Duration::from_secs(1));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    // The untouched link stayed cached and correct everywhere.
    for node in &nodes {
        assert_eq!(location(&http, node, code).await, "https://old.example/");
    }
}

#[tokio::test]
async fn one_idempotency_key_makes_one_link_across_nodes() {
    let database = TestDatabase::create();
    let redis = RedisServer::start_private();
    let nodes = start_nodes(3, &shared_node(database.url(), redis.url()));
    let alice: Vec<Api> = (nodes.iter())
        .map(|node| Api::of(node).with_key(&secret("alice")))
        .collect();
    let body = json!({"url": "https://once.example/"});
    // A create on `api` with `Idempotency-Key: "order-42"`.
    let once = |api: &Api, body: &Value| {
        (api.request(Method::POST, "/links"))
            .header("idempotency-key", "\"order-42\"")
            .json(body)
    };
    let attempts: Vec<_> = (0..20)
        .map(|i| {
            let api = alice[i % nodes.len()].clone();
            let request = once(&api, &body);
            tokio::spawn(async move {
                let answer = api.send(request).await;
                (answer.status, answer.body)
            })
        })
        .collect();
    let mut codes = std::collections::HashSet::new();
    for attempt in attempts {
        let (status, answer) = attempt.await.unwrap();
        match status {
            StatusCode::CREATED => {
                codes.insert(answer["code"].as_str().unwrap().to_owned());
            }
            StatusCode::CONFLICT => {
                assert!(
                    answer["detail"]
                        .as_str()
                        .unwrap()
                        .contains("Idempotency-Key")
                );
            }
            other => panic!("{other}: {answer}"),
        }
    }
    assert_eq!(codes.len(), 1, "every 201 is the same link: {codes:?}");
    // Later retries replay the answer, on any node; another body is 422.
    for api in &alice {
        let replayed = api.send(once(api, &body)).await;
        let replayed = replayed.expect(StatusCode::CREATED);
        assert!(codes.contains(replayed["code"].as_str().unwrap()));
    }
    let other = once(&alice[0], &json!({"url": "https://other.example/"}));
    let other = alice[0].send(other).await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    let page = alice[2].list("").await.body;
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
}

#[tokio::test]
async fn a_bulk_create_takes_one_token_per_link_in_one_decision() {
    let config = TestConfig::default()
        .in_memory()
        .with(|c| c.server.max_body_bytes = 1_048_576)
        .policy("create", 1005, 0.001);
    let app = spawn_in_process(&config);
    let (http, api) = (client(), Api::of(&app));
    let mut links: Vec<Value> = (0..1000)
        .map(|i| json!({"url": format!("https://bulk.example/{i}")}))
        .collect();
    links[7] = json!({"url": "not a url"});
    links[8] = json!({"url": "https://bulk.example/8", "alias": "x"});
    let answer = api.create_bulk(&json!({"links": links})).await;
    assert_eq!(answer.status, StatusCode::OK);
    let ratelimit = answer.header("ratelimit");
    assert!(
        ratelimit.contains(";r=5;"),
        "1000 tokens of 1005 taken: {ratelimit}"
    );
    let answer = answer.body;
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results.len(), 1000);
    assert_eq!(results[0]["status"], 201);
    assert_eq!(results[0]["link"]["url"], "https://bulk.example/0");
    assert_eq!(results[7]["status"], 400);
    assert!(
        results[7]["problem"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("links[7].url:")
    );
    assert!(
        results[8]["problem"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("links[8].alias:")
    );
    assert_eq!(results.iter().filter(|r| r["status"] == 201).count(), 998);

    // Six links need six tokens: refused whole, nothing created.
    let six: Vec<Value> = (0..6)
        .map(|i| json!({"url": format!("https://six.example/{i}")}))
        .collect();
    let refused = api.create_bulk(&json!({"links": six})).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    // 1001 links are refused for their number, naming the field.
    let many: Vec<Value> = (0..1001)
        .map(|i| json!({"url": format!("https://m.example/{i}")}))
        .collect();
    let refused = api.create_bulk(&json!({"links": many})).await;
    let problem = refused.expect(StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        problem["detail"].as_str().unwrap().starts_with("links:"),
        "{problem}"
    );
    // Five tokens are left for five single creates.
    for i in 0..5 {
        app.create(&http, json!({"url": format!("https://five.example/{i}")}))
            .await;
    }
}

#[tokio::test]
async fn qr_codes_read_back_as_the_short_url() {
    let app = spawn_in_process(&TestConfig::default());
    let (http, api) = (client(), Api::of(&app));
    let link = app
        .create(&http, json!({"url": "https://qr.example/"}))
        .await;
    let code = link["code"].as_str().unwrap();
    // An image is not JSON: its answers are read from the response itself.
    let qr = |query: &str| api.request(Method::GET, &format!("/links/{code}/qr{query}"));
    let response = qr("?format=png&size=300").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "image/png");
    let bytes = response.bytes().await.unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes.to_vec()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let (width, height) = (frame.width as usize, frame.height as usize);
    assert!(width <= 300 && width > 150, "{width}");
    let mut image =
        rqrr::PreparedImage::prepare_from_greyscale(width, height, |x, y| pixels[y * width + x]);
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1);
    let (_, content) = grids[0].decode().unwrap();
    assert_eq!(content, link["short_url"].as_str().unwrap());

    let response = qr("").send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "image/svg+xml");
    assert!(response.text().await.unwrap().contains("<svg"));
    let gif = api.send(qr("?format=gif")).await;
    let problem = gif.expect(StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"].as_str().unwrap().starts_with("format:"),
        "{problem}"
    );
}
