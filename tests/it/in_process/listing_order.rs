//! A key's links listed most visited first: pages counted from the top with their own
//! cursor, ties newest first, and a cursor of one order refused in the other.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, secret};

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

#[tokio::test]
async fn links_are_listed_most_visited_first_page_by_page() {
    let config = TestConfig::default().keys(&[("alice", "create,read")]);
    let app = spawn_in_process(&config);
    let http = client();
    let alice = Api::of(&app).with_key(&secret("alice"));
    // Created oldest first; visited 1, 3, 0, 3 and 2 times.
    let mut codes = Vec::new();
    for (index, visits) in [1, 3, 0, 3, 2].into_iter().enumerate() {
        let link = alice
            .create(&json!({"url": format!("https://order.example/{index}")}))
            .await
            .expect(StatusCode::CREATED);
        let code = link["code"].as_str().unwrap().to_owned();
        for _ in 0..visits {
            let visit = http
                .get(app.url(&format!("/{code}")))
                .header("user-agent", FIREFOX);
            assert_eq!(visit.send().await.unwrap().status(), StatusCode::FOUND);
        }
        codes.push(code);
    }
    // Most visited first; of the two with 3, the newer (index 3) first.
    let expected: Vec<&str> = [3, 1, 4, 0, 2].iter().map(|&i| codes[i].as_str()).collect();
    // The visit flush runs every second: the order is that of the stored counts.
    let mut last = Vec::new();
    for _ in 0..100 {
        let mut listed = Vec::new();
        let mut cursors = Vec::new();
        let mut query = "order=visits&limit=2".to_owned();
        loop {
            let page = alice.list(&query).await.expect(StatusCode::OK);
            for item in page["items"].as_array().unwrap() {
                listed.push(item["code"].as_str().unwrap().to_owned());
            }
            match page["next_cursor"].as_str() {
                Some(next) => {
                    cursors.push(next.to_owned());
                    query = format!("order=visits&limit=2&cursor={next}");
                }
                None => break,
            }
        }
        if listed == expected {
            assert_eq!(cursors, ["visits.2", "visits.4"]);
            return refusals(&alice).await;
        }
        last = listed;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("listed {last:?}, expected {expected:?}");
}

/// A cursor of one order is refused in the other, and an unknown order by name.
async fn refusals(alice: &Api) {
    let newest = alice.list("limit=1").await;
    assert_eq!(newest.status, StatusCode::OK);
    let created_cursor = newest.body["next_cursor"].as_str().unwrap();
    for query in [
        format!("order=visits&cursor={created_cursor}"),
        "cursor=visits.2".to_owned(),
    ] {
        let answer = alice.list(&query).await;
        let problem = answer.body;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{query}: {problem}");
        let detail = problem["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("cursor: is a cursor of a listing in another order"),
            "{detail}"
        );
    }
    let answer = alice.list("order=popular").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let problem = answer.body;
    assert!(
        problem["detail"].as_str().unwrap().contains("order"),
        "{problem}"
    );
}
