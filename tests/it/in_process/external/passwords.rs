//! Links behind a password: the page that hides the target from every visit that has not
//! given it (GET, HEAD, bots), the form and `X-Link-Password` that open it and count
//! the visit, and the `unlock` policy that bounds guesses per client and link and per
//! link over every client, on one node and across nodes sharing Redis.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use shortener_tests::config::OnErrorConfig;
use shortener_tests::{Api, RedisServer, TestConfig, TestDatabase, client, spawn_in_process};

use crate::support::once_flushed;
use crate::support::{Keys as _, secret};

const TARGET: &str = "https://secret.example/plans?q=1";

/// The test process (127.0.0.1) is a trusted proxy, so `X-Forwarded-For` names clients.
fn config() -> TestConfig {
    TestConfig::default()
        .with(|c| c.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()])
        .keys(&[("alice", "create,read,update,delete")])
}

/// The form's post from `client` (an address in `X-Forwarded-For`).
async fn post_form(
    http: &reqwest::Client,
    url: String,
    client: &str,
    password: &str,
) -> reqwest::Response {
    // The few characters of these passwords, as a browser encodes a form.
    let encoded = password
        .replace('%', "%25")
        .replace('+', "%2B")
        .replace(' ', "+");
    (http.post(url))
        .header("x-forwarded-for", client)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("password={encoded}"))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_locked_link_opens_only_with_its_password_and_bounds_guesses() {
    let app = spawn_in_process(&config());
    let (http, anonymous) = (client(), Api::of(&app));
    let alice = anonymous.with_key(&secret("alice"));
    let body = json!({"url": TARGET, "alias": "plans", "password": "correct horse"});
    // A password needs an owner, and eight characters.
    let problem = anonymous
        .create(&body)
        .await
        .expect(StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("password: ")
    );
    let short = json!({"url": TARGET, "password": "short"});
    let problem = alice.create(&short).await.expect(StatusCode::BAD_REQUEST);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("password: ")
    );
    let created = alice.create(&body).await.expect(StatusCode::CREATED);
    assert_eq!(created["password_protected"], true);
    assert!(created.get("password").is_none(), "{created}");

    // Without the password: the page, never the target, never cached.
    for (method, agent) in [
        (
            reqwest::Method::GET,
            "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
        ),
        (
            reqwest::Method::GET,
            "Googlebot/2.1 (+http://www.google.com/bot.html)",
        ),
        (reqwest::Method::HEAD, "curl/8.5.0"),
    ] {
        let response = (http.request(method.clone(), app.url("/plans?utm=x")))
            .header("user-agent", agent)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{method} by {agent}");
        let headers = response.headers().clone();
        assert!(headers.get("location").is_none(), "{method} by {agent}");
        assert_eq!(headers["cache-control"], "no-store");
        assert!(
            headers["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("default-src 'none'")
        );
        let page = response.text().await.unwrap();
        assert!(!page.contains("secret.example"), "{page}");
        if method == reqwest::Method::GET {
            assert!(page.contains(r#"action="/plans?q=utm%3Dx""#), "{page}");
        }
    }

    // A wrong password through the form: the page again, saying so.
    let wrong = post_form(&http, app.url("/plans"), "198.51.100.7", "wrong horse").await;
    assert_eq!(wrong.status(), StatusCode::FORBIDDEN);
    assert!(wrong.headers().get("location").is_none());
    assert!(wrong.text().await.unwrap().contains("Wrong password."));
    // The right one: on to the target, with the visit's query, and counted.
    let right = post_form(
        &http,
        app.url("/plans?q=utm%3Dx"),
        "198.51.100.7",
        "correct horse",
    )
    .await;
    assert_eq!(right.status(), StatusCode::SEE_OTHER);
    assert_eq!(right.headers()["location"], TARGET);
    assert_eq!(right.headers()["cache-control"], "no-store");
    // An API client: `X-Link-Password`.
    let header = |password: &'static str| {
        (http.get(app.url("/plans")))
            .header("x-forwarded-for", "198.51.100.7")
            .header("x-link-password", password)
            .send()
    };
    let opened = header("correct horse").await.unwrap();
    assert_eq!(opened.status(), StatusCode::FOUND);
    assert_eq!(opened.headers()["location"], TARGET);
    assert_eq!(opened.headers()["cache-control"], "no-store");
    let refused = header("wrong horse!").await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let problem: Value = refused.json().await.unwrap();
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .starts_with("X-Link-Password: ")
    );
    let looked_up = alice.get("plans").await.body;
    assert_eq!(looked_up["visits"], 2, "the two opened visits: {looked_up}");
    assert_eq!(looked_up["url"], TARGET, "the owner sees the target");

    // Four attempts taken of five: one more, then this client waits.
    assert_eq!(
        header("wrong horse!").await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    let limited = header("correct horse").await.unwrap();
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("retry-after"));
    let limited = post_form(&http, app.url("/plans"), "198.51.100.7", "correct horse").await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.text().await.unwrap().contains("Too many attempts"));
    // Another client is not jammed by this one: its own guesses are left, and the link's
    // bucket over every client (30) has room.
    let other = post_form(&http, app.url("/plans"), "203.0.113.9", "correct horse").await;
    assert_eq!(other.status(), StatusCode::SEE_OTHER);

    // A link of the same client with its own buckets still opens.
    let body = json!({"url": TARGET, "alias": "other", "password": "battery staple"});
    assert_eq!(alice.create(&body).await.status, StatusCode::CREATED);
    let other = post_form(&http, app.url("/other"), "198.51.100.7", "battery staple").await;
    assert_eq!(other.status(), StatusCode::SEE_OTHER);

    // Without its password (`null`), the link redirects like any other.
    let opened = alice.patch("plans", &json!({"password": null})).await.body;
    assert_eq!(opened["password_protected"], false, "{opened}");
    let redirect = http.get(app.url("/plans")).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    assert_eq!(redirect.headers()["location"], TARGET);
}

