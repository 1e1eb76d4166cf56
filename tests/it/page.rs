//! The web page in a real headless Chromium (WebDriver): a link is made and followed, bad
//! input and a taken alias show their detail in the field's alert, a 429 counts down, the
//! copy button fills the clipboard, and the page asks no other origin for anything. Each
//! test saves a screenshot under `target/browser/`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::json;
use shortener_testkit::browser::Browser;
use shortener_tests::{BASE_CONFIG, TestApp, client, free_port, spawn_app};

/// The create policy of the countdown test: one link, then a long wait.
const ONE_CREATE: &str = "[limiter.policies.create]\ncapacity = 1\nrefill_per_sec = 0.01\n";

async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.unwrap();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// The text of `css` once `ready` holds for it (the page answers after a fetch).
async fn text_when(browser: &Client, css: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = browser
            .find(Locator::Css(css))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if ready(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{css} still reads {text:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn fill(browser: &Client, css: &str, value: &str) {
    let input = browser.find(Locator::Css(css)).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys(value).await.unwrap();
}

async fn open_options(browser: &Client) {
    browser
        .find(Locator::Css("details.options summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn submit(browser: &Client) {
    browser
        .find(Locator::Id("submit"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// The embedded setup on a port chosen here, so that `public_url` (which short URLs
/// start with) is where the server really is.
fn on_own_port() -> TestApp {
    let port = free_port().unwrap();
    spawn_app(&format!(
        "[server]\nbind = \"127.0.0.1:{port}\"\npublic_url = \"http://127.0.0.1:{port}\"\n\
         [storage]\nkind = \"sqlite\"\nurl = \"sqlite://shortener.db\"\n"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_is_made_and_followed_and_nothing_else_is_asked() {
    let app = on_own_port();
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    let target = app.url("/healthz");
    fill(page, "#url", &target).await;
    submit(page).await;
    let short = text_when(page, "#short-url", |text| text.starts_with("http")).await;
    let code = short.rsplit('/').next().unwrap().to_owned();
    assert_eq!(short, app.url(&format!("/{code}")));
    // The QR code of the link is shown, from the API.
    text_when(page, "#result", |_| true).await;
    let qr = page.find(Locator::Id("qr")).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while qr.attr("hidden").await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "no QR code shown");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    screenshot(page, "created").await;

    // Nothing was fetched from another origin: every resource the page loaded is its own.
    let resources = page
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name)",
            vec![],
        )
        .await
        .unwrap();
    let resources: Vec<String> = serde_json::from_value(resources).unwrap();
    assert!(resources.len() >= 3, "{resources:?}");
    for resource in &resources {
        assert!(
            resource.starts_with(&app.base),
            "{resource} is another origin"
        );
    }

    // The link is an <a href>: following it ends on the target.
    page.find(Locator::Id("short-url"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while page.current_url().await.unwrap().as_str() != target {
        assert!(Instant::now() < deadline, "not redirected to {target}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_a_taken_alias_show_their_detail_in_the_alert() {
    let app = spawn_app(BASE_CONFIG);
    let taken = client()
        .post(app.url("/api/v1/links"))
        .json(&json!({"url": "https://example.com/", "alias": "taken"}))
        .send()
        .await
        .unwrap();
    assert_eq!(taken.status(), 201);
    let browser = Browser::start(390, 844).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();

    fill(page, "#url", "javascript:alert(1)").await;
    submit(page).await;
    let alert = text_when(page, "#url-error", |text| !text.is_empty()).await;
    assert!(alert.starts_with("url:"), "{alert}");
    let role = page
        .find(Locator::Id("url-error"))
        .await
        .unwrap()
        .attr("role")
        .await
        .unwrap();
    assert_eq!(role.as_deref(), Some("alert"));
    let invalid = page
        .find(Locator::Id("url"))
        .await
        .unwrap()
        .attr("aria-invalid")
        .await
        .unwrap();
    assert_eq!(invalid.as_deref(), Some("true"));

    fill(page, "#url", "https://example.com/other").await;
    open_options(page).await;
    fill(page, "#alias", "taken").await;
    submit(page).await;
    let alert = text_when(page, "#alias-error", |text| !text.is_empty()).await;
    assert!(alert.starts_with("alias:"), "{alert}");
    screenshot(page, "taken-alias-phone").await;
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_counts_down_from_retry_after() {
    let app = spawn_app(&format!("{BASE_CONFIG}{ONE_CREATE}"));
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    fill(page, "#url", "https://example.com/one").await;
    submit(page).await;
    text_when(page, "#short-url", |text| text.starts_with("http")).await;
    fill(page, "#url", "https://example.com/two").await;
    submit(page).await;
    let first = text_when(page, "#limit", |text| text.contains("try again in")).await;
    let seconds = |text: &str| -> u64 {
        let after = text.split("try again in ").nth(1).unwrap();
        after.split(' ').next().unwrap().parse().unwrap()
    };
    assert!(seconds(&first) > 1, "{first}");
    let disabled = page
        .find(Locator::Id("submit"))
        .await
        .unwrap()
        .attr("disabled")
        .await
        .unwrap();
    assert!(disabled.is_some(), "the button waits out the countdown");
    // It counts down.
    let later = text_when(page, "#limit", |text| {
        text.contains("try again in") && seconds(text) < seconds(&first)
    })
    .await;
    screenshot(page, "countdown").await;
    assert!(seconds(&later) < seconds(&first));
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_copy_button_puts_the_short_url_on_the_clipboard() {
    let app: TestApp = spawn_app(BASE_CONFIG);
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    fill(page, "#url", "https://example.com/copied").await;
    submit(page).await;
    let short = text_when(page, "#short-url", |text| text.starts_with("http")).await;
    page.find(Locator::Id("copy"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let said = text_when(page, "#copied", |text| !text.is_empty()).await;
    assert_eq!(said, "Copied.");
    // Read the clipboard back as a user would: paste it into a field.
    fill(page, "#url", "").await;
    let input = page.find(Locator::Id("url")).await.unwrap();
    input.send_keys(&(Key::Control + "v")).await.unwrap();
    let pasted = input.prop("value").await.unwrap().unwrap_or_default();
    assert_eq!(pasted, short);
    screenshot(page, "copied").await;
    browser.close().await;
}
