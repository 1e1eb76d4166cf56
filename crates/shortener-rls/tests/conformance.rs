//! The service's answers, rule by rule, through a real tonic client talking to the
//! service on a loopback port, deciding with the memory limiter (the same port the
//! Redis limiter implements; `tests/it/rls.rs` runs them on Redis, across processes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use envoy_types::pb::google::protobuf::UInt64Value;
use shortener_memory::MemoryRateLimiter;
use shortener_rls::descriptor_proto::RateLimitDescriptor;
use shortener_rls::descriptor_proto::rate_limit_descriptor::{Entry, RateLimitOverride};
use shortener_rls::proto::rate_limit_response::{Code, DescriptorStatus};
use shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient;
use shortener_rls::proto::rate_limit_service_server::RateLimitServiceServer;
use shortener_rls::proto::{RateLimitRequest, RateLimitResponse};
use shortener_rls::{LimitsHandle, RateLimitServer, RuntimeDirectory, ServiceSettings};
use tonic::transport::Channel;

/// A service on a loopback port over the limits in `files`, and a client of it.
struct Service {
    client: RateLimitServiceClient<Channel>,
    directory: tempfile::TempDir,
    _stop: tokio::sync::watch::Sender<bool>,
}

async fn serve(files: &[(&str, &str)], settings: ServiceSettings) -> Service {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config");
    std::fs::create_dir(&config).unwrap();
    for (name, text) in files {
        std::fs::write(config.join(name), text).unwrap();
    }
    let runtime = RuntimeDirectory {
        root: directory.path().to_path_buf(),
        subdirectory: String::new(),
        appdirectory: "config".into(),
        merge_domains: false,
    };
    let (limits, seen) = runtime.load().unwrap();
    let handle = Arc::new(LimitsHandle::new(limits));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(runtime.watch_forever(Arc::clone(&handle), seen, stopped));
    let service = RateLimitServer::new(Arc::new(MemoryRateLimiter::default()), handle, settings);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(tonic::transport::Server::builder().serve_with_incoming(
        RateLimitServiceServer::new(service),
        tonic::transport::server::TcpIncoming::from(listener),
    ));
    let client = RateLimitServiceClient::connect(format!("http://{address}"))
        .await
        .unwrap();
    Service {
        client,
        directory,
        _stop: stop,
    }
}

fn descriptor(entries: &[(&str, &str)]) -> RateLimitDescriptor {
    RateLimitDescriptor {
        entries: entries
            .iter()
            .map(|(key, value)| Entry {
                key: (*key).to_owned(),
                value: (*value).to_owned(),
            })
            .collect(),
        ..RateLimitDescriptor::default()
    }
}

impl Service {
    async fn ask(
        &mut self,
        domain: &str,
        descriptors: Vec<RateLimitDescriptor>,
    ) -> RateLimitResponse {
        self.client
            .should_rate_limit(RateLimitRequest {
                domain: domain.to_owned(),
                descriptors,
                hits_addend: 0,
            })
            .await
            .unwrap()
            .into_inner()
    }

    async fn one(&mut self, domain: &str, entries: &[(&str, &str)]) -> (Code, DescriptorStatus) {
        let response = self.ask(domain, vec![descriptor(entries)]).await;
        assert_eq!(response.statuses.len(), 1);
        (response.overall_code(), response.statuses[0].clone())
    }
}

const LIMITS: &str = "
domain: shop
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
  - key: path
    value: /api/*
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: internal
    rate_limit:
      unlimited: true
  - key: user
    shadow_mode: true
    rate_limit:
      unit: hour
      requests_per_unit: 1
  - key: plan
    value: free
    rate_limit:
      name: free
      unit: minute
      requests_per_unit: 1
  - key: plan
    value: vip
    rate_limit:
      replaces:
        - name: free
      unit: minute
      requests_per_unit: 100
  - key: wide
    rate_limit:
      unit: minute
      requests_per_unit: 5
  - key: narrow
    rate_limit:
      unit: minute
      requests_per_unit: 1
";

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
