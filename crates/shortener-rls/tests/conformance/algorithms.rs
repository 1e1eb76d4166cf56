//! Ours: a descriptor's `algorithm:`. A fixed window counts per calendar window of its
//! unit and tells when the window ends; GCRA answers as the token bucket does; and a
//! request's descriptors of different algorithms are still decided all or nothing.

use shortener_core::Spending;
use shortener_rls::proto::rate_limit_response::Code;
use shortener_rls::{ServiceSettings, WindowSettings};

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

const TWO_WINDOWS: &str = "domain: api
descriptors:
  - key: small
    algorithm: fixed_window
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: large
    algorithm: fixed_window
    rate_limit: {unit: minute, requests_per_unit: 10}
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

/// Under `all_or_nothing` spending, a request refused by its fixed window spends nothing
/// of its token buckets (the windows are counted first, the buckets after them).
#[tokio::test]
async fn a_refusing_window_spends_nothing_of_a_bucket_under_all_or_nothing() {
    let settings = ServiceSettings {
        windows: WindowSettings {
            spending: Spending::AllOrNothing,
            ..WindowSettings::default()
        },
        ..ServiceSettings::default()
    };
    let mut service = serve(&[("api.yaml", WINDOWS)], settings).await;
    let key = format!("b{}", since_epoch().as_nanos());
    for _ in 0..3 {
        let (code, _) = service.one("api", &[("window", &key)]).await;
        assert_eq!(code, Code::Ok);
    }
    let both = vec![
        descriptor(&[("window", &key)]),
        descriptor(&[("narrow", &key)]),
    ];
    let refused = service.ask("api", both).await;
    if refused.statuses[0].duration_until_reset.unwrap().seconds == 60 {
        // The minute turned between the calls: the window is a new one.
        return;
    }
    assert_eq!(refused.overall_code(), Code::OverLimit);
    assert_eq!(refused.statuses[0].code(), Code::OverLimit);
    let (code, alone) = service.one("api", &[("narrow", &key)]).await;
    assert_eq!(
        (code, alone.limit_remaining),
        (Code::Ok, 0),
        "its one token was left"
    );
}

/// Their spending (the default): every descriptor counts every hit, so a request refused
/// by one descriptor still counts in the others' windows.
#[tokio::test]
async fn each_window_counts_every_hit_by_default() {
    let mut service = serve(&[("api.yaml", TWO_WINDOWS)], ServiceSettings::default()).await;
    let key = format!("e{}", since_epoch().as_nanos());
    let both = || {
        vec![
            descriptor(&[("small", &key)]),
            descriptor(&[("large", &key)]),
        ]
    };
    let mut admitted = 0;
    for _ in 0..3 {
        if service.ask("api", both()).await.overall_code() == Code::Ok {
            admitted += 1;
        }
    }
    // Unless the minute turned in between: one admitted, and the large window counted all three.
    if admitted == 1 {
        let (_, large) = service.one("api", &[("large", &key)]).await;
        assert_eq!(
            large.limit_remaining, 6,
            "10 less 3 refused-or-not hits, less this one"
        );
    }
}
