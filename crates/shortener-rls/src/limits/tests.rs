//! The loader's and the matcher's rules, each from envoyproxy/ratelimit's README and
//! tests, on small files.

use super::*;

fn load(text: &str) -> Result<Limits, LoadError> {
    Limits::load(
        &[("limits.yaml".to_owned(), text.to_owned())],
        false,
        Algorithm::TokenBucket,
    )
}

fn find(limits: &Limits, domain: &str, entries: &[(&str, &str)]) -> Option<Matched> {
    let entries: Vec<Entry<'_>> = entries
        .iter()
        .map(|(key, value)| Entry { key, value })
        .collect();
    limits.find(domain, &entries, None)
}

fn rate(matched: &Option<Matched>) -> Option<(u32, Unit)> {
    matched
        .as_ref()
        .map(|m| (m.limit.requests_per_unit, m.limit.unit))
}

const MESSAGING: &str = "
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
";

#[test]
fn nested_descriptors_and_keys_without_values() {
    let limits = load(MESSAGING).unwrap();
    let marketing = find(
        &limits,
        "messaging",
        &[("message_type", "marketing"), ("to_number", "2061111111")],
    );
    assert_eq!(rate(&marketing), Some((5, Unit::Day)));
    let any = find(&limits, "messaging", &[("to_number", "2061111111")]);
    assert_eq!(rate(&any), Some((100, Unit::Day)));
    // A key without a value counts each value on its own.
    let other = find(&limits, "messaging", &[("to_number", "2062222222")]);
    assert_ne!(any.unwrap().identity, other.unwrap().identity);
    // The limit applies only at the descriptor's last entry: too short or too long, none.
    assert!(find(&limits, "messaging", &[("message_type", "marketing")]).is_none());
    assert!(find(&limits, "messaging", &[("to_number", "1"), ("extra", "x")]).is_none());
    assert!(find(&limits, "other", &[("to_number", "1")]).is_none());
}

#[test]
fn the_most_specific_match_wins_and_zero_blocks() {
    let limits = load(
        "
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
",
    )
    .unwrap();
    let blocked = find(
        &limits,
        "edge_proxy_per_ip",
        &[("remote_address", "50.0.0.5")],
    )
    .unwrap();
    assert_eq!(blocked.limit.requests_per_unit, 0);
    assert!(
        blocked.limit.policy.is_none(),
        "a limit of 0 refuses everything"
    );
    let other = find(
        &limits,
        "edge_proxy_per_ip",
        &[("remote_address", "10.0.0.1")],
    )
    .unwrap();
    assert_eq!(other.limit.policy.as_ref().map(Policy::capacity), Some(10));
}

#[test]
fn units_become_token_buckets_of_their_length() {
    for (unit, seconds) in [
        ("second", 1),
        ("MINUTE", 60),
        ("hour", 3_600),
        ("day", 86_400),
        ("week", 604_800),
        ("month", 2_592_000),
        ("year", 31_536_000),
    ] {
        let limits = load(&format!(
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: {unit}\n      requests_per_unit: 10\n"
        ))
        .unwrap();
        let policy = find(&limits, "d", &[("k", "v")])
            .unwrap()
            .limit
            .policy
            .clone()
            .unwrap();
        assert_eq!(policy.capacity(), 10);
        assert_eq!(policy.interval_us(), seconds * 100_000, "{unit}");
    }
    let error = load("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n").unwrap_err();
    assert!(
        error
            .message
            .contains("invalid rate limit unit 'fortnight'"),
        "{error}"
    );
    let error = load("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 100000\n").unwrap_err();
    assert!(error.message.contains("above 50000 per second"), "{error}");
}

#[test]
fn unlimited_and_its_unit_rule() {
    let limits = load(
        "domain: internal\ndescriptors:\n  - key: ldap\n    rate_limit:\n      unlimited: true\n",
    )
    .unwrap();
    let ldap = find(&limits, "internal", &[("ldap", "x")]).unwrap();
    assert!(ldap.limit.unlimited);
    let error = load("domain: internal\ndescriptors:\n  - key: ldap\n    rate_limit:\n      unlimited: true\n      unit: second\n").unwrap_err();
    assert_eq!(
        error.message,
        "should not specify rate limit unit when unlimited"
    );
}

