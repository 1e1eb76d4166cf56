//! [`RedisRateLimiter`]: the `RateLimiter` port over the Lua scripts.

use std::fmt;
use std::time::Duration;

use shortener_core::{Algorithm, Decision, LimiterError, Policy, RateLimiter};

use crate::backend::{Backend, Operation};
use crate::config::{RedisConfig, redact};
use crate::scripts::{self, AuditRecord, Lua, PROBE};

/// A rate limiter whose every decision is one script call on Redis, with Redis's clock:
/// exact across any number of app nodes sharing the Redis (or Redis Cluster).
pub struct RedisRateLimiter {
    backend: Backend,
    script: &'static Lua,
    algorithm: Algorithm,
    key_prefix: String,
    timeout: Duration,
}

impl fmt::Debug for RedisRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRateLimiter")
            .field("backend", &self.backend.kind())
            .field("algorithm", &self.algorithm)
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisRateLimiter {
    /// Connects and checks that the server can run the limiter: Redis 7 or newer (whose
    /// effects replication makes `TIME` in a script safe), a script may call `TIME`, and
    /// the limiter script loads. Each step waits at most `config.timeout`.
    ///
    /// # Errors
    /// [`LimiterError::Unavailable`] when Redis cannot be reached in time;
    /// [`LimiterError::Unexpected`] for a bad configuration or a server that cannot run
    /// the scripts.
    pub async fn connect(config: RedisConfig) -> Result<Self, LimiterError> {
        let timeout = config.timeout;
        let target = if config.cluster_nodes.is_empty() {
            redact(&config.url)
        } else {
            let nodes: Vec<String> = config.cluster_nodes.iter().map(|u| redact(u)).collect();
            format!("cluster {}", nodes.join(" "))
        };
        let context = |error: LimiterError| match error {
            LimiterError::Unavailable(cause) => {
                LimiterError::Unavailable(format!("cannot reach redis at {target}: {cause}"))
            }
            LimiterError::Unexpected(cause) => {
                LimiterError::Unexpected(format!("redis at {target}: {cause}"))
            }
        };
        let backend = Backend::connect(&config).await.map_err(context)?;
        let (version, seconds, _micros): (String, u64, u64) = backend
            .run(timeout, Operation::Script(&PROBE.call()))
            .await
            .map_err(context)?;
        let major = version
            .split('.')
            .next()
            .and_then(|major| major.parse::<u32>().ok());
        if major.is_none_or(|major| major < 7) {
            return Err(context(LimiterError::Unexpected(format!(
                "redis 7.0 or newer is required, the server is {version}"
            ))));
        }
        if seconds == 0 {
            return Err(context(LimiterError::Unexpected(
                "TIME in a script returned 0".to_owned(),
            )));
        }
        let script = scripts::script(config.algorithm);
        let hash: String = backend
            .run(timeout, Operation::Query(&script.load_command()))
            .await
            .map_err(context)?;
        if hash != script.hash() {
            return Err(context(LimiterError::Unexpected(format!(
                "SCRIPT LOAD returned {hash}, expected {}",
                script.hash()
            ))));
        }
        tracing::debug!(backend = backend.kind(), %version, "redis rate limiter connected");
        Ok(Self {
            backend,
            script,
            algorithm: config.algorithm,
            key_prefix: config.key_prefix,
            timeout,
        })
    }

    /// As [`RateLimiter::acquire`], in audit mode: the reply also carries the time the
    /// script used and the key's version (its count of writes), so that a test can put
    /// every decision on a key in one total order and replay it through the core model.
    /// The key itself is written exactly as by [`RateLimiter::acquire`]; the count lives in
    /// a second key, `{key}:audit` (same slot), which expires a day after the key does.
    ///
    /// # Errors
    /// As [`RateLimiter::acquire`].
    pub async fn acquire_audited(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<(Decision, AuditRecord), LimiterError> {
        self.decide(identity, policy, cost, None, true).await
    }

    /// A decision at an explicit time instead of Redis's clock, for the differential
    /// tests. `now_us` must not be behind Redis's clock, since the key expires at a time
    /// computed from it.
    ///
    /// # Errors
    /// As [`RateLimiter::acquire`].
    #[doc(hidden)]
    pub async fn acquire_at(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
        now_us: u64,
    ) -> Result<Decision, LimiterError> {
        let (decision, _) = self
            .decide(identity, policy, cost, Some(now_us), false)
            .await?;
        Ok(decision)
    }

    /// The Redis key of one quota for one client: `{prefix}{{identity}}:{policy}`. The
    /// identity is the hash tag, so all of one client's keys share a cluster slot. Braces
    /// and `%` in the identity are percent-encoded, so that the tag is the whole identity
    /// and no two (identity, policy) pairs share a key.
    pub fn key(&self, identity: &str, policy: &Policy) -> String {
        bucket_key(&self.key_prefix, identity, policy.name())
    }

    async fn decide(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
        now_us: Option<u64>,
        audit: bool,
    ) -> Result<(Decision, AuditRecord), LimiterError> {
        let key = self.key(identity, policy);
        let call = scripts::decision_call(self.script, key, policy, cost, now_us, audit);
        let reply: redis::Value = self
            .backend
            .run(self.timeout, Operation::Script(&call))
            .await?;
        scripts::decode(&reply, policy, cost)
    }
}

impl RateLimiter for RedisRateLimiter {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        let (decision, _) = self.decide(identity, policy, cost, None, false).await?;
        Ok(decision)
    }

    async fn health(&self) -> Result<(), LimiterError> {
        let _: String = self
            .backend
            .run(self.timeout, Operation::Query(&redis::cmd("PING")))
            .await?;
        Ok(())
    }
}

fn bucket_key(prefix: &str, identity: &str, policy: &str) -> String {
    let mut key = String::with_capacity(prefix.len() + identity.len() + policy.len() + 3);
    key.push_str(prefix);
    key.push('{');
    for character in identity.chars() {
        match character {
            '%' => key.push_str("%25"),
            '{' => key.push_str("%7B"),
            '}' => key.push_str("%7D"),
            other => key.push(other),
        }
    }
    key.push_str("}:");
    key.push_str(policy);
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tag_the_whole_identity_and_never_alias() {
        assert_eq!(
            bucket_key("rl:", "203.0.113.9", "create"),
            "rl:{203.0.113.9}:create"
        );
        assert_eq!(
            bucket_key("rl:", "2001:db8::1", "create"),
            "rl:{2001:db8::1}:create"
        );
        // Without escaping, both would be rl:{a}:b}:c.
        assert_eq!(bucket_key("rl:", "a}:b", "c"), "rl:{a%7D:b}:c");
        assert_eq!(bucket_key("rl:", "a", "b}:c"), "rl:{a}:b}:c");
        assert_eq!(bucket_key("rl:", "{%}", "c"), "rl:{%7B%25%7D}:c");
    }
}
