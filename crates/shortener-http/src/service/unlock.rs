//! An attempt at a locked link's password: one token from the client's bucket for the
//! link and one from the link's bucket over every client, both or neither, before the
//! password is checked; then the link resolved as unlocked.

use poem::Request;
use poem::http::StatusCode;
use shortener_core::{
    Demand, LinkKey, MultiRateLimiter as _, PasswordHash, Redirect, ResolveError, Visitor,
};
use time::OffsetDateTime;

use crate::api::unlock::{Refused, Unlock};
use crate::api_error::{ApiError, Problem};
use crate::auth::{API_KEY_HEADER, ApiKeyEntry};
use crate::http::header_text;
use crate::state::AppState;

impl AppState {
    /// An attempt with `password` by the client of `request`.
    pub(crate) fn unlock_of(&self, request: &Request, password: String) -> Unlock {
        let key: Option<ApiKeyEntry> = header_text(request, &API_KEY_HEADER)
            .and_then(|presented| self.api_keys.find(presented));
        Unlock {
            password,
            client: crate::limit::identity(self, request, key.as_ref()),
            tier: key.and_then(|entry| entry.tier),
        }
    }

    /// Takes an attempt from the `unlock` buckets and checks the password against
    /// `hash` (the link's, as [`ResolveError::Locked`] gave it); when right, resolves the
    /// link as unlocked, counting the visit. The outer error is a refused attempt; the
    /// inner result is the resolution's.
    pub(crate) async fn try_unlock(
        &self,
        key: &LinkKey,
        hash: PasswordHash,
        unlock: Unlock,
        now: OffsetDateTime,
        visitor: Visitor,
    ) -> Result<Result<Redirect, ResolveError>, Refused> {
        // A place for the check first: a refused attempt takes no guess.
        let admission =
            (self.passwords.admit()).map_err(|busy| Refused::Unavailable(busy.into()))?;
        self.take_attempt(key, &unlock).await?;
        if !admission.verify(unlock.password, hash.clone()).await {
            metrics::counter!("shortener_unlock_attempts_total", "outcome" => "wrong").increment(1);
            return Err(Refused::Wrong);
        }
        metrics::counter!("shortener_unlock_attempts_total", "outcome" => "right").increment(1);
        match (self.shortener)
            .resolve_unlocked(key, now, Some(visitor), Some(&hash))
            .await
        {
            // The password changed since it was checked: the old one opens nothing.
            Err(ResolveError::Locked(_)) => Err(Refused::Wrong),
            resolved => Ok(resolved),
        }
    }

    /// One token from the client's bucket for the link (the `unlock` policy of the
    /// caller's tier) and one from the link's bucket over all clients (`unlock_link`),
    /// both or neither. The link's bucket is larger than a client's, so that a client who
    /// spends its own guesses leaves the others theirs.
    async fn take_attempt(&self, key: &LinkKey, unlock: &Unlock) -> Result<(), Refused> {
        let demand = |identity: &str, policy: &shortener_core::Policy| Demand {
            identity: identity.to_owned(),
            policy: policy.clone(),
            cost: 1,
            debt: 0,
            algorithm: self.serving.algorithm,
        };
        // One group per link: on Redis Cluster a link's buckets share a slot, and
        // different links spread over the cluster. No client identity is `*`.
        let group = format!("unlock:{key}");
        let demands: Vec<Demand> = [
            (self.policies.get(unlock.tier.as_deref(), "unlock"))
                .map(|p| demand(&unlock.client, p)),
            (self.policies.get(None, "unlock_link")).map(|p| demand("*", p)),
        ]
        .into_iter()
        .flatten()
        .collect();
        if demands.is_empty() {
            return Ok(());
        }
        let decision = self.limiter.acquire_all(&group, &demands).await;
        let outcome = |outcome: &'static str| {
            metrics::counter!("shortener_ratelimit_decisions_total", "policy" => "unlock", "outcome" => outcome)
                .increment(1);
        };
        match decision {
            Ok(all) if all.allowed => {
                outcome("allowed");
                Ok(())
            }
            Ok(all) => {
                outcome("rejected");
                let wait = (all.decisions.iter())
                    .filter(|decision| !decision.allowed)
                    .map(shortener_core::Decision::retry_after_secs)
                    .max()
                    .unwrap_or(1);
                Err(Refused::Limited(wait))
            }
            Err(error) => {
                outcome("unavailable");
                tracing::debug!(%error, "rate limiter unavailable, unlock attempt refused");
                Err(Refused::Unavailable(ApiError::Unavailable(
                    poem_openapi::payload::Json(Problem::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the rate limiter is unavailable, retry later",
                    )),
                    1,
                )))
            }
        }
    }
}
