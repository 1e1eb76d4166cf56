//! Leased tokens (`shortener_core::limiter::lease`): what this node took from a shared
//! bucket ahead of demand, per (policy, identity), and which request fetches the next lease.
//!
//! A bucket holds at most two leases, each with its own end (a lifetime after its call was
//! sent): the one admitted from, and the next, fetched once the first falls below half of
//! what it was given, so that a busy client is admitted from memory without a pause.
//! One fetch at a time per bucket: a request that finds no tokens while a fetch is in
//! flight is decided on the shared bucket as without a lease.
//!
//! A lease's size follows the bucket's demand on this node: a fetch asks for the cost of
//! its request plus twice what was asked of the bucket since the previous fetch, its own
//! cost included (at most the policy's lease), and only the cost when the previous fetch
//! is older than a lifetime.
//! A client seen once in a while thus takes exactly its cost, as without a lease, and a
//! busy one doubles its lease per fetch up to the policy's.

use shortener_core::limiter::per_bucket::{BucketState, PerBucket};
use shortener_core::{Decision, Policy};

/// The leases of every bucket this node leases from. Past the map's bound, ended leases
/// are dropped, and if there is still no room (or the shard was swept less than 10 ms
/// ago) a new identity is decided on the shared bucket, without a lease.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    held: PerBucket<Held>,
}

/// What this node holds of one bucket.
#[derive(Debug)]
struct Held {
    policy: String,
    /// Admitted from first.
    current: Slot,
    /// Fetched ahead, admitted from once `current` is used up or ended.
    next: Slot,
    fetching: bool,
    /// When the last fetch was sent, in microseconds of the limiter's clock.
    fetched_at: Option<u64>,
    /// Tokens asked of this bucket on this node since the last fetch was sent.
    asked: u64,
    /// Whole tokens the shared bucket held after the last fetch: the rest of `remaining`.
    shared_remaining: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    tokens: u64,
    given: u64,
    /// Its tokens may be admitted before this time (microseconds of the limiter's clock).
    until: u64,
}

/// Clears a bucket's fetch when dropped before [`Fetching::done`]: a fetch that failed,
/// or whose request was cancelled, lets the next request without tokens fetch again.
pub(crate) struct Fetching<'a> {
    pub leases: &'a Leases,
    pub identity: &'a str,
    pub policy: &'a Policy,
    pub done: bool,
}

impl Drop for Fetching<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.leases.abandon(self.identity, self.policy);
        }
    }
}

/// What the leases say about one request.
#[derive(Debug)]
pub(crate) enum Take {
    /// Admitted from a lease; with `Some`, this request fetches the next lease, after it.
    Admitted(Decision, Option<Want>),
    /// No tokens here: this request fetches a lease, its cost included.
    Fetch(Want),
    /// No tokens here and a fetch in flight (or no room for the identity): decide on the
    /// shared bucket without a lease.
    Shared,
}

/// A fetch to make: `tokens` to ask for, and `sent_at`, when it is (about to be) sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Want {
    pub tokens: u64,
    pub sent_at: u64,
}

impl Leases {
    /// Takes `cost` tokens of (`policy`, `identity`) at `now_us` if this node holds them.
    /// `policy` must have lease terms.
    pub(crate) fn take(&self, identity: &str, policy: &Policy, cost: u64, now_us: u64) -> Take {
        let Some(terms) = policy.lease() else {
            return Take::Shared;
        };
        self.held.with(policy.name(), identity, |bucket| {
            let Some(held) = bucket.get_or_insert_with(now_us, || Held::new(policy.name())) else {
                return Take::Shared;
            };
            held.promote(now_us);
            let holds = held.current.tokens.saturating_add(held.next.tokens);
            if holds >= cost && holds > 0 {
                // The current lease first; a cost above what is left of it takes the rest from
                // the next, which has not ended either (`promote` dropped ended tokens).
                let from_current = cost.min(held.current.tokens);
                held.current.tokens -= from_current;
                held.next.tokens -= cost - from_current;
                held.promote(now_us);
                held.asked = held.asked.saturating_add(cost);
                let decision = held.decision(policy);
                let low = held.current.tokens < held.current.given.div_ceil(2);
                let refill = (low && !held.fetching && held.next.tokens == 0)
                    .then(|| held.start_fetch(terms.tokens(), 0, terms.lifetime_us(), now_us));
                return Take::Admitted(decision, refill);
            }
            if held.fetching {
                held.asked = held.asked.saturating_add(cost);
                return Take::Shared;
            }
            Take::Fetch(held.start_fetch(terms.tokens(), cost, terms.lifetime_us(), now_us))
        })
    }