#[test]
fn wildcards_match_in_file_order_and_share_threshold_shares_one_bucket() {
    let limits = load(
        "
domain: example11
descriptors:
  - key: files
    value: files/*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 10
  - key: files_no_share
    value: files/*
    rate_limit:
      unit: hour
      requests_per_unit: 10
  - key: path
    value: /api/*/action
    rate_limit:
      unit: minute
      requests_per_unit: 20
",
    )
    .unwrap();
    let a = find(&limits, "example11", &[("files", "files/a.pdf")]).unwrap();
    let b = find(&limits, "example11", &[("files", "files/b.csv")]).unwrap();
    assert_eq!(
        a.identity, b.identity,
        "share_threshold: one bucket for every match"
    );
    let c = find(&limits, "example11", &[("files_no_share", "files/a.pdf")]).unwrap();
    let d = find(&limits, "example11", &[("files_no_share", "files/b.csv")]).unwrap();
    assert_ne!(c.identity, d.identity);
    assert!(find(&limits, "example11", &[("path", "/api/v1/action")]).is_some());
    assert!(find(&limits, "example11", &[("path", "/api/v1/other")]).is_none());
    let error =
        load("domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n")
            .unwrap_err();
    assert!(
        error
            .message
            .contains("share_threshold can only be used with wildcard"),
        "{error}"
    );
}

#[test]
fn names_replaces_shadow_mode_and_metric_keys_are_kept() {
    let limits = load(
        "
domain: example7
descriptors:
  - key: user
    detailed_metric: true
    shadow_mode: true
    rate_limit:
      name: specific_limit
      replaces:
        - name: default_limit
      requests_per_unit: 5
      unit: second
  - key: route
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit:
          unit: minute
          requests_per_unit: 60
",
    )
    .unwrap();
    let user = find(&limits, "example7", &[("user", "bkthomps")]).unwrap();
    assert_eq!(user.limit.name, "specific_limit");
    assert_eq!(user.limit.replaces, ["default_limit"]);
    assert!(user.limit.shadow_mode);
    assert_eq!(
        user.metric_key,
        ["user_bkthomps"],
        "detailed_metric: the request's own value"
    );
    let route = find(&limits, "example7", &[("route", "/a"), ("method", "GET")]).unwrap();
    assert_eq!(
        route.metric_key,
        ["route_/a", "method"],
        "value_to_metric at the route level only"
    );
    for (text, expected) in [
        (
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: ''\n",
            "should not have an empty replaces entry",
        ),
        (
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      name: a\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: a\n",
            "replaces should not contain name of same descriptor",
        ),
    ] {
        assert_eq!(load(text).unwrap_err().message, expected);
    }
}

#[test]
fn broken_files_are_refused_naming_the_file_and_the_key() {
    let cases = [
        (
            "domain: d\ndescriptors:\n  - key: k\n    rate_limt:\n      unit: second\n",
            "rate_limt",
        ),
        (
            "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      request_per_unit: 5\n",
            "request_per_unit",
        ),
        ("domain: d\nextra: 1\n", "extra"),
        ("descriptors: []\n", "config file cannot have empty domain"),
        (
            "domain: d\ndescriptors:\n  - value: v\n",
            "descriptor has empty key",
        ),
        (
            "domain: d\ndescriptors:\n  - key: k\n  - key: k\n",
            "duplicate descriptor composite key 'd.k'",
        ),
        ("domain: d\ndescriptors: [\n", "error loading config file"),
    ];
    for (text, expected) in cases {
        let error = load(text).unwrap_err();
        assert_eq!(error.file, "limits.yaml");
        assert!(error.to_string().starts_with("limits.yaml: "), "{error}");
        assert!(error.message.contains(expected), "{text:?}: {error}");
    }
}

