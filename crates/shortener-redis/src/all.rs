//! All-or-nothing decisions over several buckets of one group: one call of
//! `lua/all_or_nothing.lua`, each demand kept as its own algorithm says (a token bucket,
//! GCRA or a fixed window); the limiter's configured algorithm is not used here (the
//! rate limit service's keys are its own).

use std::sync::LazyLock;

use shortener_core::limiter::fixed_window;
use shortener_core::{Algorithm, AllDecision, Decision, Demand, LimiterError, MultiRateLimiter};

use crate::key::bucket_key;
use crate::limiter::RedisRateLimiter;
use crate::scripts::{Lua, ScriptCall};

static ALL: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(include_str!("../../../lua/all_or_nothing.lua")));

impl RedisRateLimiter {
    /// The Redis key of a group's token bucket: `{prefix}{{group}}:{policy}:{identity}`;
    /// the group is the hash tag, so one group's buckets share a cluster slot.
    pub fn group_key(&self, group: &str, identity: &str, policy: &str) -> String {
        self.demand_key(group, identity, policy, Algorithm::TokenBucket)
    }

    /// The key of a demand's bucket: a token bucket's is [`Self::group_key`]; GCRA's and
    /// a fixed window's end the policy with `#gcra` and `#window`, so that a limit whose
    /// algorithm changes never reads another kind's state.
    pub fn demand_key(
        &self,
        group: &str,
        identity: &str,
        policy: &str,
        algorithm: Algorithm,
    ) -> String {
        let kind = match algorithm {
            Algorithm::TokenBucket => "",
            Algorithm::Gcra => "#gcra",
            Algorithm::FixedWindow => "#window",
        };
        bucket_key(
            self.key_prefix(),
            group,
            &format!("{policy}{kind}:{identity}"),
        )
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
        let keys: Vec<String> = (demands.iter())
            .map(|demand| {
                let (identity, policy) = (&demand.identity, demand.policy.name());
                self.demand_key(group, identity, policy, demand.algorithm)
            })
            .collect();
        let mut call = ScriptCall::new(&ALL, &keys, 24 + 48 * demands.len());
        call.time_arg(now_us);
        for demand in demands {
            let (kind, span) = match demand.algorithm {
                Algorithm::TokenBucket => ("b", demand.policy.interval_us()),
                Algorithm::Gcra => ("g", demand.policy.interval_us()),
                Algorithm::FixedWindow => ("w", fixed_window::window_us(&demand.policy)),
            };
            call.arg(kind).arg(demand.policy.capacity()).arg(span);
            call.arg(demand.cost).arg(demand.debt);
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

/// `{admitted, now_us, r1, ..., rn}` as one decision per demand.
fn decode_all(reply: &redis::Value, demands: &[Demand]) -> Result<AllDecision, LimiterError> {
    let unexpected =
        || LimiterError::Unexpected(format!("limiter script returned {reply:?}").into());
    let redis::Value::Array(items) = reply else {
        return Err(unexpected());
    };
    let [
        redis::Value::Int(admitted),
        redis::Value::Int(now_us),
        credits @ ..,
    ] = &items[..]
    else {
        return Err(unexpected());
    };
    let now_us = u64::try_from(*now_us).map_err(|_| unexpected())?;
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
        let amount = u64::try_from(credit).map_err(|_| unexpected())?;
        decisions.push(match demand.algorithm {
            Algorithm::TokenBucket | Algorithm::Gcra => {
                if amount > demand.policy.burst_us() {
                    return Err(unexpected());
                }
                Decision::from_credit(&demand.policy, demand.cost, fits, amount)
            }
            Algorithm::FixedWindow => {
                fixed_window::decision(&demand.policy, demand.cost, fits, amount, now_us)
            }
        });
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
            algorithm: Algorithm::TokenBucket,
        };
        let window = Demand {
            algorithm: Algorithm::FixedWindow,
            ..demand.clone()
        };
        let demands = [demand.clone(), demand];
        let now = Value::Int(7_000_400);
        let reply = Value::Array(vec![
            Value::Int(0),
            now.clone(),
            Value::Int(3_000),
            Value::Int(-1 - 500),
        ]);
        let decision = decode_all(&reply, &demands).unwrap();
        assert!(!decision.allowed);
        assert!(decision.decisions[0].allowed);
        assert_eq!(decision.decisions[0].remaining, 3);
        assert_eq!(decision.decisions[1].retry_after_us, Some(500));
        // A window of 5 tokens (whole seconds: 5 ms rounds up to 1 s), 4 counted.
        let counted = Value::Array(vec![Value::Int(1), now.clone(), Value::Int(4)]);
        let decision = decode_all(&counted, &[window]).unwrap();
        assert_eq!(decision.decisions[0].remaining, 1);
        assert_eq!(decision.decisions[0].reset_after_us, 999_600);
        for bad in [
            Value::Array(vec![
                Value::Int(1),
                now.clone(),
                Value::Int(3_000),
                Value::Int(-1 - 500),
            ]),
            Value::Array(vec![Value::Int(1), now.clone(), Value::Int(3_000)]),
            Value::Array(vec![
                Value::Int(2),
                now.clone(),
                Value::Int(1),
                Value::Int(1),
            ]),
            Value::Array(vec![
                Value::Int(1),
                now.clone(),
                Value::Int(9_000),
                Value::Int(1),
            ]),
            Value::Array(vec![
                Value::Int(1),
                Value::Int(-1),
                Value::Int(1),
                Value::Int(1),
            ]),
            Value::Array(vec![Value::Int(1), Value::Int(1), Value::Int(1)]),
            Value::Int(1),
        ] {
            assert!(decode_all(&bad, &demands).is_err(), "{bad:?}");
        }
    }
}
