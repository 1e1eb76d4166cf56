//! All-or-nothing decisions over several buckets of one group: one call of
//! `lua/token_bucket_all.lua`, on token-bucket state whatever the limiter's algorithm
//! (both admit the same; the rate limit service's keys are its own).

use std::sync::LazyLock;

use shortener_core::{AllDecision, Decision, Demand, LimiterError, MultiRateLimiter};

use crate::key::bucket_key;
use crate::limiter::RedisRateLimiter;
use crate::scripts::{Lua, ScriptCall};

static ALL: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(include_str!("../../../lua/token_bucket_all.lua")));

impl RedisRateLimiter {
    /// The Redis key of a group's bucket: `{prefix}{{group}}:{policy}:{identity}`; the group
    /// is the hash tag, so one group's buckets share a cluster slot.
    pub fn group_key(&self, group: &str, identity: &str, policy: &str) -> String {
        bucket_key(self.key_prefix(), group, &format!("{policy}:{identity}"))
    }

    /// As [`MultiRateLimiter::acquire_all`] at an explicit time, for the differential
    /// tests (`now_us` must not be behind Redis's clock).
    ///
    /// # Errors
    /// As [`MultiRateLimiter::acquire_all`].
    #[doc(hidden)]
    pub async fn acquire_all_at(
        &self,
        group: &str,
        demands: &[Demand],
        now_us: u64,
    ) -> Result<AllDecision, LimiterError> {
        self.decide_all(group, demands, Some(now_us)).await
    }

    async fn decide_all(
        &self,
        group: &str,
        demands: &[Demand],
        now_us: Option<u64>,
    ) -> Result<AllDecision, LimiterError> {
        if demands.is_empty() {
            return Ok(AllDecision {
                allowed: true,
                decisions: Vec::new(),
            });
        }
        let mut call: ScriptCall = ALL.call();
        call.args
            .push(now_us.map(|now| now.to_string()).unwrap_or_default());
        for demand in demands {
            call.keys
                .push(self.group_key(group, &demand.identity, demand.policy.name()));
            call.args.extend([
                demand.policy.capacity().to_string(),
                demand.policy.interval_us().to_string(),
                demand.cost.to_string(),
                demand.debt.to_string(),
            ]);
        }
        let reply = self.run_script(&call).await?;
        decode_all(&reply, demands)
    }
}

impl MultiRateLimiter for RedisRateLimiter {
    async fn acquire_all(
        &self,
        group: &str,
        demands: &[Demand],
    ) -> Result<AllDecision, LimiterError> {
        self.decide_all(group, demands, None).await
    }
}

/// `{admitted, r1, ..., rn}` as one decision per demand.
fn decode_all(reply: &redis::Value, demands: &[Demand]) -> Result<AllDecision, LimiterError> {
    let unexpected = || LimiterError::Unexpected(format!("limiter script returned {reply:?}"));
    let redis::Value::Array(items) = reply else {
        return Err(unexpected());
    };
    let Some((redis::Value::Int(admitted), credits)) = items.split_first() else {
        return Err(unexpected());
    };
    if credits.len() != demands.len() || !matches!(admitted, 0 | 1) {
        return Err(unexpected());
    }
    let mut decisions = Vec::with_capacity(demands.len());
    for (item, demand) in credits.iter().zip(demands) {
        let redis::Value::Int(code) = item else {
            return Err(unexpected());
        };
        let (fits, credit) = if *code >= 0 {
            (true, *code)
        } else {
            (false, -1 - code)
        };
        let credit = u64::try_from(credit).map_err(|_| unexpected())?;
        if credit > demand.policy.burst_us() {
            return Err(unexpected());
        }
        decisions.push(Decision::from_credit(
            &demand.policy,
            demand.cost,
            fits,
            credit,
        ));
    }
    let allowed = *admitted == 1;
    if allowed != decisions.iter().all(|decision| decision.allowed) {
        return Err(unexpected());
    }
    Ok(AllDecision { allowed, decisions })
}

#[cfg(test)]
mod tests {
    use redis::Value;
    use shortener_core::Policy;

    use super::*;

    #[test]
    fn replies_decode_per_demand_and_nonsense_is_rejected() {
        let policy = Policy::from_interval("p", 5, 1_000).unwrap();
        let demand = Demand {
            identity: "a".into(),
            policy,
            cost: 1,
            debt: 0,
        };
        let demands = [demand.clone(), demand];
        let reply = Value::Array(vec![Value::Int(0), Value::Int(3_000), Value::Int(-1 - 500)]);
        let decision = decode_all(&reply, &demands).unwrap();
        assert!(!decision.allowed);
        assert!(decision.decisions[0].allowed);
        assert_eq!(decision.decisions[0].remaining, 3);
        assert_eq!(decision.decisions[1].retry_after_us, Some(500));
        for bad in [
            Value::Array(vec![Value::Int(1), Value::Int(3_000), Value::Int(-1 - 500)]),
            Value::Array(vec![Value::Int(1), Value::Int(3_000)]),
            Value::Array(vec![Value::Int(2), Value::Int(1), Value::Int(1)]),
            Value::Array(vec![Value::Int(1), Value::Int(9_000), Value::Int(1)]),
            Value::Int(1),
        ] {
            assert!(decode_all(&bad, &demands).is_err(), "{bad:?}");
        }
    }
}
