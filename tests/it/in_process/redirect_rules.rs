//! Redirect rules through the API and real redirects: each condition with a visitor it
//! sends and one it does not, the first match winning, the dry run agreeing with the
//! visits, the caching of answers that depend on the visitor, the visits counted by
//! rule, and rules refused, replaced and cleared by their fields.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::{Api, TestConfig, client, spawn_in_process};

use crate::support::{Keys as _, once_flushed, secret, values};

const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) \
                      AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 \
                      Safari/604.1";
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 \
                      (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const FRENCH: &str = "fr-CH, fr;q=0.9, en;q=0.8";

fn rules() -> Value {
    let when = |conditions: Value, url: &str| json!({"conditions": conditions, "url": url});
    json!([
        {"name": "iphone", "conditions": [{"type": "os", "value": "ios"}],
         "url": "https://apps.example/ios"},
        when(json!([{"type": "browser", "value": "firefox"}, {"type": "device", "value": "desktop"}]),
             "https://example.com/firefox"),
        when(json!([{"type": "language", "value": "fr"}]), "https://example.fr/"),
        when(json!([{"type": "country", "value": "FR"}]), "https://example.com/from-france"),
        {"conditions": [{"type": "query", "key": "ref", "value": "mail"}],
         "url": "https://example.com/from-mail", "redirect_status": 307},
        when(json!([{"type": "network", "value": "2001:db8:1:2::/64"}]), "https://example.com/v6"),
        when(json!([{"type": "after", "value": "2000-01-01T00:00:00Z"},
                    {"type": "before", "value": "2001-01-01T00:00:00Z"},
                    {"type": "query", "key": "old"}]), "https://example.com/past"),
        when(json!([{"type": "after", "value": "2020-01-01T00:00:00Z"},
                    {"type": "before", "value": "2999-01-01T00:00:00Z"},
                    {"type": "query", "key": "now"}]), "https://example.com/window"),
        {"name": "crawlers", "conditions": [{"type": "device", "value": "bot"}],
         "url": "https://example.com/bots"},
    ])
}

/// One imagined visitor: a `User-Agent`, an `Accept-Language`, a client address (the
/// service trusts the loopback proxy's `X-Forwarded-For`), a query; and where it goes.
struct Visitor {
    agent: &'static str,
    language: Option<&'static str>,
    address: &'static str,
    query: &'static str,
    expected: (&'static str, u16, &'static str),
}

fn visitors() -> Vec<Visitor> {
    let visitor = |agent, language, address, query, expected| Visitor {
        agent,
        language,
        address,
        query,
        expected,
    };
    const OWN: &str = "https://example.com/own";
    vec![
        // The first match wins: an iPhone in French goes to the App Store.
        visitor(
            IPHONE,
            Some(FRENCH),
            "192.0.2.1",
            "",
            ("https://apps.example/ios", 302, "iphone"),
        ),
        visitor(
            FIREFOX,
            None,
            "192.0.2.1",
            "",
            ("https://example.com/firefox", 302, "rules[1]"),
        ),
        visitor(CHROME, None, "192.0.2.1", "", (OWN, 302, "default")),
        visitor(
            CHROME,
            Some(FRENCH),
            "192.0.2.1",
            "",
            ("https://example.fr/", 302, "rules[2]"),
        ),
        visitor(
            CHROME,
            Some("en-GB, fr;q=0"),
            "192.0.2.1",
            "",
            (OWN, 302, "default"),
        ),
        visitor(
            CHROME,
            None,
            "203.0.113.9",
            "",
            ("https://example.com/from-france", 302, "rules[3]"),
        ),
        visitor(CHROME, None, "198.51.100.9", "", (OWN, 302, "default")),
        visitor(
            CHROME,
            None,
            "192.0.2.1",
            "ref=mail",
            ("https://example.com/from-mail", 307, "rules[4]"),
        ),
        visitor(CHROME, None, "192.0.2.1", "ref=news", (OWN, 302, "default")),
        visitor(
            CHROME,
            None,
            "2001:db8:1:2::77",
            "",
            ("https://example.com/v6", 302, "rules[5]"),
        ),
        visitor(CHROME, None, "2001:db8:1:3::1", "", (OWN, 302, "default")),
        visitor(CHROME, None, "192.0.2.1", "old", (OWN, 302, "default")),
        visitor(
            CHROME,
            None,
            "192.0.2.1",
            "now",
            ("https://example.com/window", 302, "rules[7]"),
        ),
        visitor(
            GOOGLEBOT,
            None,
            "192.0.2.1",
            "",
            ("https://example.com/bots", 302, "crawlers"),
        ),
    ]
}

#[tokio::test]
async fn each_condition_sends_the_visitors_it_names_and_no_other() {
    use shortener_tests::mmdb::country_database;
    let dir = shortener_tests::TempDir::new();
    let database = dir.path().join("countries.mmdb");
    std::fs::write(&database, country_database(&[([203, 0, 113, 0], 24, "FR")])).unwrap();
    let app = spawn_in_process(
        &TestConfig::default()
            .in_memory()
            .with(|c| {
                c.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
                c.links.redirect_max_age_secs = 3600;
                c.visits.flush_values_secs = 1;
                c.visits.geoip_db = database.display().to_string();
            })
            .keys(&[("alice", "create,read,update")]),
    );
    let http = client();
    let alice = Api::of(&app).with_key(&secret("alice"));
    let made = alice
        .create(&json!({"url": "https://example.com/own", "alias": "routed", "rules": rules()}))
        .await;
    assert_eq!(made.status, StatusCode::CREATED);
    let body = made.body;
    assert_eq!(
        body["rules"],
        rules(),
        "the link's body shows its rules as given"
    );
    let plain = alice
        .create(&json!({"url": "https://example.com/plain", "alias": "plain"}))
        .await;
    assert_eq!(plain.status, StatusCode::CREATED);

    let mut by_rule = std::collections::BTreeMap::<&str, u64>::new();
    for visitor in visitors() {
        let (location, status, rule) = visitor.expected;
        let path = if visitor.query.is_empty() {
            "/routed".to_owned()
        } else {
            format!("/routed?{}", visitor.query)
        };
        let mut request = (http.get(app.url(&path)))
            .header("user-agent", visitor.agent)
            .header("x-forwarded-for", visitor.address);
        if let Some(language) = visitor.language {
            request = request.header("accept-language", language);
        }
        let answer = request.send().await.unwrap();
        let what = format!(
            "{} {:?} {} {path}",
            visitor.agent, visitor.language, visitor.address
        );
        assert_eq!(answer.status().as_u16(), status, "{what}");
        assert_eq!(answer.headers()["location"], location, "{what}");
        assert_eq!(
            answer.headers()["cache-control"],
            "private, max-age=0",
            "{what}"
        );
        assert_eq!(
            answer.headers()["vary"],
            "User-Agent, Accept-Language",
            "{what}"
        );
        *by_rule.entry(rule).or_default() += 1;

        // The dry run of the same visitor answers the same, and counts nothing.
        let mut imagined = json!({"user_agent": visitor.agent, "address": visitor.address,
                                  "query": visitor.query});
        if let Some(language) = visitor.language {
            imagined["accept_language"] = json!(language);
        }
        let resolve = alice.request(Method::POST, "/links/routed/resolve");
        let dry = alice.send(resolve.json(&imagined)).await.body;
        assert_eq!(dry["location"], location, "dry run of {what}: {dry}");
        assert_eq!(dry["redirect_status"], status, "dry run of {what}");
        assert_eq!(dry["counted_as_rule"], rule, "dry run of {what}");
    }
    // A `GET` dry run imagines the caller: Firefox on a desktop.
    let resolve = alice.request(Method::GET, "/links/routed/resolve?query=ref%3Dmail");
    let dry = alice.send(resolve.header("user-agent", FIREFOX)).await.body;
    assert_eq!(dry["location"], "https://example.com/firefox", "{dry}");
    assert_eq!(dry["rule"], 1);

    // A plain link keeps its own caching (an hour here), and names nothing it did not
    // read; the rules' answers above were private whatever the service's caching.
    let plain = http.get(app.url("/plain")).header("user-agent", IPHONE);
    let plain = plain.send().await.unwrap();
    assert_eq!(plain.headers()["location"], "https://example.com/plain");
    assert!(
        plain.headers()["cache-control"]
            .to_str()
            .unwrap()
            .starts_with("public")
    );
    assert!(plain.headers().get("vary").is_none());

    // Visits are counted by the rule that sent them.
    let total = by_rule.values().sum();
    let url = alice.url("/links/routed/visits?by=rule");
    let mut counted = values(&once_flushed(&http, url, total).await);
    counted.sort();
    let expected: Vec<(String, u64)> = (by_rule.iter())
        .map(|(rule, visits)| ((*rule).to_owned(), *visits))
        .collect();
    assert_eq!(counted, expected);
}

#[tokio::test]
async fn rules_are_refused_by_their_field_and_replaced_or_cleared_by_an_edit() {
    let app = spawn_in_process(
        &TestConfig::default()
            .in_memory()
            .keys(&[("alice", "create,read,update")]),
    );
    let http = client();
    let alice = Api::of(&app).with_key(&secret("alice"));
    let refusals = [
        (json!("nope"), "rules"),
        (
            json!([{"url": "https://a.example/"}, {"conditions": [], "url": 5}]),
            "rules[1].url",
        ),
        (
            json!([{"url": "https://a.example/"}, {"url": "https://b.example/"},
                   {"conditions": [{"type": "os", "value": "beos"}], "url": "https://c.example/"}]),
            "rules[2].conditions[0].value",
        ),
        (
            json!([{"conditions": [{"type": "mood", "value": "x"}], "url": "https://a.example/"}]),
            "rules[0].conditions[0].type",
        ),
        (
            json!([{"url": "https://a.example/", "split": [{"url": "https://b.example/", "weight": 1}]}]),
            "rules[0]",
        ),
        (
            json!([{"split": [{"url": "https://a.example/", "weight": 1}]}]),
            "rules[0].split",
        ),
        (
            json!([{"split": [{"url": "https://a.example/", "weight": 0},
                           {"url": "https://b.example/", "weight": 1}]}]),
            "rules[0].split[0].weight",
        ),
        (json!([{"url": "javascript:alert(1)"}]), "rules[0].url"),
        (
            json!([{"name": "a", "url": "https://a.example/"}, {"name": "a", "url": "https://b.example/"}]),
            "rules[1].name",
        ),
        (
            json!([{"conditions": [{"type": "network", "value": "10.0.0.0/33"}], "url": "https://a.example/"}]),
            "rules[0].conditions[0].value",
        ),
        (
            json!([{"conditions": [{"type": "after", "value": "tomorrow"}], "url": "https://a.example/"}]),
            "rules[0].conditions[0].value",
        ),
        (
            json!([{"url": "https://a.example/", "redirect_status": 200}]),
            "rules[0].redirect_status",
        ),
        (
            json!([{"url": "https://a.example/", "colour": "red"}]),
            "rules[0].colour",
        ),
    ];
    for (rules, field) in refusals {
        let answer = alice
            .create(&json!({"url": "https://example.com/", "rules": rules}))
            .await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{rules}");
        let detail = answer.body["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!("{field}: ")),
            "{rules}: {detail}"
        );
    }
    // In a bulk create, under the item's place.
    let bulk = alice
        .create_bulk(&json!({"links": [{"url": "https://example.com/",
                                 "rules": [{"conditions": [{"type": "device", "value": "toaster"}],
                                            "url": "https://a.example/"}]}]}))
        .await
        .body;
    let detail = bulk["results"][0]["problem"]["detail"].as_str();
    let field = "links[0]: rules[0].conditions[0].value: ";
    assert!(detail.unwrap_or_default().starts_with(field), "{bulk}");

    // Made, replaced by an edit, cleared by `null`.
    let made = alice
        .create(&json!({"url": "https://example.com/", "alias": "edited",
                      "rules": [{"conditions": [{"type": "query", "key": "a"}], "url": "https://a.example/"}]}))
        .await;
    assert_eq!(made.status, StatusCode::CREATED);
    let replaced =
        json!([{"conditions": [{"type": "query", "key": "b"}], "url": "https://b.example/"}]);
    let body = alice
        .patch("edited", &json!({"rules": replaced}))
        .await
        .body;
    assert_eq!(body["rules"], replaced);
    let visit = |query: &'static str| http.get(app.url(&format!("/edited?{query}"))).send();
    assert_eq!(
        visit("a").await.unwrap().headers()["location"],
        "https://example.com/"
    );
    assert_eq!(
        visit("b").await.unwrap().headers()["location"],
        "https://b.example/"
    );
    let body = alice.patch("edited", &json!({"rules": null})).await.body;
    assert_eq!(body["rules"], json!([]));
    let cleared = visit("b").await.unwrap();
    assert_eq!(cleared.headers()["location"], "https://example.com/");
    assert!(cleared.headers().get("vary").is_none());
}
