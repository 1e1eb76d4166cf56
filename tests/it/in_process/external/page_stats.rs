//! A link's visits on the web page, in a real headless Chromium: its row's "Edit and visits"
//! opens the link's page, whose charts are drawn as inline SVG (under the page's
//! Content-Security-Policy, which allows no inline script or style), whose bars carry
//! their labels and values as text, are reached from the keyboard, and say what the API
//! counted; a link's redirect rules are in its rules editor beside its visits by rule.

use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use reqwest::StatusCode;
use shortener_testkit::browser::Browser;
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::in_process::external::page::{fill, screenshot, submit, text_when};
use crate::support::{Keys as _, secret};

const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
                      (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) \
                      AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 \
                      Safari/604.1";

/// The `aria-label`s of the bars in `css`, once there are `count` of them.
pub(crate) async fn labels(page: &Client, css: &str, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let bars = page.find_all(Locator::Css(css)).await.unwrap();
        if bars.len() == count {
            let mut labels = Vec::new();
            for bar in bars {
                labels.push(bar.attr("aria-label").await.unwrap().unwrap_or_default());
            }
            return labels;
        }
        assert!(
            Instant::now() < deadline,
            "{} bars in {css}, not {count}",
            bars.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_s_visits_are_drawn_as_charts_readable_without_colour() {
    let app = spawn_in_process(
        &TestConfig::default()
            .with(|c| c.visits.flush_values_secs = 1)
            .keys(&[("alice", "create,read")]),
    );
    let browser = Browser::start(1200, 1400).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    fill(page, "#url", "https://example.com/launch").await;
    crate::in_process::external::page::open_options(page).await;
    fill(page, "#alias", "launch").await;
    fill(page, "#api_key", &secret("alice")).await;
    submit(page).await;
    text_when(page, "#short-url", |text| text.ends_with("/launch")).await;

    let (http, alice) = (client(), Api::of(&app).with_key(&secret("alice")));
    for (agent, referer) in [
        (CHROME, Some("https://news.example.com/a")),
        (CHROME, Some("https://news.example.com/b")),
        (IPHONE, None),
    ] {
        let mut visit = http.get(app.url("/launch")).header("user-agent", agent);
        if let Some(referer) = referer {
            visit = visit.header("referer", referer);
        }
        assert_eq!(visit.send().await.unwrap().status(), StatusCode::FOUND);
    }
    // Written by the next flush of values (every second here).
    let url = alice.url("/links/launch/visits?by=device");
    let flushed = crate::support::once_flushed(&http, url, 3).await;
    assert_ne!(
        flushed["values"],
        serde_json::json!([]),
        "values not flushed"
    );

    let button = Locator::Css("a[aria-label^='Edit and visits of '][aria-label$='/launch']");
    let button = page.wait().for_element(button).await.unwrap();
    // From the keyboard: the link takes Enter, and the link's page takes the focus.
    button.send_keys("\u{E007}").await.unwrap();
    let referrers = labels(page, "#stats-referrer svg g", 2).await;
    assert_eq!(referrers, ["news.example.com: 2", "direct: 1"]);
    let devices = labels(page, "#stats-device svg g", 2).await;
    assert_eq!(devices, ["desktop: 2", "mobile: 1"]);
    let browsers = labels(page, "#stats-browser svg g", 2).await;
    assert_eq!(browsers, ["Chrome: 2", "Safari: 1"]);
    let days = labels(page, "#stats-days svg g", 30).await;
    assert!(days[29].ends_with(": 3 people, 0 bots"), "{days:?}");
    // Each value is written beside its bar, not only coloured.
    let written = page
        .find(Locator::Css("#stats-referrer svg"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        written.contains("news.example.com") && written.contains('2'),
        "{written}"
    );
    // No countries without an IP database: said in words.
    let countries = text_when(page, "#stats-country", |text| !text.is_empty()).await;
    assert_eq!(countries, "No countries counted yet.");
    let focused = page.active_element().await.unwrap();
    assert_eq!(
        focused.attr("id").await.unwrap().as_deref(),
        Some("link-title")
    );
    // The bars are reached with Tab, after the range's choice.
    let range = page
        .find(Locator::Css("input[name='range']:checked"))
        .await
        .unwrap();
    range.send_keys("\u{E004}").await.unwrap();
    let focused = page.active_element().await.unwrap();
    assert_eq!(
        focused.attr("aria-label").await.unwrap().as_deref(),
        Some(days[0].as_str())
    );
    screenshot(page, "visit-stats").await;

    // A link with redirect rules shows them, read-only, and its visits by rule and
    // variant.
    let routed = alice
        .create(&serde_json::json!({"url": "https://example.com/", "alias": "routed", "rules": [
            {"name": "iphone", "conditions": [{"type": "os", "value": "ios"}],
             "url": "https://apps.example/ios"},
            {"conditions": [{"type": "query", "key": "ref"}],
             "split": [{"url": "https://a.example/", "weight": 3}, {"url": "https://b.example/", "weight": 1}]}]}))
        .await;
    assert_eq!(routed.status, StatusCode::CREATED);
    let visit = http.get(app.url("/routed")).header("user-agent", IPHONE);
    assert_eq!(
        visit.send().await.unwrap().headers()["location"],
        "https://apps.example/ios"
    );
    let url = alice.url("/links/routed/visits?by=rule");
    crate::support::once_flushed(&http, url, 1).await;
    // The list (from the nav) has the new link; its page shows its rules in the editor.
    page.find(Locator::Css("#console-nav a[href='#/links']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let button = Locator::Css("a[aria-label^='Edit and visits of '][aria-label$='/routed']");
    page.wait()
        .for_element(button)
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let rules = text_when(page, "#rules-editor", |text| text.contains("Rule 2")).await;
    assert!(rules.contains("Rule 1"), "{rules}");
    let value = |id: &'static str| async move {
        let input = page.find(Locator::Id(id)).await.unwrap();
        input.prop("value").await.unwrap().unwrap_or_default()
    };
    assert_eq!(value("rule-0-name").await, "iphone");
    assert_eq!(value("rule-0-cond-0-type").await, "os");
    assert_eq!(value("rule-0-cond-0-value").await, "ios");
    assert_eq!(value("rule-0-url").await, "https://apps.example/ios");
    assert_eq!(value("rule-1-cond-0-type").await, "query");
    assert_eq!(value("rule-1-cond-0-key").await, "ref");
    assert_eq!(value("rule-1-kind").await, "split");
    assert_eq!(value("rule-1-split-0-weight").await, "3");
    assert_eq!(value("rule-1-split-1-url").await, "https://b.example/");
    assert_eq!(labels(page, "#stats-rule svg g", 1).await, ["iphone: 1"]);
    let variants = text_when(page, "#stats-variant", |text| !text.is_empty()).await;
    assert_eq!(variants, "No variants counted yet.");
    browser.close().await;
}