/// Three nodes on one Redis, six clients guessing as fast as they can through all of them
/// for four seconds: the wrong guesses that were checked (403) stay within each client's
/// `unlock` bound and the link's `unlock_link` bound (`capacity + rate * elapsed`), the
/// rest are refused unchecked (429), and no answer shows
/// the target. Once the wait a refusal names is over, the right password opens the link,
/// and the visit it counts leaves nothing of the visitor in a dump of the database.
#[tokio::test]
async fn guesses_are_bounded_across_nodes() {
    let database = TestDatabase::create();
    let redis = RedisServer::start_private();
    let config = config()
        .postgres(database.url())
        .redis_limiter(redis.url(), OnErrorConfig::Local)
        .with(|c| {
            c.visits.flush_values_secs = 1;
            c.limiter.timeout_ms = 500;
        })
        .policy("unlock_link", 12, 0.5);
    let nodes: Vec<_> = (0..3).map(|_| spawn_in_process(&config)).collect();
    let http = client();
    let body = json!({"url": TARGET, "alias": "vault", "password": "correct horse"});
    let alice = |node: usize| Api::of(&nodes[node]).with_key(&secret("alice"));
    assert_eq!(alice(0).create(&body).await.status, StatusCode::CREATED);
    let urls: Vec<String> = nodes.iter().map(|node| node.url("/vault")).collect();
    let started = Instant::now();
    let stop = started + Duration::from_secs(4);
    let mut guessers = tokio::task::JoinSet::new();
    for guesser in 0..6 {
        let (http, urls) = (http.clone(), urls.clone());
        guessers.spawn(async move {
            let client = format!("192.0.2.{guesser}");
            let mut answers = Vec::new();
            for attempt in 0.. {
                if Instant::now() >= stop {
                    break;
                }
                let url = urls[(guesser + attempt) % urls.len()].clone();
                let guess = format!("guess {guesser}-{attempt:05}");
                let response = post_form(&http, url, &client, &guess).await;
                let retry_after = response.headers().get("retry-after").cloned();
                let status = response.status();
                answers.push((status, retry_after, response.text().await.unwrap()));
            }
            answers
        });
    }
    let by_client = guessers.join_all().await;
    let answers: Vec<_> = by_client.iter().flatten().cloned().collect();
    let elapsed = started.elapsed().as_secs_f64();
    let checked = answers
        .iter()
        .filter(|(status, ..)| *status == StatusCode::FORBIDDEN)
        .count();
    let refused = answers
        .iter()
        .filter(|(status, ..)| *status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(
        checked + refused,
        answers.len(),
        "every answer is 403 or 429"
    );
    // Per client: capacity 5, one more every 12 s. Per link over every client: the
    // `unlock_link` policy of this test, capacity 12, one more every 2 s.
    let per_client = 5 + (elapsed / 12.0).floor() as usize;
    for (client, answers) in by_client.iter().enumerate() {
        let checked = (answers.iter())
            .filter(|(status, ..)| *status == StatusCode::FORBIDDEN)
            .count();
        assert!(
            checked <= per_client,
            "client {client}: {checked} checked, bound {per_client}"
        );
    }
    let per_link = 12 + (elapsed / 2.0).floor() as usize;
    assert!(
        checked >= 12 && checked <= per_link,
        "{checked} checked, bound {per_link}, of {} guesses",
        answers.len()
    );
    assert!(refused > 100, "{refused} refused in {elapsed:.1} s");
    assert!(
        !answers
            .iter()
            .any(|(.., page)| page.contains("secret.example")),
        "an answer before the password showed the target"
    );

    // Every refusal names a wait within a client's refill (12 s). A new client has its
    // own bucket; the link's gains a token every 2 s, and nobody guesses any more.
    let waits: Vec<u64> = (answers.iter())
        .filter_map(|(_, retry_after, _)| retry_after.as_ref())
        .map(|wait| wait.to_str().unwrap().parse().unwrap())
        .collect();
    assert!(!waits.is_empty(), "a 429 names its wait");
    assert!(
        waits.iter().all(|wait| (1..=12).contains(wait)),
        "{waits:?}"
    );
    // Then the right password from a new client, once the link's bucket has a token: a
    // refusal takes nothing, and says how long to wait for the next one.
    let browser = "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0";
    let mut opened = None;
    for _ in 0..3 {
        // Through `X-Link-Password`, whose request's `Referer` is the visit's own (a
        // form's post comes from the unlock page).
        let answer = (http.get(nodes[1].url("/vault")))
            .header("x-forwarded-for", "198.51.100.23")
            .header("user-agent", browser)
            .header("referer", "https://forum.example/thread/42?user=someone")
            .header("x-link-password", "correct horse")
            .send()
            .await
            .unwrap();
        if answer.status() != StatusCode::TOO_MANY_REQUESTS {
            opened = Some(answer);
            break;
        }
        let wait: u64 = answer.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(wait <= 2, "the link's bucket refills every 2 s: {wait}");
        tokio::time::sleep(Duration::from_secs(wait)).await;
    }
    let opened = opened.expect("the link's bucket refilled within its waits");
    assert_eq!(opened.status(), StatusCode::FOUND);
    assert_eq!(opened.headers()["location"], TARGET);
    let url = alice(1).url("/links/vault/visits?by=browser");
    let browsers = once_flushed(&http, url, 1).await;
    assert_eq!(browsers["values"][0]["value"], "Firefox", "{browsers}");
    let dump = database.dump();
    assert!(dump.contains("forum.example"), "the referring host is kept");
    for part in [
        "Mozilla",
        "Gecko",
        "198.51.100",
        "192.0.2",
        "thread/42",
        "someone",
    ] {
        assert!(!dump.contains(part), "`{part}` is in the database");
    }
}
