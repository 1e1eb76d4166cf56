//! Ours: a descriptor's `algorithm:`. A fixed window counts per calendar window of its
//! unit and tells when the window ends; GCRA answers as the token bucket does; and a
//! request's descriptors of different algorithms are still decided all or nothing.

use shortener_rls::ServiceSettings;
use shortener_rls::proto::rate_limit_response::Code;

use crate::support::{descriptor, serve};

const WINDOWS: &str = "domain: api
descriptors:
  - key: window
    algorithm: fixed_window
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: gcra
    algorithm: gcra
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: narrow
    rate_limit: {unit: hour, requests_per_unit: 1}
";

#[tokio::test]
async fn a_fixed_window_counts_its_calendar_window_and_says_when_it_ends() {
    // Clear of a minute's end, so that the four requests fall in one window.
    let into_minute = since_epoch().as_millis() % 60_000;
    if into_minute > 57_000 {
        let wait = u64::try_from(60_200 - into_minute).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
    }
    let mut service = serve(&[("api.yaml", WINDOWS)], ServiceSettings::default()).await;
    let mut resets = Vec::new();
    for remaining in [2, 1, 0] {
        let (code, status) = service.one("api", &[("window", "a")]).await;
        assert_eq!(code, Code::Ok);
        assert_eq!(status.limit_remaining, remaining);
        resets.push(status.duration_until_reset.unwrap());
    }
    let (code, status) = service.one("api", &[("window", "a")]).await;
    assert_eq!((code, status.code()), (Code::OverLimit, Code::OverLimit));
    assert_eq!(status.limit_remaining, 0);
    let wait = status.duration_until_reset.unwrap();
    resets.push(wait);
    // Every answer names the end of the minute on the wall clock.
    let left = 60 - i64::try_from(since_epoch().as_secs() % 60).unwrap();
    for reset in &resets {
        assert!(
            (reset.seconds + 1 - left).abs() <= 1,
            "{reset:?}, {left} s to the minute"
        );
    }
}

fn since_epoch() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
}

#[tokio::test]
async fn gcra_answers_as_the_token_bucket() {
    let mut service = serve(&[("api.yaml", WINDOWS)], ServiceSettings::default()).await;
    for remaining in [2, 1, 0] {
        let (code, status) = service.one("api", &[("gcra", "a")]).await;
        assert_eq!((code, status.limit_remaining), (Code::Ok, remaining));
    }
    let (code, status) = service.one("api", &[("gcra", "a")]).await;
    assert_eq!(code, Code::OverLimit);
    let wait = status.duration_until_reset.unwrap();
    assert!(wait.seconds <= 20, "a token refills within 20 s: {wait:?}");
}

#[tokio::test]
async fn a_window_refused_with_a_bucket_counts_nothing() {
    let mut service = serve(&[("api.yaml", WINDOWS)], ServiceSettings::default()).await;
    let both = || {
        vec![
            descriptor(&[("window", "b")]),
            descriptor(&[("narrow", "b")]),
        ]
    };
    let first = service.ask("api", both()).await;
    assert_eq!(first.overall_code(), Code::Ok);
    let refused = service.ask("api", both()).await;
    assert_eq!(refused.overall_code(), Code::OverLimit);
    assert_eq!(
        refused.statuses[0].code(),
        Code::Ok,
        "the window alone fits"
    );
    assert_eq!(
        refused.statuses[0].limit_remaining, 2,
        "and the refusal did not count in it"
    );
    let (_, alone) = service.one("api", &[("window", "b")]).await;
    assert_eq!(alone.limit_remaining, 1);
}
