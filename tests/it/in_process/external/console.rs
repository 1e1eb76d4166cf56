//! The console in a real headless Chromium, with an admin key: the overview counts the
//! links and visits the test made (people against bots), and the links list searches,
//! filters by tag, pages through 120 links 50 at a time with the cursor (and back), asks
//! for the order by visits, and tags and deletes selected links in bulk (the delete after
//! a confirmation); every API path it called is one of `/openapi.json`'s.
//! The helpers here are the other console tests' too.

use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_testkit::browser::Browser;
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::in_process::external::page::{fill, open_options, screenshot, text_when};
use crate::support::{Keys as _, secret};

pub(crate) const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
                                 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
pub(crate) const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) \
                                 AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 \
                                 Mobile/15E148 Safari/604.1";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/// Pastes `key` into the page's key field; the console's nav shows once the API took it.
pub(crate) async fn open_console(page: &Client, url: &str, key: &str) {
    page.goto(url).await.unwrap();
    // Room for every call of a long session in the page's resource timing.
    (page.execute("performance.setResourceTimingBufferSize(10000)", vec![]))
        .await
        .unwrap();
    open_options(page).await;
    fill(page, "#api_key", &format!("{key}\u{E004}")).await;
    displayed(page, "#console-nav").await;
}

/// Waits until `css` is displayed, and answers it.
pub(crate) async fn displayed(page: &Client, css: &str) -> fantoccini::elements::Element {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(found) = page.find(Locator::Css(css)).await
            && found.is_displayed().await.unwrap_or(false)
        {
            return found;
        }
        assert!(Instant::now() < deadline, "{css} is not shown");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn click(page: &Client, css: &str) {
    displayed(page, css).await.click().await.unwrap();
}

/// Opens a view from the nav.
pub(crate) async fn go(page: &Client, view: &str) {
    click(page, &format!("#console-nav a[href='#/{view}']")).await;
}

/// Says yes in the confirmation dialog, after checking what it asks.
pub(crate) async fn confirm(page: &Client, asks: &str) {
    let text = displayed(page, "#confirm-text").await.text().await.unwrap();
    assert!(text.contains(asks), "the dialog asks {text:?}");
    click(page, "#confirm-yes").await;
}

/// The texts of the rows in `css`, once there are `count` and the first holds `first`.
pub(crate) async fn rows_of(page: &Client, css: &str, count: usize, first: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut texts = Vec::new();
        if let Ok(found) = page.find_all(Locator::Css(css)).await {
            for row in found {
                match row.text().await {
                    Ok(text) => texts.push(text),
                    Err(_) => break,
                }
            }
        }
        if texts.len() == count && texts.first().is_none_or(|text| text.contains(first)) {
            return texts;
        }
        assert!(
            Instant::now() < deadline,
            "rows of {css}: {texts:?}, not {count} starting with {first:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn rows(page: &Client, count: usize, first: &str) -> Vec<String> {
    rows_of(page, "#mine-rows tr", count, first).await
}

/// Whether `path` fits the OpenAPI path `template`, a `{...}` fitting one segment.
fn fits_template(path: &str, template: &str) -> bool {
    let (path, template): (Vec<_>, Vec<_>) =
        (path.split('/').collect(), template.split('/').collect());
    path.len() == template.len()
        && (path.iter().zip(&template)).all(|(segment, expected)| {
            segment == expected
                || (expected.starts_with('{') && expected.ends_with('}') && !segment.is_empty())
        })
}

/// Every API path the page called in its session (from its resource timing, without
/// the origin and the query) is one of the paths of the served `/openapi.json`.
pub(crate) async fn calls_are_described(page: &Client, openapi: String) {
    let document: Value = client()
        .get(openapi)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let templates: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
    let names = page
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name)",
            vec![],
        )
        .await
        .unwrap();
    let called: std::collections::BTreeSet<String> = (names.as_array().unwrap().iter())
        .filter_map(|name| reqwest::Url::parse(name.as_str()?).ok())
        .map(|url| url.path().to_owned())
        .filter(|path| path.starts_with("/api/"))
        .collect();
    assert!(!called.is_empty(), "the page called no API: {names}");
    let undescribed: Vec<&String> = (called.iter())
        .filter(|path| {
            !templates
                .iter()
                .any(|template| fits_template(path, template))
        })
        .collect();
    assert!(
        undescribed.is_empty(),
        "called but not in /openapi.json: {undescribed:?} (of {called:?})"
    );
    eprintln!("the console called these API paths, each in /openapi.json: {called:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_counts_searches_pages_and_changes_links_in_bulk() {
    // A create policy that lets the test make its 120 links (the default allows 100).
    let app = spawn_in_process(
        &TestConfig::default()
            .with(|c| c.visits.flush_values_secs = 1)
            .policy("create", 1000, 100.0)
            .keys(&[("alice", "admin")]),
    );
    let (http, alice) = (client(), Api::of(&app).with_key(&secret("alice")));
    // One at a time, so that the newest first is the order they were made in.
    for index in 0..120 {
        let tags = if index % 5 == 0 {
            json!(["five"])
        } else {
            json!([])
        };
        let made = alice
            .create(&json!({"url": format!("https://example.com/{index}"),
                            "alias": format!("item-{index:03}"), "tags": tags}))
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
    }
    for agent in [CHROME, CHROME, IPHONE, GOOGLEBOT] {
        let visit = http.get(app.url("/item-001")).header("user-agent", agent);
        assert_eq!(visit.send().await.unwrap().status(), StatusCode::FOUND);
    }
    let url = alice.url("/visits?by=device");
    crate::support::once_flushed(&http, url, 4).await;

    let browser = Browser::start(1280, 1000).await;
    let page = &browser.client;
    open_console(page, &app.url("/"), &secret("alice")).await;
    displayed(page, "#nav-keys").await;

    // The overview: 120 links, and today's 3 visits by people and 1 by a bot.
    go(page, "overview").await;
    let links = text_when(page, "#overview-figures", |text| text.contains("Links")).await;
    assert!(links.contains("Links\n120\n"), "{links}");
    for figure in ["#figure-today", "#figure-week", "#figure-month"] {
        let said = text_when(page, figure, |text| !text.is_empty()).await;
        assert!(said.ends_with("3 people, 1 bots"), "{figure}: {said}");
    }
    let top = text_when(page, "#overview-links", |text| !text.is_empty()).await;
    assert!(
        top.starts_with("http") && top.contains("/item-001 3 visits"),
        "{top}"
    );
    screenshot(page, "console-overview").await;

    // The list, 50 a page: three pages through the cursor, and back.
    go(page, "links").await;
    rows(page, 25, "item-119").await;
    let size = page.find(Locator::Id("page-size")).await.unwrap();
    size.select_by_value("50").await.unwrap();
    let first = rows(page, 50, "item-119").await;
    assert!(first[49].contains("item-070"), "{first:?}");
    click(page, "#next-page").await;
    let second = rows(page, 50, "item-069").await;
    assert!(second[49].contains("item-020"), "{second:?}");
    click(page, "#next-page").await;
    let third = rows(page, 20, "item-019").await;
    assert!(third[19].contains("item-000"), "{third:?}");
    let next = page.find(Locator::Id("next-page")).await.unwrap();
    assert!(
        next.attr("disabled").await.unwrap().is_some(),
        "a page past the last"
    );
    click(page, "#previous-page").await;
    rows(page, 50, "item-069").await;
    let status = text_when(page, "#page-number", |text| !text.is_empty()).await;
    assert_eq!(status, "Page 2");

    // Search by code, then the tag filter.
    fill(page, "#q", "item-007").await;
    click(page, "#filter button[type='submit']").await;
    rows(page, 1, "item-007").await;
    fill(page, "#q", "").await;
    fill(page, "#tag-filter", "five").await;
    click(page, "#filter button[type='submit']").await;
    rows(page, 24, "item-115").await;

    // Bulk tagging: two selected links get the tag, the others not.
    click(page, "input[aria-label$='/item-115']").await;
    click(page, "input[aria-label$='/item-110']").await;
    text_when(page, "#selected-count", |text| text == "2 selected").await;
    fill(page, "#bulk-tags", "picked").await;
    click(page, "#bulk-tag").await;
    text_when(page, "#list-status", |text| text == "Tagged 2 links.").await;
    let picked = alice.list("tag=picked").await.body;
    let codes: Vec<&str> = (picked["items"].as_array().unwrap().iter())
        .map(|link| link["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["item-115", "item-110"]);
    let tagged = rows(page, 24, "item-115").await;
    assert!(tagged[0].contains("five picked"), "{tagged:?}");

    // Bulk delete, after the confirmation.
    click(page, "input[aria-label$='/item-100']").await;
    click(page, "input[aria-label$='/item-005']").await;
    click(page, "#bulk-delete").await;
    confirm(page, "Delete 2 links?").await;
    text_when(page, "#list-status", |text| text == "Deleted 2 links.").await;
    rows(page, 22, "item-115").await;
    for code in ["item-100", "item-005"] {
        assert_eq!(
            alice.get(code).await.status,
            StatusCode::NOT_FOUND,
            "{code}"
        );
    }
    assert_eq!(alice.get("item-000").await.status, StatusCode::OK);

    // The order by visits, sent only when chosen: the list shows the API's answer, its
    // most visited link first once the API orders by visits, else the API's problem next
    // to the control.
    let by_visits = alice.list("limit=25&order=visits").await;
    let (status, answer) = (by_visits.status, by_visits.body);
    fill(page, "#tag-filter", "").await;
    let order = page.find(Locator::Id("order")).await.unwrap();
    order.select_by_value("visits").await.unwrap();
    if status == StatusCode::BAD_REQUEST {
        let problem = text_when(page, "#order-error", |text| !text.is_empty()).await;
        assert_eq!(problem, answer["detail"].as_str().unwrap());
    } else {
        assert_eq!(status, StatusCode::OK, "{answer}");
        let first = answer["items"][0]["code"].as_str().unwrap().to_owned();
        rows(page, 50, &format!("/{first}")).await;
    }
    let sent = page
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name)
               .filter(n => n.includes('/api/v1/links?')).pop()",
            vec![],
        )
        .await
        .unwrap();
    assert!(sent.as_str().unwrap().contains("order=visits"), "{sent}");
    screenshot(page, "console-links").await;
    calls_are_described(page, app.url("/openapi.json")).await;
    browser.close().await;
}
