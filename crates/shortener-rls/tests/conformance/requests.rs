//! What a request carries (hits, overrides, several descriptors) and hot reload.

use std::time::{Duration, Instant};

use envoy_types::pb::google::protobuf::UInt64Value;
use shortener_rls::ServiceSettings;
use shortener_rls::descriptor_proto::rate_limit_descriptor::RateLimitOverride;
use shortener_rls::proto::RateLimitRequest;
use shortener_rls::proto::rate_limit_response::Code;
use shortener_rls::service::RequestBounds;

use crate::support::{LIMITS, descriptor, serve};

#[tokio::test]
async fn hits_addend_of_the_request_and_of_a_descriptor() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    let response = service
        .client
        .should_rate_limit(RateLimitRequest {
            domain: "shop".into(),
            descriptors: vec![descriptor(&[("wide", "a")])],
            hits_addend: 3,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.statuses[0].limit_remaining, 2);
    let mut heavy = descriptor(&[("wide", "a")]);
    heavy.hits_addend = Some(UInt64Value { value: 2 });
    let response = service
        .client
        .should_rate_limit(RateLimitRequest {
            domain: "shop".into(),
            descriptors: vec![heavy],
            hits_addend: 1,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response.statuses[0].limit_remaining, 0,
        "the descriptor's 2 win over the request's 1"
    );
    let mut negative = descriptor(&[("wide", "a")]);
    negative.is_negative_hits = true;
    negative.hits_addend = Some(UInt64Value { value: 1 });
    let refused = service
        .client
        .should_rate_limit(RateLimitRequest {
            domain: "shop".into(),
            descriptors: vec![negative],
            hits_addend: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused.message().contains("is_negative_hits"),
        "{}",
        refused.message()
    );
}

/// A request past one of the bounds is refused whole, naming the bound, and takes
/// nothing; at each bound it is decided.
#[tokio::test]
async fn a_request_past_its_bounds_is_refused_naming_the_bound() {
    let bounds = RequestBounds {
        descriptors: 4,
        entries: 3,
        entry_bytes: 64,
    };
    let settings = ServiceSettings {
        bounds,
        ..ServiceSettings::default()
    };
    let service = serve(&[("shop.yaml", LIMITS)], settings).await;
    let ask = |descriptors| {
        let mut client = service.client.clone();
        async move {
            client
                .should_rate_limit(RateLimitRequest {
                    domain: "shop".into(),
                    descriptors,
                    hits_addend: 0,
                })
                .await
        }
    };
    let wide = || descriptor(&[("wide", "a")]);
    let long_value = "v".repeat(64 - "user".len());
    for (descriptors, named) in [
        (vec![wide(); 5], "rls.max_descriptors"),
        (
            vec![descriptor(&[
                ("a", "1"),
                ("b", "2"),
                ("c", "3"),
                ("d", "4"),
            ])],
            "rls.max_entries",
        ),
        (
            vec![wide(), descriptor(&[("user", &format!("{long_value}v"))])],
            "rls.max_entry_bytes",
        ),
    ] {
        let refused = ask(descriptors).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert!(refused.message().contains(named), "{}", refused.message());
    }
    // The refused requests took nothing of `wide` (5 a minute).
    let first = ask(vec![wide()]).await.unwrap().into_inner();
    assert_eq!(first.statuses[0].limit_remaining, 4);
    // At the bounds: decided.
    let at_bounds = ask(vec![wide(); 4]).await.unwrap().into_inner();
    assert_eq!(at_bounds.overall_code(), Code::Ok);
    let at_bounds = ask(vec![descriptor(&[("user", &long_value)])]).await;
    assert_eq!(at_bounds.unwrap().into_inner().overall_code(), Code::Ok);
}

#[tokio::test]
async fn a_descriptor_limit_overrides_the_file() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    let mut overridden = descriptor(&[("remote_address", "10.9.9.9")]);
    overridden.limit = Some(RateLimitOverride {
        requests_per_unit: 1,
        unit: 3,
    });
    let response = service.ask("shop", vec![overridden.clone()]).await;
    let status = &response.statuses[0];
    assert_eq!(response.overall_code(), Code::Ok);
    let limit = status.current_limit.as_ref().unwrap();
    assert_eq!((limit.requests_per_unit, limit.unit), (1, 3), "1 per HOUR");
    let response = service.ask("shop", vec![overridden]).await;
    assert_eq!(response.overall_code(), Code::OverLimit);
}

/// A request refused by its second descriptor spends nothing of its first.
#[tokio::test]
async fn descriptors_are_decided_all_or_nothing() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    let both = || vec![descriptor(&[("wide", "c")]), descriptor(&[("narrow", "c")])];
    let first = service.ask("shop", both()).await;
    assert_eq!(first.overall_code(), Code::Ok);
    assert_eq!(first.statuses[0].limit_remaining, 4);
    for _ in 0..3 {
        let refused = service.ask("shop", both()).await;
        assert_eq!(refused.overall_code(), Code::OverLimit);
        assert_eq!(
            refused.statuses[0].code(),
            Code::Ok,
            "wide alone would pass"
        );
        assert_eq!(refused.statuses[0].limit_remaining, 4, "and was not spent");
        assert_eq!(refused.statuses[1].code(), Code::OverLimit);
    }
    let (_, wide) = service.one("shop", &[("wide", "c")]).await;
    assert_eq!(wide.limit_remaining, 3);
    // A limit of 0 in the request refuses it and spends nothing either.
    let blocked = service
        .ask(
            "shop",
            vec![
                descriptor(&[("wide", "c")]),
                descriptor(&[("remote_address", "50.0.0.5")]),
            ],
        )
        .await;
    assert_eq!(blocked.overall_code(), Code::OverLimit);
    assert_eq!(blocked.statuses[0].limit_remaining, 3);
}

/// A changed, added or removed file takes effect within a second; a broken one keeps the
/// last good limits.
#[tokio::test]
async fn files_reload_within_a_second_and_a_broken_one_changes_nothing() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    let config = service.directory.path().join("config");
    let until = |deadline: Duration| Instant::now() + deadline;
    std::fs::write(
        config.join("extra.yaml"),
        "domain: extra\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 7}\n",
    )
    .unwrap();
    let added = until(Duration::from_secs(1));
    loop {
        let (_, status) = service.one("extra", &[("k", "v")]).await;
        if status.current_limit.is_some() {
            assert_eq!(status.limit_remaining, 6);
            break;
        }
        assert!(
            Instant::now() < added,
            "the added file took effect within a second"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    std::fs::write(
        config.join("extra.yaml"),
        "domain: extra\ndescriptors:\n  - key: k\n    rate_limt: {}\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (_, status) = service.one("extra", &[("k", "v")]).await;
    assert_eq!(status.limit_remaining, 5, "the broken file changed nothing");
    std::fs::remove_file(config.join("extra.yaml")).unwrap();
    let removed = until(Duration::from_secs(1));
    loop {
        let (_, status) = service.one("extra", &[("k", "v")]).await;
        if status.current_limit.is_none() {
            break;
        }
        assert!(
            Instant::now() < removed,
            "the removed file took effect within a second"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
