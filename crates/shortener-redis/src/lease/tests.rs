//! The leases' bookkeeping, without a server: who fetches, how much, and when tokens end.

use super::*;

/// 100 000 tokens at 1 000 a second, leases of up to 64 valid for 100 ms (reserve 100).
fn policy() -> Policy {
    Policy::from_interval("redirect", 100_000, 1_000)
        .unwrap()
        .with_lease(64, 100_000)
        .unwrap()
}

fn admitted(take: Take) -> (Decision, Option<Want>) {
    match take {
        Take::Admitted(decision, refill) => (decision, refill),
        other => panic!("expected an admission from the lease, got {other:?}"),
    }
}

fn fetch(take: Take) -> Want {
    match take {
        Take::Fetch(want) => want,
        other => panic!("expected a fetch, got {other:?}"),
    }
}

#[test]
fn a_client_seen_once_in_a_while_takes_only_its_cost() {
    let (leases, policy) = (Leases::default(), policy());
    let want = fetch(leases.take("a", &policy, 1, 0));
    assert_eq!(want.tokens, 1);
    leases.store("a", &policy, 0, 500, want.sent_at);
    // A lifetime later, no demand is recent: the next fetch asks for the cost alone.
    let want = fetch(leases.take("a", &policy, 2, 300_000));
    assert_eq!(want.tokens, 2);
}

#[test]
fn a_busy_client_doubles_its_lease_up_to_the_terms_and_one_request_fetches() {
    let (leases, policy) = (Leases::default(), policy());
    let want = fetch(leases.take("a", &policy, 1, 0));
    assert_eq!(want.tokens, 1);
    // While the fetch is in flight, requests without tokens go to the shared bucket.
    for _ in 0..3 {
        assert!(matches!(leases.take("a", &policy, 1, 10), Take::Shared));
    }
    leases.store("a", &policy, 0, 500, want.sent_at);
    // Four asked since the fetch (three, and this one): eight ahead, plus this one's cost.
    let want = fetch(leases.take("a", &policy, 1, 20));
    assert_eq!(want.tokens, 1 + 2 * 4);
    leases.store("a", &policy, 8, 500, want.sent_at);
    let mut sizes = Vec::new();
    let mut now = 30;
    for _ in 0..200 {
        now += 10;
        match leases.take("a", &policy, 1, now) {
            Take::Admitted(decision, refill) => {
                assert!(decision.allowed);
                assert_eq!(decision.limit, 100_000);
                if let Some(want) = refill {
                    sizes.push(want.tokens);
                    leases.store("a", &policy, want.tokens, 500, want.sent_at);
                }
            }
            other => panic!("a busy client with tokens is admitted here, got {other:?}"),
        }
    }
    // 8 given, below half after five requests: twice the five asked since the fetch.
    assert_eq!(sizes.first(), Some(&10), "{sizes:?}");
    assert!(sizes.iter().all(|&size| size <= 64), "{sizes:?}");
    assert_eq!(sizes.last(), Some(&64), "{sizes:?}");
}

#[test]
fn one_request_at_a_time_grows_its_lease_too() {
    let (leases, policy) = (Leases::default(), policy());
    let want = fetch(leases.take("a", &policy, 1, 0));
    leases.store("a", &policy, 0, 500, want.sent_at);
    // A millisecond later, within a lifetime: its own cost, and twice it ahead.
    let want = fetch(leases.take("a", &policy, 1, 1_000));
    assert_eq!(want.tokens, 3);
}

#[test]
fn tokens_end_a_lifetime_after_their_fetch_was_sent() {
    let (leases, policy) = (Leases::default(), policy());
    let want = fetch(leases.take("a", &policy, 1, 1_000));
    leases.store("a", &policy, 40, 0, want.sent_at);
    admitted(leases.take("a", &policy, 1, 100_999));
    // At 1 000 + 100 000 µs the 39 tokens left are gone.
    assert!(matches!(
        leases.take("a", &policy, 1, 101_000),
        Take::Fetch(_)
    ));
}

#[test]
fn a_fetch_ahead_goes_after_the_current_lease_and_ends_on_its_own_time() {
    let (leases, policy) = (Leases::default(), policy());
    let want = fetch(leases.take("a", &policy, 1, 0));
    leases.store("a", &policy, 4, 0, want.sent_at);
    // 4 given: below half after the third request, which fetches the next lease.
    for now in [10, 20] {
        assert_eq!(admitted(leases.take("a", &policy, 1, now)).1, None);
    }
    let Take::Admitted(decision, Some(next)) = leases.take("a", &policy, 1, 50_000) else {
        panic!("the request that leaves the lease below half fetches");
    };
    assert_eq!(decision.remaining, 1);
    leases.store("a", &policy, 10, 0, next.sent_at);
    // One from the first lease, then ten from the next, which ends 100 ms after its fetch.
    for now in [60_000, 70_000] {
        admitted(leases.take("a", &policy, 1, now));
    }
    admitted(leases.take("a", &policy, 1, 149_999));
    assert!(matches!(
        leases.take("a", &policy, 1, 150_000),
        Take::Fetch(_)
    ));
}

#[test]
fn an_abandoned_fetch_lets_the_next_request_fetch() {
    let (leases, policy) = (Leases::default(), policy());
    let want = fetch(leases.take("a", &policy, 1, 0));
    drop(Fetching {
        leases: &leases,
        identity: "a",
        policy: &policy,
        done: false,
    });
    let again = fetch(leases.take("a", &policy, 1, 10));
    assert!(again.sent_at > want.sent_at);
    // Buckets are per policy and per identity.
    assert!(matches!(leases.take("b", &policy, 1, 10), Take::Fetch(_)));
    let other = Policy::from_interval("create", 100_000, 1_000)
        .unwrap()
        .with_lease(64, 100_000)
        .unwrap();
    assert!(matches!(leases.take("a", &other, 1, 10), Take::Fetch(_)));
}

#[test]
fn a_cost_above_the_current_lease_takes_the_rest_from_the_next() {
    let (leases, policy) = (Leases::default(), policy());
    let want = fetch(leases.take("a", &policy, 3, 0));
    // Only 2 of the 3 granted: refused, and the 2 kept.
    leases.store("a", &policy, 2, 0, want.sent_at);
    let want = fetch(leases.take("a", &policy, 3, 1_000));
    leases.store("a", &policy, 2, 0, want.sent_at);
    let Take::Admitted(decision, _) = leases.take("a", &policy, 3, 2_000) else {
        panic!("2 and 2 held cover a cost of 3");
    };
    assert_eq!(decision.remaining, 1);
    // The first two end 100 ms after their fetch: the one left, from the second, does not.
    admitted(leases.take("a", &policy, 1, 100_500));
    assert!(matches!(
        leases.take("a", &policy, 1, 100_600),
        Take::Fetch(_)
    ));
}

#[test]
fn cleared_leases_are_asked_for_again() {
    let (leases, policy) = (Leases::default(), policy());
    let want = fetch(leases.take("a", &policy, 1, 0));
    leases.store("a", &policy, 40, 0, want.sent_at);
    leases.clear();
    assert!(matches!(leases.take("a", &policy, 1, 10), Take::Fetch(_)));
}

#[test]
fn a_policy_without_lease_terms_is_never_leased() {
    let leases = Leases::default();
    let plain = Policy::from_interval("redirect", 100, 1_000).unwrap();
    assert!(matches!(leases.take("a", &plain, 1, 0), Take::Shared));
}
