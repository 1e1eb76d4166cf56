//! The matching rules: every status field, keys without values, the most specific match,
//! 0, wildcards, unlimited and unknown descriptors, shadow mode, `replaces`.

use shortener_rls::ServiceSettings;
use shortener_rls::proto::RateLimitRequest;
use shortener_rls::proto::rate_limit_response::Code;

use crate::support::{LIMITS, descriptor, serve};

#[tokio::test]
async fn a_limit_fills_every_status_field_then_refuses() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    for remaining in [2, 1, 0] {
        let (code, status) = service.one("shop", &[("remote_address", "10.0.0.1")]).await;
        assert_eq!(code, Code::Ok);
        assert_eq!(status.code(), Code::Ok);
        let limit = status.current_limit.unwrap();
        assert_eq!(
            (limit.requests_per_unit, limit.unit),
            (3, 2),
            "3 per MINUTE"
        );
        assert_eq!(status.limit_remaining, remaining);
        let reset = status.duration_until_reset.unwrap();
        assert!(reset.seconds > 0 && reset.seconds <= 60, "{reset:?}");
    }
    let (code, status) = service.one("shop", &[("remote_address", "10.0.0.1")]).await;
    assert_eq!((code, status.code()), (Code::OverLimit, Code::OverLimit));
    assert_eq!(status.limit_remaining, 0);
    let wait = status.duration_until_reset.unwrap();
    assert!(wait.seconds <= 20, "a token refills within 20 s: {wait:?}");
    // A key without a value in the file counts each value on its own.
    let (code, _) = service.one("shop", &[("remote_address", "10.0.0.2")]).await;
    assert_eq!(code, Code::Ok);
}

#[tokio::test]
async fn the_most_specific_match_wins_zero_blocks_and_wildcards_match() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    let (code, status) = service.one("shop", &[("remote_address", "50.0.0.5")]).await;
    assert_eq!((code, status.code()), (Code::OverLimit, Code::OverLimit));
    assert_eq!(status.current_limit.unwrap().requests_per_unit, 0);
    let (code, _) = service.one("shop", &[("path", "/api/a")]).await;
    assert_eq!(code, Code::Ok);
    let (code, _) = service.one("shop", &[("path", "/api/b")]).await;
    assert_eq!(
        code,
        Code::Ok,
        "each value matched by a wildcard has its own bucket"
    );
    let (code, _) = service.one("shop", &[("path", "/api/a")]).await;
    assert_eq!(code, Code::OverLimit);
    let (_, status) = service.one("shop", &[("path", "/other")]).await;
    assert!(status.current_limit.is_none());
}

