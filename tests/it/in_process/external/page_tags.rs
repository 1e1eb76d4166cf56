//! Tags on the web page, in a real headless Chromium: a link made with tags shows them
//! in "My links", the filter shows only the links with every tag typed, a tag's button
//! filters by it, and a tag the API refuses is said under the filter; and the choice of
//! domain, offered when the service serves more than one.

use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use reqwest::StatusCode;
use serde_json::json;
use shortener_testkit::browser::Browser;
use shortener_tests::config::DomainConfig;
use shortener_tests::{Api, TestConfig, spawn_in_process};

use crate::in_process::external::page::{fill, open_options, screenshot, submit, text_when};
use crate::support::{Keys as _, secret};

/// The texts of the rows of "My links", once there are `count` of them and the first
/// holds `first` (a table being redrawn is read again, not taken half-way).
async fn rows(page: &Client, count: usize, first: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let texts = row_texts(page).await;
        match &texts {
            Some(texts) if texts.len() == count && texts[0].contains(first) => {
                return texts.clone();
            }
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "rows {texts:?}, not {count} starting with {first:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The rows' texts, or `None` when the table changed while it was read.
async fn row_texts(page: &Client) -> Option<Vec<String>> {
    let found = page.find_all(Locator::Css("#mine-rows tr")).await.ok()?;
    let mut texts = Vec::new();
    for row in found {
        texts.push(row.text().await.ok()?);
    }
    Some(texts)
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
    let app = spawn_in_process(&TestConfig::default().keys(&[("alice", "create,read")]));
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    fill(page, "#url", "https://example.com/launch").await;
    open_options(page).await;
    let choice = page.find(Locator::Css("#domain-field")).await.unwrap();
    assert!(
        !choice.is_displayed().await.unwrap(),
        "one domain: no choice"
    );
    fill(page, "#tags", "Launch, q4").await;
    fill(page, "#api_key", &secret("alice")).await;
    submit(page).await;
    text_when(page, "#short-url", |text| text.starts_with("http")).await;
    rows(page, 1, "launch q4").await;

    let alice = Api::of(&app).with_key(&secret("alice"));
    let other = json!({"url": "https://example.com/other", "tags": ["other", "q4"]});
    assert_eq!(alice.create(&other).await.status, 201);
    fill(page, "#tag-filter", "q4").await;
    click(page, "#filter button").await;
    let both = rows(page, 2, "example.com/").await;
    assert!(
        both.iter().any(|row| row.contains("example.com/other")),
        "{both:?}"
    );
    // A tag's button shows the links that have it.
    click(page, "button.tag[aria-label='Show links tagged other']").await;
    rows(page, 1, "example.com/other").await;
    screenshot(page, "tags-filtered").await;

    fill(page, "#tag-filter", "LAUNCH").await;
    click(page, "#filter button").await;
    rows(page, 1, "example.com/launch").await;

    fill(page, "#tag-filter", &"x".repeat(51)).await;
    click(page, "#filter button").await;
    let alert = text_when(page, "#tag-filter-error", |text| !text.is_empty()).await;
    assert!(alert.starts_with("tag:"), "{alert}");
    // The table is kept as it was.
    rows(page, 1, "example.com/launch").await;
    browser.close().await;
}

/// With a second domain configured, the page offers the choice: a link made on it shows
/// that domain's short URL, and its row's delete (once confirmed) reaches it there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_makes_and_deletes_links_on_a_chosen_domain() {
    let app = spawn_in_process(
        &TestConfig::default()
            .with(|c| {
                c.domains.push(DomainConfig {
                    host: "go.example.org".into(),
                    ..DomainConfig::default()
                });
            })
            .keys(&[("alice", "create,read,delete")]),
    );
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    open_options(page).await;
    let choice = page.find(Locator::Css("#domain")).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !choice.is_displayed().await.unwrap() {
        assert!(Instant::now() < deadline, "no domain choice on the page");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    choice.select_by_value("go.example.org").await.unwrap();
    fill(page, "#url", "https://example.com/elsewhere").await;
    fill(page, "#alias", "golink").await;
    fill(page, "#api_key", &secret("alice")).await;
    submit(page).await;
    let short = text_when(page, "#short-url", |text| text.starts_with("http")).await;
    assert_eq!(short, "http://go.example.org/golink");
    rows(page, 1, "go.example.org/golink").await;
    click(
        page,
        "button[aria-label='Delete http://go.example.org/golink']",
    )
    .await;
    crate::in_process::external::console::confirm(page, "Delete http://go.example.org/golink?")
        .await;
    let alice = Api::of(&app).with_key(&secret("alice"));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = alice.get("golink?domain=go.example.org").await;
        if answer.status == StatusCode::NOT_FOUND {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the row's delete did not reach the link"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    browser.close().await;
}
