//! What each `on_error` mode answers while the primary fails.

use super::*;

#[test]
fn fail_open_admits_as_a_full_bucket_would() {
    let limiter = fallback(DOWN, OnError::FailOpen, Duration::from_secs(3600));
    for _ in 0..2 {
        let decision = block_on(limiter.acquire("id", &policy(), 3)).unwrap();
        assert!(decision.allowed);
        assert_eq!((decision.limit, decision.remaining), (5, 2));
        assert_eq!(decision.retry_after_us, Some(0));
    }
    let never = block_on(limiter.acquire("id", &policy(), 6)).unwrap();
    assert!(!never.allowed);
    assert_eq!(never.retry_after_us, None);
    assert!(lock(&limiter.local().policies).is_empty());
    assert_eq!(limiter.unsettled_tokens(), 0, "fail_open owes nothing");
}

#[test]
fn fail_closed_is_unavailable_and_down() {
    let limiter = fallback(DOWN, OnError::FailClosed, Duration::from_secs(3600));
    for _ in 0..2 {
        let error = block_on(limiter.acquire("id", &policy(), 1)).unwrap_err();
        assert!(matches!(error, LimiterError::Unavailable(_)), "{error:?}");
    }
    assert_eq!(limiter.fallback_decisions(), 2);
    assert!(lock(&limiter.local().policies).is_empty());
    assert_eq!(limiter.state(), BackendState::Down);
}

#[test]
fn every_error_follows_on_error() {
    let limiter = fallback(BROKEN, OnError::Local, Duration::from_secs(3600));
    let decision = block_on(limiter.acquire("id", &policy(), 1)).unwrap();
    assert!(decision.allowed);
    assert!(limiter.is_open());
    assert!(matches!(
        limiter.last_error(),
        Some(LimiterError::Unexpected(_))
    ));
}

#[test]
fn the_local_share_is_capacity_and_rate_over_nodes_and_starts_empty() {
    let config = FallbackConfig {
        probe_interval: Duration::from_secs(3600),
        breaker_failures: 1,
        nodes: 3,
        ..FallbackConfig::default()
    };
    let limiter = Fallback::with_clock(
        Primary::new(DOWN),
        Local::default(),
        config,
        ManualClock::new(0),
    );
    let policy = Policy::from_interval("p", 10, 1_000).unwrap();
    let first = block_on(limiter.acquire("id", &policy, 1)).unwrap();
    assert!(!first.allowed, "an empty bucket at the start of the spell");
    assert_eq!(lock(&limiter.local().policies)[0], (3, 3_000));
    limiter.local().now_us.store(3_000, Ordering::SeqCst);
    assert!(block_on(limiter.acquire("id", &policy, 1)).unwrap().allowed);
    assert!(!block_on(limiter.acquire("id", &policy, 1)).unwrap().allowed);
    limiter.set_nodes(20);
    let starved = block_on(limiter.acquire("other", &policy, 1)).unwrap();
    assert!(!starved.allowed, "10 / 20 nodes rounds down to nothing");
    assert_eq!(limiter.share(&policy), None);
}

#[test]
fn local_admissions_are_debts_settled_by_the_next_primary_call() {
    let limiter = fallback(DOWN, OnError::Local, Duration::ZERO);
    for _ in 0..3 {
        assert!(
            block_on(limiter.acquire("a", &policy(), 1))
                .unwrap()
                .allowed
        );
    }
    assert!(
        block_on(limiter.acquire("b", &policy(), 2))
            .unwrap()
            .allowed
    );
    assert_eq!(limiter.unsettled_tokens(), 5);
    // A failed probe keeps the debt.
    assert!(
        block_on(limiter.acquire("c", &policy(), 1))
            .unwrap()
            .allowed
    );
    assert_eq!(limiter.unsettled_tokens(), 6);
    limiter.primary().set(UP);
    assert_eq!(answered_by_key(&limiter, "a"), PRIMARY);
    assert_eq!(limiter.primary().debts(), vec![("a".to_owned(), 3)]);
    assert_eq!(answered_by_key(&limiter, "a"), PRIMARY);
    assert_eq!(limiter.primary().debts().len(), 1, "settled once");
    assert_eq!(answered_by_key(&limiter, "b"), PRIMARY);
    assert_eq!(limiter.primary().debts()[1], ("b".to_owned(), 2));
    assert_eq!(
        (limiter.settled_tokens(), limiter.unsettled_tokens()),
        (5, 1)
    );
}

#[test]
fn a_spell_of_failures_resets_the_local_buckets_once() {
    let limiter = fallback(DOWN, OnError::Local, Duration::ZERO);
    answered_by(&limiter);
    answered_by(&limiter);
    assert_eq!(limiter.local().resets.load(Ordering::SeqCst), 1);
    limiter.primary().set(UP);
    answered_by(&limiter);
    limiter.primary().set(DOWN);
    answered_by(&limiter);
    assert_eq!(limiter.local().resets.load(Ordering::SeqCst), 2);
}

fn answered_by_key(limiter: &Tested, identity: &str) -> u64 {
    block_on(limiter.acquire(identity, &policy(), 1))
        .unwrap()
        .remaining
}
