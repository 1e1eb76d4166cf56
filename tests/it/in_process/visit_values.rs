//! Where visits come from, through the API: referrers, browsers, operating systems and
//! devices counted per link and day from real requests, `DNT` respected when asked, the
//! top values of one link and of all a key's links, and nothing of a visitor in the
//! database.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, once_flushed, secret, values};

const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
                      (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) \
                      AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 \
                      Safari/604.1";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

fn pairs(expected: &[(&str, u64)]) -> Vec<(String, u64)> {
    (expected.iter())
        .map(|(value, visits)| ((*value).to_owned(), *visits))
        .collect()
}

#[tokio::test]
async fn visits_are_counted_by_referrer_browser_os_and_device() {
    let app = spawn_in_process(
        &TestConfig::default()
            .with(|c| {
                c.visits.respect_do_not_track = true;
                c.visits.flush_values_secs = 1;
            })
            .keys(&[("alice", "create,read")]),
    );
    let http = client();
    let alice = Api::of(&app).with_key(&secret("alice"));
    let created = alice
        .create(&json!({"url": "https://example.com/launch", "alias": "launch"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let visits: [(&str, Option<&str>, bool); 5] = [
        (
            CHROME,
            Some("https://News.Example.com/item?id=7&user=me"),
            false,
        ),
        (IPHONE, None, false),
        (GOOGLEBOT, None, false),
        (CHROME, Some("https://private.example/secret"), true),
        (IPHONE, Some("http://192.0.2.1/"), false),
    ];
    for (agent, referer, do_not_track) in visits {
        let mut request = http.get(app.url("/launch")).header("user-agent", agent);
        if let Some(referer) = referer {
            request = request.header("referer", referer);
        }
        if do_not_track {
            request = request.header("dnt", "1");
        }
        assert_eq!(request.send().await.unwrap().status(), StatusCode::FOUND);
    }
    // A HEAD counts nothing.
    let head = http.head(app.url("/launch")).header("user-agent", CHROME);
    assert_eq!(head.send().await.unwrap().status(), StatusCode::FOUND);

    // Counted in memory, written by the next flush of values (every second here).
    let url = alice.url("/links/launch/visits?by=referrer");
    let by_referrer = once_flushed(&http, url, 4).await;
    assert_eq!(by_referrer["by"], "referrer");
    let today = by_referrer["days"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (today["visits"].as_u64(), today["bots"].as_u64()),
        (Some(4), Some(1))
    );
    assert_eq!(
        values(&by_referrer),
        pairs(&[("direct", 2), ("news.example.com", 1), ("other", 1)]),
        "the DNT visit counts no values; an address is no referrer"
    );
    for (by, expected) in [
        (
            "browser",
            pairs(&[("Safari", 2), ("Chrome", 1), ("Googlebot", 1)]),
        ),
        ("os", pairs(&[("iOS", 2), ("Windows", 1), ("other", 1)])),
        (
            "device",
            pairs(&[("mobile", 2), ("bot", 1), ("desktop", 1)]),
        ),
    ] {
        let one = alice.visits("launch", &format!("by={by}")).await.body;
        assert_eq!(values(&one), expected, "{by} of the link");
        let all = (alice.all_visits(&format!("by={by}&limit=2")).await).body;
        assert_eq!(values(&all), expected[..2], "{by} of every link, the top 2");
    }
    // The link has no tag: a tag filter leaves nothing.
    let tagged = alice.all_visits("by=device&tag=launch").await.body;
    assert_eq!(values(&tagged), [], "{tagged}");
    let bad = alice.all_visits("by=ip").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let problem = bad.body;
    assert!(
        problem["detail"].as_str().unwrap().contains("by"),
        "{problem}"
    );

    // Nothing of a visitor is in the database: no User-Agent, no URL, no address.
    let mut db = crate::support::open_sqlite(&app.dir.join("shortener.db")).await;
    let stored: Vec<String> = sqlx::query_scalar("SELECT value FROM link_dimensions")
        .fetch_all(&mut db)
        .await
        .unwrap();
    assert!(!stored.is_empty());
    for value in stored {
        assert!(
            !["Mozilla", "/", "192.0.2", "user=me", "private"]
                .iter()
                .any(|part| value.contains(part)),
            "{value}"
        );
    }
    // Nor in any byte of the files: the database and its write-ahead log.
    for file in ["shortener.db", "shortener.db-wal"] {
        let bytes = std::fs::read(app.dir.join(file)).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for part in ["Mozilla", "KHTML", "192.0.2", "user=me", "private.example"] {
            assert!(!text.contains(part), "`{part}` is in {file}");
        }
    }
}

/// With `visits.geoip_db`, visits are counted by the country of their client (behind a
/// trusted proxy, the forwarded address); a new file is read again within seconds.
#[tokio::test]
async fn visits_are_counted_by_country_from_the_operator_s_database() {
    use shortener_tests::mmdb::country_database;
    let dir = shortener_tests::TempDir::new();
    let database = dir.path().join("countries.mmdb");
    std::fs::write(
        &database,
        country_database(&[([203, 0, 113, 0], 24, "NL"), ([198, 51, 100, 0], 24, "de")]),
    )
    .unwrap();
    let app = spawn_in_process(
        &TestConfig::default()
            .in_memory()
            .with(|c| {
                c.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
                c.visits.flush_values_secs = 1;
                c.visits.geoip_db = database.display().to_string();
            })
            .keys(&[("alice", "create,read")]),
    );
    let http = client();
    let alice = Api::of(&app).with_key(&secret("alice"));
    let created = alice
        .create(&json!({"url": "https://example.com/", "alias": "world"}))
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let visit = |client: &'static str| {
        (http.get(app.url("/world")))
            .header("x-forwarded-for", client)
            .send()
    };
    for client in ["203.0.113.7", "203.0.113.99", "198.51.100.1", "192.0.2.1"] {
        assert_eq!(visit(client).await.unwrap().status(), StatusCode::FOUND);
    }
    let url = alice.url("/links/world/visits?by=country");
    let countries = || async { values(&once_flushed(&http, url.clone(), 3).await) };
    assert_eq!(
        countries().await,
        pairs(&[("NL", 2), ("DE", 1)]),
        "an address of no known network counts no country"
    );
    // The operator replaces the file: 203.0.113.0/24 is in Belgium now.
    std::fs::write(&database, country_database(&[([203, 0, 113, 0], 24, "BE")])).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert_eq!(
            visit("203.0.113.8").await.unwrap().status(),
            StatusCode::FOUND
        );
        let counted = countries().await;
        if counted.iter().any(|(code, _)| code == "BE") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the new file was not read: {counted:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
