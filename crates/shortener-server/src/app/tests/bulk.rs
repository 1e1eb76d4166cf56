//! No bulk body costs fewer tokens than the links it creates: bodies generated with
//! duplicate keys, nested objects, odd whitespace, escaped key names, a byte-order mark
//! and huge numbers, sent to a node built in-process, whose `RateLimit` header says what
//! each took and whose repository says what was created.

use std::sync::Arc;

use figment::Figment;
use figment::providers::{Format as _, Toml};
use poem::http::Method;
use poem::{Endpoint, Request};
use proptest::prelude::*;
use serde_json::Value;
use shortener_core::{Access, LinkRepository as _, ListQuery};

use shortener_http::state::AppState;

const CAPACITY: u64 = 1_000_000;

/// One item of `links`, as JSON text.
fn item() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..1_000_000).prop_map(|n| format!(r#"{{"url":"https://example.com/{n}"}}"#)),
        Just(r#"{"url":"nope"}"#.to_owned()),
        (0u32..1000).prop_map(|n| format!(
            r#"{{ "url" : "https://example.com/n{n}", "extra": {{"a":[1,{{"b":{{}}}}]}} }}"#
        )),
        Just(r#"{"url":"https://example.com/d","url":"https://example.com/e"}"#.to_owned()),
        Just(r#"{"u\u0072l":"https://example.com/escaped"}"#.to_owned()),
        Just(
            r#"{"url":"https://example.com/big","max_visits":123456789012345678901234567890}"#
                .to_owned()
        ),
        Just(r#"{"url":"https://example.com/huge","max_visits":1e400}"#.to_owned()),
        Just("[]".to_owned()),
        Just("7".to_owned()),
    ]
}

/// A bulk body: one or two `links` members (the key maybe escaped), maybe other members
/// around them, in any whitespace, maybe after a byte-order mark.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let array = || prop::collection::vec(item(), 0..12).prop_map(|items| items.join(","));
    let key = || prop_oneof![Just("links"), Just("li\\u006eks"), Just("\\u006cinks")];
    let space = prop_oneof![Just(""), Just(" "), Just("\n\t "), Just("\r\n")];
    (
        any::<bool>(),
        key(),
        array(),
        prop::option::of((key(), array())),
        prop::option::of(Just(
            r#""note": {"links": [{"url":"https://example.com/inner"}]}"#,
        )),
        space,
    )
        .prop_map(|(bom, key, first, second, other, space)| {
            let mut members = vec![format!("{space}\"{key}\"{space}:{space}[{first}]")];
            if let Some((key, array)) = second {
                members.push(format!("\"{key}\":[{array}]"));
            }
            if let Some(other) = other {
                members.insert(0, other.to_owned());
            }
            let mut body = if bom {
                b"\xEF\xBB\xBF".to_vec()
            } else {
                Vec::new()
            };
            body.extend(
                format!("{{{space}{}{space}}}", members.join(&format!(",{space}"))).bytes(),
            );
            body
        })
}

async fn node() -> Arc<AppState> {
    let toml = format!(
        "[storage]\nkind = \"memory\"\n\
         [limiter.policies.create]\ncapacity = {CAPACITY}\nrefill_per_sec = 0.001\n"
    );
    let settings = crate::config::Config::from_figment(Figment::from(Toml::string(&toml)))
        .expect("the config loads");
    super::super::build(settings)
        .await
        .expect("the node builds")
}

/// `r` of the `RateLimit` header: the tokens left.
fn remaining(response: &poem::Response) -> Option<u64> {
    let header = response.headers().get("ratelimit")?.to_str().ok()?;
    header
        .split(';')
        .find_map(|part| part.strip_prefix("r="))?
        .parse()
        .ok()
}

async fn links_stored(state: &AppState) -> usize {
    let query = ListQuery {
        order: shortener_core::ListOrder::Newest,
        offset: 0,
        after: None,
        limit: usize::MAX,
        search: None,
        tags: shortener_core::Tags::default(),
        domain: None,
        within: shortener_core::ListWithin::default(),
    };
    state
        .shortener
        .repository()
        .list(Access::All, &query)
        .await
        .expect("the memory repository lists")
        .len()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn tokens_taken_are_at_least_the_links_created(bodies in prop::collection::vec(body(), 1..6)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let state = node().await;
            let endpoint = super::super::routes(state.clone());
            let mut left = CAPACITY;
            for body in bodies {
                let duplicate = body_has_duplicate_links(&body);
                let before = links_stored(&state).await;
                let request = Request::builder()
                    .method(Method::POST)
                    .uri_str("/api/v1/links/bulk")
                    .content_type("application/json")
                    .body(body.clone());
                let response = endpoint.call(request).await.expect("an answer");
                let status = response.status();
                let now_left = remaining(&response).unwrap_or(left);
                let taken = left - now_left;
                left = now_left;
                let created = links_stored(&state).await - before;
                let text = String::from_utf8_lossy(&body).into_owned();
                prop_assert!(taken >= created as u64, "{text}: {taken} tokens for {created} links");
                prop_assert!(!status.is_server_error(), "{text}: {status}");
                if duplicate {
                    prop_assert_eq!(status.as_u16(), 400, "{}", text);
                    prop_assert_eq!((taken, created), (0, 0), "{}", text);
                }
                if status.as_u16() == 200 {
                    let answer: Value = serde_json::from_slice(
                        &response.into_body().into_vec().await.unwrap(),
                    )
                    .unwrap();
                    let results = answer["results"].as_array().unwrap();
                    let ok = results.iter().filter(|r| r["status"] == 201).count();
                    prop_assert_eq!(ok, created, "{}", text);
                    prop_assert_eq!(taken, results.len() as u64, "{}", text);
                }
            }
            Ok(())
        })?;
    }
}

/// Whether the top-level object names `links` twice (however its key is spelled).
fn body_has_duplicate_links(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    let top = text.replace("\\u006c", "l").replace("\\u006e", "n");
    // The generated bodies hold at most one `note` member with one nested `links`.
    let nested = usize::from(top.contains("\"note\""));
    top.matches("\"links\"").count() - nested > 1
}
