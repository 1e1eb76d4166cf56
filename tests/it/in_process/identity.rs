//! Client identity behind a trusted proxy: every forged variant lands in the honest
//! client's bucket. Each case spends an honest client's three tokens first, so a forged
//! request that got a bucket of its own would be admitted (201) instead of refused (429).

use reqwest::{Method, StatusCode};
use serde_json::json;
use shortener_tests::config::ClientIpHeader;
use shortener_tests::{Api, TestConfig, spawn_in_process};

/// Capacity 3, practically no refill, the test process (127.0.0.1) a trusted proxy.
fn config(client_ip_header: ClientIpHeader) -> TestConfig {
    TestConfig::default()
        .in_memory()
        .policy("create", 3, 0.001)
        .with(|c| {
            c.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            c.server.client_ip_header = client_ip_header;
        })
}

async fn create(api: &Api, headers: &[(&str, String)]) -> StatusCode {
    let mut request =
        (api.request(Method::POST, "/links")).json(&json!({"url": "https://example.com/"}));
    // `header` appends: a name given twice is sent as two header lines, in order.
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    api.send(request).await.status
}

/// Spends the bucket of `honest`, then checks that every forged request is refused.
async fn assert_same_bucket(
    api: &Api,
    case: &str,
    honest: &[(&str, String)],
    forged: impl IntoIterator<Item = Vec<(&'static str, String)>>,
) {
    for _ in 0..3 {
        assert_eq!(
            create(api, honest).await,
            StatusCode::CREATED,
            "{case}: honest"
        );
    }
    assert_eq!(
        create(api, honest).await,
        StatusCode::TOO_MANY_REQUESTS,
        "{case}: honest, bucket spent"
    );
    let mut count = 0;
    for headers in forged {
        assert_eq!(
            create(api, &headers).await,
            StatusCode::TOO_MANY_REQUESTS,
            "{case}: forged {headers:?} got a bucket of its own"
        );
        count += 1;
    }
    assert!(count >= 8, "{case}: only {count} forged requests");
}

fn xff(value: impl Into<String>) -> Vec<(&'static str, String)> {
    vec![("x-forwarded-for", value.into())]
}

#[tokio::test]
async fn forged_identities_get_the_honest_clients_bucket() {
    let app = spawn_in_process(&config(ClientIpHeader::XForwardedFor));
    let api = Api::of(&app);

    assert_same_bucket(
        &api,
        "forged Forwarded",
        &xff("203.0.113.1"),
        (1..=8).map(|n| {
            let mut headers = xff("203.0.113.1");
            headers.push(("forwarded", format!("for=\"[2001:db8::{n}]\"")));
            headers
        }),
    )
    .await;

    assert_same_bucket(
        &api,
        "forged leftmost X-Forwarded-For",
        &xff("203.0.113.2"),
        (1..=8).map(|n| xff(format!("198.51.100.{n}, 10.{n}.0.1, 203.0.113.2"))),
    )
    .await;

    // The proxy appended the client's real address; junk the client wrote is left of it.
    assert_same_bucket(
        &api,
        "unparseable hop left of the client",
        &xff("203.0.113.3"),
        (1..=8).map(|n| xff(format!("198.51.100.{n}, unknown, _hidden{n}, 203.0.113.3"))),
    )
    .await;

    // A client inside (a trusted address) whose junk is reached: the identity is the hop
    // that reported the junk, never what lies left of it, whatever the junk says.
    assert_same_bucket(
        &api,
        "unparseable hop reached",
        &xff("127.0.0.5"),
        (1..=8).flat_map(|n| {
            [
                xff(format!("198.51.100.{n}, unknown, 127.0.0.5")),
                xff(format!("198.51.100.{n}, _hidden{n}, 127.0.0.5")),
                xff(format!("198.51.100.{n}, junk{n}, 127.0.0.5")),
                xff(format!("198.51.100.{n}, 203.0.113.3:http, 127.0.0.5")),
            ]
        }),
    )
    .await;

    assert_same_bucket(
        &api,
        "port suffix",
        &xff("203.0.113.4"),
        (1..=8).flat_map(|n| {
            [
                xff(format!("203.0.113.4:{}", 4000 + n)),
                xff(format!("198.51.100.{n}, 203.0.113.4:{}", 4000 + n)),
                xff(format!("198.51.100.{n}, [::ffff:203.0.113.4]:{}", 4000 + n)),
            ]
        }),
    )
    .await;

    assert_same_bucket(
        &api,
        "two header lines",
        &xff("203.0.113.5"),
        (1..=8).map(|n| {
            vec![
                ("x-forwarded-for", format!("198.51.100.{n}")),
                ("x-forwarded-for", "203.0.113.5".to_owned()),
            ]
        }),
    )
    .await;

    // Not refusing everyone: another client still has its own bucket.
    assert_eq!(
        create(&api, &xff("198.51.100.200")).await,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn one_ipv6_64_is_one_client() {
    let app = spawn_in_process(&config(ClientIpHeader::XForwardedFor));
    let api = Api::of(&app);
    let mut admitted = 0;
    for n in 0..1000u32 {
        // Interface identifiers spread over the whole lower 64 bits.
        let address = format!(
            "2001:db8:1:2:{:x}:{:x}:{:x}:{:x}",
            n.wrapping_mul(2_654_435_761) >> 16,
            n & 0xffff,
            n.wrapping_mul(40_503) & 0xffff,
            n >> 3
        );
        if create(&api, &xff(address)).await == StatusCode::CREATED {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 3, "1000 addresses of one /64");
    // The next /64 is another client.
    assert_eq!(
        create(&api, &xff("2001:db8:1:3::1")).await,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn forwarded_and_x_real_ip_can_be_the_header() {
    let app = spawn_in_process(&config(ClientIpHeader::Forwarded));
    let api = Api::of(&app);
    let forwarded = |value: &str| vec![("forwarded", value.to_owned())];
    assert_same_bucket(
        &api,
        "forwarded",
        &forwarded("for=\"[2001:db8:5::1]:4711\";proto=https"),
        (1..=8).flat_map(|n| {
            [
                // X-Forwarded-For is not read at all under this setting.
                vec![
                    ("x-forwarded-for", format!("198.51.100.{n}")),
                    ("forwarded", "for=\"[2001:db8:5::1]\"".to_owned()),
                ],
                forwarded(&format!("for=198.51.100.{n}, for=\"[2001:db8:5::{n}]:80\"")),
            ]
        }),
    )
    .await;
    assert_eq!(
        create(&api, &forwarded("for=203.0.113.77")).await,
        StatusCode::CREATED,
        "another client behind Forwarded"
    );

    let app = spawn_in_process(&config(ClientIpHeader::XRealIp));
    let api = Api::of(&app);
    let real = |value: &str| vec![("x-real-ip", value.to_owned())];
    assert_same_bucket(
        &api,
        "x-real-ip",
        &real("203.0.113.9"),
        (1..=8).flat_map(|n| {
            [
                vec![
                    ("x-forwarded-for", format!("198.51.100.{n}")),
                    ("x-real-ip", "203.0.113.9".to_owned()),
                ],
                vec![
                    ("forwarded", format!("for=198.51.100.{n}")),
                    ("x-real-ip", "203.0.113.9".to_owned()),
                ],
            ]
        }),
    )
    .await;
    assert_eq!(
        create(&api, &real("203.0.113.10")).await,
        StatusCode::CREATED,
        "another client behind X-Real-IP"
    );
}

#[tokio::test]
async fn tokens_remaining_is_a_histogram_per_policy() {
    let app = spawn_in_process(&config(ClientIpHeader::XForwardedFor));
    let api = Api::of(&app);
    for _ in 0..4 {
        create(&api, &xff("203.0.113.1")).await;
    }
    let metrics = shortener_tests::scrape(&app.base).await;
    // Four decisions: remaining 2, 1, 0 and 0 (refused); no client in any label.
    assert!(
        metrics.contains("shortener_ratelimit_tokens_remaining_count{policy=\"create\"} 4"),
        "{metrics}"
    );
    assert!(
        metrics.contains("shortener_ratelimit_tokens_remaining_sum{policy=\"create\"} 3"),
        "{metrics}"
    );
    // Buckets, which add up across nodes: two decisions left no token.
    assert!(
        metrics
            .contains("shortener_ratelimit_tokens_remaining_bucket{policy=\"create\",le=\"0\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("shortener_ratelimit_call_seconds_bucket{le=\"+Inf\"} 4"),
        "{metrics}"
    );
    assert!(!metrics.contains("203.0.113.1"), "{metrics}");
}
