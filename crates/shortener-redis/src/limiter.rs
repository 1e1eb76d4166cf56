//! [`RedisRateLimiter`]: the `RateLimiter` port over the Lua scripts.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use shortener_core::limiter::clock::MonotonicClock;
use shortener_core::{Decision, LimiterError, Policy, RateLimiter, SharedRateLimiter};
use tokio::sync::OnceCell;

use crate::backend::Operation;
use crate::coalesce::{self, Bucket, Flights, Turn};
use crate::config::RedisConfig;
use crate::connected::Connected;
use crate::deadline::Deadline;
use crate::key::bucket_key;
use crate::lease_store::{Leases, of_policy};
use crate::scripts::{self, AuditRecord, ScriptCall};

/// A rate limiter whose every decision is one script call on Redis, with Redis's clock:
/// exact across any number of app nodes sharing the Redis (or Redis Cluster). A policy
/// with lease terms is decided on a bucket smaller by the lease's reserve, and admitted
/// from tokens this node leased from it while it holds some (`lease_store.rs`).
///
/// [`RedisRateLimiter::connect`] connects and checks the server before it returns;
/// [`RedisRateLimiter::connect_lazily`] returns at once and connects on first use, so that
/// a node can start while Redis is out of reach and use it once it answers.
pub struct RedisRateLimiter {
    config: RedisConfig,
    target: String,
    connected: OnceCell<Connected>,
    /// Buckets with a call in flight, and the decisions queued behind it.
    flights: Arc<Flights>,
    pub(crate) leases: Leases,
    pub(crate) clock: MonotonicClock,
    /// Requests admitted from leased tokens, without a call.
    pub(crate) leased: AtomicU64,
    /// Redis's clock less the local one, as the last calendar window call saw it.
    pub(crate) calendar_offset_us: AtomicI64,
    /// Calendar window calls named for the wrong window, and named again.
    pub(crate) calendar_renames: AtomicU64,
}

