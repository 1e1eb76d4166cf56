//! A link's page in the console, in a real headless Chromium: its target and redirect
//! rules are edited, added and reordered (and reach the API), a bad rule value is said
//! next to the field the API names, the visits' range switch changes the chart and its
//! text, the breakdowns say what the API counted, and the link is deleted after a
//! confirmation; every API path it called is one of `/openapi.json`'s.

use reqwest::StatusCode;
use serde_json::json;
use shortener_testkit::browser::Browser;
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::in_process::external::console::{
    CHROME, IPHONE, click, confirm, displayed, open_console, rows,
};
use crate::in_process::external::page::{fill, screenshot, text_when};
use crate::in_process::external::page_stats::labels;
use crate::support::{Keys as _, secret};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_s_page_edits_it_shows_problems_in_place_and_its_visits_by_range() {
    let app = spawn_in_process(
        &TestConfig::default()
            .with(|c| c.visits.flush_values_secs = 1)
            .keys(&[("alice", "create,read,update,delete")]),
    );
    let (http, alice) = (client(), Api::of(&app).with_key(&secret("alice")));
    let made = alice
        .create(&json!({"url": "https://example.com/launch", "alias": "launch", "tags": ["q4"]}))
        .await;
    assert_eq!(made.status, StatusCode::CREATED);
    for agent in [CHROME, IPHONE] {
        let visit = http.get(app.url("/launch")).header("user-agent", agent);
        assert_eq!(visit.send().await.unwrap().status(), StatusCode::FOUND);
    }
    let url = alice.url("/links/launch/visits?by=device");
    crate::support::once_flushed(&http, url, 2).await;

    let browser = Browser::start(1280, 1400).await;
    let page = &browser.client;
    open_console(page, &app.url("/"), &secret("alice")).await;
    rows(page, 1, "/launch").await;
    click(
        page,
        "a[aria-label$='/launch'][aria-label^='Edit and visits of ']",
    )
    .await;
    let title = text_when(page, "#link-title", |text| text == "Link launch").await;
    assert_eq!(title, "Link launch");
    let focused = page.active_element().await.unwrap();
    assert_eq!(
        focused.attr("id").await.unwrap().as_deref(),
        Some("link-title")
    );
    displayed(page, "#link-qr").await;

    // The visits: 30 days by default, then the last 7, then two dates.
    let range = text_when(page, "#stats-range", |text| text.contains("30 days")).await;
    assert!(range.starts_with("Per day, 30 days, "), "{range}");
    let days = labels(page, "#stats-days svg g", 30).await;
    assert!(days[29].ends_with(": 2 people, 0 bots"), "{days:?}");
    let devices = labels(page, "#stats-device svg g", 2).await;
    assert_eq!(devices, ["desktop: 1", "mobile: 1"]);
    assert_eq!(labels(page, "#stats-os svg g", 2).await.len(), 2);
    let totals = text_when(page, "#stats-totals", |text| !text.is_empty()).await;
    assert_eq!(totals, "2 visits by people\n0 by bots");
    click(page, "input[name='range'][value='7']").await;
    let range = text_when(page, "#stats-range", |text| text.contains("7 days")).await;
    assert!(range.starts_with("Per day, 7 days, "), "{range}");
    labels(page, "#stats-days svg g", 7).await;
    let table = page
        .execute(
            "return document.querySelector('#stats-days table').textContent",
            vec![],
        )
        .await
        .unwrap();
    assert!(table.as_str().unwrap().contains("Day"), "{table}");
    click(page, "#range-dates-choice").await;
    displayed(page, "#range-from").await;
    // A date picker's typing depends on the locale: the dates are set as picked.
    page.execute(
        "document.getElementById('range-from').value = '2026-02-01';
         document.getElementById('range-to').value = '2026-02-03';",
        vec![],
    )
    .await
    .unwrap();
    click(page, "#range-apply").await;
    let range = text_when(page, "#stats-range", |text| text.contains("3 days")).await;
    assert_eq!(range, "Per day, 3 days, 2026-02-01 to 2026-02-03");
    labels(page, "#stats-days svg g", 3).await;
    screenshot(page, "console-link").await;

    // The target and a rule, edited.
    fill(page, "#edit-url", "https://example.com/moved").await;
    click(page, "#add-rule").await;
    fill(page, "#rule-0-name", "phones").await;
    fill(page, "#rule-0-url", "https://m.example.com/").await;
    click(page, "#edit-save").await;
    let saved = text_when(page, "#edit-status", |text| text.starts_with("Saved")).await;
    assert_eq!(saved, "Saved url, rules.");
    let link = alice.get("launch").await.body;
    assert_eq!(link["url"], "https://example.com/moved");
    assert_eq!(
        link["rules"],
        json!([{"name": "phones", "conditions": [{"type": "device", "value": "mobile"}],
                "url": "https://m.example.com/"}])
    );

    // A second rule, moved above the first (the focus stays on a move button), is
    // saved in that order.
    click(page, "#add-rule").await;
    fill(page, "#rule-1-name", "tablets").await;
    let device = displayed(page, "#rule-1-cond-0-value").await;
    device.select_by_value("tablet").await.unwrap();
    fill(page, "#rule-1-url", "https://t.example.com/").await;
    click(page, "#rule-1-up").await;
    let focused = page.active_element().await.unwrap();
    assert_eq!(
        focused.attr("id").await.unwrap().as_deref(),
        Some("rule-0-down")
    );
    click(page, "#edit-save").await;
    text_when(page, "#edit-status", |text| text == "Saved rules.").await;
    let link = alice.get("launch").await.body;
    let names: Vec<&str> = (link["rules"].as_array().unwrap().iter())
        .map(|rule| rule["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tablets", "phones"]);
    assert_eq!(link["rules"][0]["conditions"][0]["value"], "tablet");

    // A value the rule's type refuses: said next to that value's field.
    let kind = displayed(page, "#rule-0-cond-0-type").await;
    kind.select_by_value("language").await.unwrap();
    fill(page, "#rule-0-cond-0-value", "not a language").await;
    click(page, "#edit-save").await;
    let problem = text_when(page, "#rule-0-cond-0-value-error", |text| !text.is_empty()).await;
    assert!(
        problem.starts_with("rules[0].conditions[0].value: "),
        "{problem}"
    );
    let value = page
        .find(fantoccini::Locator::Id("rule-0-cond-0-value"))
        .await
        .unwrap();
    assert_eq!(
        value.attr("aria-invalid").await.unwrap().as_deref(),
        Some("true")
    );
    let focused = page.active_element().await.unwrap();
    assert_eq!(
        focused.attr("id").await.unwrap().as_deref(),
        Some("rule-0-cond-0-value")
    );
    let unchanged = alice.get("launch").await.body;
    assert_eq!(unchanged["rules"], link["rules"]);
    screenshot(page, "console-rule-problem").await;

    // Deleted after the confirmation: the list comes back without it.
    click(page, "#link-delete").await;
    confirm(page, "Delete ").await;
    text_when(page, "#list-status", |text| text.starts_with("Deleted")).await;
    assert_eq!(alice.get("launch").await.status, StatusCode::NOT_FOUND);
    crate::in_process::external::console::calls_are_described(page, app.url("/openapi.json")).await;
    browser.close().await;
}
