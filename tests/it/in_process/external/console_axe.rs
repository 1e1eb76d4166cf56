//! The page and every console view checked by axe-core (installed from npm at a pinned
//! version) in a real headless Chromium, at 1280 and at 390 px wide: no violation of
//! impact `serious` or `critical` on any screen (the counts by impact are printed), axe
//! itself seen to find an unnamed field and faint text. The page's navigation timing and
//! the console's asset sizes are printed, not asserted. The screenshots of the overview,
//! the links, a link's page and the keys are saved, and every API path the views called
//! is one of `/openapi.json`'s.

use std::collections::BTreeMap;

use fantoccini::Client;
use reqwest::StatusCode;
use serde_json::json;
use shortener_testkit::browser::Browser;
use shortener_tests::{Api, InProcessApp, TestConfig, client, npm, spawn_in_process, workspace};

use crate::in_process::external::console::{
    CHROME, IPHONE, click, displayed, go, open_console, rows,
};
use crate::in_process::external::page::{screenshot, text_when};
use crate::support::{Keys as _, secret};

/// axe-core's version the test runs: its latest 4.x release when the test was written.
const AXE_VERSION: &str = "4.14.1";

/// Runs axe on the whole document; answers its violations, each with its nodes' targets.
const RUN: &str = "const done = arguments[arguments.length - 1];
    axe.run(document, {resultTypes: ['violations']})
      .then(found => done(found.violations.map(v => ({id: v.id, impact: v.impact,
        help: v.help, targets: v.nodes.map(n => n.target.join(' '))}))))
      .catch(error => done({error: String(error)}));";

/// axe's violations on the page as it is now, printed as counts by impact; answers the
/// serious and critical ones, each named with `screen`.
async fn audit(page: &Client, axe: &str, screen: &str) -> Vec<String> {
    let present = page
        .execute("return typeof axe !== 'undefined'", vec![])
        .await
        .unwrap();
    if present != json!(true) {
        page.execute(axe, vec![]).await.unwrap();
    }
    let found = page.execute_async(RUN, vec![]).await.unwrap();
    let violations = found
        .as_array()
        .unwrap_or_else(|| panic!("axe failed on {screen}: {found}"));
    let mut counts = BTreeMap::from([
        ("critical", 0),
        ("serious", 0),
        ("moderate", 0),
        ("minor", 0),
    ]);
    let mut bad = Vec::new();
    for violation in violations {
        let impact = violation["impact"].as_str().unwrap_or("none");
        *counts.entry(impact).or_default() += violation["targets"].as_array().map_or(1, Vec::len);
        if matches!(impact, "serious" | "critical") {
            bad.push(format!(
                "{screen}: {} ({impact}, {}) at {}",
                violation["id"], violation["help"], violation["targets"]
            ));
        }
    }
    let rules: Vec<String> = (violations.iter())
        .map(|violation| format!("{} ({})", violation["id"], violation["impact"]))
        .collect();
    eprintln!("axe {screen}: nodes by impact {counts:?}, rules {rules:?}");
    bad
}

/// The navigation's timing and what the page's resources weighed, printed.
async fn print_timing(page: &Client) {
    let timing = page
        .execute_async(
            "const done = arguments[arguments.length - 1];
             const read = () => {
               const nav = performance.getEntriesByType('navigation')[0];
               if (!nav || nav.loadEventEnd === 0) { setTimeout(read, 20); return; }
               const res = performance.getEntriesByType('resource');
               done({domContentLoadedEventEnd: nav.domContentLoadedEventEnd,
                     loadEventEnd: nav.loadEventEnd, documentTransferSize: nav.transferSize,
                     resources: res.length,
                     resourcesTransferSize: res.reduce((sum, e) => sum + e.transferSize, 0),
                     resourcesDecodedSize: res.reduce((sum, e) => sum + e.decodedBodySize, 0)});
             };
             read();",
            vec![],
        )
        .await
        .unwrap();
    eprintln!("navigation timing of / (ms, bytes): {timing}");
    let mut sizes = 0;
    let mut files = 0;
    let mut folders = vec![workspace().join("crates/shortener-http/web")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                folders.push(entry.path());
            } else {
                sizes += meta.len();
                files += 1;
            }
        }
    }
    eprintln!("the console's assets: {files} files, {sizes} bytes uncompressed");
}