impl fmt::Debug for RedisRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisRateLimiter")
            .field("target", &self.target)
            .field(
                "backend",
                &self
                    .connected
                    .get()
                    .map(|connected| connected.backend.kind()),
            )
            .field("algorithm", &self.config.algorithm)
            .field("key_prefix", &self.config.key_prefix)
            .field("timeout", &self.config.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisRateLimiter {
    /// Connects and checks that the server can run the limiter: Redis 7 or newer (whose
    /// effects replication makes `TIME` in a script safe), a script may call `TIME`, and
    /// the limiter script loads. Each step waits at most `config.timeout`.
    ///
    /// # Errors
    /// [`LimiterError::Unavailable`] or [`LimiterError::Unreachable`] when Redis cannot
    /// be reached in time; [`LimiterError::Misconfigured`] for a wrong password;
    /// [`LimiterError::Unexpected`] for a server that cannot run the scripts.
    pub async fn connect(config: RedisConfig) -> Result<Self, LimiterError> {
        let limiter = Self::connect_lazily(config);
        limiter.connected().await?;
        Ok(limiter)
    }

    /// A limiter that connects (with the checks of [`RedisRateLimiter::connect`]) on its
    /// first call, and again on each call until that succeeds.
    pub fn connect_lazily(config: RedisConfig) -> Self {
        let target = if config.cluster_nodes.is_empty() {
            config.url.to_string()
        } else {
            let nodes: Vec<String> = config
                .cluster_nodes
                .iter()
                .map(ToString::to_string)
                .collect();
            format!("cluster {}", nodes.join(" "))
        };
        Self {
            config,
            target,
            connected: OnceCell::new(),
            flights: Arc::default(),
            leases: Leases::default(),
            clock: MonotonicClock::default(),
            leased: AtomicU64::new(0),
            calendar_offset_us: AtomicI64::new(0),
            calendar_renames: AtomicU64::new(0),
        }
    }

    /// Connects and checks the server now, unless that was done already.
    ///
    /// # Errors
    /// As [`RedisRateLimiter::connect`].
    pub async fn ensure_connected(&self) -> Result<(), LimiterError> {
        self.connected().await.map(|_| ())
    }

    /// Requests admitted from leased tokens, without a call to Redis, so far.
    pub fn leased_admissions(&self) -> u64 {
        self.leased.load(Ordering::Relaxed)
    }

    pub(crate) async fn connected(&self) -> Result<&Connected, LimiterError> {
        // Boxed: connecting (a pool, a cluster's discovery, the checks) is a 14 KB future,
        // which every decision's future would otherwise hold, and copy whenever it moves.
        match self.connected.get() {
            Some(connected) => Ok(connected),
            None => Box::pin(self.first_connection()).await,
        }
    }

    /// [`Self::connected`] the first time, or after a failed attempt.
    async fn first_connection(&self) -> Result<&Connected, LimiterError> {
        let target = &self.target;
        let context = |error: LimiterError| match error {
            LimiterError::Unavailable(cause) => {
                LimiterError::Unavailable(format!("cannot reach redis at {target}: {cause}").into())
            }
            LimiterError::Unreachable(cause) => {
                LimiterError::Unreachable(format!("cannot reach redis at {target}: {cause}").into())
            }
            LimiterError::Misconfigured(cause) => {
                LimiterError::Misconfigured(format!("redis at {target}: {cause}").into())
            }
            LimiterError::Unexpected(cause) => {
                LimiterError::Unexpected(format!("redis at {target}: {cause}").into())
            }
        };
        self.connected
            .get_or_try_init(|| async { Connected::check(&self.config).await.map_err(context) })
            .await
    }

    /// Records this node (`node`, unique per process) as alive and returns how many nodes
    /// were heard from within `window`, itself included: the N of the fallback share.
    ///
    /// # Errors
    /// As [`RateLimiter::acquire`].
    pub async fn heartbeat(&self, node: &str, window: Duration) -> Result<u64, LimiterError> {
        let connected = self.connected().await?;
        let key = format!("{}nodes", self.config.key_prefix);
        let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX).max(1);
        let call = scripts::heartbeat_call(key, node, window_ms);
        connected
            .backend
            .run(self.deadline(), Operation::Script(&call))
            .await
    }

    /// As [`SharedRateLimiter::acquire_after_debt`], in audit mode, for tests.
    ///
    /// # Errors
    /// As [`RateLimiter::acquire`].
    #[doc(hidden)]
    pub async fn acquire_after_debt_audited(
        &self,
        identity: &str,
        policy: &Policy,
        debt: u64,
        cost: u64,
    ) -> Result<(Decision, AuditRecord), LimiterError> {
        self.decide(identity, policy, cost, debt, None, true).await
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
        self.decide(identity, policy, cost, 0, None, true).await
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
            .decide(identity, policy, cost, 0, Some(now_us), false)
            .await?;
        Ok(decision)
    }

    /// `count` decisions of `cost` each in one call at an explicit time, as concurrent
    /// decisions on one bucket are coalesced, for the differential tests (`now_us` as
    /// for [`RedisRateLimiter::acquire_at`]).
    ///
    /// # Errors
    /// As [`RateLimiter::acquire`].
    #[doc(hidden)]
    pub async fn acquire_batch_at(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
        count: usize,
        now_us: u64,
    ) -> Result<Vec<Decision>, LimiterError> {
        let connected = self.connected().await?;
        let key = self.key(identity, policy);
        let shared = policy.shared();
        let call = scripts::batch_call(connected.script, &key, shared, cost, count, Some(now_us));
        let reply: redis::Value = connected
            .backend
            .run(self.deadline(), Operation::Script(&call))
            .await?;
        let decisions = scripts::decode_batch(&reply, shared, cost, count)?;
        Ok(decisions
            .into_iter()
            .map(|d| of_policy(d, policy))
            .collect())
    }

    /// Runs a script call within the timeout (for the other decision modules).
    pub(crate) async fn run_script(&self, call: &ScriptCall) -> Result<redis::Value, LimiterError> {
        let connected = self.connected().await?;
        connected
            .backend
            .run(self.deadline(), Operation::Script(call))
            .await
    }

    /// The deadline of a call starting now.
    pub(crate) fn deadline(&self) -> Deadline {
        Deadline::after(self.config.timeout)
    }

    pub(crate) fn key_prefix(&self) -> &str {
        &self.config.key_prefix
    }

    /// Buckets with a call in flight now: none once every decision has returned, even
    /// when some were cancelled (for tests).
    #[doc(hidden)]
    pub fn calls_in_flight(&self) -> usize {
        self.flights.in_flight()
    }

    /// The Redis key of one quota for one client: `{prefix}{{identity}}:{policy}`. The
    /// identity is the hash tag, so all of one client's keys share a cluster slot. Braces
    /// and `%` in the identity are percent-encoded, so that the tag is the whole identity
    /// and no two (identity, policy) pairs share a key.
    pub fn key(&self, identity: &str, policy: &Policy) -> String {
        bucket_key(&self.config.key_prefix, identity, policy.name())
    }

    async fn decide(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
        debt: u64,
        now_us: Option<u64>,
        audit: bool,
    ) -> Result<(Decision, AuditRecord), LimiterError> {
        let connected = self.connected().await?;
        let key = self.key(identity, policy);
        let shared = policy.shared();
        let call =
            scripts::decision_call(connected.script, &key, shared, cost, debt, now_us, audit);
        let reply: redis::Value = connected
            .backend
            .run(self.deadline(), Operation::Script(&call))
            .await?;
        let (decision, audit) = scripts::decode(&reply, shared, cost)?;
        Ok((of_policy(decision, policy), audit))
    }

    /// One decision on the shared bucket, without a lease: coalesced with the concurrent
    /// ones on its bucket.
    pub(crate) async fn on_shared_bucket(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        let connected = self.connected().await?;
        let shared = policy.shared();
        let bucket = Bucket {
            key: self.key(identity, policy),
            capacity: shared.capacity(),
            interval_us: shared.interval_us(),
            cost,
        };
        let deadline = self.deadline();
        let decision = self.coalesced(connected, &bucket, shared, deadline).await?;
        Ok(of_policy(decision, policy))
    }

    /// One plain decision, coalesced with the concurrent ones on its bucket (see
    /// `coalesce.rs`): decided by another's call, or leading one. Either way it is
    /// answered by `deadline`, so no decision waits longer than the timeout. `shared` is the
    /// policy of the bucket (`Policy::shared`), whose numbers the script is called with.
    async fn coalesced(
        &self,
        connected: &Connected,
        bucket: &Bucket,
        shared: &Policy,
        deadline: Deadline,
    ) -> Result<Decision, LimiterError> {
        let batch = match coalesce::turn(&self.flights, bucket, deadline).await {
            Turn::Decided(result) => return result,
            Turn::Lead(batch) => batch,
        };
        let (key, cost, count) = (&bucket.key, bucket.cost, batch.count());
        let call = if count == 1 {
            scripts::decision_call(connected.script, key, shared, cost, 0, None, false)
        } else {
            scripts::batch_call(connected.script, key, shared, cost, count, None)
        };
        let reply = connected
            .backend
            .run::<redis::Value>(batch.deadline(), Operation::Script(&call))
            .await;
        let result = reply.and_then(|reply| match count {
            1 => scripts::decode(&reply, shared, cost).map(|(decision, _)| vec![decision]),
            _ => scripts::decode_batch(&reply, shared, cost, count),
        });
        batch.answer(result)
    }
}

impl RateLimiter for RedisRateLimiter {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        if policy.lease().is_some() {
            return self.leased(identity, policy, cost).await;
        }
        self.on_shared_bucket(identity, policy, cost).await
    }

    async fn health(&self) -> Result<(), LimiterError> {
        let connected = self.connected().await?;
        let _: String = connected
            .backend
            .run(self.deadline(), Operation::Query(&redis::cmd("PING")))
            .await?;
        Ok(())
    }
}

impl SharedRateLimiter for RedisRateLimiter {
    async fn acquire_after_debt(
        &self,
        identity: &str,
        policy: &Policy,
        debt: u64,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        let (decision, _) = self
            .decide(identity, policy, cost, debt, None, false)
            .await?;
        Ok(decision)
    }
}
