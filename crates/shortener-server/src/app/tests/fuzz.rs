//! Fuzzing that stays in `cargo xtask test`: create, bulk and edit bodies sent to the API
//! of a node built in-process from a configuration. Every input is either taken or
//! refused with a 4xx problem+json; none is a 5xx or a panic.

use std::sync::OnceLock;

use figment::Figment;
use figment::providers::{Format as _, Toml};
use poem::endpoint::BoxEndpoint;
use poem::http::Method;
use poem::{Endpoint, EndpointExt as _, Request};
use proptest::prelude::*;
use serde_json::{Value, json};

use shortener_http::PROBLEM_JSON;

/// Targets as clients send them, good and bad.
fn target_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "(https?|javascript|data)://[a-z0-9.:@-]{0,24}(/[ -~]{0,16})?",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,10}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A create body: its fields of any type, the url and alias mostly strings.
fn create_body() -> impl Strategy<Value = Value> {
    (
        prop_oneof![target_text().prop_map(Value::String), json_value()],
        prop_oneof![
            Just(Value::Null),
            "[A-Za-z0-9_-]{0,70}".prop_map(Value::String),
            json_value()
        ],
        prop_oneof![Just(Value::Null), json_value(), "20[0-9]{2}-[0-9]{2}-[0-9]{2}T00:00:00Z".prop_map(Value::String)],
        prop_oneof![Just(Value::Null), json_value()],
    )
        .prop_map(|(url, alias, expires_at, max_visits)| {
            json!({"url": url, "alias": alias, "expires_at": expires_at, "max_visits": max_visits})
        })
}

/// Bytes: arbitrary, or a JSON body with one byte changed.
fn raw_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        (create_body(), any::<prop::sample::Index>(), any::<u8>()).prop_map(|(body, at, byte)| {
            let mut bytes = serde_json::to_vec(&body).unwrap();
            let index = at.index(bytes.len());
            bytes[index] = byte;
            bytes
        }),
    ]
}

/// One node for every case: the fuzzing is of the parsers, not of start-up.
type Node = (
    tokio::runtime::Runtime,
    BoxEndpoint<'static, poem::Response>,
);

fn node() -> &'static Node {
    static NODE: OnceLock<Node> = OnceLock::new();
    NODE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let endpoint = runtime.block_on(async {
            let toml = format!(
                "[storage]\nkind = \"memory\"\n\
                 [limiter.policies.create]\ncapacity = 1000000\nrefill_per_sec = 50000\n\
                 [limiter.policies.lookup]\ncapacity = 1000000\nrefill_per_sec = 50000\n\
                 [[api_keys]]\nname = \"fuzz\"\nsha256 = \"{}\"\nscopes = [\"admin\"]\n",
                hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"fuzz-secret"))
            );
            let settings = crate::config::Config::from_figment(Figment::from(Toml::string(&toml)))
                .expect("the config loads");
            let state = super::super::build(settings)
                .await
                .expect("the node builds");
            let endpoint = super::super::routes(state).boxed();
            let created = endpoint
                .call(
                    Request::builder()
                        .header("host", "127.0.0.1:8080")
                        .method(Method::POST)
                        .uri_str("/api/v1/links")
                        .content_type("application/json")
                        .header("x-api-key", "fuzz-secret")
                        .body(r#"{"url":"https://example.com/","alias":"fuzzed"}"#),
                )
                .await
                .expect("an answer");
            assert_eq!(created.status(), 201);
            endpoint
        });
        (runtime, endpoint)
    })
}

/// Sends `body` and checks the answer: a success, or a 4xx problem+json.
fn send(
    method: Method,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(), TestCaseError> {
    let (runtime, endpoint) = node();
    let request = Request::builder()
        .header("host", "127.0.0.1:8080")
        .method(method)
        .uri_str(path)
        .content_type(content_type)
        .header("x-api-key", "fuzz-secret")
        .body(body.clone());
    let response = runtime
        .block_on(endpoint.call(request))
        .unwrap_or_else(poem::Error::into_response);
    let status = response.status();
    let text = String::from_utf8_lossy(&body).into_owned();
    prop_assert!(!status.is_server_error(), "{path} {text:?}: {status}");
    if status.is_client_error() {
        prop_assert_eq!(
            response.content_type(),
            Some(PROBLEM_JSON),
            "{} {:?}",
            path,
            text
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn creates_answer_a_success_or_a_4xx(body in create_body()) {
        send(Method::POST, "/api/v1/links", "application/json", serde_json::to_vec(&body).unwrap())?;
    }

    #[test]
    fn any_bytes_to_any_body_answer_a_success_or_a_4xx(body in raw_body(), route in 0..3usize) {
        let (method, path, content_type) = [
            (Method::POST, "/api/v1/links", "application/json"),
            (Method::POST, "/api/v1/links/bulk", "application/json"),
            (Method::PATCH, "/api/v1/links/fuzzed", "application/merge-patch+json"),
        ][route].clone();
        send(method, path, content_type, body)?;
    }
}
