//! A redirect answered before the router is the `redirect` operation's own answer: two
//! nodes built alike from a configuration, one answering redirects before the router
//! and one through it, answer the same requests alike.

use poem::Request;
use poem::http::Method;

/// The same requests, sent to two nodes built alike, one answering redirects before
/// the router and one through it, get the same answers: status, headers and body.
#[test]
// figment's `Jail` closure returns `figment::Result`, whose error is large; the type is
// the API's.
#[allow(clippy::result_large_err)]
fn redirects_answer_as_the_router_does() {
    figment::Jail::expect_with(|jail| {
        jail.create_file(
            "shortener.toml",
            "[storage]\nkind = \"memory\"\n\
             [limiter.policies.redirect]\ncapacity = 7\nrefill_per_sec = 0.001\n",
        )?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|error| error.to_string())?;
        runtime.block_on(async {
            let fast = answers(true).await;
            let routed = answers(false).await;
            // The creates (first two) differ by their `created_at`; the rest must not.
            assert_eq!(fast[2..], routed[2..]);
            let statuses: Vec<u16> = fast.iter().map(|answer| answer.0).collect();
            // Created twice, found, HEAD, a bot, unknown, once then gone, a forged key
            // (refused before the limiter), the 7th token, then limited, and a path of
            // the server's own.
            assert_eq!(
                statuses,
                [
                    201, 201, 302, 302, 302, 404, 302, 410, 401, 302, 429, 429, 429, 200
                ]
            );
        });
        Ok(())
    });
}

fn request(method: Method, uri: &str) -> Request {
    Request::builder()
        .header("host", "127.0.0.1:8080")
        .method(method)
        .uri_str(uri)
        .finish()
}

type Answer = (u16, Vec<(String, Vec<u8>)>, Vec<u8>);

/// The answers of a node made from `shortener.toml`, with `fast` redirects or without.
async fn answers(fast: bool) -> Vec<Answer> {
    use poem::{Endpoint, EndpointExt};

    let settings = crate::config::Config::load(Some(std::path::Path::new("shortener.toml")))
        .expect("the config loads");
    let state = super::super::build(settings)
        .await
        .expect("the node builds");
    let endpoint = if fast {
        super::super::routes(state).boxed()
    } else {
        shortener_http::app::routed_only(state).boxed()
    };
    let create = |body: &str| {
        Request::builder()
            .header("host", "127.0.0.1:8080")
            .method(Method::POST)
            .uri_str("/api/v1/links")
            .content_type("application/json")
            .body(body.to_owned())
    };
    let get = |uri: &str| request(Method::GET, uri);
    let mut requests = vec![
        create(r#"{"url": "https://example.com/a", "alias": "hello"}"#),
        create(r#"{"url": "https://example.com/b", "alias": "once", "max_visits": 1}"#),
        get("/hello"),
        request(Method::HEAD, "/hello"),
        Request::builder()
            .header("host", "127.0.0.1:8080")
            .uri_str("/hello")
            .header(
                "user-agent",
                "Googlebot/2.1 (+http://www.google.com/bot.html)",
            )
            .finish(),
        get("/nope"),
        get("/once"),
        get("/once"),
        Request::builder()
            .header("host", "127.0.0.1:8080")
            .uri_str("/hello")
            .header("x-api-key", "forged")
            .finish(),
    ];
    requests.extend((0..4).map(|_| get("/hello?utm=1")));
    requests.push(get("/healthz"));
    let mut answers = Vec::new();
    for request in requests {
        let response = match endpoint.call(request).await {
            Ok(response) => response,
            Err(error) => error.into_response(),
        };
        let status = response.status().as_u16();
        let mut headers: Vec<(String, Vec<u8>)> = response
            .headers()
            .iter()
            .map(|(name, value)| (name.to_string(), value.as_bytes().to_vec()))
            .collect();
        headers.sort();
        let body = response.into_body().into_vec().await.expect("a body");
        answers.push((status, headers, body));
    }
    answers
}