#[tokio::test]
async fn unlimited_unknown_and_unmatched_descriptors_pass() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    for _ in 0..5 {
        let (code, status) = service.one("shop", &[("internal", "batch")]).await;
        assert_eq!(code, Code::Ok);
        assert_eq!(status.limit_remaining, u32::MAX);
        assert!(status.current_limit.is_none());
    }
    for (domain, entries) in [
        ("shop", vec![("nothing", "x")]),
        ("elsewhere", vec![("remote_address", "1")]),
    ] {
        let (code, status) = service.one(domain, &entries).await;
        assert_eq!(code, Code::Ok);
        assert_eq!(status.code(), Code::Ok);
        assert!(status.current_limit.is_none());
        assert_eq!(status.limit_remaining, 0);
    }
    let empty = service
        .client
        .should_rate_limit(RateLimitRequest {
            domain: String::new(),
            descriptors: vec![descriptor(&[("a", "b")])],
            hits_addend: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(empty.code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn shadow_mode_counts_but_never_refuses() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    let (code, status) = service.one("shop", &[("user", "ann")]).await;
    assert_eq!((code, status.limit_remaining), (Code::Ok, 0));
    let (code, status) = service.one("shop", &[("user", "ann")]).await;
    assert_eq!(
        (code, status.code()),
        (Code::Ok, Code::Ok),
        "over its limit, in shadow mode"
    );
    // Global shadow mode (their SHADOW_MODE): the request passes, each status still tells.
    let settings = ServiceSettings {
        shadow_mode: true,
        ..ServiceSettings::default()
    };
    let mut service = serve(&[("shop.yaml", LIMITS)], settings).await;
    let (code, status) = service.one("shop", &[("remote_address", "50.0.0.5")]).await;
    assert_eq!((code, status.code()), (Code::Ok, Code::OverLimit));
}

#[tokio::test]
async fn a_limit_named_in_replaces_gives_way() {
    let mut service = serve(&[("shop.yaml", LIMITS)], ServiceSettings::default()).await;
    let free = || descriptor(&[("plan", "free")]);
    let vip = || descriptor(&[("plan", "vip")]);
    for _ in 0..3 {
        let response = service.ask("shop", vec![free(), vip()]).await;
        assert_eq!(response.overall_code(), Code::Ok);
        assert!(
            response.statuses[0].current_limit.is_none(),
            "free is replaced"
        );
        assert_eq!(
            response.statuses[1]
                .current_limit
                .as_ref()
                .unwrap()
                .requests_per_unit,
            100
        );
    }
    let (code, _) = service.one("shop", &[("plan", "free")]).await;
    assert_eq!(code, Code::Ok, "alone, free applies, and was never spent");
    let (code, _) = service.one("shop", &[("plan", "free")]).await;
    assert_eq!(code, Code::OverLimit);
}

/// Their `quota_mode`: a quota descriptor over its limit says so in its status, but
/// refuses the request only when every quota descriptor of the request is over; a
/// request so refused spends nothing of its other descriptors.
#[tokio::test]
async fn quota_descriptors_refuse_only_when_every_one_is_over() {
    const QUOTAS: &str = "
domain: quota
descriptors:
  - key: plan
    value: free
    quota_mode: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
  - key: plan
    value: team
    quota_mode: true
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 10 }
";
    let mut service = serve(&[("quota.yaml", QUOTAS)], ServiceSettings::default()).await;
    let free = || descriptor(&[("plan", "free")]);
    let team = || descriptor(&[("plan", "team")]);
    let user = || descriptor(&[("user", "ann")]);
    let (code, status) = service.one("quota", &[("plan", "free")]).await;
    assert_eq!((code, status.code()), (Code::Ok, Code::Ok));
    // Its only quota descriptor over: refused.
    let (code, status) = service.one("quota", &[("plan", "free")]).await;
    assert_eq!((code, status.code()), (Code::OverLimit, Code::OverLimit));
    // Another quota descriptor has room: the request passes, each status tells.
    let both = service.ask("quota", vec![free(), team()]).await;
    assert_eq!(both.overall_code(), Code::Ok);
    assert_eq!(both.statuses[0].code(), Code::OverLimit);
    assert_eq!(
        (both.statuses[1].code(), both.statuses[1].limit_remaining),
        (Code::Ok, 1)
    );
    // Every quota descriptor over: refused, and the user's limit spent nothing.
    let refused = service.ask("quota", vec![free(), user()]).await;
    assert_eq!(refused.overall_code(), Code::OverLimit);
    assert_eq!(refused.statuses[1].code(), Code::Ok);
    let (_, status) = service.one("quota", &[("user", "ann")]).await;
    assert_eq!(
        status.limit_remaining, 9,
        "the refused request took no token of it"
    );
}

/// Their `QUOTA_MODE`: every limit in quota mode.
#[tokio::test]
async fn global_quota_mode_puts_every_limit_in_quota_mode() {
    let settings = ServiceSettings {
        quota_mode: true,
        ..ServiceSettings::default()
    };
    let mut service = serve(&[("shop.yaml", LIMITS)], settings).await;
    let narrow = || descriptor(&[("narrow", "x")]);
    let wide = || descriptor(&[("wide", "x")]);
    assert_eq!(
        service.ask("shop", vec![narrow()]).await.overall_code(),
        Code::Ok
    );
    let passed = service.ask("shop", vec![narrow(), wide()]).await;
    assert_eq!(passed.overall_code(), Code::Ok, "wide has room");
    assert_eq!(passed.statuses[0].code(), Code::OverLimit);
    let refused = service.ask("shop", vec![narrow()]).await;
    assert_eq!(
        refused.overall_code(),
        Code::OverLimit,
        "its only limit is over"
    );
}

/// Their `LIMIT_RESPONSE_HEADERS_ENABLED`: the limit, what is left and the reset of the
/// descriptor closest to its limit, as headers for Envoy to add; none without a limit.
#[tokio::test]
async fn response_headers_name_the_descriptor_closest_to_its_limit() {
    let names = shortener_rls::headers::HeaderNames {
        limit: "X-Limit".into(),
        ..Default::default()
    };
    let settings = ServiceSettings {
        response_headers: Some(names),
        ..ServiceSettings::default()
    };
    let mut service = serve(&[("shop.yaml", LIMITS)], settings).await;
    let headers = |response: &shortener_rls::proto::RateLimitResponse| {
        (response.response_headers_to_add.iter())
            .map(|header| (header.key.clone(), header.value.clone()))
            .collect::<Vec<_>>()
    };
    // wide: 5 a minute, 4 left; narrow: 1 a minute, none left. Narrow is the closest.
    let both = service
        .ask(
            "shop",
            vec![descriptor(&[("wide", "h")]), descriptor(&[("narrow", "h")])],
        )
        .await;
    let said = headers(&both);
    assert_eq!(said[0], ("X-Limit".to_owned(), "1".to_owned()), "{said:?}");
    assert_eq!(said[1], ("RateLimit-Remaining".to_owned(), "0".to_owned()));
    assert_eq!(said[2].0, "RateLimit-Reset");
    let reset: u64 = said[2].1.parse().unwrap();
    assert!((1..=60).contains(&reset), "{reset}");
    // No descriptor with a limit: no headers.
    let free = service
        .ask("shop", vec![descriptor(&[("internal", "x")])])
        .await;
    assert!(headers(&free).is_empty());
}

/// Their `RESPONSE_DYNAMIC_METADATA`: the domain, each descriptor's entries, and the
/// `metadata:` of the descriptors whose limits passed; none without the setting.
#[tokio::test]
async fn dynamic_metadata_carries_what_passed() {
    use shortener_rls::protobuf::{Struct, value::Kind};
    const TAGGED: &str = "
domain: tagged
descriptors:
  - key: narrow
    metadata: {tier: narrow, shared: {a: 1}}
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: wide
    metadata: {tier: wide, shared: {b: 2}}
    rate_limit: {unit: minute, requests_per_unit: 5}
";
    let settings = ServiceSettings {
        dynamic_metadata: true,
        ..ServiceSettings::default()
    };
    let mut service = serve(&[("tagged.yaml", TAGGED)], settings).await;
    let both = || vec![descriptor(&[("narrow", "x")]), descriptor(&[("wide", "x")])];
    let metadata = |answer: &shortener_rls::proto::RateLimitResponse| -> Option<Struct> {
        let fields = &answer.dynamic_metadata.as_ref()?.fields;
        match &fields.get("metadata")?.kind {
            Some(Kind::StructValue(metadata)) => Some(metadata.clone()),
            _ => None,
        }
    };
    let text = |metadata: &Struct, key: &str| match &metadata.fields[key].kind {
        Some(Kind::StringValue(text)) => text.clone(),
        other => panic!("{key}: {other:?}"),
    };
    let first = service.ask("tagged", both()).await;
    assert_eq!(first.overall_code(), Code::Ok);
    let all = metadata(&first).expect("both passed");
    // The first descriptor's value wins; maps under one key merge.
    assert_eq!(text(&all, "tier"), "narrow");
    let Some(Kind::StructValue(shared)) = &all.fields["shared"].kind else {
        panic!("{all:?}")
    };
    assert_eq!(shared.fields.len(), 2);
    let fields = &first.dynamic_metadata.as_ref().unwrap().fields;
    assert_eq!(
        fields["domain"].kind,
        Some(Kind::StringValue("tagged".into()))
    );
    // narrow is over now: only wide's metadata passes (and nothing of wide was spent).
    let second = service.ask("tagged", both()).await;
    assert_eq!(second.overall_code(), Code::OverLimit);
    assert_eq!(text(&metadata(&second).unwrap(), "tier"), "wide");

    let mut plain = serve(&[("tagged.yaml", TAGGED)], ServiceSettings::default()).await;
    assert!(plain.ask("tagged", both()).await.dynamic_metadata.is_none());
}

/// A file that does not load at start takes down its own domain only: the other files'
/// limits apply, and its domain is answered as the limiter's errors are (`on_error`):
/// OK for fail_open and local, over the limit for fail_closed, UNAVAILABLE for error.
#[tokio::test]
async fn a_bad_file_at_start_takes_down_only_its_own_domain() {
    use shortener_rls::WhenUnavailable;
    const BROKEN: &str = "
domain: broken
descriptors:
  - key: k
    rate_limit: {unit: fortnight, requests_per_unit: 1}
";
    for (when, expected) in [
        (WhenUnavailable::Allow, Some(Code::Ok)),
        (WhenUnavailable::OverLimit, Some(Code::OverLimit)),
        (WhenUnavailable::Error, None),
    ] {
        let settings = ServiceSettings {
            when_unavailable: when,
            ..ServiceSettings::default()
        };
        let mut service = serve(&[("a.yaml", BROKEN), ("shop.yaml", LIMITS)], settings).await;
        let broken = service
            .try_ask("broken", vec![descriptor(&[("k", "v")])])
            .await;
        match expected {
            Some(code) => {
                let answer = broken.unwrap();
                assert_eq!(answer.overall_code(), code, "{when:?}");
                assert_eq!(answer.statuses.len(), 1);
            }
            None => assert_eq!(broken.unwrap_err().code(), tonic::Code::Unavailable),
        }
        // The good file's limits apply: 3 a minute per address.
        let mut codes = Vec::new();
        for _ in 0..4 {
            let (code, _) = service.one("shop", &[("remote_address", "10.9.9.9")]).await;
            codes.push(code);
        }
        assert_eq!(
            codes,
            [Code::Ok, Code::Ok, Code::Ok, Code::OverLimit],
            "{when:?}"
        );
    }
}
