//! The fallback's all-or-nothing decisions: the debts of every demand go to the primary
//! with it, and a local answer takes every demand's share or none.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use super::{Fallback, OnError};
use crate::limiter::all::{AllDecision, Demand, MultiRateLimiter, grouped_identity};
use crate::limiter::{
    Algorithm, Clock, Decision, LimiterError, LocalRateLimiter, SharedRateLimiter, token_bucket,
};

impl<P, L, C> MultiRateLimiter for Fallback<P, L, C>
where
    P: SharedRateLimiter + MultiRateLimiter,
    L: LocalRateLimiter + MultiRateLimiter,
    C: Clock,
{
    /// As `RateLimiter::acquire` for several buckets: the debts of every demand go to
    /// the primary with it, and a local answer takes every demand's share or none.
    async fn acquire_all(
        &self,
        group: &str,
        demands: &[Demand],
    ) -> Result<AllDecision, LimiterError> {
        let probe = if self.is_open() {
            match self.try_probe() {
                Some(probe) => Some(probe),
                None => return self.fallback_all(group, demands).await,
            }
        } else {
            None
        };
        let mut debts = Vec::new();
        for (index, demand) in demands.iter().enumerate() {
            let identity = grouped_identity(group, &demand.identity);
            if let Some(debt) = self.debts.take(&identity, &demand.policy) {
                debts.push((index, debt));
            }
        }
        // The demands are copied only when some owe a debt (after a spell of failures),
        // so the usual call passes them as they came.
        let owing: Cow<'_, [Demand]> = if debts.is_empty() {
            Cow::Borrowed(demands)
        } else {
            let mut owing = demands.to_vec();
            for (index, debt) in &debts {
                owing[*index].debt += debt.tokens;
            }
            Cow::Owned(owing)
        };
        match self.primary.acquire_all(group, &owing).await {
            Ok(decision) => {
                for (_, debt) in debts {
                    self.settled_tokens
                        .fetch_add(debt.settle(), Ordering::Relaxed);
                }
                self.answered(probe.is_some());
                Ok(decision)
            }
            Err(error) => {
                drop(debts);
                self.failed(error);
                self.fallback_all(group, demands).await
            }
        }
    }
}

impl<P, L, C> Fallback<P, L, C>
where
    P: SharedRateLimiter + MultiRateLimiter,
    L: LocalRateLimiter + MultiRateLimiter,
    C: Clock,
{
    async fn fallback_all(
        &self,
        group: &str,
        demands: &[Demand],
    ) -> Result<AllDecision, LimiterError> {
        self.fallback_decisions.fetch_add(1, Ordering::Relaxed);
        match self.config.on_error {
            OnError::FailOpen => {
                let decisions: Vec<Decision> = demands
                    .iter()
                    .map(|demand| token_bucket::step(None, &demand.policy, 0, demand.cost).0)
                    .collect();
                let allowed = decisions.iter().all(|decision| decision.allowed);
                Ok(AllDecision { allowed, decisions })
            }
            OnError::FailClosed => Err(LimiterError::Unavailable(
                "rate limiter backend unavailable (on_error = fail_closed)".into(),
            )),
            OnError::Local => {
                let shares: Option<Vec<Demand>> = demands
                    .iter()
                    .map(|demand| {
                        // A token bucket of this node's share, whatever the shared
                        // algorithm: its bound (share + share's rate x time) is what the
                        // local mode promises, and a fixed window's share would not sit
                        // on the shared window's edges.
                        self.share(&demand.policy).map(|policy| Demand {
                            policy,
                            debt: 0,
                            algorithm: Algorithm::TokenBucket,
                            ..demand.clone()
                        })
                    })
                    .collect();
                let Some(shares) = shares else {
                    // Some share rounds down to nothing: this node can admit none of it.
                    let decisions = demands
                        .iter()
                        .map(|demand| Decision::from_credit(&demand.policy, demand.cost, false, 0))
                        .collect();
                    return Ok(AllDecision {
                        allowed: false,
                        decisions,
                    });
                };
                let decision = self.local.acquire_all(group, &shares).await?;
                if decision.allowed {
                    for demand in demands.iter().filter(|demand| demand.cost > 0) {
                        let identity = grouped_identity(group, &demand.identity);
                        self.debts.add(&identity, &demand.policy, demand.cost);
                    }
                }
                Ok(decision)
            }
        }
    }
}
