//! The console at 390 px wide and from the keyboard, in a real headless Chromium: no view
//! scrolls sideways, the nav is reached and followed with Tab and Enter, each view's
//! heading takes the focus, the list is searched from the keyboard, and a delete's
//! confirmation is cancelled with Escape (focus back on the button) and given with Enter.

use fantoccini::Client;
use fantoccini::actions::{InputSource as _, KeyAction, KeyActions};
use fantoccini::key::Key;
use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_testkit::browser::Browser;
use shortener_tests::{Api, TestConfig, spawn_in_process};

use crate::in_process::external::console::{displayed, go, rows, rows_of};
use crate::in_process::external::page::{screenshot, text_when};
use crate::support::{Keys as _, secret};

async fn keys(page: &Client, keys: &[Key]) {
    let mut actions = KeyActions::new("keyboard".into());
    for key in keys {
        actions = actions.then(KeyAction::Down {
            value: char::from(*key),
        });
    }
    for key in keys.iter().rev() {
        actions = actions.then(KeyAction::Up {
            value: char::from(*key),
        });
    }
    page.perform_actions(actions).await.unwrap();
}

/// The focused element: its id, else its text.
async fn focused(page: &Client) -> String {
    let found = page
        .execute(
            "const e = document.activeElement; return e.id || e.textContent.trim()",
            vec![],
        )
        .await
        .unwrap();
    found.as_str().unwrap_or_default().to_owned()
}

/// Tab (or Shift+Tab) until `target` has the focus.
async fn tab_to(page: &Client, target: &str, back: bool) {
    for _ in 0..30 {
        if focused(page).await == target {
            return;
        }
        if back {
            keys(page, &[Key::Shift, Key::Tab]).await;
        } else {
            keys(page, &[Key::Tab]).await;
        }
    }
    panic!(
        "Tab never reached {target}; the focus is on {}",
        focused(page).await
    );
}

/// Fails when the document scrolls sideways at this width.
async fn fits(page: &Client, view: &str) {
    let widths: Value = page
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth]",
            vec![],
        )
        .await
        .unwrap();
    let (scroll, inner) = (widths[0].as_u64().unwrap(), widths[1].as_u64().unwrap());
    assert!(inner <= 390, "the window is {inner} px wide");
    assert!(
        scroll <= 390 && scroll <= inner,
        "{view}: {scroll} px wide in {inner}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_fits_390_px_and_works_from_the_keyboard() {
    let app = spawn_in_process(&TestConfig::default().keys(&[("alice", "admin")]));
    let alice = Api::of(&app).with_key(&secret("alice"));
    for alias in ["alpha", "beta-with-a-rather-long-alias-to-wrap", "gamma"] {
        let made = alice
            .create(&json!({"url": format!("https://example.com/{alias}/and/a/long/path/that/goes/on"),
                            "alias": alias, "tags": ["phone", "q4"], "title": "A title that is long enough to wrap"}))
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
    }
    let browser = Browser::start_phone(390, 844).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    fits(page, "the form").await;

    // The key, typed into its field from the keyboard: the options open with Enter.
    tab_to(page, "url", false).await;
    keys(page, &[Key::Tab]).await;
    keys(page, &[Key::Enter]).await;
    tab_to(page, "api_key", false).await;
    page.active_element()
        .await
        .unwrap()
        .send_keys(&secret("alice"))
        .await
        .unwrap();
    keys(page, &[Key::Tab]).await;
    displayed(page, "#console-nav").await;

    // The nav, reached backwards with Shift+Tab and followed with Enter.
    tab_to(page, "Links", true).await;
    keys(page, &[Key::Enter]).await;
    rows(page, 3, "gamma").await;
    assert_eq!(focused(page).await, "mine-title");
    fits(page, "the links").await;
    screenshot(page, "console-links-phone").await;

    // The search, from the keyboard: Tab from the heading to it, Enter to send it.
    keys(page, &[Key::Tab]).await;
    assert_eq!(focused(page).await, "q");
    page.active_element()
        .await
        .unwrap()
        .send_keys("beta")
        .await
        .unwrap();
    keys(page, &[Key::Enter]).await;
    rows(page, 1, "beta").await;

    // A delete asks first: Escape cancels (the focus back on the button), Enter on
    // the dialog's confirming button deletes.
    let delete = displayed(page, "button[aria-label^='Delete '][aria-label$='-wrap']").await;
    delete.send_keys("\u{E007}").await.unwrap();
    displayed(page, "#confirm").await;
    assert_eq!(focused(page).await, "confirm-no");
    keys(page, &[Key::Escape]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while displayed_now(page, "#confirm").await {
        assert!(
            std::time::Instant::now() < deadline,
            "Escape left the dialog open"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(focused(page).await, "Delete");
    let long = "beta-with-a-rather-long-alias-to-wrap";
    let cancelled = alice.get(long).await;
    assert_eq!(cancelled.status, StatusCode::OK, "cancelled, not deleted");
    keys(page, &[Key::Enter]).await;
    displayed(page, "#confirm").await;
    keys(page, &[Key::Shift, Key::Tab]).await;
    assert_eq!(focused(page).await, "confirm-yes");
    keys(page, &[Key::Enter]).await;
    text_when(page, "#list-status", |text| text == "Deleted 1 link.").await;
    assert_eq!(alice.get(long).await.status, StatusCode::NOT_FOUND);

    // Every other view fits too, its heading focused.
    for (view, heading) in [
        ("overview", "overview-title"),
        ("tags", "tags-title"),
        ("domains", "domains-title"),
        ("keys", "keys-title"),
    ] {
        go(page, view).await;
        text_when(page, &format!("#{view}-status"), |text| {
            !text.is_empty() && text != "Loading…"
        })
        .await;
        assert_eq!(focused(page).await, heading);
        fits(page, view).await;
    }
    screenshot(page, "console-keys-phone").await;
    go(page, "links").await;
    rows(page, 0, "").await;
    crate::in_process::external::page::fill(page, "#q", "").await;
    crate::in_process::external::console::click(page, "#filter button[type='submit']").await;
    rows(page, 2, "gamma").await;
    page.find(fantoccini::Locator::Css(
        "a[aria-label$='/alpha'][aria-label^='Edit and visits of ']",
    ))
    .await
    .unwrap()
    .click()
    .await
    .unwrap();
    text_when(page, "#stats-range", |text| text.contains("30 days")).await;
    displayed(page, "#add-rule").await.click().await.unwrap();
    displayed(page, "#rule-0-url").await;
    fits(page, "a link's page").await;
    screenshot(page, "console-link-phone").await;
    rows_of(page, "#stats-days svg g", 30, "").await;
    browser.close().await;
}

async fn displayed_now(page: &Client, css: &str) -> bool {
    match page.find(fantoccini::Locator::Css(css)).await {
        Ok(found) => found.is_displayed().await.unwrap_or(false),
        Err(_) => false,
    }
}
