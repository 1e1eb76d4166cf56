//! One Redis, standalone or a cluster, behind one operation: run a script or a command
//! within a deadline.
//!
//! Standalone: deadpool-redis makes and checks the connections, but a call does not check
//! one out of the pool. deadpool-redis sends `UNWATCH` + `PING` on every checkout and holds
//! the connection for the whole call, far slower than sharing connections.
//! See `cargo xtask bench --only client` in docs/BENCHMARKS.md.
//! So `pool_size` slots each keep a multiplexed connection taken from the pool, shared by
//! any number of concurrent calls; a slot is refilled from the pool (within the pool's
//! wait, create and recycle timeouts) when it is empty or its connection failed.
//! Cluster: the redis crate's cluster client, which routes each key to its node and keeps
//! its own connections.
//!
//! Every call is bounded by its [`Deadline`] under one timer: on a kept standalone
//! connection, the connection's own response timeout, set to the time left before each
//! request; otherwise (a connection still to take from the pool, a cluster, whose client
//! retries within a call) a timer around the whole call.
//!
//! `rediss://` URLs connect over TLS, the handshake bounded by the same timeouts as the
//! connection (see [`crate::tls`] for the CAs).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use deadpool_redis::{PoolConfig, Runtime, Timeouts};
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{
    Cmd, ConnectionInfo, ErrorKind, FromRedisValue, IntoConnectionInfo, RedisError, ServerErrorKind,
};
use shortener_core::{LimiterError, RedactedUrl};

use crate::config::RedisConfig;
use crate::deadline::Deadline;
use crate::error::{from_pool, from_redis};
use crate::scripts::ScriptCall;
use crate::tls;

pub(crate) enum Backend {
    Standalone(Standalone),
    Cluster(ClusterConnection),
}

pub(crate) struct Standalone {
    pool: deadpool_redis::Pool,
    slots: Box<[Mutex<Option<MultiplexedConnection>>]>,
    next: AtomicUsize,
}

/// What a call sends.
pub(crate) enum Operation<'a> {
    /// EVALSHA; on NOSCRIPT (a restarted server, a failover, `SCRIPT FLUSH`), EVAL with the
    /// source, which also caches the script on that node. A NOSCRIPT means that nothing ran,
    /// so this never runs a decision twice.
    Script(&'a ScriptCall),
    /// A plain command (`SCRIPT LOAD` and `PING` go to every node of a cluster).
    Query(&'a Cmd),
}

impl Operation<'_> {
    /// Sends the operation, each request answered by `deadline` or failed as expired.
    async fn send<T: FromRedisValue>(
        &self,
        connection: &mut impl Connection,
        deadline: Deadline,
    ) -> Result<T, LimiterError> {
        let result = match self {
            Self::Script(call) => {
                connection.answer_within(deadline.remaining()?);
                match call.evalsha().query_async(connection).await {
                    Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                        connection.answer_within(deadline.remaining()?);
                        call.eval().query_async(connection).await
                    }
                    result => result,
                }
            }
            Self::Query(command) => {
                connection.answer_within(deadline.remaining()?);
                command.query_async(connection).await
            }
        };
        result.map_err(|error| {
            if error.is_timeout() {
                deadline.expired()
            } else {
                from_redis(&error)
            }
        })
    }
}

/// A connection that bounds its requests' waits itself, or leaves that to the caller.
trait Connection: ConnectionLike + Send {
    /// Bounds the wait for the next request's answer.
    fn answer_within(&mut self, left: Duration);
}

impl Connection for MultiplexedConnection {
    fn answer_within(&mut self, left: Duration) {
        self.set_response_timeout(left);
    }
}

impl Connection for ClusterConnection {
    /// The cluster client may retry within a call (after a MOVED, say): its response
    /// timeout bounds each try, and a timer around the call bounds them all.
    fn answer_within(&mut self, _: Duration) {}
}

