//! Redis and pool errors mapped onto the port's [`LimiterError`]: transient failures
//! (the network, a server that is down, loading or failing over) are `Unavailable`, so
//! that callers can fall back; anything else (a script or type error) is `Unexpected`.

use std::time::Duration;

use deadpool_redis::PoolError;
use redis::{ErrorKind, RedisError, ServerErrorKind};
use shortener_core::LimiterError;

pub(crate) fn from_redis(error: &RedisError) -> LimiterError {
    if is_transient(error) {
        LimiterError::Unavailable(format!("redis: {error}"))
    } else {
        LimiterError::Unexpected(format!("redis: {error}"))
    }
}

pub(crate) fn from_pool(error: &PoolError) -> LimiterError {
    match error {
        PoolError::Backend(error) => from_redis(error),
        PoolError::Timeout(_) => {
            LimiterError::Unavailable("no redis connection within the timeout".to_owned())
        }
        PoolError::Closed => LimiterError::Unavailable("the redis pool is closed".to_owned()),
        other => LimiterError::Unexpected(format!("redis pool: {other}")),
    }
}

pub(crate) fn timed_out(timeout: Duration) -> LimiterError {
    LimiterError::Unavailable(format!(
        "redis did not answer within {} ms",
        timeout.as_millis()
    ))
}

fn is_transient(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_cluster_error()
        || matches!(
            error.kind(),
            ErrorKind::ClusterConnectionNotFound
                | ErrorKind::Server(
                    ServerErrorKind::BusyLoading
                        | ServerErrorKind::MasterDown
                        | ServerErrorKind::ReadOnly
                        | ServerErrorKind::TryAgain
                        | ServerErrorKind::ClusterDown
                )
        )
}