#[test]
fn domains_in_two_files_clash_unless_merged() {
    let files = [
        ("a.yaml".to_owned(), "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n".to_owned()),
        ("b.yaml".to_owned(), "domain: d\ndescriptors:\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 2}\n".to_owned()),
    ];
    let error = Limits::load(&files, false, Algorithm::TokenBucket).unwrap_err();
    assert_eq!(error.file, "b.yaml");
    assert_eq!(error.message, "duplicate domain 'd' in config file");
    let merged = Limits::load(&files, true, Algorithm::TokenBucket).unwrap();
    assert!(find(&merged, "d", &[("a", "1")]).is_some());
    assert!(find(&merged, "d", &[("b", "1")]).is_some());
}

#[test]
fn an_override_replaces_the_file_for_a_known_domain_only() {
    let limits = load(MESSAGING).unwrap();
    let entries = [Entry {
        key: "anything",
        value: "x",
    }];
    let overridden = limits
        .find("messaging", &entries, Some((3, Unit::Minute)))
        .unwrap();
    assert_eq!(
        overridden.limit.policy.as_ref().map(Policy::capacity),
        Some(3)
    );
    assert!(!overridden.limit.shadow_mode);
    assert!(
        limits
            .find("unknown", &entries, Some((3, Unit::Minute)))
            .is_none()
    );
}

/// Every example limits file of envoyproxy/ratelimit's README, unchanged.
#[test]
fn every_example_of_their_readme_loads() {
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/envoyproxy-readme");
    let mut count = 0;
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|extension| extension != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        let limits = Limits::load(&[(name.clone(), text)], false, Algorithm::TokenBucket);
        assert!(limits.is_ok(), "{name}: {limits:?}");
        count += 1;
    }
    assert_eq!(count, 16);
}

/// Ours: `algorithm:` per descriptor, else the service's; a fixed window is exactly one
/// unit long, and a name that is none of the three is refused naming the descriptor.
#[test]
fn a_descriptor_may_name_its_algorithm() {
    let text = "domain: d\ndescriptors:\n  - key: w\n    algorithm: fixed_window\n    rate_limit: {unit: minute, requests_per_unit: 7}\n  - key: g\n    algorithm: gcra\n    rate_limit: {unit: second, requests_per_unit: 3}\n  - key: t\n    rate_limit: {unit: hour, requests_per_unit: 7}\n";
    let files = [("l.yaml".to_owned(), text.to_owned())];
    let limits = Limits::load(&files, false, Algorithm::FixedWindow).unwrap();
    let window = find(&limits, "d", &[("w", "1")]).unwrap();
    assert_eq!(window.limit.algorithm, Algorithm::FixedWindow);
    let policy = window.limit.policy.clone().unwrap();
    assert_eq!(policy.capacity(), 7);
    assert_eq!(
        policy.window_secs(),
        60,
        "7 a minute: a window of one minute"
    );
    assert_eq!(
        find(&limits, "d", &[("g", "1")]).unwrap().limit.algorithm,
        Algorithm::Gcra
    );
    let default = find(&limits, "d", &[("t", "1")]).unwrap();
    assert_eq!(
        default.limit.algorithm,
        Algorithm::FixedWindow,
        "the service's"
    );
    assert_eq!(
        default.limit.policy.as_ref().map(Policy::window_secs),
        Some(3_600)
    );
    let tokens = Limits::load(&files, false, Algorithm::TokenBucket).unwrap();
    let bucket = find(&tokens, "d", &[("t", "1")])
        .unwrap()
        .limit
        .policy
        .clone()
        .unwrap();
    assert!(
        bucket.refill_per_sec() <= 7.0 / 3_600.0,
        "a bucket never refills faster"
    );

    let unknown = load("domain: d\ndescriptors:\n  - key: k\n    algorithm: sliding_log\n    rate_limit: {unit: second, requests_per_unit: 1}\n").unwrap_err();
    assert_eq!(
        unknown.message,
        "unknown algorithm 'sliding_log' (token_bucket, gcra or fixed_window) at 'd.k'"
    );
    let uneven = load("domain: d\ndescriptors:\n  - key: k\n    algorithm: fixed_window\n    rate_limit: {unit: minute, requests_per_unit: 2000001}\n").unwrap_err();
    assert!(
        uneven
            .message
            .contains("cannot be counted in a fixed window of exactly one minute"),
        "{uneven}"
    );
}