impl Backend {
    /// Builds the pool or connects to the cluster (whose slot map is read now, so this
    /// waits at most `config.timeout`).
    pub(crate) async fn connect(config: &RedisConfig) -> Result<Self, LimiterError> {
        let timeout = config.timeout;
        if timeout.is_zero() {
            return Err(LimiterError::Unexpected(
                "timeout must be above 0".to_owned().into(),
            ));
        }
        if !config.cluster_nodes.is_empty() {
            let mut builder =
                ClusterClient::builder(config.cluster_nodes.iter().map(RedactedUrl::expose))
                    .connection_timeout(timeout)
                    .response_timeout(timeout);
            let tls_nodes = config
                .cluster_nodes
                .iter()
                .filter(|url| tls::is_tls_url(url.expose()));
            match tls_nodes.count() {
                0 => {}
                // The cluster client speaks TLS to every node or to none.
                count if count == config.cluster_nodes.len() => tls::install_crypto_provider(),
                _ => {
                    return Err(LimiterError::Unexpected(
                        "redis cluster nodes mix redis:// and rediss:// URLs"
                            .to_owned()
                            .into(),
                    ));
                }
            }
            if let Some(ca_file) = &config.tls_ca_file {
                if !config
                    .cluster_nodes
                    .iter()
                    .all(|url| tls::is_tls_url(url.expose()))
                {
                    return Err(ca_file_without_tls());
                }
                builder = builder.certs(tls::certificates(ca_file)?);
            }
            let client = builder.build().map_err(|error| {
                LimiterError::Unexpected(format!("invalid redis cluster nodes: {error}").into())
            })?;
            let connect = async {
                match client.get_async_connection().await {
                    Ok(connection) => Ok(connection),
                    Err(error) => Err(cluster_connect_error(config, &error).await),
                }
            };
            return Ok(Self::Cluster(
                Deadline::after(timeout).bound(connect).await?,
            ));
        }
        if config.tls_ca_file.is_some() && !tls::is_tls_url(config.url.expose()) {
            return Err(ca_file_without_tls());
        }
        if config.pool_size == 0 {
            return Err(LimiterError::Unexpected(
                "pool_size must be at least 1".to_owned().into(),
            ));
        }
        // No caller waits longer than the timeout for a free, new or checked connection.
        let mut pool_config = PoolConfig::new(config.pool_size);
        pool_config.timeouts = Timeouts {
            wait: Some(timeout),
            create: Some(timeout),
            recycle: Some(timeout),
        };
        let invalid_url = |error: &dyn std::fmt::Display| {
            LimiterError::Unexpected(format!("invalid redis url {}: {error}", config.url).into())
        };
        let info = standalone_connection_info(config).map_err(|error| invalid_url(&error))?;
        // Built from a `ConnectionInfo`, not deadpool's own config, which has no place for
        // the CAs of `tls_ca_file`.
        let manager = deadpool_redis::Manager::new(info).map_err(|error| invalid_url(&error))?;
        let pool = deadpool_redis::Pool::builder(manager)
            .config(pool_config)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|error| invalid_url(&error))?;
        Ok(Self::Standalone(Standalone {
            pool,
            slots: (0..config.pool_size).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
        }))
    }

    /// Sends `operation`, or fails with `Unavailable` at `deadline`.
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        deadline: Deadline,
        operation: Operation<'_>,
    ) -> Result<T, LimiterError> {
        match self {
            Self::Standalone(standalone) => {
                let slot = standalone.next.fetch_add(1, Ordering::Relaxed) % standalone.slots.len();
                let kept = standalone.lock(slot).clone();
                let result = match kept {
                    Some(mut connection) => operation.send(&mut connection, deadline).await,
                    // Boxed: the pool's future is large, and rarely needed (see
                    // `RedisRateLimiter::connected`).
                    None => {
                        Box::pin(deadline.bound(async {
                            let mut connection = standalone.pooled(slot).await?;
                            operation.send(&mut connection, deadline).await
                        }))
                        .await
                    }
                };
                if result.as_ref().is_err_and(LimiterError::is_transient) {
                    // Dropped, refused or hung: a server that died took every connection
                    // with it, so every slot asks the pool next time, which checks its
                    // connections and makes new ones. Clearing only this slot left the
                    // others to fail one by one, one probe each, for seconds.
                    for slot in 0..standalone.slots.len() {
                        *standalone.lock(slot) = None;
                    }
                }
                result
            }
            Self::Cluster(connection) => {
                deadline
                    .bound(operation.send(&mut connection.clone(), deadline))
                    .await
            }
        }
    }

    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Self::Cluster(_))
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Standalone(_) => "standalone",
            Self::Cluster(_) => "cluster",
        }
    }
}

impl Standalone {
    /// A connection of the pool for `slot`, kept there for the next calls.
    async fn pooled(&self, slot: usize) -> Result<MultiplexedConnection, LimiterError> {
        let pooled = self.pool.get().await.map_err(|error| from_pool(&error))?;
        let connection = MultiplexedConnection::clone(&pooled);
        *self.lock(slot) = Some(connection.clone());
        Ok(connection)
    }

    fn lock(&self, slot: usize) -> std::sync::MutexGuard<'_, Option<MultiplexedConnection>> {
        // The guarded value is a plain handle, consistent even after a panic elsewhere.
        self.slots[slot]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Where the standalone server is, with the CAs of `tls_ca_file` for a `rediss://` URL.
pub(crate) fn standalone_connection_info(
    config: &RedisConfig,
) -> Result<ConnectionInfo, LimiterError> {
    let info = config
        .url
        .expose()
        .into_connection_info()
        .map_err(|error| LimiterError::Unexpected(error.to_string().into()))?;
    if !tls::is_tls_url(config.url.expose()) {
        return Ok(info);
    }
    tls::install_crypto_provider();
    let Some(ca_file) = &config.tls_ca_file else {
        return Ok(info);
    };
    let client = redis::Client::build_with_tls(info, tls::certificates(ca_file)?)
        .map_err(|error| LimiterError::Misconfigured(format!("TLS CA file: {error}").into()))?;
    Ok(client.get_connection_info().clone())
}

/// Why the cluster client could not make its first connections. It reports that as an IO
/// error holding only the text of one node's error, so a certificate that does not verify
/// would pass for a network fault (`Unavailable`, retried while the limiter falls back). For
/// `rediss://` seeds, one direct connection to each seed with the same CAs, until one fails
/// the TLS set-up, recovers the typed cause; the caller bounds this by the timeout.
async fn cluster_connect_error(config: &RedisConfig, error: &RedisError) -> LimiterError {
    let reported = from_redis(error);
    if !matches!(reported, LimiterError::Unavailable(_))
        || !config
            .cluster_nodes
            .iter()
            .all(|url| tls::is_tls_url(url.expose()))
    {
        return reported;
    }
    for url in &config.cluster_nodes {
        let seed = RedisConfig {
            url: url.clone(),
            ..config.clone()
        };
        let Ok(info) = standalone_connection_info(&seed) else {
            continue;
        };
        let Ok(client) = redis::Client::open(info) else {
            continue;
        };
        if let Err(probe) = client.get_multiplexed_async_connection().await
            && tls::is_tls_failure(&probe)
        {
            return from_redis(&probe);
        }
    }
    reported
}

fn ca_file_without_tls() -> LimiterError {
    LimiterError::Unexpected(
        "a TLS CA file is set but the redis URLs are not rediss://"
            .to_owned()
            .into(),
    )
}