/// The form and every console view at `width` (a phone's screen when `phone`): the
/// serious and critical violations found.
async fn screens(app: &InProcessApp, axe: &str, width: u32, phone: bool) -> Vec<String> {
    let browser = if phone {
        Browser::start_phone(width, 844).await
    } else {
        Browser::start(width, 1000).await
    };
    let page = &browser.client;
    let mut bad = Vec::new();
    page.goto(&app.url("/")).await.unwrap();
    displayed(page, "#url").await;
    if !phone {
        print_timing(page).await;
    }
    bad.extend(audit(page, axe, &format!("the form at {width}")).await);

    open_console(page, &app.url("/"), &secret("alice")).await;
    go(page, "overview").await;
    text_when(page, "#overview-links", |text| text.contains("2 visits")).await;
    bad.extend(audit(page, axe, &format!("overview at {width}")).await);
    screenshot(page, &format!("console-overview-{width}")).await;

    go(page, "links").await;
    rows(page, 3, "gamma").await;
    bad.extend(audit(page, axe, &format!("links at {width}")).await);
    screenshot(page, &format!("console-links-{width}")).await;

    click(
        page,
        "a[aria-label$='/launch'][aria-label^='Edit and visits of ']",
    )
    .await;
    text_when(page, "#stats-totals", |text| text.contains("2 visits")).await;
    bad.extend(audit(page, axe, &format!("a link's page at {width}")).await);
    screenshot(page, &format!("console-link-{width}")).await;
    (page.execute(
        "document.getElementById('stats-title').scrollIntoView()",
        vec![],
    ))
    .await
    .unwrap();
    screenshot(page, &format!("console-link-visits-{width}")).await;

    for view in ["tags", "domains", "keys"] {
        go(page, view).await;
        text_when(page, &format!("#{view}-rows"), |text| !text.is_empty()).await;
        bad.extend(audit(page, axe, &format!("{view} at {width}")).await);
    }
    screenshot(page, &format!("console-keys-{width}")).await;
    crate::in_process::external::console::calls_are_described(page, app.url("/openapi.json")).await;
    // axe is seen to find what it should: a field without a name, grey on white.
    page.execute(
        "const probe = document.createElement('p');
         probe.innerHTML = '<input type=text><span>faint</span>';
         probe.querySelector('span').style.color = '#ccc';
         document.querySelector('main').append(probe);",
        vec![],
    )
    .await
    .unwrap();
    let probed = audit(page, axe, "a probe").await;
    assert!(
        probed.iter().any(|found| found.contains("\"label\""))
            && probed
                .iter()
                .any(|found| found.contains("\"color-contrast\"")),
        "axe missed an unnamed field or faint text: {probed:?}"
    );
    browser.close().await;
    bad
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn axe_finds_nothing_serious_on_the_page_or_any_console_view() {
    let folder = npm::package("axe-core", AXE_VERSION).unwrap_or_else(|error| panic!("{error}"));
    let axe = std::fs::read_to_string(folder.join("node_modules/axe-core/axe.min.js")).unwrap();
    let app = spawn_in_process(
        &TestConfig::default()
            .with(|c| c.visits.flush_values_secs = 1)
            .keys(&[("alice", "admin")]),
    );
    let (http, alice) = (client(), Api::of(&app).with_key(&secret("alice")));
    for (alias, tags) in [
        ("launch", json!(["q4", "sales"])),
        ("beta", json!(["q4"])),
        ("gamma", json!([])),
    ] {
        let made = alice
            .create(
                &json!({"url": format!("https://example.com/{alias}"), "alias": alias,
                            "tags": tags, "title": format!("The {alias} page")}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
    }
    for agent in [CHROME, IPHONE] {
        let visit = http.get(app.url("/launch")).header("user-agent", agent);
        assert_eq!(visit.send().await.unwrap().status(), StatusCode::FOUND);
    }
    let url = alice.url("/links/launch/visits?by=device");
    crate::support::once_flushed(&http, url, 2).await;

    let mut bad = screens(&app, &axe, 1280, false).await;
    bad.extend(screens(&app, &axe, 390, true).await);
    assert!(
        bad.is_empty(),
        "axe's serious or critical violations:\n{}",
        bad.join("\n")
    );
}