    /// The answer to a fetch of (`policy`, `identity`): `granted` tokens, `kept` of them
    /// left for later requests (the rest went to the fetching request), and the shared
    /// bucket's whole tokens after the call; usable until a lifetime after `sent_at`.
    pub(crate) fn store(
        &self,
        identity: &str,
        policy: &Policy,
        kept: u64,
        shared_remaining: u64,
        sent_at: u64,
    ) {
        let Some(terms) = policy.lease() else {
            return;
        };
        self.held.with(policy.name(), identity, |bucket| {
            let Some(held) = bucket.get_mut() else {
                return;
            };
            held.fetching = false;
            held.shared_remaining = shared_remaining;
            let slot = Slot {
                tokens: kept,
                given: kept,
                until: sent_at.saturating_add(terms.lifetime_us()),
            };
            if held.current.tokens == 0 {
                held.current = slot;
            } else if held.next.tokens == 0 {
                held.next = slot;
            } else {
                // Only after a fetch whose request cost more than both held: the two are one
                // lease that ends when the earlier of them does, which admits less, never more.
                held.next = Slot {
                    tokens: held.next.tokens.saturating_add(slot.tokens),
                    given: held.next.given.saturating_add(slot.given),
                    until: held.next.until.min(slot.until),
                };
            }
        });
    }

    /// Drops every lease: after a failed call, so that the next requests ask Redis (and
    /// the circuit breaker hears how it does) instead of being admitted from memory.
    pub(crate) fn clear(&self) {
        self.held.clear();
    }

    fn abandon(&self, identity: &str, policy: &Policy) {
        self.held.with(policy.name(), identity, |bucket| {
            if let Some(held) = bucket.get_mut() {
                held.fetching = false;
            }
        });
    }

    /// The decision for a request admitted from tokens just fetched, before they are
    /// stored: the node's view, as for every leased admission.
    pub(crate) fn fetched_decision(policy: &Policy, kept: u64, shared_remaining: u64) -> Decision {
        admitted(policy, kept.saturating_add(shared_remaining))
    }
}

impl Held {
    fn new(policy: &str) -> Self {
        Self {
            policy: policy.to_owned(),
            current: Slot::default(),
            next: Slot::default(),
            fetching: false,
            fetched_at: None,
            asked: 0,
            shared_remaining: 0,
        }
    }

    /// Drops ended tokens, and moves the next lease up once the current one is spent.
    fn promote(&mut self, now_us: u64) {
        if !self.next.live(now_us) {
            self.next = Slot::default();
        }
        if !self.current.live(now_us) {
            self.current = std::mem::take(&mut self.next);
        }
    }

    /// Starts the one fetch of this bucket: `cost` for the request that makes it, plus
    /// twice what was asked since the previous fetch (this request included) when that
    /// is recent, within the lease.
    fn start_fetch(&mut self, lease: u64, cost: u64, lifetime_us: u64, now_us: u64) -> Want {
        let recent = self
            .fetched_at
            .is_some_and(|at| now_us.saturating_sub(at) < lifetime_us);
        let ahead = if recent {
            self.asked.saturating_add(cost).saturating_mul(2).min(lease)
        } else {
            0
        };
        self.fetching = true;
        self.fetched_at = Some(now_us);
        self.asked = 0;
        // At least one: a call for none would be read as a single decision.
        Want {
            tokens: cost.saturating_add(ahead).max(1),
            sent_at: now_us,
        }
    }

    fn decision(&self, policy: &Policy) -> Decision {
        let held = self.current.tokens.saturating_add(self.next.tokens);
        admitted(policy, held.saturating_add(self.shared_remaining))
    }
}

impl BucketState for Held {
    fn policy(&self) -> &str {
        &self.policy
    }

    /// No tokens left to admit and no fetch in flight.
    fn ended(&self, now_us: u64) -> bool {
        !self.fetching && !self.current.live(now_us) && !self.next.live(now_us)
    }
}

impl Slot {
    /// Whether it holds tokens that may still be admitted at `now_us`.
    fn live(&self, now_us: u64) -> bool {
        self.tokens > 0 && now_us < self.until
    }
}

/// A decision made on the shared bucket of `policy`, told in the policy's own terms: its
/// limit is the policy's capacity, and the time to fill up counts the lease's reserve too,
/// so that `burst - reset_after` is the bucket's credit, as the refusal cache reads it.
pub(crate) fn of_policy(decision: Decision, policy: &Policy) -> Decision {
    let reserve = policy.capacity() - policy.shared().capacity();
    Decision {
        limit: policy.capacity(),
        reset_after_us: decision.reset_after_us + reserve * policy.interval_us(),
        ..decision
    }
}

fn admitted(policy: &Policy, remaining: u64) -> Decision {
    let remaining = remaining.min(policy.capacity());
    Decision {
        allowed: true,
        limit: policy.capacity(),
        remaining,
        retry_after_us: Some(0),
        reset_after_us: (policy.capacity() - remaining).saturating_mul(policy.interval_us()),
    }
}

#[cfg(test)]
mod tests {
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
}
