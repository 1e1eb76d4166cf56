//! Decisions of a policy with lease terms: admitted from tokens this node leased from the
//! shared bucket when it holds some, else by a call that leases more (`lease_store.rs` keeps
//! them and says which request fetches).

use std::sync::atomic::Ordering;

use shortener_core::{Clock, Decision, LimiterError, Policy};

use crate::backend::Operation;
use crate::lease_store::{Fetching, Leases, Take, Want, of_policy};
use crate::limiter::RedisRateLimiter;
use crate::scripts;

impl RedisRateLimiter {
    /// A decision of a leased policy (`policy.lease()` is set).
    pub(crate) async fn leased(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        let now_us = self.clock.now_us();
        let result = match self.leases.take(identity, policy, cost, now_us) {
            Take::Admitted(decision, refill) => {
                self.leased.fetch_add(1, Ordering::Relaxed);
                if let Some(want) = refill {
                    // Admitted whatever the fetch does. On a failure every lease is dropped
                    // (below), so the next requests ask Redis and report it to the breaker.
                    if let Err(error) = self.fetch(identity, policy, want, 0).await {
                        tracing::debug!(%error, "fetching the next lease failed");
                        self.leases.clear();
                    }
                }
                return Ok(decision);
            }
            Take::Fetch(want) => self.fetch(identity, policy, want, cost).await,
            Take::Shared => self.on_shared_bucket(identity, policy, cost).await,
        };
        // A failed call drops every lease: a node whose Redis fails should not look healthy
        // to its circuit breaker (a probe answered from memory would close the circuit).
        if result.is_err() {
            self.leases.clear();
        }
        result
    }

    /// Leases up to `want.tokens` from the shared bucket for a request of `cost` (0 for a
    /// fetch ahead of need): admitted when at least `cost` were granted, the rest kept.
    /// Refused otherwise, as the shared bucket would refuse it; what was granted is kept
    /// for smaller requests.
    async fn fetch(
        &self,
        identity: &str,
        policy: &Policy,
        want: Want,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        let mut fetching = Fetching {
            leases: &self.leases,
            identity,
            policy,
            done: false,
        };
        let shared = policy.shared();
        let connected = self.connected().await?;
        let key = self.key(identity, policy);
        let call = scripts::lease_call(connected.script, &key, shared, want.tokens);
        let reply: redis::Value = connected
            .backend
            .run(self.deadline(), Operation::Script(&call))
            .await?;
        let (granted, credit_before) = scripts::decode_lease(&reply, shared, want.tokens)?;
        let credit_after = credit_before - granted * shared.interval_us();
        let shared_remaining = credit_after / shared.interval_us();
        let admitted = granted >= cost;
        let kept = if admitted { granted - cost } else { granted };
        self.leases
            .store(identity, policy, kept, shared_remaining, want.sent_at);
        fetching.done = true;
        if admitted {
            return Ok(Leases::fetched_decision(policy, kept, shared_remaining));
        }
        // The wait from the credit before the call: the node now holds `granted` of the
        // cost, and the bucket must refill the rest beyond what it held after the call,
        // `(cost - granted) * interval - credit_after`, which is `cost * interval -
        // credit_before`.
        let refused = Decision::from_credit(shared, cost, false, credit_before);
        Ok(of_policy(refused, policy))
    }
}
