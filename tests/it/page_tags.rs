//! Tags on the web page, in a real headless Chromium: a link made with tags shows them
//! in "My links", the filter shows only the links with every tag typed, a tag's button
//! filters by it, and a tag the API refuses is said under the filter.

use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use serde_json::json;
use shortener_testkit::browser::Browser;
use shortener_tests::{BASE_CONFIG, client, spawn_app};

use crate::manage::{keys_config, secret};
use crate::page::{fill, open_options, screenshot, submit, text_when};

/// The texts of the rows of "My links", once there are `count` of them.
async fn rows(page: &Client, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = page.find_all(Locator::Css("#mine-rows tr")).await.unwrap();
        if found.len() == count {
            let mut texts = Vec::new();
            for row in found {
                texts.push(row.text().await.unwrap());
            }
            return texts;
        }
        assert!(
            Instant::now() < deadline,
            "{} rows, not {count}",
            found.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn click(page: &Client, css: &str) {
    page.find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_links_show_their_tags_and_filter_by_them() {
    let app = spawn_app(&format!(
        "{BASE_CONFIG}{}",
        keys_config(&[("alice", "create,read")])
    ));
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    fill(page, "#url", "https://example.com/launch").await;
    open_options(page).await;
    fill(page, "#tags", "Launch, q4").await;
    fill(page, "#api_key", &secret("alice")).await;
    submit(page).await;
    text_when(page, "#short-url", |text| text.starts_with("http")).await;
    let shown = rows(page, 1).await;
    assert!(shown[0].contains("launch q4"), "{shown:?}");

    let other = client()
        .post(app.url("/api/v1/links"))
        .header("x-api-key", secret("alice"))
        .json(&json!({"url": "https://example.com/other", "tags": ["other", "q4"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 201);
    fill(page, "#tag-filter", "LAUNCH").await;
    click(page, "#filter button").await;
    let shown = rows(page, 1).await;
    assert!(shown[0].contains("example.com/launch"), "{shown:?}");
    fill(page, "#tag-filter", "q4").await;
    click(page, "#filter button").await;
    rows(page, 2).await;

    // A tag's button shows the links that have it.
    click(page, "button.tag[aria-label='Show links tagged other']").await;
    let shown = rows(page, 1).await;
    assert!(shown[0].contains("example.com/other"), "{shown:?}");
    screenshot(page, "tags-filtered").await;

    fill(page, "#tag-filter", &"x".repeat(51)).await;
    click(page, "#filter button").await;
    let alert = text_when(page, "#tag-filter-error", |text| !text.is_empty()).await;
    assert!(alert.starts_with("tag:"), "{alert}");
    rows(page, 1).await;
    browser.close().await;
}
