//! The console's tags, domains and keys views in a real headless Chromium, with an admin
//! key: a tag is renamed and another deleted (each after a confirmation, each one API
//! call), the domains lead to their links, and a key is made (its secret shown once),
//! listed beside the config file's read-only one, and revoked, after which a second
//! node on the same PostgreSQL refuses it within a second; and a 429 says when to try again. Every API path it called is one of
//! `/openapi.json`'s.

use reqwest::{Method, StatusCode};
use serde_json::json;
use shortener_testkit::browser::Browser;
use shortener_tests::config::DomainConfig;
use shortener_tests::{Api, TestConfig, TestDatabase, client, spawn_in_process};

use crate::in_process::external::console::{
    click, confirm, displayed, go, open_console, rows, rows_of,
};
use crate::in_process::external::page::{fill, screenshot, text_when};
use crate::support::{Keys as _, secret, until_status};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_renamed_and_deleted_and_keys_made_and_revoked() {
    // Two nodes on one PostgreSQL: the console runs on the first, and a key it revokes is
    // refused by the second within a second (each node reads the stored keys again every
    // half second).
    let database = TestDatabase::create();
    let config = TestConfig::default()
        .postgres(database.url())
        .with(|c| {
            c.domains.push(DomainConfig {
                host: "go.example.org".into(),
                root_redirect: Some("https://example.com/home".into()),
                not_found_url: None,
            });
        })
        .keys(&[("alice", "admin")]);
    let app = spawn_in_process(&config);
    let second_node = spawn_in_process(&config);
    let (http, alice) = (client(), Api::of(&app).with_key(&secret("alice")));
    for (alias, tags, domain) in [
        ("one", json!(["q4"]), None),
        ("two", json!(["q4", "sales"]), None),
        ("far", json!([]), Some("go.example.org")),
    ] {
        let mut body =
            json!({"url": format!("https://example.com/{alias}"), "alias": alias, "tags": tags});
        if let Some(domain) = domain {
            body["domain"] = json!(domain);
        }
        assert_eq!(alice.create(&body).await.status, StatusCode::CREATED);
    }
    let browser = Browser::start(1280, 1000).await;
    let page = &browser.client;
    open_console(page, &app.url("/"), &secret("alice")).await;

    // Tags: each with its links; renamed after the confirmation.
    go(page, "tags").await;
    let tags = rows_of(page, "#tags-rows tr", 2, "q4").await;
    assert!(tags[0].starts_with("q4 2 0 0"), "{tags:?}");
    click(page, "button[aria-label='Rename q4']").await;
    let name = displayed(page, "#rename-name").await;
    let focused = page.active_element().await.unwrap();
    assert_eq!(
        focused.attr("id").await.unwrap().as_deref(),
        Some("rename-name")
    );
    name.clear().await.unwrap();
    name.send_keys("q4-2026").await.unwrap();
    click(page, "#rename-save").await;
    confirm(page, "Rename q4 to q4-2026").await;
    text_when(page, "#tags-status", |text| {
        text == "Renamed q4 to q4-2026 on 2 links."
    })
    .await;
    rows_of(page, "#tags-rows tr", 2, "q4-2026").await;
    let link = alice.get("two").await.body;
    assert_eq!(link["tags"], json!(["q4-2026", "sales"]));
    // Deleted after the confirmation: the links stay, without it.
    click(page, "button[aria-label='Delete sales']").await;
    confirm(page, "Take the tag sales off 1 link?").await;
    text_when(page, "#tags-status", |text| {
        text == "Took sales off 1 link."
    })
    .await;
    rows_of(page, "#tags-rows tr", 1, "q4-2026").await;
    let link = alice.get("two").await.body;
    assert_eq!(link["tags"], json!(["q4-2026"]));
    screenshot(page, "console-tags").await;
    // A tag leads to its links.
    click(page, "a[aria-label='Links tagged q4-2026']").await;
    rows(page, 2, "/two").await;

    // Domains: both, each leading to its links.
    go(page, "domains").await;
    let domains: Vec<String> = (rows_of(page, "#domains-rows tr", 2, "").await.iter())
        .map(|row| row.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(domains[0].contains("default 2 0 none"), "{domains:?}");
    assert!(
        domains[1].starts_with("go.example.org")
            && domains[1].ends_with(" 1 0 / goes to https://example.com/home"),
        "{domains:?}"
    );
    click(page, "a[aria-label='1 links on go.example.org']").await;
    rows(page, 1, "go.example.org/far").await;

    // Keys: one made with read only, its secret shown once.
    go(page, "keys").await;
    let keys = rows_of(page, "#keys-rows tr", 1, "alice").await;
    assert!(keys[0].contains("read-only (config file)"), "{keys:?}");
    fill(page, "#key-name", "colleague").await;
    for scope in ["create", "update", "delete"] {
        click(page, &format!("input[name='scope'][value='{scope}']")).await;
    }
    fill(page, "#key-owner", "alice").await;
    click(page, "#key-make").await;
    let made = displayed(page, "#key-secret").await;
    let key = made.prop("value").await.unwrap().unwrap_or_default();
    assert!(key.starts_with("shk_"), "{key}");
    click(page, "#key-copy").await;
    text_when(page, "#key-copied", |text| text == "Copied.").await;
    let keys = rows_of(page, "#keys-rows tr", 2, "").await;
    let listed = keys
        .iter()
        .find(|row| row.starts_with("colleague"))
        .unwrap();
    assert!(
        listed.contains("colleague read alice never not yet Revoke"),
        "{keys:?}"
    );
    screenshot(page, "console-keys").await;
    let links = Api::of(&app).with_key(&key).list("").await;
    let links = links.expect(StatusCode::OK);
    assert_eq!(links["items"].as_array().unwrap().len(), 3, "alice's links");
    // Shown once: another view forgets it.
    go(page, "tags").await;
    go(page, "keys").await;
    rows_of(page, "#keys-rows tr", 2, "").await;
    let secret_shown = page
        .execute("return document.getElementById('key-secret').value", vec![])
        .await
        .unwrap();
    assert_eq!(secret_shown, json!(""));

    // Revoked after the confirmation, and refused by the other node.
    let elsewhere = Api::of(&second_node).url("/links");
    until_status(&http, &elsewhere, &key, StatusCode::OK).await;
    click(page, "button[aria-label='Revoke colleague']").await;
    confirm(page, "Revoke the key colleague?").await;
    text_when(page, "#keys-status", |text| text == "Revoked colleague.").await;
    let refused = until_status(&http, &elsewhere, &key, StatusCode::UNAUTHORIZED).await;
    assert!(
        refused < std::time::Duration::from_secs(1),
        "refused after {refused:?}"
    );
    let keys = rows_of(page, "#keys-rows tr", 2, "").await;
    assert!(
        keys.iter()
            .any(|row| row.starts_with("colleague") && row.contains("revoked")),
        "{keys:?}"
    );

    // A 429 anywhere says when to try again: while the key's lookups are spent (by a
    // task taking each token as it comes back), a view's call is refused.
    let spending = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let spender = tokio::spawn({
        let (alice, spending) = (alice.clone(), spending.clone());
        async move {
            let mut refused = 0;
            while spending.load(std::sync::atomic::Ordering::Relaxed) {
                // Sent by hand: a request that fails is not counted, and fails nothing.
                let answer = alice.request(Method::GET, "/links/one").send().await;
                if answer.is_ok_and(|answer| answer.status() == StatusCode::TOO_MANY_REQUESTS) {
                    refused += 1;
                }
            }
            refused
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let said = loop {
        go(page, "tags").await;
        let banner = page.find(fantoccini::Locator::Id("retry")).await.unwrap();
        let said = banner.text().await.unwrap();
        if said.starts_with("Too many requests for now: try again in ") {
            break said;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no 429 said: {said:?}"
        );
        go(page, "domains").await;
    };
    spending.store(false, std::sync::atomic::Ordering::Relaxed);
    assert!(spender.await.unwrap() > 0, "the lookups were never spent");
    assert!(said.ends_with(" s."), "{said}");
    // And the view that was refused says so where its results go.
    text_when(page, "#tags-status, #domains-status", |text| {
        text.contains("Try again in")
    })
    .await;
    screenshot(page, "console-429").await;
    crate::in_process::external::console::calls_are_described(page, app.url("/openapi.json")).await;
    browser.close().await;
}
