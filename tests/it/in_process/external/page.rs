//! The web page in a real headless Chromium (WebDriver): a link is made and followed, bad
//! input and a taken alias show their detail in the field's alert, a 429 counts down, the
//! copy button fills the clipboard, the page asks no other origin for anything, and it
//! works from the keyboard with named fields, a visible focus and AA text contrast. Each
//! test saves a screenshot under `target/browser/`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource as _, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::json;
use shortener_testkit::browser::Browser;
use shortener_tests::{Api, InProcessApp, TestConfig, client, free_port, spawn_in_process};

pub(crate) async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.unwrap();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// The text of `css` once `ready` holds for it (the page answers after a fetch).
pub(crate) async fn text_when(browser: &Client, css: &str, ready: impl Fn(&str) -> bool) -> String {
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

pub(crate) async fn fill(browser: &Client, css: &str, value: &str) {
    let input = browser.find(Locator::Css(css)).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys(value).await.unwrap();
}

pub(crate) async fn open_options(browser: &Client) {
    browser
        .find(Locator::Css("details.options summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

pub(crate) async fn submit(browser: &Client) {
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
fn on_own_port() -> InProcessApp {
    let port = free_port().unwrap();
    spawn_in_process(&TestConfig::default().with(|c| {
        c.server.bind = ([127, 0, 0, 1], port).into();
        c.server.public_url = format!("http://127.0.0.1:{port}");
        c.links.allow_private_targets = true;
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_is_made_and_followed_and_nothing_else_is_asked() {
    let app = on_own_port();
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    // A link to another server on this machine (one to this node itself is refused).
    let elsewhere = spawn_in_process(&TestConfig::default());
    let target = elsewhere.url("/healthz");
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
    let app = spawn_in_process(&TestConfig::default());
    let taken = json!({"url": "https://example.com/", "alias": "taken"});
    assert_eq!(Api::of(&app).create(&taken).await.status, 201);
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
    // The create policy of the countdown test: one link, then a long wait.
    let app = spawn_in_process(&TestConfig::default().policy("create", 1, 0.01));
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
    let app: InProcessApp = spawn_in_process(&TestConfig::default());
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

/// Presses and releases `key` wherever the focus is.
async fn press(page: &Client, key: Key) {
    let keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down {
            value: char::from(key),
        })
        .then(KeyAction::Up {
            value: char::from(key),
        });
    page.perform_actions(keys).await.unwrap();
}

async fn focused(page: &Client) -> String {
    let id = page
        .execute(
            "return document.activeElement.id || document.activeElement.tagName",
            vec![],
        )
        .await
        .unwrap();
    id.as_str().unwrap_or_default().to_owned()
}

/// WCAG 2 contrast of each text element against the first opaque background behind it.
const CONTRASTS: &str = r"
const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
const lum = ([r, g, b]) => {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
};
const background = (e) => {
  for (; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] > 0.99)) return c.slice(0, 3);
  }
  return [255, 255, 255];
};
return [...document.querySelectorAll('h1, h2, label, .hint, p, a, button, summary, th, td, input')]
  .filter((e) => e.offsetParent !== null && e.textContent.trim() !== '' || e.tagName === 'INPUT')
  .map((e) => {
    const [a, b] = [lum(rgb(getComputedStyle(e).color)), lum(background(e))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    return [e.tagName + (e.id ? '#' + e.id : e.className ? '.' + e.className : ''), Math.round(ratio * 100) / 100];
  });
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_form_works_from_the_keyboard_with_labels_focus_and_contrast() {
    let app = spawn_in_process(&TestConfig::default());
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/")).await.unwrap();
    open_options(page).await;
    // Every field and button has an accessible name.
    let unnamed = page
        .execute(
            "return [...document.querySelectorAll('input, button')]
               .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                            && !e.textContent.trim())
               .map(e => e.id || e.tagName)",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(unnamed, json!([]));
    // Text meets WCAG AA: 4.5:1 against its background.
    let contrasts: Vec<(String, f64)> =
        serde_json::from_value(page.execute(CONTRASTS, vec![]).await.unwrap()).unwrap();
    assert!(contrasts.len() > 10, "{contrasts:?}");
    let low: Vec<_> = contrasts.iter().filter(|(_, ratio)| *ratio < 4.5).collect();
    assert!(low.is_empty(), "below 4.5:1: {low:?}");

    // From the top of the page, Tab reaches the URL field, whose focus is visible.
    page.goto(&app.url("/")).await.unwrap();
    let mut tabs = 0;
    while focused(page).await != "url" {
        press(page, Key::Tab).await;
        tabs += 1;
        assert!(tabs <= 5, "Tab does not reach the URL field");
    }
    let ring = page
        .execute(
            "const s = getComputedStyle(document.activeElement);
             return (s.outlineStyle !== 'none' && s.outlineWidth !== '0px') || s.boxShadow !== 'none'",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(ring, json!(true), "the focused field shows no focus ring");
    page.active_element()
        .await
        .unwrap()
        .send_keys("https://example.com/keyboard")
        .await
        .unwrap();
    press(page, Key::Enter).await;
    text_when(page, "#short-url", |text| text.starts_with("http")).await;
    // The new link takes the focus, so that a keyboard user lands on it.
    assert_eq!(focused(page).await, "short-url");
    screenshot(page, "keyboard").await;
    browser.close().await;
}

/// Swagger UI, served under a Content-Security-Policy that allows its inline scripts by
/// their hashes only, still draws the API: its scripts ran.
#[tokio::test]
async fn swagger_ui_runs_under_its_content_security_policy() {
    let app = spawn_in_process(&TestConfig::default());
    let response = client().get(app.url("/docs")).send().await.unwrap();
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    assert!(!policy.contains("unsafe-eval"), "{policy}");
    assert!(!policy.contains("script-src 'unsafe-inline'"), "{policy}");
    let browser = Browser::start(1200, 900).await;
    let page = &browser.client;
    page.goto(&app.url("/docs")).await.unwrap();
    let operations = text_when(page, "#ui", |text| text.contains("/api/v1/links/bulk")).await;
    assert!(operations.contains("/readyz"), "{operations}");
    screenshot(page, "docs").await;
    browser.close().await;
}
